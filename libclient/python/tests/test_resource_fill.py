"""Execute(resource_fill=..., resource_seed=...): a program's elided
dense_resource constants filled with seeded data in the daemon, as
`jitd run --resource-fill --resource-seed` fills them (C API 8,
jitd_execute_options_t.resource_fill), on both paths of Execute.
"""

import os
import subprocess
import tempfile

import numpy as np
import pytest

import jitd
from conftest import _jitd_bin, assert_strict

PLATFORM = os.environ.get("JITD_TEST_PLATFORM", "interpreter")

# x + w, w a vector of four elided weights.
ELIDED = """
func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense_resource<weights> : tensor<4xf32>
  %0 = stablehlo.add %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""
ZEROS = np.zeros(4, np.float32)


@pytest.fixture(scope="module")
def elided(client):
    return client.compile_stablehlo(ELIDED)


def jitd_run(socket_path, fill, seed):
    """`jitd run` of ELIDED on zeros with --resource-fill/--resource-seed ->
    its result."""
    with tempfile.TemporaryDirectory() as tmp:
        program = os.path.join(tmp, "elided.mlir")
        with open(program, "w") as f:
            f.write(ELIDED)
        np.save(os.path.join(tmp, "x.npy"), ZEROS)
        subprocess.run([_jitd_bin(), "run", program, "--socket", socket_path, "--device",
                        PLATFORM, "--no-start-daemon", "--input", "0=" + os.path.join(tmp, "x.npy"),
                        "--resource-fill", fill, "--resource-seed", str(seed), "--output",
                        os.path.join(tmp, "out")], check=True, capture_output=True, timeout=60)
        return np.load(os.path.join(tmp, "out", "result_0.npy"))


def test_without_a_seed_the_program_asks_for_one(elided):
    with pytest.raises(jitd.JitdError) as e:
        elided.Execute([ZEROS])
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
    assert "seed" in e.value.message


@pytest.mark.parametrize("fill,seed", [("weights", 0), ("weights", 7), ("uniform", 42)])
def test_the_same_fill_as_jitd_run(elided, daemon, fill, seed):
    got = elided.Execute([ZEROS], resource_fill=fill, resource_seed=seed)
    assert_strict(got, jitd_run(daemon, fill, seed))
    assert_strict(elided.Execute([ZEROS], resource_fill=fill, resource_seed=seed), got)


def test_defaults_and_distributions(elided):
    weights = elided.Execute([ZEROS], resource_seed=42)
    assert_strict(elided.Execute([ZEROS], resource_fill="weights"),
                  elided.Execute([ZEROS], resource_fill="weights", resource_seed=0))
    assert_strict(elided.Execute([ZEROS], resource_fill="weights", resource_seed=42), weights)
    # A vector of weights lies in [0.5, 1.5); uniform in [-1, 1) (at seed 42
    # one value is below 0.5).
    assert np.all((weights >= 0.5) & (weights < 1.5)), weights
    uniform = elided.Execute([ZEROS], resource_fill="uniform", resource_seed=42)
    assert np.all((uniform >= -1) & (uniform < 1)) and np.any(uniform < 0.5), uniform
    # The arguments still count.
    ones = np.ones(4, np.float32)
    assert_strict(elided.Execute([ones], resource_seed=42), weights + ones)
    buf = jitd.LocalBuffer.from_pyval(ones, client=elided._client)
    assert_strict(elided.ExecuteWithBuffers([buf], resource_seed=42).to_py(), weights + ones)


@pytest.mark.parametrize("kwargs,what", [
    ({"resource_fill": "normal"}, "resource_fill='normal'"),
    ({"resource_seed": -1}, "resource_seed=-1"),
    ({"resource_seed": 1 << 64}, "resource_seed="),
    ({"resource_seed": 1.5}, "resource_seed=1.5"),
])
def test_bad_options(elided, kwargs, what):
    with pytest.raises(jitd.JitdError) as e:
        elided.Execute([ZEROS], **kwargs)
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
    assert what in e.value.message
