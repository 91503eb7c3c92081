"""The client side: connecting to the daemon, buffers in shared memory,
compiled executables, infeed/outfeed (xla_client's LocalClient,
LocalBuffer, LocalExecutable and CompileOptions over libjitd.so).

Thread safety: a Client, its buffers and executables may be used from any
thread; calls on one connection are serialized by libjitd (one request in
flight), and ctypes (and jitd._fast, the hot path of Execute) release the
GIL during each call. Infeed and outfeed transfers use a second connection
of the Client, so a thread may feed while another thread's Execute waits
on the infeed.

Lifetime: buffers and executables keep their Client's connection alive; the
daemon frees everything a connection held when it closes.

The daemon's life: connecting starts a daemon when none answers at the
socket (libjitd's launcher: `jitd serve` in the background, announced in one
line on stderr; JITD_NO_AUTOSTART=1 in the environment, or
Client(autostart=False), turns that off). When the daemon goes away (stopped,
killed, restarted), the next call on a Client reconnects — to the daemon now
at the socket, or a new one started as above — and retries once; each
LocalExecutable is compiled again on its next use from the program text or
module it was compiled from (a disk-cache hit when the new daemon shares the
cache). LocalBuffers lived in the old daemon and cannot follow: using one
raises FAILED_PRECONDITION saying so (its last contents stay readable with
to_py()).
"""

import ctypes
import json
import os
import re
import shutil
import tempfile
import threading
import warnings

import numpy as np

from . import _fastpath, _lib, _remote
from ._status import JitdError, StatusCode
from ._types import Shape, from_jitd_dtype, shape_of_executable, to_jitd_dtype


class JitdNotImplementedError(JitdError, NotImplementedError):
    """An option or feature jitd does not have (code UNIMPLEMENTED). Also a
    NotImplementedError, as xla_client users expect for unsupported options."""

    def __init__(self, message):
        JitdError.__init__(self, StatusCode.UNIMPLEMENTED, message)


# The device names a jitd build may have. Which ones a daemon really has is
# its own answer: Client.platforms and available_platforms() ask it.
PLATFORMS = ("cpu", "cuda", "interpreter")

# Compiling this on a device tells whether the daemon has it (NOT_FOUND if
# not); the daemon caches it, so the probe is cheap after the first time.
_PROBE = ("func.func @main() -> tensor<i32> {\n"
          "  %c = stablehlo.constant dense<0> : tensor<i32>\n"
          "  return %c : tensor<i32>\n}\n")


class _Connection(object):
    """One jitd_client_t*, closed when the last Python reference goes.

    Buffers and executables that die (their __del__, which the garbage
    collector may run on any thread at any moment) are not destroyed there:
    a call on this connection may be in flight in another thread (an
    Execute waiting on the infeed) and the destroy would wait for it. They
    are queued, and destroyed by the next call made on this connection
    (`drain`), or freed by the daemon when the connection closes.
    """

    def __init__(self, socket_path, timeout_ms, autostart=True, remote=None):
        opts = _lib.ClientOptions()
        opts.socket_path = socket_path.encode() if socket_path else None
        # libjitd starts a daemon when none answers, unless $JITD_NO_AUTOSTART.
        opts.start_daemon_if_missing = 1 if autostart else 0
        opts.timeout_ms = int(timeout_ms or 0)
        opts.struct_size = _remote.fill_options(opts, remote)
        handle = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_client_connect")(ctypes.byref(opts), ctypes.byref(handle)))
        self.handle = handle
        self._dead = []  # (C function name, handle) to destroy; list ops are atomic

    def defer_destroy(self, fn_name, handle):
        self._dead.append((fn_name, handle))

    def drain(self):
        """Destroys what died since the last call; returns the handle."""
        while self._dead:
            try:
                fn_name, h = self._dead.pop()
            except IndexError:
                break
            _lib.fn(fn_name)(h)
        return self.handle

    def __del__(self):
        h = getattr(self, "handle", None)
        if h:
            # Dead buffers/executables first: each C object keeps the
            # connection open until it is destroyed.
            self.drain()
            _lib.fn("jitd_client_close")(h)
            self.handle = None


def _daemon_gone(error):
    """Whether `error` says that the connection's daemon went away (libclient's
    Client::Gone: "... has gone away ..."), after which only a new
    connection helps."""
    return (isinstance(error, JitdError) and error.code == StatusCode.UNAVAILABLE
            and "has gone away" in error.message)


def _lost_buffer_error(what, buffer):
    return JitdError(
        StatusCode.FAILED_PRECONDITION,
        "%s is a LocalBuffer (%s) of a jitd daemon that went away (the daemon at %s was "
        "stopped or restarted since it was made): the daemon's copy was lost with it. Its "
        "last contents are still readable here; make a new one with "
        "LocalBuffer.from_pyval(old.to_py())"
        % (what, buffer.shape(), buffer._client.socket_path or os.environ.get("JITD_SOCKET")
           or "the default socket"))


def _daemon_devices(conn):
    """The devices the daemon listed in its Hello reply (a tuple of names), or
    None when the library or the daemon is too old to say."""
    if not _lib.has("jitd_client_num_devices"):
        return None
    n = _lib.fn("jitd_client_num_devices")(conn.handle)
    if n == 0:
        return None
    name = _lib.fn("jitd_client_device_name")
    return tuple(name(conn.handle, i).decode("utf-8", "replace") for i in range(n))


def _probe_device(conn, device):
    """Whether the daemon has `device`, by compiling a tiny program on it
    (NOT_FOUND if not; for daemons too old to list their devices). The daemon
    caches the program, so the probe is cheap after the first time."""
    exe = ctypes.c_void_p()
    opts = _compile_options_struct(device)
    status = _lib.fn("jitd_client_compile")(conn.drain(), _PROBE.encode(), len(_PROBE),
                                            ctypes.byref(opts), ctypes.byref(exe))
    if status:
        code = _lib.lib().jitd_status_code(status)
        if code == StatusCode.NOT_FOUND:
            _lib.lib().jitd_status_free(status)
            return False
        _lib.check(status)
    _lib.fn("jitd_executable_release")(exe)
    return True


def available_platforms(socket_path=None):
    """The devices the jitd daemon (at `socket_path`, or $JITD_SOCKET, or its
    default place) has, as a tuple of names such as ('interpreter', 'cpu')."""
    conn = _Connection(socket_path, 0)
    listed = _daemon_devices(conn)
    if listed is not None:
        return listed
    return tuple(p for p in PLATFORMS if _probe_device(conn, p))


def _unavailable_reason(conn, device):
    """Why the daemon cannot run `device` (its answer to a compile there:
    "cuda: unavailable (libcuda.so.1 not found ...)" gives the part in
    parentheses), or None when it gives no reason."""
    exe = ctypes.c_void_p()
    opts = _compile_options_struct(device)
    status = _lib.fn("jitd_client_compile")(conn.drain(), _PROBE.encode(), len(_PROBE),
                                            ctypes.byref(opts), ctypes.byref(exe))
    if not status:
        _lib.fn("jitd_executable_release")(exe)
        return None
    l = _lib.lib()
    message = l.jitd_status_message(status).decode("utf-8", "replace")
    l.jitd_status_free(status)
    prefix = device + ": unavailable ("
    if message.startswith(prefix) and message.endswith(")"):
        return message[len(prefix):-1]
    return message


def _compile_options_struct(device, profile=False, dump_dir=None, grid=None,
                            argument_shapes=None):
    """The C jitd_compile_options_t; `grid` = (replicas, partitions,
    device_assignment) as _check_compile_options returns it (0 = the
    module's); `argument_shapes` (array Shapes) the concrete shapes a program
    with dynamic (`?`) dimensions compiles for (C API 10; older libraries
    are not sent them and the shapes are only checked after the compile)."""
    opts = _lib.CompileOptions()
    opts.struct_size = ctypes.sizeof(_lib.CompileOptions)
    opts.device = device.encode()
    opts.profile = 1 if profile else 0
    opts.dump_dir = dump_dir.encode() if dump_dir else None
    replicas, partitions, devices = grid if grid is not None else (0, 0, None)
    if replicas or partitions or devices:
        if _lib.lib().jitd_api_version() < 9:
            raise JitdError(StatusCode.UNIMPLEMENTED,
                            "CompileOptions.replica_count / num_partitions / device_assignment "
                            "need libjitd.so C API 9; the loaded %s is version %d"
                            % (_lib.library_path(), _lib.lib().jitd_api_version()))
        opts.num_replicas = replicas
        opts.num_partitions = partitions
        if devices:
            array, n = _lib.int64_array(devices)
            opts.device_assignment = array
            opts.device_assignment_size = n
            opts._keep = array  # alive as long as the struct
    shapes = list(argument_shapes or ())
    if shapes and all(s.is_array() for s in shapes) and _lib.lib().jitd_api_version() >= 10:
        dtypes = (ctypes.c_int * len(shapes))(*[to_jitd_dtype(s.element_type()) for s in shapes])
        ranks = (ctypes.c_size_t * len(shapes))(*[len(s.dimensions()) for s in shapes])
        dims, _ = _lib.int64_array([d for s in shapes for d in s.dimensions()])
        opts.num_argument_shapes = len(shapes)
        opts.argument_dtypes = dtypes
        opts.argument_ranks = ranks
        opts.argument_dims = dims
        opts._keep_shapes = (dtypes, ranks, dims)  # alive as long as the struct
    return opts


# A dynamic dimension in StableHLO text (`tensor<?x4xf32>`, `tensor<2x?xf32>`).
_DYNAMIC_DIM = re.compile(rb"tensor<(?:\d+x)*\?x")

# Dump file names (devices/compile.h): "000-input.mlir" is the program as
# given, "NNN-<pass>.mlir" the program after pass NNN, "optimized.mlir" what
# the device compiled, and the rest the device's own (LLVM IR, assembly).
_PASS_DUMP = re.compile(r"^\d{3}-")


def _dump_destinations(options):
    """[(directory, predicate on dump file names)] that `options` asks for."""
    if options is None:
        return []
    wanted = []
    for field, keep in (
            ("dump_unoptimized_hlo_proto_to", lambda n: n == "000-input.mlir"),
            ("dump_per_pass_hlo_proto_to", lambda n: bool(_PASS_DUMP.match(n))),
            ("dump_optimized_hlo_proto_to", lambda n: not _PASS_DUMP.match(n)),
            ("dump_dir", lambda n: True)):
        directory = getattr(options, field, None)
        if directory:
            wanted.append((os.fspath(directory), keep))
    return wanted


def _compile_with_options(client, compile_options, compile_fn, grid=None, argument_shapes=None):
    """Runs compile_fn(connection, opts_struct) -> executable handle with the
    C options `compile_options` asks for (reconnecting once when the daemon
    went away), then copies the dumps it asked for into their directories.
    Returns (handle, the connection, its generation)."""
    wanted = _dump_destinations(compile_options)
    profile = bool(getattr(compile_options, "hlo_profile", False))
    staging = tempfile.mkdtemp(prefix="jitd-dumps-") if wanted else None
    try:
        opts = _compile_options_struct(client.device, profile, staging, grid, argument_shapes)
        with client._lock:  # the handle, and the connection it lives on
            handle = client._call(lambda conn: compile_fn(conn, opts))
            compiled = (handle, client._conn, client._generation)
        for directory, keep in wanted:
            os.makedirs(directory, exist_ok=True)
            for name in sorted(os.listdir(staging)):
                if keep(name):
                    shutil.copyfile(os.path.join(staging, name), os.path.join(directory, name))
        return compiled
    finally:
        if staging:
            shutil.rmtree(staging, ignore_errors=True)


class Client(object):
    """A connection to the jitd daemon for one of its platforms (devices:
    'cpu', 'interpreter', ... — `platforms` lists what this daemon has). Use
    get_client() for the memoized default.

    `platform` is the platform in use (it may differ from the one asked for
    after a fallback; `requested_platform` keeps the request).
    """

    def __init__(self, platform="interpreter", socket_path=None, timeout_ms=0,
                 fallback=(), autostart=True, **remote):
        """Connects and checks that the daemon has the platform's device; if
        it has not, tries the platforms in `fallback` in order with a
        warning each, and raises JitdError(NOT_FOUND) naming the daemon's
        devices when none is there. When no daemon answers, one is started
        (announced on stderr) unless `autostart` is False or
        $JITD_NO_AUTOSTART is set; then it is UNAVAILABLE."""
        if not isinstance(platform, str) or not platform:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "platform must be a device name such as 'cpu', got %r" % (platform,))
        self.requested_platform = platform
        self.socket_path = socket_path
        self._timeout_ms = timeout_ms
        self._autostart = autostart
        # tcp://HOST:PORT (here or in $JITD_SOCKET): TLS options (_remote.py).
        self._remote = _remote.check_options(remote)
        self._conn = _Connection(socket_path, timeout_ms, autostart, self._remote)
        # Reconnecting (after the daemon went away) replaces _conn under this
        # lock and counts up _generation; executables and buffers remember
        # the generation they were made in.
        self._lock = threading.RLock()
        self._generation = 0
        self._feed_conn = None
        self._feed_lock = threading.Lock()
        # The daemon's own list (None from a daemon too old to send one:
        # then each candidate is probed).
        self._listed = _daemon_devices(self._conn)
        tried = []
        for candidate in (platform,) + tuple(p for p in fallback if p != platform):
            if self._has_device(candidate):
                if tried == ["cuda"]:
                    # The seeds' fallback: one warning, with the daemon's reason.
                    warnings.warn(
                        "No GPU found, falling back to %s: %s"
                        % (candidate, _unavailable_reason(self._conn, "cuda")),
                        RuntimeWarning, stacklevel=3)
                elif tried:
                    warnings.warn(
                        "jitd: the daemon has no %s device; using %r instead (%s)"
                        % (" or ".join(repr(t) for t in tried), candidate,
                           "results are computed by the reference interpreter, slowly"
                           if candidate == "interpreter" else "host code"),
                        RuntimeWarning, stacklevel=3)
                self.platform = candidate
                return
            tried.append(candidate)
        reasons = ""
        for t in tried:
            reason = _unavailable_reason(self._conn, t) if t in PLATFORMS else None
            if reason:
                reasons += "; %s: unavailable (%s)" % (t, reason)
        raise JitdError(StatusCode.NOT_FOUND,
                        "the jitd daemon has no device %s (it has: %s)%s"
                        % (" or ".join(repr(t) for t in tried), ", ".join(self.platforms),
                           reasons))

    def _has_device(self, device):
        if self._listed is not None:
            return device in self._listed
        return _probe_device(self._conn, device)

    @property
    def platforms(self):
        """The devices the daemon has (a tuple of names), as it says."""
        if self._listed is None:
            self._listed = self._call(
                lambda conn: tuple(p for p in PLATFORMS if _probe_device(conn, p)))
        return self._listed

    @property
    def device(self):
        """The daemon device name this client compiles for."""
        return self.platform

    def _feed(self):
        """The second connection, for infeed/outfeed transfers."""
        with self._feed_lock:
            if self._feed_conn is None:
                # A remote daemon, like a local one, gives this process's
                # connections one set of feed queues (the hello's
                # client_process number).
                self._feed_conn = _Connection(self.socket_path, self._timeout_ms,
                                              self._autostart, self._remote)
            return self._feed_conn

    # -- the daemon's life ----------------------------------------------------

    def _reconnect(self, stale):
        """Replaces the connection `stale`, whose daemon went away, with a new
        one (to the daemon now at the socket, started when none runs) unless
        another thread did so already; returns the current connection.
        Executables recompile on their next use; buffers are lost."""
        with self._lock:
            if self._conn is stale:
                conn = _Connection(self.socket_path, self._timeout_ms, self._autostart,
                                   self._remote)
                self._listed = _daemon_devices(conn)
                self._conn = conn
                self._generation += 1
                with self._feed_lock:
                    self._feed_conn = None  # the daemon's feed queues went with it
            return self._conn

    def _call(self, fn):
        """fn(connection); when the daemon went away, reconnects and calls fn
        once more on the new connection."""
        conn = self._conn
        try:
            return fn(conn)
        except JitdError as e:
            if not _daemon_gone(e):
                raise
        return fn(self._reconnect(conn))

    def _feed_call(self, fn):
        """fn(feed connection), reconnecting that one the same way."""
        conn = self._feed()
        try:
            return fn(conn)
        except JitdError as e:
            if not _daemon_gone(e):
                raise
        with self._feed_lock:
            if self._feed_conn is conn:
                self._feed_conn = None
        return fn(self._feed())

    # -- compiling ----------------------------------------------------------

    def compile_stablehlo(self, text, argument_shapes=(), compile_options=None):
        """Compiles StableHLO text (MLIR) in the daemon -> LocalExecutable.
        With compile_options.replica_count (or num_partitions) the program
        runs as several processes: use LocalExecutable.ExecutePerReplica.
        argument_shapes (Shapes) are the concrete shapes a program with
        dynamic dimensions (`tensor<?x4xf32>`, as jax.export writes shape
        polymorphism) compiles for, one cache entry per shape; for a static
        program they must equal its parameters."""
        grid = _check_compile_options(compile_options)
        if isinstance(text, str):
            text = text.encode("utf-8")
        profile = bool(getattr(compile_options, "hlo_profile", False))
        # Only a program with dynamic dimensions needs its shapes in the
        # request; a static one's are checked against its parameters below.
        sent_shapes = argument_shapes if _DYNAMIC_DIM.search(text) else None

        def recipe(conn, opts=None):
            """Compiles the text on `conn` (again after a reconnect)."""
            opts = opts or _compile_options_struct(self.device, profile, grid=grid,
                                                   argument_shapes=sent_shapes)
            exe = ctypes.c_void_p()
            _lib.check(_lib.fn("jitd_client_compile")(conn.drain(), text, len(text),
                                                      ctypes.byref(opts), ctypes.byref(exe)))
            return exe
        exe, conn, generation = _compile_with_options(self, compile_options, recipe, grid,
                                                      sent_shapes)
        executable = LocalExecutable(self, exe, result_is_tuple=None, recipe=recipe,
                                     conn=conn, generation=generation, profiled=profile)
        executable._check_argument_shapes(argument_shapes)
        executable._device_assignment = grid[2]
        return executable

    def _compile_computation(self, computation, argument_shapes, compile_options,
                             result_is_tuple):
        grid = _check_compile_options(compile_options)
        profile = bool(getattr(compile_options, "hlo_profile", False))

        def recipe(conn, opts=None):
            """Compiles the computation's module on `conn` (again after a
            reconnect: the closure keeps the Computation alive)."""
            opts = opts or _compile_options_struct(self.device, profile, grid=grid)
            exe = ctypes.c_void_p()
            _lib.check(_lib.fn("jitd_client_compile_computation")(
                conn.drain(), computation._handle, ctypes.byref(opts), ctypes.byref(exe)))
            return exe
        exe, conn, generation = _compile_with_options(self, compile_options, recipe, grid)
        executable = LocalExecutable(self, exe, result_is_tuple=result_is_tuple, recipe=recipe,
                                     conn=conn, generation=generation, profiled=profile)
        executable._check_argument_shapes(argument_shapes)
        executable._device_assignment = grid[2]
        return executable

    # -- buffers and feeds ---------------------------------------------------

    def buffer_from_pyval(self, pyval):
        return LocalBuffer.from_pyval(pyval, client=self)

    def transfer_to_infeed(self, value, replica_number=None):
        """Queues `value` (an array or scalar, or a tuple of them: each element
        in order) on this platform's infeed, for stablehlo.infeed ops of this
        process's executions on the daemon's device to read (the daemon keeps
        feed queues per client process; no other process sees them).
        `replica_number` (None = 0): the queue of that process of a
        replicated executable (r * num_partitions + p); one at or past the
        process count of this process's programs on the device raises
        INVALID_ARGUMENT naming the range."""
        replica = _check_replica(replica_number)
        if isinstance(value, (tuple, list)):
            for v in value:
                self.transfer_to_infeed(v, replica)
            return
        a = np.require(np.asarray(value), requirements="C")
        dims, n = _lib.int64_array(a.shape)
        if replica == 0:
            self._feed_call(lambda conn: _lib.check(_lib.fn("jitd_client_transfer_to_infeed")(
                conn.handle, self.device.encode(), to_jitd_dtype(a.dtype), dims, n,
                a.ctypes.data_as(ctypes.c_void_p), a.nbytes)))
        else:
            self._feed_call(lambda conn: _lib.check(
                _lib.fn("jitd_client_transfer_to_infeed_replica")(
                    conn.handle, self.device.encode(), replica, to_jitd_dtype(a.dtype), dims, n,
                    a.ctypes.data_as(ctypes.c_void_p), a.nbytes)))

    def transfer_from_outfeed(self, shape, replica_number=None, timeout_ms=60000):
        """Takes the next value of `shape` (a Shape; a tuple shape takes one
        value per element) from this platform's outfeed, waiting up to
        `timeout_ms` for an execution to write it. A value of another shape
        raises INVALID_ARGUMENT and stays queued. `replica_number` as in
        transfer_to_infeed: the outfeed of that process."""
        replica = _check_replica(replica_number)
        if not isinstance(shape, Shape):
            raise TypeError("transfer_from_outfeed needs a jitd.Shape, got %r" % (shape,))
        if shape.is_tuple():
            return tuple(self.transfer_from_outfeed(s, replica, timeout_ms=timeout_ms)
                         for s in shape.tuple_shapes())
        if not shape.is_array():
            raise JitdError(StatusCode.INVALID_ARGUMENT, "cannot read a %s from the outfeed"
                            % shape)
        out = np.empty(shape.dimensions(), dtype=shape.element_type())
        dims, n = _lib.int64_array(shape.dimensions())
        if replica == 0:
            self._feed_call(lambda conn: _lib.check(_lib.fn("jitd_client_transfer_from_outfeed")(
                conn.handle, self.device.encode(), to_jitd_dtype(out.dtype), dims, n,
                out.ctypes.data_as(ctypes.c_void_p), out.nbytes, int(timeout_ms))))
        else:
            self._feed_call(lambda conn: _lib.check(
                _lib.fn("jitd_client_transfer_from_outfeed_replica")(
                    conn.handle, self.device.encode(), replica, to_jitd_dtype(out.dtype), dims,
                    n, out.ctypes.data_as(ctypes.c_void_p), out.nbytes, int(timeout_ms))))
        return out

    def stats(self):
        """The daemon's statistics (a dict)."""
        def stats(conn):
            out = ctypes.c_void_p()
            _lib.check(_lib.fn("jitd_client_stats_json")(conn.drain(), 0, ctypes.byref(out)))
            return _lib.take_string(out)
        return json.loads(self._call(stats))

    def __repr__(self):
        return "jitd.Client(platform=%r)" % self.platform


def _check_replica(replica_number):
    """The replica (process index) a feed transfer names: None = 0."""
    if replica_number is None:
        return 0
    if isinstance(replica_number, bool) or not isinstance(replica_number, (int, np.integer)):
        raise TypeError("replica_number must be an int, got %r" % (replica_number,))
    if not 0 <= int(replica_number) < 1 << 32:
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "replica_number=%d: replicas are numbered from 0" % int(replica_number))
    return int(replica_number)


_clients = {}
_clients_lock = threading.Lock()


def get_client(platform=None, socket_path=None, **remote):
    """The memoized Client for `platform` ('cpu', 'cuda' or 'interpreter').
    It starts a daemon when none runs (unless $JITD_NO_AUTOSTART) and
    reconnects by itself after the daemon went away (see the module comment).

    None (the default) tries 'cuda', then 'cpu', then 'interpreter', warning
    at each fallback. 'cpu' falls back to 'interpreter' with a warning when
    the daemon has no cpu device; 'cuda' and 'interpreter' never fall back.
    The daemon is found at `socket_path`, or $JITD_SOCKET, or its default
    place. A remote daemon: `socket_path` (or $JITD_SOCKET, or `platform`
    itself) "tcp://HOST:PORT", with TLS keywords tls_ca_file, tls_cert_file,
    tls_key_file, token_file, insecure_loopback (defaults: $JITD_TLS_CA,
    $JITD_TLS_CERT, $JITD_TLS_KEY, $JITD_TOKEN_FILE).
    """
    if _remote.is_remote(platform) and socket_path is None:
        platform, socket_path = None, platform
    remote = _remote.check_options(remote)
    key = (platform, socket_path)
    if remote:
        key += (tuple(sorted(remote.items())),)
    client = _clients.get(key)  # the memoized case, without the lock
    if client is not None:
        return client
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            if platform is None:
                client = Client("cuda", socket_path, fallback=("cpu", "interpreter"), **remote)
            elif platform == "cpu":
                client = Client("cpu", socket_path, fallback=("interpreter",), **remote)
            else:
                client = Client(platform, socket_path, **remote)
            _clients[key] = client
        return client


def fast_path_status():
    """Which path Execute takes for numpy arguments: "jitd._fast (PATH)"
    when the C extension is loaded, else "ctypes: " and why not."""
    if _fastpath.module() is not None:
        return "jitd._fast (%s)" % _fastpath.path()
    return "ctypes: jitd._fast " + _fastpath.reason()


def _reset_clients_for_testing():
    with _clients_lock:
        _clients.clear()


def transfer_to_infeed(value, replica_number=None):
    """xla_client's module-level transfer_to_infeed, on get_client()."""
    get_client().transfer_to_infeed(value, replica_number)


def transfer_from_outfeed(shape, replica_number=None, timeout_ms=60000):
    """xla_client's module-level transfer_from_outfeed, on get_client()."""
    return get_client().transfer_from_outfeed(shape, replica_number, timeout_ms)


def compile_stablehlo(text, argument_shapes=(), compile_options=None, client=None):
    """Compiles StableHLO text on `client` (default get_client())."""
    return (client or get_client()).compile_stablehlo(text, argument_shapes, compile_options)


class CompileOptions(object):
    """xla_client's CompileOptions, mapped to jitd's compile dumps and
    profiles. The dump_* fields name directories (created if missing) that
    get StableHLO text (.mlir), not HLO protos:
      dump_unoptimized_hlo_proto_to: 000-input.mlir, the program as given;
      dump_per_pass_hlo_proto_to: NNN-<pass>.mlir, the program after each
        compiler pass (none on the interpreter, which runs no passes);
      dump_optimized_hlo_proto_to: optimized.mlir, what the device compiled,
        plus the device's own (cpu: kernels.txt, buffers.txt, llvm.ll,
        llvm.opt.ll, asm.s);
      dump_dir (jitd's): all of them.
    A compile with dumps always compiles (a cached program has none).
    hlo_profile: every Execute of the program fills
    LocalExecutable.last_profile. generate_hlo_graph is not supported
    (JitdNotImplementedError).
    replica_count (alias num_replicas) and num_partitions: the program runs
    as replica_count x num_partitions processes (run them with
    LocalExecutable.ExecutePerReplica); None takes the module's
    mhlo.num_replicas / mhlo.num_partitions (else 1), a count contradicting
    them is INVALID_ARGUMENT. device_assignment: optional device ids, one
    per process (r * num_partitions + p)."""

    def __init__(self):
        self.generate_hlo_graph = None
        self.dump_optimized_hlo_proto_to = None
        self.dump_unoptimized_hlo_proto_to = None
        self.dump_per_pass_hlo_proto_to = None
        self.dump_dir = None
        self.hlo_profile = False
        self.replica_count = None
        self.num_partitions = None
        self.device_assignment = None

    @property
    def num_replicas(self):
        return self.replica_count

    @num_replicas.setter
    def num_replicas(self, value):
        self.replica_count = value


def _grid_count(options, name):
    """CompileOptions.`name` as the C options take it: 0 for None."""
    value = getattr(options, name, None)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
            not 1 <= int(value) < 1 << 32:
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "CompileOptions.%s=%r: must be a positive integer (or None for the "
                        "module's own)" % (name, value))
    return int(value)


def _check_compile_options(options):
    """(replicas, partitions, device_assignment) for the C options; 0 =
    the module's."""
    if options is None:
        return (0, 0, None)
    value = getattr(options, "generate_hlo_graph", None)
    if value:
        raise JitdNotImplementedError(
            "CompileOptions.generate_hlo_graph=%r: jitd draws no graphs; the dump_* "
            "fields give the program's text before, during and after compilation" % (value,))
    devices = getattr(options, "device_assignment", None)
    if devices is not None:
        devices = [int(d) for d in np.asarray(devices).reshape(-1)]
    return (_grid_count(options, "replica_count"), _grid_count(options, "num_partitions"),
            devices)


class LocalBuffer(object):
    """An array in the shared memory between this process and the daemon:
    arguments are read and results written there in place, with no copy
    through the socket.

    LocalBuffer.from_pyval(ndarray) copies the array in once; to_py() returns
    a copy out; view() returns a zero-copy ndarray over the shared memory
    (read-only; it keeps the buffer alive). delete() marks the buffer unusable;
    its memory goes back to the daemon and the heap when the object and all
    its views are garbage-collected (so a view never dangles).

    LocalBuffer.from_pyval(ndarray, device="cuda") makes a device-resident
    buffer instead: its bytes live in the GPU's memory (counted on the
    daemon's --max-device-bytes), executes read it and write it in place
    (ExecuteWithBuffers(args, results=[...])), to_py() and copy_from()
    copy through shared memory, view() is refused. device() says where a
    buffer lives ("" = shared memory).
    """

    def __init__(self, client, handle, shape, conn, generation):
        self._client = client
        self._handle = handle
        self._shape = shape
        self._deleted = False
        self._conn = conn  # the connection (daemon) that holds it
        self._generation = generation

    _device = ""

    @staticmethod
    def from_pyval(pyval, client=None, device=None):
        client = client or get_client()
        if isinstance(pyval, (tuple, list)):
            raise JitdNotImplementedError(
                "LocalBuffer.from_pyval of a tuple: jitd buffers are arrays; make one per "
                "element")
        a = np.asarray(pyval)
        buf = LocalBuffer._create(client, Shape(a.dtype, a.shape))
        buf._writable_view()[...] = a
        if device:
            return LocalBuffer._on_device(client, buf, device)
        return buf

    @staticmethod
    def _on_device(client, staging, device):
        """A device-resident buffer on `device` filled from `staging` (a
        shared-memory LocalBuffer of the same client and shape)."""
        if not _lib.has("jitd_buffer_create_on_device"):
            raise JitdError(StatusCode.UNIMPLEMENTED,
                            "device-resident buffers need C API 11; the loaded %s lacks them"
                            % _lib.library_path())
        shape = staging._shape
        dims, n = _lib.int64_array(shape.dimensions())
        handle = ctypes.c_void_p()
        with client._lock:
            staging._current_conn()
            _lib.check(_lib.fn("jitd_buffer_create_on_device")(
                staging._conn.drain(), device.encode(), to_jitd_dtype(shape.element_type()), dims, n,
                staging._handle, ctypes.byref(handle)))
        buf = LocalBuffer(client, handle, shape, staging._conn, staging._generation)
        buf._device = device
        return buf

    def device(self):
        """Where the buffer's bytes live: "" (shared memory) or a device ("cuda")."""
        return self._device

    def copy_from(self, pyval):
        """Copies an array of the buffer's shape into it."""
        self._check_alive()
        a = np.asarray(pyval, dtype=self._shape.element_type())
        if self._device:
            staging = LocalBuffer.from_pyval(a.reshape(self._shape.dimensions()), client=self._client)
            with self._client._lock:
                _lib.check(_lib.fn("jitd_buffer_copy")(self._handle, staging._handle))
            return
        self._writable_view()[...] = a

    def _current_conn(self):
        if self._generation is not None and self._generation != self._client._generation:
            raise _lost_buffer_error("LocalBuffer", self)

    from_py = from_pyval  # xla_client's older name

    @staticmethod
    def _create(client, shape, conn=None, generation=None):
        """A new buffer on `conn` (of `generation`); None = the client's
        current connection, reconnecting once when the daemon went away."""
        dims, n = _lib.int64_array(shape.dimensions())

        def create(c):
            handle = ctypes.c_void_p()
            _lib.check(_lib.fn("jitd_buffer_create")(c.drain(),
                                                     to_jitd_dtype(shape.element_type()), dims,
                                                     n, ctypes.byref(handle)))
            return handle
        if conn is not None:
            return LocalBuffer(client, create(conn), shape, conn, generation)
        with client._lock:
            handle = client._call(create)
            return LocalBuffer(client, handle, shape, client._conn, client._generation)

    def _writable_view(self):
        self._check_alive()
        if self._device:
            raise JitdError(StatusCode.FAILED_PRECONDITION,
                            "the LocalBuffer is on %s, not in shared memory: to_py() copies it out"
                            % self._device)
        dtype = self._shape.element_type()
        dims = self._shape.dimensions()
        size = _lib.fn("jitd_buffer_size_bytes")(self._handle)
        if size == 0:
            return np.empty(dims, dtype=dtype)
        ptr = _lib.fn("jitd_buffer_data")(self._handle)
        raw = (ctypes.c_char * size).from_address(ptr)
        raw.owner = self  # the memory stays mapped while any view lives
        return np.frombuffer(raw, dtype=dtype).reshape(dims)

    def view(self):
        """A zero-copy, read-only ndarray over the buffer's shared memory."""
        v = self._writable_view()
        v.flags.writeable = False
        return v

    def to_py(self):
        """A copy of the contents as an ndarray of the buffer's exact shape
        (a 0-d array for a scalar)."""
        if self._device:
            self._check_alive()
            staging = LocalBuffer._create(self._client, self._shape, self._conn, self._generation)
            with self._client._lock:
                _lib.check(_lib.fn("jitd_buffer_copy")(staging._handle, self._handle))
            return staging.to_py()
        return np.array(self._writable_view(), copy=True)

    def shape(self):
        return self._shape

    def delete(self):
        """Marks the buffer deleted: using it again raises FAILED_PRECONDITION."""
        self._deleted = True

    def is_deleted(self):
        return self._deleted

    def _check_alive(self):
        if self._deleted:
            raise JitdError(StatusCode.FAILED_PRECONDITION, "the LocalBuffer was deleted")

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h:
            self._conn.defer_destroy("jitd_buffer_destroy", h)
            self._handle = None

    def __repr__(self):
        if self._device:
            return "jitd.LocalBuffer(%s, device=%r)" % (self._shape, self._device)
        return "jitd.LocalBuffer(%s)" % self._shape


# Arguments and results of at most this many bytes in all stay in shared
# memory between calls of the fast path (jitd._fast), saving a round trip
# per buffer; larger ones, whose copies cost more than those round trips,
# are made and freed by each call (so that many executables do not hold
# much of the client's shared-memory quota).
_FAST_KEEP_BYTES = 64 << 10


class LocalExecutable(object):
    """A program compiled by the daemon. Execute(arguments) — or exe(x, y) —
    runs it on numpy arrays and returns numpy arrays of the exact result
    shapes (a tuple of them when the computation's root is a tuple), copies
    that the caller owns (they outlive the executable, the client and the
    daemon); ExecuteWithBuffers runs on LocalBuffers and returns LocalBuffers.

    With jitd._fast (jitd/_fast.c; see jitd.fast_path_status()), a call
    whose arguments are ndarrays or numpy scalars of the parameters'
    exact dtypes and shapes runs in C: one daemon round trip, the GIL
    released, the arguments and results of small programs kept in shared
    memory between calls. Any other call (LocalBuffers, Python numbers,
    lists, mismatches) takes the ctypes path, which gives the same results
    and raises the same errors."""

    def __init__(self, client, handle, result_is_tuple, recipe=None, conn=None,
                 generation=0, profiled=False):
        self._client = client
        self._handle = handle
        # recipe(connection) compiles the program again (after a reconnect);
        # _conn / _generation: where the handle lives.
        self._recipe = recipe
        self._conn = conn if conn is not None else client._conn
        self._generation = generation
        L = _lib.fn
        self.argument_shapes = [shape_of_executable(handle, i, False)
                                for i in range(L("jitd_executable_num_arguments")(handle))]
        self.result_shapes = [shape_of_executable(handle, i, True)
                              for i in range(L("jitd_executable_num_results")(handle))]
        self.cache_hit = bool(L("jitd_executable_cache_hit")(handle))
        # Tuples and tokens (C API 13): argument_shapes / result_shapes are
        # the tensor leaves; the structures rebuild the trees (None: every
        # value is a tensor, one per leaf).
        self._argument_tree = self._result_tree = None
        if _lib.has("jitd_executable_result_structure"):
            self._argument_tree = _parse_structure(
                L("jitd_executable_argument_structure")(handle), len(self.argument_shapes))
            self._result_tree = _parse_structure(
                L("jitd_executable_result_structure")(handle), len(self.result_shapes))
        num_values = (len(self.result_shapes) if self._result_tree is None
                      else len(self._result_tree))
        # None: a tuple exactly when there is not one result.
        self._result_is_tuple = (num_values != 1 if result_is_tuple is None
                                 else result_is_tuple)
        self._profiled = profiled
        self._timing_fast = False
        self.last_timing = None
        self._fast = None
        # The process grid (C API 9; one process from older libraries).
        self.replica_count, self.num_partitions = 1, 1
        if _lib.has("jitd_executable_num_replicas"):
            self.replica_count = int(L("jitd_executable_num_replicas")(handle)) or 1
            self.num_partitions = int(L("jitd_executable_num_partitions")(handle)) or 1
        self._attach_fast()
        # With CompileOptions.hlo_profile: the latest Execute's rows, slowest
        # first: {"name": op or kernel, "count": runs, "nanos": total time};
        # rows of while/if/case include their bodies.
        self.last_profile = None
        self.last_profile_omitted = 0
        # ExecutePerReplica's argument and result buffers, kept between calls
        # of small programs (generation, arguments, results); the lock makes
        # one call at a time use them (a concurrent call makes its own).
        self._replicated_kept = None
        self._replicated_lock = threading.Lock()

    @property
    def num_replicas(self):
        return self.replica_count

    @property
    def num_processes(self):
        """Replicas x partitions: the argument lists ExecutePerReplica takes."""
        return self.replica_count * self.num_partitions

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h:
            self._retire_fast()
            self._conn.defer_destroy("jitd_executable_release", h)
            self._handle = None

    @property
    def last_timing(self):
        """The daemon's times of the latest Execute, in microseconds:
        {"queue_micros", "execute_micros", "total_micros"} (None before)."""
        if self._timing_fast and self._fast is not None:
            return self._fast.last_timing()
        return self._last_timing

    @last_timing.setter
    def last_timing(self, value):
        self._last_timing = value
        self._timing_fast = False

    def _attach_fast(self):
        """The fast path's object for the current handle (None without
        jitd._fast)."""
        fast = _fastpath.module()
        # Replicated, tuples or tokens: the ctypes path.
        if fast is not None and self.num_processes == 1 and self._argument_tree is None and \
                self._result_tree is None:
            self._fast = fast.Executable(self._handle.value, self._conn.handle.value,
                                         self._result_is_tuple, _FAST_KEEP_BYTES)

    def _retire_fast(self):
        """Drops the fast path's object; its shared-memory buffers are
        destroyed by the next call on their connection (as LocalBuffers
        are)."""
        fast, self._fast = getattr(self, "_fast", None), None  # None: __init__ failed early
        if fast is not None:
            for h in fast.detach():
                self._conn.defer_destroy("jitd_buffer_destroy", h)

    def _execute_fast(self, fast, arguments, deadline_ms):
        """The results of the fast path, or NotImplemented when this call
        is the ctypes path's (see the class comment; also when the daemon
        went away: the ctypes path reconnects)."""
        if self._generation != self._client._generation:
            return NotImplemented
        conn = self._conn
        if conn._dead:
            conn.drain()
        try:
            if deadline_ms is None:
                out = fast.execute(arguments)
            else:
                out = fast.execute(arguments, int(deadline_ms * 1000))
        except JitdError as e:
            if _daemon_gone(e):
                return NotImplemented
            raise
        if out is not NotImplemented:
            self._timing_fast = True
            if self._profiled:
                self._read_profile()
        return out

    def _current(self):
        """Makes the handle one of the client's current connection: after a
        reconnect, compiles the program again there (from the daemon's
        cache when it has it)."""
        client = self._client
        if self._generation == client._generation:
            return
        with client._lock:
            if self._generation == client._generation:
                return
            if self._recipe is None:
                raise JitdError(StatusCode.FAILED_PRECONDITION,
                                "this executable's jitd daemon went away and it cannot be "
                                "compiled again (its program is unknown); compile it again")
            try:
                handle = client._call(self._recipe)
            except JitdError as e:
                raise JitdError(e.code, "compiling the executable again on the new jitd "
                                "daemon (the old one went away) failed: " + e.message)
            self._retire_fast()
            old_conn, old = self._conn, self._handle
            self._handle, self._conn, self._generation = handle, client._conn, client._generation
            self.cache_hit = bool(_lib.fn("jitd_executable_cache_hit")(handle))
            if old:
                old_conn.defer_destroy("jitd_executable_release", old)
            self._attach_fast()

    def DeviceOrdinals(self):
        """One device ordinal per process (r * num_partitions + p): the
        compile's device_assignment, else 0, 1, ..."""
        devices = getattr(self, "_device_assignment", None)
        return list(devices) if devices else list(range(self.num_processes))

    def _check_argument_shapes(self, argument_shapes):
        if not argument_shapes:
            return
        given = list(argument_shapes)
        if given != self.argument_shapes:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Compile: argument_shapes (%s) differ from the computation's "
                            "parameters (%s)" % (", ".join(str(s) for s in given),
                                                 ", ".join(str(s) for s in self.argument_shapes)))

    def _argument_buffer(self, i, value, into=None):
        """`value` (checked against parameter i) as a LocalBuffer: itself,
        or its data copied into `into` (a buffer of the parameter's shape)
        or into a new buffer."""
        want = self.argument_shapes[i]
        if isinstance(value, LocalBuffer):
            value._check_alive()
            if value._generation != self._generation or value._client is not self._client:
                if value._client is self._client:
                    raise _lost_buffer_error("Execute: argument %d" % i, value)
            if value.shape() != want:
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "Execute: argument %d is a buffer of %s, the computation "
                                "expects %s" % (i, value.shape(), want))
            return value
        if isinstance(value, (bool, int, float, complex)) and want.rank() == 0:
            a = np.asarray(value, dtype=want.element_type())  # a Python scalar
            if a.item() != value:
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "Execute: argument %d (%r) does not fit %s" % (i, value, want))
        else:
            a = np.asarray(value)
        got = Shape(a.dtype, a.shape) if a.dtype in _SUPPORTED else None
        if got != want:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Execute: argument %d is %s, the computation expects %s"
                            % (i, got if got is not None else "a %s array" % a.dtype, want))
        buf = into if into is not None else LocalBuffer._create(
            self._client, Shape(a.dtype, a.shape), self._conn, self._generation)
        buf._writable_view()[...] = a
        return buf

    def _run(self, arguments, deadline_ms, resource=None):
        """Runs on `arguments` (as Execute takes them) -> result buffers;
        `resource`: None or _resource_options' struct. When the daemon went
        away, reconnects, compiles again and runs once more (unless an
        argument was a LocalBuffer: those are lost)."""
        if self.num_processes > 1:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Execute: this executable runs %d replica(s) x %d partition(s) = %d "
                            "processes; use ExecutePerReplica with one argument list per process"
                            % (self.replica_count, self.num_partitions, self.num_processes))
        if len(arguments) != len(self.argument_shapes):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Execute: %d argument(s) given, the computation takes %d (%s)"
                            % (len(arguments), len(self.argument_shapes),
                               ", ".join(str(s) for s in self.argument_shapes)))
        try:
            self._current()
            return self._run_once(arguments, deadline_ms, resource)
        except JitdError as e:
            if not _daemon_gone(e):
                raise
            lost = e
        self._client._reconnect(self._conn)
        for i, a in enumerate(arguments):
            if isinstance(a, LocalBuffer):
                raise _lost_buffer_error("Execute: argument %d" % i, a) from lost
        self._current()
        return self._run_once(arguments, deadline_ms, resource)

    def _run_once(self, arguments, deadline_ms, resource=None):
        buffers = [self._argument_buffer(i, a) for i, a in enumerate(arguments)]
        results = [LocalBuffer._create(self._client, s, self._conn, self._generation)
                   for s in self.result_shapes]
        args = (ctypes.c_void_p * max(1, len(buffers)))(*[b._handle for b in buffers])
        outs = (ctypes.c_void_p * max(1, len(results)))(*[r._handle for r in results])
        timing = _lib.ExecuteTiming()
        timing.struct_size = ctypes.sizeof(_lib.ExecuteTiming)
        self._conn.drain()
        if resource is not None:
            resource.deadline_micros = int(deadline_ms * 1000) if deadline_ms else 0
            status = _lib.fn("jitd_executable_execute_ex")(
                self._handle, args, len(buffers), outs, len(results), ctypes.byref(resource),
                ctypes.byref(timing))
        elif deadline_ms is None:
            status = _lib.fn("jitd_executable_execute")(self._handle, args, len(buffers), outs,
                                                        len(results), ctypes.byref(timing))
        else:
            status = _lib.fn("jitd_executable_execute_with_deadline")(
                self._handle, args, len(buffers), outs, len(results),
                int(deadline_ms * 1000), ctypes.byref(timing))
        _lib.check(status)
        self.last_timing = {"queue_micros": timing.queue_micros,
                            "execute_micros": timing.execute_micros,
                            "total_micros": timing.total_micros}
        self._read_profile()
        return results

    def _read_profile(self):
        """last_profile from the C executable (compiled with hlo_profile)."""
        L = _lib.fn
        rows = []
        for i in range(L("jitd_executable_profile_size")(self._handle)):
            name, count, nanos = ctypes.c_char_p(), ctypes.c_uint64(), ctypes.c_uint64()
            _lib.check(L("jitd_executable_profile_row")(self._handle, i, ctypes.byref(name),
                                                        ctypes.byref(count), ctypes.byref(nanos)))
            rows.append({"name": name.value.decode("utf-8", "replace"), "count": count.value,
                         "nanos": nanos.value})
        self.last_profile = rows if rows else None
        self.last_profile_omitted = int(L("jitd_executable_profile_omitted")(self._handle))

    def _pack(self, values):
        if self._result_tree is not None:
            # xla_client's to_py: nested tuples as Python tuples; a token,
            # which has no Python value there, as None.
            values = _build_tree(self._result_tree, iter(values))
        return tuple(values) if self._result_is_tuple else values[0]

    def _leaves(self, arguments, what):
        """The tensor leaves of `arguments` (nested tuples for tuple
        parameters, None for tokens), depth first; `arguments` itself when
        every parameter is a tensor."""
        if self._argument_tree is None:
            return list(arguments)
        arguments = list(arguments)
        if len(arguments) != len(self._argument_tree):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s: %d argument(s) given, the computation takes %d (%s)"
                            % (what, len(arguments), len(self._argument_tree),
                               ", ".join(_tree_text(n, iter(self.argument_shapes))
                                         for n in self._argument_tree)))
        leaves = []
        for i, (node, value) in enumerate(zip(self._argument_tree, arguments)):
            _flatten_value(node, value, "%s: argument %d" % (what, i), leaves)
        return leaves

    def Execute(self, arguments=(), check_for_deleted_args=True, deadline_ms=None,
                resource_fill=None, resource_seed=None):
        """Runs on `arguments` (ndarrays, numpy or Python scalars, or
        LocalBuffers) whose dtypes and shapes must equal the parameters'
        exactly; returns ndarrays (0-d for scalars). jitd's additions:
        `deadline_ms` bounds this run, e.g. one waiting on the infeed;
        `resource_fill` ('weights' or 'uniform') and/or `resource_seed` (an
        int) fill the program's elided dense_resource constants with seeded
        data, as `jitd run --resource-fill --resource-seed` does (defaults
        'weights' and 0 when only the other is given; without either such a
        program fails asking for a seed)."""
        resource = _resource_options(resource_fill, resource_seed)
        fast = self._fast
        if fast is not None and resource is None:
            out = self._execute_fast(fast, arguments, deadline_ms)
            if out is not NotImplemented:
                return out
        results = self._run(self._leaves(arguments, "Execute"), deadline_ms, resource)
        return self._pack([r.to_py() for r in results])

    # xla_client's name for Execute on Python values (numpy arrays, scalars).
    ExecuteWithPythonValues = Execute

    def ExecutePerReplica(self, arguments, deadline_ms=None, resource_fill=None,
                          resource_seed=None):
        """Runs every process of a replicated executable at once (issue 17):
        `arguments` holds one sequence of arguments per process (replica r,
        partition p at r * num_partitions + p; values as Execute takes them);
        returns a list of each process's results (as Execute returns them).
        The processes' collectives meet in the daemon; stablehlo.infeed /
        outfeed of process i use transfer_to_infeed / transfer_from_outfeed
        with replica_number=i. `deadline_ms` bounds the whole execution: a
        collective that never completes ends there with DEADLINE_EXCEEDED
        naming the op and the processes."""
        arguments = [list(a) for a in arguments]
        self._check_processes(arguments, "ExecutePerReplica")
        if self.num_processes == 1:
            return [self.Execute(arguments[0], deadline_ms=deadline_ms,
                                 resource_fill=resource_fill, resource_seed=resource_seed)]
        results = self._per_replica(arguments, deadline_ms, resource_fill, resource_seed,
                                    to_py=True)
        return [self._pack(mine) for mine in results]

    def ExecuteWithBuffersPerReplica(self, arguments, deadline_ms=None, resource_fill=None,
                                     resource_seed=None):
        """ExecutePerReplica returning LocalBuffers: a list per process of its
        results (a tuple of them for a tuple root), left in shared memory."""
        arguments = [list(a) for a in arguments]
        self._check_processes(arguments, "ExecuteWithBuffersPerReplica")
        if self.num_processes == 1:
            return [self.ExecuteWithBuffers(
                [a if isinstance(a, LocalBuffer) else self._argument_buffer(i, a)
                 for i, a in enumerate(arguments[0])], deadline_ms=deadline_ms,
                resource_fill=resource_fill, resource_seed=resource_seed)]
        results = self._per_replica(arguments, deadline_ms, resource_fill, resource_seed)
        return [self._pack(mine) for mine in results]

    def _check_processes(self, arguments, what):
        if len(arguments) != self.num_processes:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s: %d argument list(s) given, the executable runs "
                            "%d replica(s) x %d partition(s) = %d processes"
                            % (what, len(arguments), self.replica_count, self.num_partitions,
                               self.num_processes))

    def _per_replica(self, arguments, deadline_ms, resource_fill, resource_seed, to_py=False):
        """A replicated run (reconnecting once when the daemon went away) ->
        each process's results: LocalBuffers, or ndarrays with `to_py`."""
        arguments = [self._leaves(mine, "ExecutePerReplica: process %d" % p)
                     for p, mine in enumerate(arguments)]
        for p, mine in enumerate(arguments):
            if len(mine) != len(self.argument_shapes):
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "ExecutePerReplica: process %d: %d argument(s) given, the "
                                "computation takes %d (%s)"
                                % (p, len(mine), len(self.argument_shapes),
                                   ", ".join(str(s) for s in self.argument_shapes)))
        resource = _resource_options(resource_fill, resource_seed)
        try:
            self._current()
            return self._run_replicated(arguments, deadline_ms, resource, to_py)
        except JitdError as e:
            if not _daemon_gone(e):
                raise
            self._client._reconnect(self._conn)
            for p, mine in enumerate(arguments):
                for i, a in enumerate(mine):
                    if isinstance(a, LocalBuffer):
                        raise _lost_buffer_error("ExecutePerReplica: process %d argument %d"
                                                 % (p, i), a) from e
            self._current()
            return self._run_replicated(arguments, deadline_ms, resource, to_py)

    def _run_replicated(self, arguments, deadline_ms, resource, to_py=False):
        """One replicated run -> each process's results (LocalBuffers, or
        ndarrays with `to_py`). A to_py run of a small program reuses the
        buffers kept from the last one when no other call holds them."""
        if to_py and self._replicated_lock.acquire(blocking=False):
            try:
                return self._run_replicated_once(arguments, deadline_ms, resource,
                                                 self._kept_replicated(len(arguments)), True)
            finally:
                self._replicated_lock.release()
        return self._run_replicated_once(arguments, deadline_ms, resource, None, to_py)

    def _kept_replicated(self, processes):
        """(arguments, results): per-process buffers kept for this
        connection, made on first use; None when the program's buffers
        take more than _FAST_KEEP_BYTES in all."""
        def nbytes(s):
            count = int(np.prod(s.dimensions(), dtype=np.int64))
            return np.dtype(s.element_type()).itemsize * count
        total = processes * sum(nbytes(s) for s in self.argument_shapes + self.result_shapes)
        if total > _FAST_KEEP_BYTES:
            return None
        kept = self._replicated_kept
        if kept is None or kept[0] != self._generation or kept[1] is not self._conn:
            def make(s):
                return LocalBuffer._create(self._client, s, self._conn, self._generation)
            kept = (self._generation, self._conn,
                    [[make(s) for s in self.argument_shapes] for _ in range(processes)],
                    [[make(s) for s in self.result_shapes] for _ in range(processes)])
            self._replicated_kept = kept
        return kept[2], kept[3]

    def _run_replicated_once(self, arguments, deadline_ms, resource, kept, to_py):
        per = len(self.result_shapes)
        num_results = len(arguments) * per
        if kept is None:
            buffers = [[self._argument_buffer(i, a) for i, a in enumerate(mine)]
                       for mine in arguments]
            # NULL slots: the library allocates every result in the same round trip.
            outs = (ctypes.c_void_p * max(1, num_results))()
        else:
            kept_args, kept_results = kept
            buffers = [[self._argument_buffer(i, a, into=kept_args[p][i])
                        for i, a in enumerate(mine)] for p, mine in enumerate(arguments)]
            outs = (ctypes.c_void_p * max(1, num_results))(
                *[r._handle for mine in kept_results for r in mine])
        flat_args = [b for mine in buffers for b in mine]
        args = (ctypes.c_void_p * max(1, len(flat_args)))(*[b._handle for b in flat_args])
        if resource is None:
            resource = _lib.ExecuteOptions()
            resource.struct_size = ctypes.sizeof(_lib.ExecuteOptions)
        resource.deadline_micros = int(deadline_ms * 1000) if deadline_ms else 0
        timing = _lib.ExecuteTiming()
        timing.struct_size = ctypes.sizeof(_lib.ExecuteTiming)
        self._conn.drain()
        _lib.check(_lib.fn("jitd_executable_execute_replicated")(
            self._handle, len(arguments), args, len(flat_args), outs, num_results,
            ctypes.byref(resource), ctypes.byref(timing)))
        if kept is None:
            results = [[LocalBuffer(self._client, ctypes.c_void_p(outs[p * per + i]),
                                    self.result_shapes[i], self._conn, self._generation)
                        for i in range(per)] for p in range(len(arguments))]
        else:
            results = kept[1]
        self.last_timing = {"queue_micros": timing.queue_micros,
                            "execute_micros": timing.execute_micros,
                            "total_micros": timing.total_micros}
        self._read_profile()
        if to_py:
            return [[r.to_py() for r in mine] for mine in results]
        return results

    def ExecuteWithPythonValuesPerReplica(self, arguments):
        """xla_client's per-replica form: one sequence of arguments per
        replica (process), a list of results per replica."""
        return self.ExecutePerReplica(arguments)

    def __call__(self, *arguments):
        """exe(x, y) = exe.Execute([x, y])."""
        fast = self._fast
        if fast is not None:
            out = self._execute_fast(fast, arguments, None)
            if out is not NotImplemented:
                return out
        return self._pack([r.to_py() for r in self._run(self._leaves(arguments, "Execute"),
                                                         None)])

    def ExecuteWithBuffers(self, arguments=(), deadline_ms=None, resource_fill=None,
                           resource_seed=None, results=None):
        """Runs on LocalBuffers; returns LocalBuffers (a tuple of them for a
        tuple root). The keywords are Execute's. `results` (a list of
        LocalBuffers of the result shapes, shared-memory or device-resident)
        receives the results in place and is returned."""
        resource = _resource_options(resource_fill, resource_seed)
        arguments = self._leaves(arguments, "ExecuteWithBuffers")
        for i, b in enumerate(arguments):
            if not isinstance(b, LocalBuffer):
                raise TypeError("ExecuteWithBuffers: argument %d is not a LocalBuffer" % i)
        if results is not None:
            return self._pack(self._run_into(list(arguments), list(results), deadline_ms, resource))
        return self._pack(self._run(list(arguments), deadline_ms, resource))

    def _run_into(self, arguments, results, deadline_ms, resource):
        """Execute into the caller's result LocalBuffers (no reconnect: the
        buffers belong to this connection)."""
        if resource is not None:
            raise JitdError(StatusCode.UNIMPLEMENTED,
                            "ExecuteWithBuffers: results=... with resource_fill/resource_seed")
        if len(results) != len(self.result_shapes):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "ExecuteWithBuffers: %d result buffers for %d results"
                            % (len(results), len(self.result_shapes)))
        for i, b in enumerate(list(arguments) + list(results)):
            if not isinstance(b, LocalBuffer):
                raise TypeError("ExecuteWithBuffers: buffer %d is not a LocalBuffer" % i)
            b._check_alive()
        self._current()
        args = (ctypes.c_void_p * max(1, len(arguments)))(*[b._handle for b in arguments])
        outs = (ctypes.c_void_p * max(1, len(results)))(*[r._handle for r in results])
        timing = _lib.ExecuteTiming()
        timing.struct_size = ctypes.sizeof(_lib.ExecuteTiming)
        with self._client._lock:
            self._conn.drain()
            if deadline_ms is None:
                status = _lib.fn("jitd_executable_execute")(
                    self._handle, args, len(arguments), outs, len(results), ctypes.byref(timing))
            else:
                status = _lib.fn("jitd_executable_execute_with_deadline")(
                    self._handle, args, len(arguments), outs, len(results),
                    int(deadline_ms * 1000), ctypes.byref(timing))
        _lib.check(status)
        return results

    ExecuteWithLocalBuffers = ExecuteWithBuffers


def _parse_structure(text, num_leaves):
    """The C API's structure string ('t' tensor, 'k' token, '(' ... ')'
    tuple; jitd.h) -> a list of nodes, one per top-level value: "t", "k" or
    a list of nodes; None for "" (every value a tensor)."""
    text = (text or b"").decode("ascii")
    if not text:
        return None
    stack = [[]]
    leaves = 0
    for c in text:
        if c in "tk":
            stack[-1].append(c)
            leaves += c == "t"
        elif c == "(":
            stack.append([])
        elif c == ")" and len(stack) > 1:
            done = stack.pop()
            stack[-1].append(done)
        else:
            raise JitdError(StatusCode.INTERNAL, "malformed value structure %r" % text)
    if len(stack) != 1 or leaves != num_leaves:
        raise JitdError(StatusCode.INTERNAL, "value structure %r does not describe %d leaves"
                        % (text, num_leaves))
    return stack[0]


def _build_tree(nodes, leaves):
    """Values of `nodes` from the iterator `leaves`: tuples for tuples,
    None for tokens."""
    out = []
    for node in nodes:
        if node == "t":
            out.append(next(leaves))
        elif node == "k":
            out.append(None)
        else:
            out.append(tuple(_build_tree(node, leaves)))
    return out


def _tree_text(node, shapes):
    """XLA's spelling of a node over the leaf shapes' iterator."""
    if node == "t":
        return str(next(shapes))
    if node == "k":
        return "token"
    return "(" + ", ".join(_tree_text(n, shapes) for n in node) + ")"


def _flatten_value(node, value, where, leaves):
    """Appends the tensor leaves of `value` (a tuple/list for a tuple node,
    None or a token for a token) to `leaves`, checking the tree."""
    if node == "t":
        if isinstance(value, tuple) and any(isinstance(v, (tuple, LocalBuffer, np.ndarray))
                                            for v in value):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s is a tuple; the computation expects an array there" % where)
        leaves.append(value)
    elif node == "k":
        if value is not None:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s is a token parameter: pass None (tokens carry no data), got %r"
                            % (where, type(value).__name__))
    else:
        if not isinstance(value, (tuple, list)):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s must be a tuple of %d element(s), got %s"
                            % (where, len(node), type(value).__name__))
        if len(value) != len(node):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s is a tuple of %d element(s), the computation expects %d"
                            % (where, len(value), len(node)))
        for k, (n, v) in enumerate(zip(node, value)):
            _flatten_value(n, v, "%s.%d" % (where, k), leaves)


# resource_fill names -> jitd_resource_fill_t.
_RESOURCE_FILLS = {"uniform": 0, "weights": 1}


def _resource_options(fill, seed):
    """The jitd_execute_options_t for Execute's resource_fill/resource_seed
    (None when neither is given)."""
    if fill is None and seed is None:
        return None
    fill = "weights" if fill is None else fill
    if fill not in _RESOURCE_FILLS:
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "Execute: resource_fill=%r: expected 'weights' (kernels scaled by their "
                        "fan-in, vectors in [0.5, 1.5)) or 'uniform' ([-1, 1))" % (fill,))
    seed = 0 if seed is None else seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or \
            not 0 <= int(seed) < 1 << 64:
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "Execute: resource_seed=%r: expected an integer in [0, 2**64)" % (seed,))
    if not _lib.has("jitd_executable_execute_ex"):
        raise JitdError(StatusCode.UNIMPLEMENTED,
                        "Execute: resource_fill/resource_seed need libjitd.so's "
                        "jitd_executable_execute_ex (C API 5); the loaded %s lacks it"
                        % _lib.library_path())
    opts = _lib.ExecuteOptions()
    opts.has_resource_seed = 1
    opts.resource_seed = int(seed)
    if _lib.lib().jitd_api_version() >= 8:
        opts.struct_size = ctypes.sizeof(_lib.ExecuteOptions)
        opts.resource_fill = _RESOURCE_FILLS[fill]
    elif fill != "uniform":
        raise JitdError(StatusCode.UNIMPLEMENTED,
                        "Execute: resource_fill=%r needs libjitd.so C API 8; the loaded %s is "
                        "version %d (it fills 'uniform' only)"
                        % (fill, _lib.library_path(), _lib.lib().jitd_api_version()))
    else:
        opts.struct_size = _lib.EXECUTE_OPTIONS_V5_SIZE
    return opts


_SUPPORTED = frozenset(np.dtype(d) for d in (
    np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.float16, np.float32, np.float64, np.complex64, np.complex128))
