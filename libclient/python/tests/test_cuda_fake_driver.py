"""The cuda device end to end through a real daemon without a GPU (issue 14,
items 3 and 5): the daemon is pointed at the fake driver built as a
libcuda.so.1 (devices/cuda/fake_driver_library.cc) with $JITD_CUDA_DRIVER.
Its kernels compute nothing, so results are not checked — everything
around them is: the platform list and default, compile to a loaded
module, execute with copies in and out, the per-client device memory limit
(--max-device-bytes) and jitd stats' device lines and per-client bytes.
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
from jitd import _lib

from conftest import REPO, _jitd_bin

FAKE_DIR = os.environ.get("JITD_FAKE_LIBCUDA_DIR") or os.path.join(REPO, "build", "fake_libcuda")

pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(FAKE_DIR, "libcuda.so.1")),
                       reason="no fake libcuda.so.1 at %s (build jitd_fake_libcuda)" % FAKE_DIR),
    pytest.mark.skipif(not _lib.has("jitd_client_num_devices"),
                       reason="the loaded libjitd.so is older than API version 7"),
]

ADD = """
func.func @main(%x: tensor<Nxf32>, %y: tensor<Nxf32>) -> tensor<Nxf32> {
  %z = stablehlo.add %x, %y : tensor<Nxf32>
  return %z : tensor<Nxf32>
}
"""


def _add(n):
    return ADD.replace("N", str(n))
LIMIT = 1 << 20  # --max-device-bytes


@pytest.fixture(scope="module")
def fake_daemon():
    tmp = tempfile.mkdtemp(prefix="jitd_fakecuda_")
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
        yield {"socket": socket_path}
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
        shutil.rmtree(tmp, ignore_errors=True)
    # It found the (fake) GPU: nothing said about cuda being unavailable.
    assert "cuda: unavailable" not in err, err


def _stats(socket_path):
    out = subprocess.run([_jitd_bin(), "stats", "--socket", socket_path],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_cuda_is_listed_and_is_the_default(fake_daemon):
    client = jitd.Client("interpreter", socket_path=fake_daemon["socket"])
    assert "cuda" in client.platforms
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback, no warning
        c = jitd.Client("cuda", socket_path=fake_daemon["socket"], fallback=("cpu",))
    assert c.platform == "cuda"


def test_compile_and_execute_on_the_fake_gpu(fake_daemon):
    c = jitd.Client("cuda", socket_path=fake_daemon["socket"])
    exe = c.compile_stablehlo(_add(256))
    x = np.arange(256, dtype=np.float32)
    out = exe.Execute([x, x])
    assert out.shape == (256,) and out.dtype == np.float32
    # While this client is connected, stats show its device memory.
    text = _stats(fake_daemon["socket"])
    assert "device:       cuda: Fake GPU" in text, text
    rows = [l.split() for l in text.splitlines() if l.strip().startswith(tuple("0123456789"))]
    # The last columns: device peak ("12.3 KiB") and gpu time ("500 us":
    # the fake times 0.5 ms per launch).
    peaks = [" ".join(r[-4:-2]) for r in rows if len(r) >= 14]
    assert any(p != "0 B" for p in peaks), text
    gpu = [" ".join(r[-2:]) for r in rows if len(r) >= 14]
    assert "500 us" in gpu, text


def test_device_memory_limit_names_the_flag(fake_daemon):
    c = jitd.Client("cuda", socket_path=fake_daemon["socket"])
    n = LIMIT // 4  # each argument alone fills the limit
    exe = c.compile_stablehlo(_add(n))
    x = np.zeros(n, dtype=np.float32)
    with pytest.raises(jitd.JitdError) as e:
        exe.Execute([x, x])
    assert e.value.code == jitd.StatusCode.RESOURCE_EXHAUSTED
    assert "--max-device-bytes" in e.value.message, e.value.message
    # The client goes on: a program within the limit runs.
    small = c.compile_stablehlo(_add(16))
    small.Execute([np.zeros(16, np.float32), np.zeros(16, np.float32)])

