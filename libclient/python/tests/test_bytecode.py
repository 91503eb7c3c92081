"""compile_stablehlo takes a StableHLO portable artifact (MLIR bytecode of
VHLO) as `bytes`: the binary program, NULs included, reaches the daemon intact
and compiles to the same program as its text twin."""

import os

import numpy as np
import pytest

import jitd
from conftest import REPO

MODELS = os.path.join(os.path.dirname(REPO), "shared", "models")
ARTIFACT = os.path.join(MODELS, "searchless_chess_9m.mlir.bc")

pytestmark = pytest.mark.skipif(not os.path.exists(ARTIFACT), reason="no shared/models")


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def test_artifact_bytes_compile_like_the_text_twin(client):
    binary = _read(ARTIFACT)
    assert b"\0" in binary  # the program is binary, not text
    from_bytes = client.compile_stablehlo(binary)
    from_text = client.compile_stablehlo(_read(ARTIFACT[:-len(".bc")]).decode("utf-8"))
    assert from_bytes.argument_shapes == from_text.argument_shapes
    assert from_bytes.result_shapes == from_text.result_shapes
    assert from_bytes.result_shapes == [jitd.Shape(np.float32, (33, 79, 128))]
    # One program, one cache entry: the text twin finds the artifact's.
    assert from_text.cache_hit


def test_truncated_artifact_names_the_offset(client):
    with pytest.raises(jitd.JitdError) as e:
        client.compile_stablehlo(_read(ARTIFACT)[:300])
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
    assert "bytecode offset" in e.value.message
