"""pytest fixtures: a real `jitd serve` on a socket in a temp directory for
the whole session, and helpers that compare results strictly (dtype and
shape exactly, so a scalar 4 never equals [[4]]).

The daemon binary is $JITD_BIN, else the repository's build/bin/jitd;
libjitd.so is found as the package finds it ($JITD_LIBRARY, ...).
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # the package, without installing it
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))

import jitd  # noqa: E402
from jitd import _client, _lib  # noqa: E402


def _jitd_bin():
    path = os.environ.get("JITD_BIN") or os.path.join(REPO, "build", "bin", "jitd")
    if not os.path.exists(path):
        raise RuntimeError("no jitd binary at %s (build it, or set $JITD_BIN)" % path)
    return path


@pytest.fixture(scope="session")
def daemon():
    """Starts `jitd serve` on a fresh socket, points $JITD_SOCKET at it, and
    stops it (SIGTERM, then SIGKILL) at the end. Yields the socket path."""
    tmp = tempfile.mkdtemp(prefix="jitd_py_")
    socket_path = os.path.join(tmp, "jitd.sock")
    proc = subprocess.Popen([_jitd_bin(), "serve", "--socket", socket_path, "--no-disk-cache",
                             "--log-level", "error"])
    try:
        deadline = time.time() + 60  # a loaded CI machine starts processes slowly
        while not os.path.exists(socket_path):
            if proc.poll() is not None:
                raise RuntimeError("jitd serve exited with %d at start" % proc.returncode)
            if time.time() > deadline:
                raise RuntimeError("jitd serve did not come up on %s" % socket_path)
            time.sleep(0.02)
        old = os.environ.get("JITD_SOCKET")
        os.environ["JITD_SOCKET"] = socket_path
        _client._reset_clients_for_testing()
        yield socket_path
        if old is None:
            del os.environ["JITD_SOCKET"]
        else:
            os.environ["JITD_SOCKET"] = old
        _client._reset_clients_for_testing()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="session")
def client(daemon):
    """The client the tests use: get_client(platform) on the daemon, where
    platform is $JITD_TEST_PLATFORM (default 'interpreter'; ctest runs the
    suite once per device)."""
    return jitd.get_client(os.environ.get("JITD_TEST_PLATFORM", "interpreter"))


def has_builder():
    return _lib.has("jitd_builder_create") and _lib.has("jitd_client_compile_computation")


requires_builder = pytest.mark.skipif(
    not has_builder(), reason="the loaded libjitd.so has no C builder (jitd_builder.h)")


def assert_strict(actual, expected, rtol=1e-6, atol=0.0):
    """actual must be an ndarray with expected's dtype and shape exactly,
    and equal values (allclose for floats). expected: an ndarray or a numpy
    scalar/0-d array, or a tuple of them (then actual a tuple too)."""
    if isinstance(expected, tuple):
        assert isinstance(actual, tuple), "expected a tuple, got %r" % (actual,)
        assert len(actual) == len(expected), (len(actual), len(expected))
        for a, e in zip(actual, expected):
            assert_strict(a, e, rtol, atol)
        return
    expected = np.asarray(expected)
    assert isinstance(actual, np.ndarray), "expected an ndarray, got %r" % (actual,)
    assert actual.dtype == expected.dtype, "dtype %s != %s" % (actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, "shape %s != %s" % (actual.shape, expected.shape)
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)
    else:
        np.testing.assert_array_equal(actual, expected)


@pytest.fixture
def run(client):
    """run(builder, *args, root=None): builds `builder` (root: its last op
    unless given), compiles it on the test client and executes it on args."""
    def build_compile_execute(builder, *args, root=None):
        return builder.Build(root).Compile(client=client).Execute(list(args))
    return build_compile_execute
