"""Device-resident buffers through a real daemon on the fake driver (issue
14, item 3): LocalBuffer.from_pyval(x, device="cuda") allocates the buffer
on the GPU (the daemon's pool, counted on --max-device-bytes), executes read
and write it in place, to_py() / copy_from() copy through shared memory.
The fake's kernels compute nothing, so the programs here are ones whose
results are copies the runtime makes (an argument returned unchanged: a
device-to-device copy into the result buffer) — their bytes are checked.
"""

import os
import shutil
import signal
import subprocess
import tempfile
import time

import numpy as np
import pytest

import jitd
from jitd import _lib

from conftest import REPO, _jitd_bin

FAKE_DIR = os.environ.get("JITD_FAKE_LIBCUDA_DIR") or os.path.join(REPO, "build", "fake_libcuda")

pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(FAKE_DIR, "libcuda.so.1")),
                       reason="no fake libcuda.so.1 at %s (build jitd_fake_libcuda)" % FAKE_DIR),
    pytest.mark.skipif(not _lib.has("jitd_buffer_create_on_device"),
                       reason="the loaded libjitd.so is older than API version 11"),
]

LIMIT = 1 << 20  # --max-device-bytes

# Returns its first argument unchanged and the second plus itself (a kernel
# the fake does not run: that result's bytes are not checked).
PASS = """
func.func @main(%x: tensor<64xf32>, %y: tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>) {
  %z = stablehlo.add %y, %y : tensor<64xf32>
  return %x, %z : tensor<64xf32>, tensor<64xf32>
}
"""


@pytest.fixture(scope="module")
def daemon():
    tmp = tempfile.mkdtemp(prefix="jitd_devbuf_")
    socket_path = os.path.join(tmp, "jitd.sock")
    env = dict(os.environ, JITD_CUDA_DRIVER=FAKE_DIR)
    proc = subprocess.Popen([_jitd_bin(), "serve", "--socket", socket_path, "--no-disk-cache",
                             "--max-device-bytes", str(LIMIT)],
                            env=env, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 60
        while not os.path.exists(socket_path):
            assert proc.poll() is None, "jitd serve exited at start"
            assert time.time() < deadline, "jitd serve did not come up"
            time.sleep(0.02)
        yield socket_path
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)


def _device_bytes(socket_path, pid):
    """This process's device bytes now, from `jitd stats`' client rows."""
    out = subprocess.run([_jitd_bin(), "stats", "--socket", socket_path],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    for line in out.stdout.splitlines():
        f = line.split()
        if len(f) >= 14 and f[1] == str(pid):
            return " ".join(f[-6:-4])  # "bytes" column pair before device peak and gpu time
    raise AssertionError(out.stdout)


def test_round_trip_and_refusals(daemon):
    c = jitd.Client("cuda", socket_path=daemon)
    x = np.arange(64, dtype=np.float32) * 1.5
    b = jitd.LocalBuffer.from_pyval(x, client=c, device="cuda")
    assert b.device() == "cuda"
    assert "device='cuda'" in repr(b)
    np.testing.assert_array_equal(b.to_py(), x)
    with pytest.raises(jitd.JitdError) as e:
        b.view()
    assert e.value.code == jitd.StatusCode.FAILED_PRECONDITION
    b.copy_from(-x)
    np.testing.assert_array_equal(b.to_py(), -x)
    host = jitd.LocalBuffer.from_pyval(x, client=c)
    assert host.device() == ""


def test_execute_reads_and_writes_device_buffers_in_place(daemon):
    c = jitd.Client("cuda", socket_path=daemon)
    exe = c.compile_stablehlo(PASS)
    x = np.arange(64, dtype=np.float32)
    dx = jitd.LocalBuffer.from_pyval(x, client=c, device="cuda")
    dy = jitd.LocalBuffer.from_pyval(np.ones(64, np.float32), client=c, device="cuda")
    out0 = jitd.LocalBuffer.from_pyval(np.zeros(64, np.float32), client=c, device="cuda")
    out1 = jitd.LocalBuffer.from_pyval(np.zeros(64, np.float32), client=c)  # a host result beside
    got = exe.ExecuteWithBuffers([dx, dy], results=[out0, out1])
    assert got[0] is out0 and got[1] is out1
    # Result 0 is argument 0, copied on the device.
    np.testing.assert_array_equal(out0.to_py(), x)
    # A host argument beside a device one, into the same device result.
    hx = jitd.LocalBuffer.from_pyval(x + 7, client=c)
    exe.ExecuteWithBuffers([hx, dy], results=[out0, out1])
    np.testing.assert_array_equal(out0.to_py(), x + 7)
    # A result buffer of the wrong shape is refused by name.
    wrong = jitd.LocalBuffer.from_pyval(np.zeros(8, np.float32), client=c, device="cuda")
    with pytest.raises(jitd.JitdError) as e:
        exe.ExecuteWithBuffers([dx, dy], results=[wrong, out1])
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT, e.value.message


def test_device_buffers_count_against_max_device_bytes(daemon):
    c = jitd.Client("cuda", socket_path=daemon)
    half = np.zeros(LIMIT // 8, np.float32)  # LIMIT / 2 bytes
    a = jitd.LocalBuffer.from_pyval(half, client=c, device="cuda")
    with pytest.raises(jitd.JitdError) as e:
        jitd.LocalBuffer.from_pyval(np.zeros(LIMIT // 4, np.float32), client=c, device="cuda")
    assert e.value.code == jitd.StatusCode.RESOURCE_EXHAUSTED
    assert "--max-device-bytes" in e.value.message, e.value.message
    assert _device_bytes(daemon, os.getpid()) != "0 B"
    del a  # released: the room comes back
    import gc
    gc.collect()
    b = jitd.LocalBuffer.from_pyval(half, client=c, device="cuda")
    c2 = jitd.LocalBuffer.from_pyval(half[: LIMIT // 16], client=c, device="cuda")
    assert b.device() == c2.device() == "cuda"


def test_unknown_device_is_not_found(daemon):
    c = jitd.Client("cuda", socket_path=daemon)
    with pytest.raises(jitd.JitdError) as e:
        jitd.LocalBuffer.from_pyval(np.zeros(4, np.float32), client=c, device="tpu")
    assert e.value.code == jitd.StatusCode.NOT_FOUND, e.value.message


def test_a_replicated_execute_refuses_device_buffers_by_name(daemon):
    # Every process of a replicated execute reads and writes host memory.
    c = jitd.Client("cuda", socket_path=daemon)
    options = jitd.CompileOptions()
    options.replica_count = 2
    exe = c.compile_stablehlo(PASS, compile_options=options)
    assert exe.replica_count == 2
    x = np.arange(64, dtype=np.float32)
    dx = jitd.LocalBuffer.from_pyval(x, client=c, device="cuda")
    with pytest.raises(jitd.JitdError) as e:
        exe.ExecuteWithBuffersPerReplica([[x, x], [dx, x]])
    assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT, e.value.message
    assert "process 1 argument 0 is device-resident" in e.value.message
