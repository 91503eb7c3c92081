"""Platforms and the fallback (issue 14, item 5), through a real daemon on a
machine where the cuda device cannot run (no driver or no GPU; the tests
skip on a machine that runs it).

- get_client() (no platform) tries cuda, then cpu: it gets cpu with one
  warning, "No GPU found, falling back to cpu: <the daemon's reason>", and
  programs run there;
- asking for cuda by name is a NOT_FOUND error carrying the reason;
- the daemon says once, at start, why cuda is unavailable, and jitd stats
  lists the devices with it.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time
import warnings

import numpy as np
import pytest

import jitd
from jitd import _client, _lib

from conftest import _jitd_bin, assert_strict

requires_device_list = pytest.mark.skipif(
    not _lib.has("jitd_client_num_devices"),
    reason="the loaded libjitd.so is older than API version 7 (no device list)")

ADD_ONE = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %one = stablehlo.constant dense<1.0> : tensor<3xf32>
  %y = stablehlo.add %x, %one : tensor<3xf32>
  return %y : tensor<3xf32>
}
"""

PREFIX = "No GPU found, falling back to cpu: "


def _skip_if_cuda_runs():
    if "cuda" in jitd.available_platforms():
        pytest.skip("this daemon runs the cuda device: there is no fallback to test")


@requires_device_list
def test_default_platform_falls_back_to_cpu_with_one_warning(daemon):
    _skip_if_cuda_runs()
    _client._reset_clients_for_testing()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            client = jitd.get_client()
            again = jitd.get_client()  # memoized: no second warning
        assert client is again
        assert client.platform == "cpu" and client.requested_platform == "cuda"
        messages = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
        assert len(messages) == 1, messages
        assert messages[0].startswith(PREFIX), messages[0]
        reason = messages[0][len(PREFIX):]
        assert reason and reason != "None"
        # The reason is the daemon's own: what it found missing.
        assert ("libcuda.so.1 not found" in reason or "no CUDA device" in reason
                or "driver too old" in reason), reason
        out = client.compile_stablehlo(ADD_ONE).Execute([np.array([1, 2, 3], np.float32)])
        assert_strict(out, np.array([2, 3, 4], np.float32))
    finally:
        _client._reset_clients_for_testing()


@requires_device_list
def test_explicit_cuda_is_an_error_with_the_reason(daemon):
    _skip_if_cuda_runs()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # and no fallback warning
        with pytest.raises(jitd.JitdError) as e:
            jitd.Client("cuda")
    assert e.value.code == jitd.StatusCode.NOT_FOUND
    assert "no device 'cuda'" in e.value.message
    assert "cuda: unavailable (" in e.value.message, e.value.message


@requires_device_list
def test_daemon_logs_the_reason_once_and_stats_list_devices():
    """A daemon of its own, with $JITD_CUDA_DRIVER naming a folder without a
    driver: that folder is the first place searched, and the reason says
    so (unless a driver is found further on)."""
    tmp = tempfile.mkdtemp(prefix="jitd_cuda_py_")
    socket_path = os.path.join(tmp, "jitd.sock")
    nowhere = os.path.join(tmp, "no-driver-here")
    env = dict(os.environ, JITD_CUDA_DRIVER=nowhere)
    proc = subprocess.Popen([_jitd_bin(), "serve", "--socket", socket_path, "--no-disk-cache"],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not os.path.exists(socket_path):
            assert proc.poll() is None, "jitd serve exited at start"
            assert time.time() < deadline, "jitd serve did not come up"
            time.sleep(0.02)
        stats = subprocess.run([_jitd_bin(), "stats", "--socket", socket_path],
                               capture_output=True, text=True, timeout=60)
        assert stats.returncode == 0, stats.stderr
        lines = stats.stdout.splitlines()
        assert any(l.strip() == "device:       cpu" for l in lines), stats.stdout
        cuda = [l for l in lines if l.strip().startswith("device:       cuda")]
        assert len(cuda) == 1, stats.stdout
        if "unavailable" not in cuda[0]:
            pytest.skip("this machine runs the cuda device: " + cuda[0].strip())
        assert "cuda: unavailable (" in cuda[0], cuda[0]
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    logged = [l for l in err.splitlines() if l.startswith("jitd: cuda: unavailable (")]
    assert len(logged) == 1, err
    if "not found" in logged[0]:
        assert "searched " + nowhere + "/libcuda.so.1" in logged[0], logged[0]
    assert "jitd: default device cpu" in err
