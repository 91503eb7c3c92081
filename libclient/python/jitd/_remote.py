"""Remote daemons: clients of a `jitd serve --listen tcp://...` on another
machine (docs/USING.md, "Remote clients"), and the seeds' xla_bridge
spelling of it, the `xrt` backend with a `target`.

    import jitd
    client = jitd.get_client("tcp://gpu-box:7000", tls_ca_file="ca.pem",
                             token_file="~/.jitd-token")
    # or, as the seeds' xla_bridge wrote it:
    backend = jitd.get_backend("xrt", target="tcp://gpu-box:7000", tls_ca_file="ca.pem")
    exe = backend.CompileForXrt(builder.Build(), argument_shapes, "tcp://gpu-box:7000")

A remote client has the same API as a local one (it is the same Client over
libjitd.so): LocalBuffers keep a local copy that each Execute sends
(arguments) and refreshes (results).
"""

import os
import threading

from ._status import JitdError, StatusCode

# Keyword options of a remote connection (jitd_client_options_t, C API 12).
_OPTIONS = ("tls_ca_file", "tls_cert_file", "tls_key_file", "token_file", "insecure_loopback")


def is_remote(address):
    """Whether `address` names a remote daemon ("tcp://...")."""
    return isinstance(address, str) and address.startswith("tcp://")


def targets_remote(socket_path):
    """Whether a client given `socket_path` (None: $JITD_SOCKET) is remote."""
    return is_remote(socket_path or os.environ.get("JITD_SOCKET"))


def check_options(options):
    """The remote keyword options, checked: unknown names raise
    INVALID_ARGUMENT; paths are expanded (~); None values are dropped."""
    out = {}
    for name, value in (options or {}).items():
        if name not in _OPTIONS:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "unknown option %r (remote options: %s)" % (name, ", ".join(_OPTIONS)))
        if value is None:
            continue
        out[name] = bool(value) if name == "insecure_loopback" else os.path.expanduser(str(value))
    return out


def fill_options(opts, remote):
    """Sets the remote fields of a _lib.ClientOptions; returns the struct_size
    to pass (the short, pre-version-12 size when there is nothing to set, so
    an older libjitd.so still accepts it)."""
    import ctypes
    from . import _lib
    if not remote:
        return _lib.ClientOptions.timeout_ms.offset + ctypes.sizeof(ctypes.c_uint32)
    if _lib.lib().jitd_api_version() < 12:
        raise JitdError(StatusCode.UNIMPLEMENTED,
                        "remote options need libjitd.so of C API version 12 or later; %s is "
                        "version %d" % (_lib.library_path(), _lib.lib().jitd_api_version()))
    for name in _OPTIONS:
        if name == "insecure_loopback":
            opts.insecure_loopback = 1 if remote.get(name) else 0
        elif remote.get(name):
            setattr(opts, name, remote[name].encode())
    return ctypes.sizeof(_lib.ClientOptions)


def _normalize_target(target):
    if not isinstance(target, str) or not target:
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "the xrt backend needs a target, 'tcp://HOST:PORT' (or 'HOST:PORT'), "
                        "got %r" % (target,))
    return target if is_remote(target) else "tcp://" + target


def _xrt_client_class():
    from ._client import Client

    class XrtClient(Client):
        """A Client of a remote daemon with xla_client's XrtBackend methods."""

        def __init__(self, target, platform=None, **remote):
            self.target = _normalize_target(target)
            if platform is None:
                Client.__init__(self, "cuda", self.target, fallback=("cpu", "interpreter"),
                                autostart=False, **remote)
            else:
                Client.__init__(self, platform, self.target, autostart=False, **remote)

        def CompileForXrt(self, computation, argument_shapes=(), target=None,
                          compile_options=None):
            """Compiles on the daemon at `target` (this backend's own; another
            is INVALID_ARGUMENT) -> LocalExecutable. `computation` is a built
            jitd.Computation, StableHLO text, or a portable artifact's bytes."""
            if target is not None and _normalize_target(target) != self.target:
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "CompileForXrt: target %r is not this backend's %r (use "
                                "jitd.get_backend('xrt', target=...) for another)"
                                % (target, self.target))
            if isinstance(computation, (str, bytes)):
                return self.compile_stablehlo(computation, argument_shapes, compile_options)
            return computation.Compile(argument_shapes, compile_options, client=self)

        compile = CompileForXrt

    return XrtClient


_backends = {}
_backends_lock = threading.Lock()


def XrtBackend(target, platform=None, **remote):
    """A new client of the remote daemon at `target` (xla_client.XrtBackend)."""
    return _xrt_client_class()(target, platform, **check_options(remote))


def get_backend(backend_name="xla", target=None, platform=None, **remote):
    """xla_bridge's backends: 'xla' is the local daemon (jitd.get_client
    (platform)); 'xrt' a remote daemon at `target` ("tcp://HOST:PORT"; default
    $JITD_BACKEND_TARGET), memoized per target and options."""
    from ._client import get_client
    if backend_name == "xla":
        if target is not None or remote:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "get_backend('xla') is the local daemon: target and TLS options "
                            "belong to get_backend('xrt', target=...)")
        return get_client(platform)
    if backend_name != "xrt":
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "unknown backend %r: 'xla' (local) or 'xrt' (remote, with a target)"
                        % (backend_name,))
    target = _normalize_target(target or os.environ.get("JITD_BACKEND_TARGET"))
    remote = check_options(remote)
    key = (target, platform, tuple(sorted(remote.items())))
    with _backends_lock:
        backend = _backends.get(key)
        if backend is None:
            backend = _backends[key] = _xrt_client_class()(target, platform, **remote)
        return backend


def remote_identity(client):
    """The identity a remote daemon gave `client` ("cert:CN", "token:NAME");
    "" for a local client."""
    from . import _lib
    if not _lib.has("jitd_client_remote_identity"):
        return ""
    value = _lib.fn("jitd_client_remote_identity")(client._conn.handle)
    return (value or b"").decode("utf-8", "replace")
