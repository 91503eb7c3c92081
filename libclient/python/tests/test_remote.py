"""Remote clients from Python: a `jitd serve --listen tcp://127.0.0.1:PORT`
with TLS (a throwaway CA, server and client certificates made with the
openssl command) and a token file, used through get_client("tcp://..."),
$JITD_SOCKET and the seeds' xrt backend; every result is compared with the
same request made through the daemon's Unix socket."""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import numpy as np
import pytest

from conftest import REPO, _jitd_bin, assert_strict, requires_builder

import jitd
from jitd import JitdError, StatusCode, _client

TOKEN = "py-remote-0123456789abcdef0123456789"
MODELS = os.path.join(os.path.dirname(REPO), "shared", "models")
PLATFORM = os.environ.get("JITD_TEST_PLATFORM", "interpreter")

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None,
                                reason="no openssl command to make test certificates")


def _sh(cwd, *args):
    subprocess.run(list(args), cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)


def _certificates(d):
    with open(os.path.join(d, "server.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    with open(os.path.join(d, "client.ext"), "w") as f:
        f.write("extendedKeyUsage=clientAuth\n")
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    for ca in ("ca", "rogue"):
        _sh(d, "openssl", "req", "-x509", *key, "-keyout", ca + ".key", "-out", ca + ".pem",
            "-days", "2", "-subj", "/CN=" + ca)
    for name, ext in (("server", "server.ext"), ("bob", "client.ext")):
        _sh(d, "openssl", "req", *key, "-keyout", name + ".key", "-out", name + ".csr",
            "-subj", "/CN=" + name)
        _sh(d, "openssl", "x509", "-req", "-in", name + ".csr", "-CA", "ca.pem", "-CAkey",
            "ca.key", "-CAcreateserial", "-days", "2", "-out", name + ".pem", "-extfile", ext)


def _free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class _Daemon(object):
    def __init__(self, d, name, flags):
        self.socket = os.path.join(d, name + ".sock")
        port = _free_port()
        self.address = "tcp://127.0.0.1:%d" % port
        self.proc = subprocess.Popen(
            [_jitd_bin(), "serve", "--socket", self.socket, "--no-disk-cache", "--log-level",
             "error", "--listen", self.address] + flags)
        deadline = time.time() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("jitd serve exited with %d at start" % self.proc.returncode)
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                if os.path.exists(self.socket):
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise RuntimeError("jitd serve did not come up on %s" % self.address)
            time.sleep(0.02)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)


@pytest.fixture(scope="module")
def daemons():
    d = tempfile.mkdtemp(prefix="jitd_py_remote_")
    _certificates(d)
    with open(os.path.join(d, "tokens"), "w") as f:
        f.write("carol %s\n" % TOKEN)
    os.chmod(os.path.join(d, "tokens"), 0o600)
    with open(os.path.join(d, "carol.token"), "w") as f:
        f.write(TOKEN + "\n")
    tls = ["--tls-cert", os.path.join(d, "server.pem"), "--tls-key", os.path.join(d, "server.key")]
    mtls = _Daemon(d, "mtls", tls + ["--tls-client-ca", os.path.join(d, "ca.pem")])
    token = _Daemon(d, "token", tls + ["--token-file", os.path.join(d, "tokens")])
    try:
        yield d, mtls, token
    finally:
        mtls.stop()
        token.stop()
        shutil.rmtree(d, ignore_errors=True)
        _client._reset_clients_for_testing()


def _mtls(d):
    return dict(tls_ca_file=os.path.join(d, "ca.pem"), tls_cert_file=os.path.join(d, "bob.pem"),
                tls_key_file=os.path.join(d, "bob.key"))


def _token(d):
    return dict(tls_ca_file=os.path.join(d, "ca.pem"), token_file=os.path.join(d, "carol.token"))


SOFTMAX = """
func.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %max = stablehlo.reduce(%x init: %m) applies stablehlo.maximum across dimensions = [1]
      : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %b = stablehlo.broadcast_in_dim %max, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %s = stablehlo.subtract %x, %b : tensor<2x4xf32>
  %e = stablehlo.exponential %s : tensor<2x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %sum = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [1]
      : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
  %sb = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<2xf32>) -> tensor<2x4xf32>
  %r = stablehlo.divide %e, %sb : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}
"""

FEEDS = """
func.func @main(%x: tensor<3xi32>) -> tensor<3xi32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<3xi32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<3xi32>
  %done = "stablehlo.outfeed"(%s, %v#1) : (tensor<3xi32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<3xi32>
}
"""


def test_get_client_tcp_gives_local_results(daemons):
    d, mtls, _ = daemons
    remote = jitd.get_client(mtls.address, **_mtls(d))
    local = jitd.Client(PLATFORM, mtls.socket, autostart=False)
    remote_exe = jitd.compile_stablehlo(SOFTMAX, client=remote)
    local_exe = jitd.compile_stablehlo(SOFTMAX, client=local)
    x = np.random.RandomState(0).standard_normal((2, 4)).astype(np.float32)
    got = remote_exe.Execute([x])
    assert_strict(got, local_exe.Execute([x]))
    assert_strict(got, np.exp(x) / np.exp(x).sum(1, keepdims=True), rtol=1e-5)
    assert jitd.remote_identity(remote) == "cert:bob"
    assert jitd.remote_identity(local) == ""
    # Buffers live in the daemon; from_pyval / to_py / ExecuteWithBuffers.
    buf = jitd.LocalBuffer.from_pyval(x, client=remote)
    assert_strict(buf.to_py(), x)
    assert_strict(remote_exe.ExecuteWithBuffers([buf]).to_py(), got)
    assert "cert:bob" in json.dumps(remote.stats())


def test_feeds_and_large_tensors_over_tokens(daemons):
    d, _, token = daemons
    remote = jitd.get_client(token.address, **_token(d))
    assert jitd.remote_identity(remote) == "token:carol"
    exe = jitd.compile_stablehlo(FEEDS, client=remote)
    remote.transfer_to_infeed(np.array([10, 20, 30], np.int32))
    assert_strict(exe.Execute([np.array([1, 2, 3], np.int32)]), np.array([11, 22, 33], np.int32))
    from jitd import Shape
    assert_strict(remote.transfer_from_outfeed(Shape(np.dtype(np.int32), (3,))),
                  np.array([11, 22, 33], np.int32))
    # 32 MiB each way, in 1 MiB frames.
    big = """
func.func @main(%x: tensor<8388608xf32>) -> tensor<8388608xf32> {
  %r = stablehlo.negate %x : tensor<8388608xf32>
  return %r : tensor<8388608xf32>
}
"""
    exe = jitd.compile_stablehlo(big, client=remote)
    x = np.random.RandomState(1).standard_normal(8388608).astype(np.float32)
    assert_strict(exe.Execute([x]), -x)


def test_feed_from_another_thread_while_an_execute_waits(daemons):
    # The seeds' pattern, remotely: Execute blocks in the daemon on its
    # infeed while another thread of this process feeds it (over the feed
    # connection: the daemon shares one process's feed queues across its
    # connections by the hello's client_process number).
    import threading
    d, _, token = daemons
    remote = jitd.get_client(token.address, **_token(d))
    exe = jitd.compile_stablehlo(FEEDS, client=remote)
    got = {}

    def run():
        got["result"] = exe.Execute([np.array([1, 2, 3], np.int32)])

    runner = threading.Thread(target=run)
    runner.start()
    time.sleep(0.2)  # the execute is now waiting on its infeed
    assert runner.is_alive()
    remote.transfer_to_infeed(np.array([5, 6, 7], np.int32))
    runner.join(30)
    assert not runner.is_alive()
    assert_strict(got["result"], np.array([6, 8, 10], np.int32))
    from jitd import Shape
    assert_strict(remote.transfer_from_outfeed(Shape(np.dtype(np.int32), (3,))),
                  np.array([6, 8, 10], np.int32))


@requires_builder
def test_xrt_backend_spelling(daemons, daemon):
    # `daemon` points $JITD_SOCKET at the session's local daemon: the "xla"
    # backend below is the local client, which would otherwise start one on
    # the default socket (and leave it running) when this file runs alone.
    d, mtls, _ = daemons
    backend = jitd.get_backend("xrt", target=mtls.address, platform=PLATFORM, **_mtls(d))
    assert backend is jitd.get_backend("xrt", target=mtls.address, platform=PLATFORM, **_mtls(d))
    assert backend.target == mtls.address
    c = jitd.ComputationBuilder("axpy")
    a = c.ParameterFromNumpy(np.zeros(3, np.float32))
    b = c.ParameterFromNumpy(np.zeros(3, np.float32))
    c.Add(c.Mul(a, c.ConstantF32Scalar(2.0)), b)
    computation = c.Build()
    shapes = [jitd.Shape(np.dtype(np.float32), (3,))] * 2
    exe = backend.CompileForXrt(computation, shapes, mtls.address)
    x, y = np.arange(3, dtype=np.float32), np.ones(3, np.float32)
    assert_strict(exe.Execute([x, y]), 2 * x + y)
    # "HOST:PORT" means the same target; another one is refused.
    assert jitd.XrtBackend(mtls.address[len("tcp://"):], platform=PLATFORM, **_mtls(d)).target == \
        mtls.address
    with pytest.raises(JitdError) as e:
        backend.CompileForXrt(computation, shapes, "tcp://127.0.0.1:1")
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    with pytest.raises(JitdError) as e:
        jitd.get_backend("xrt")  # no target, no $JITD_BACKEND_TARGET
    assert e.value.code == StatusCode.INVALID_ARGUMENT
    assert jitd.get_backend("xla", platform=PLATFORM) is jitd.get_client(PLATFORM)


def test_jitd_socket_and_tls_environment(daemons, monkeypatch):
    d, _, token = daemons
    monkeypatch.setenv("JITD_SOCKET", token.address)
    monkeypatch.setenv("JITD_TLS_CA", os.path.join(d, "ca.pem"))
    monkeypatch.setenv("JITD_TOKEN_FILE", os.path.join(d, "carol.token"))
    client = jitd.Client(PLATFORM, autostart=False)
    assert jitd.remote_identity(client) == "token:carol"
    exe = jitd.compile_stablehlo(SOFTMAX, client=client)
    x = np.zeros((2, 4), np.float32)
    assert_strict(exe.Execute([x]), np.full((2, 4), 0.25, np.float32))


def test_wrong_ca_or_token_is_refused(daemons):
    d, mtls, token = daemons
    opts = _mtls(d)
    opts["tls_ca_file"] = os.path.join(d, "rogue.pem")
    with pytest.raises(JitdError) as e:
        jitd.Client(PLATFORM, mtls.address, autostart=False, **opts)
    assert e.value.code == StatusCode.PERMISSION_DENIED
    assert "does not verify" in e.value.message
    opts = _token(d)
    opts["token_file"] = os.path.join(d, "tokens")  # the daemon's "NAME TOKEN" line works too
    jitd.Client(PLATFORM, token.address, autostart=False, **opts)
    with open(os.path.join(d, "bad.token"), "w") as f:
        f.write("not-the-right-token-0123456789\n")
    opts["token_file"] = os.path.join(d, "bad.token")
    with pytest.raises(JitdError) as e:
        jitd.Client(PLATFORM, token.address, autostart=False, **opts)
    assert e.value.code == StatusCode.PERMISSION_DENIED
    assert "token" in e.value.message
    with pytest.raises(JitdError) as e:
        jitd.Client(PLATFORM, token.address, autostart=False, tls_ca_fil="typo")
    assert e.value.code == StatusCode.INVALID_ARGUMENT


def _random_arguments(exe, seed):
    """Arguments for a model as `jitd run --random-inputs` makes them in
    spirit: floats uniform in [-1, 1), integers 0/1, booleans False/True."""
    rng = np.random.RandomState(seed)
    out = []
    for shape in exe.argument_shapes:
        dtype = np.dtype(shape.element_type())
        dims = shape.dimensions()
        if dtype.kind == "f":
            out.append(rng.uniform(-1, 1, dims).astype(dtype))
        elif dtype.kind == "b":
            out.append(rng.randint(0, 2, dims).astype(bool))
        else:
            out.append(rng.randint(0, 2, dims).astype(dtype))
    return out


@pytest.mark.skipif(not os.path.isdir(MODELS), reason="no shared/models")
@pytest.mark.skipif(PLATFORM != "cpu", reason="the models run on the cpu JIT")
@pytest.mark.parametrize("model", ["searchless_chess_9m.mlir", "pt_bert.mlir",
                                   "jax_resnet_50.mlir"])
def test_shared_models_through_tls_equal_local(daemons, model):
    d, mtls, _ = daemons
    with open(os.path.join(MODELS, model)) as f:
        text = f.read()
    remote = jitd.Client("cpu", mtls.address, autostart=False, **_mtls(d))
    local = jitd.Client("cpu", mtls.socket, autostart=False)
    remote_exe = jitd.compile_stablehlo(text, client=remote)
    local_exe = jitd.compile_stablehlo(text, client=local)
    args = _random_arguments(remote_exe, 5)
    got = remote_exe.Execute(args, resource_fill="weights", resource_seed=7)
    want = local_exe.Execute(args, resource_fill="weights", resource_seed=7)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.isfinite(g).all() if g.dtype.kind == "f" else True
        np.testing.assert_array_equal(g, w)


@pytest.mark.skipif(not os.path.exists(os.path.join(MODELS, "searchless_chess_9m.mlir.bc")),
                    reason="no shared/models")
def test_bytecode_reaches_the_remote_daemon_intact(daemons):
    d, mtls, _ = daemons
    backend = jitd.XrtBackend(mtls.address, platform=PLATFORM, **_mtls(d))
    with open(os.path.join(MODELS, "searchless_chess_9m.mlir.bc"), "rb") as f:
        binary = f.read()
    assert b"\0" in binary
    remote = backend.CompileForXrt(binary)
    assert remote.result_shapes == [jitd.Shape(np.float32, (33, 79, 128))]
    # The same program: the text twin finds its cache entry (the daemon keys
    # the cache on the remote identity too, so ask through the same one).
    with open(os.path.join(MODELS, "searchless_chess_9m.mlir")) as f:
        assert backend.CompileForXrt(f.read()).cache_hit
