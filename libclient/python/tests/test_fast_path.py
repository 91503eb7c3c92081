"""The per-call hot path in C (jitd._fast, libclient/python/jitd/_fast.c)
against the ctypes path: the same results and the same errors for every
kind of call, results that own their memory, and calls from several
threads at once.

ctest sets $JITD_PYTHON_FAST to the built extension (or 0 when it is not
built); with a path set, the extension must load. Each comparison runs the
same executable twice: with its fast path, and with the fast path taken
away (exe._fast = None), which is the package without the extension.
"""

import contextlib
import gc
import os
import signal
import threading

import numpy as np
import pytest

import jitd
from jitd import _client, _fastpath
from conftest import assert_strict, requires_builder
from test_daemon_lifecycle import _serve, place  # noqa: F401 (place is a fixture)

ADD = """
func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
"""

# Two results of two dtypes: (a * b, a - b) on i32[2,3] and f64[].
TWO_RESULTS = """
func.func public @main(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>, %s: tensor<f64>)
    -> (tensor<2x3xi32>, tensor<f64>) {
  %0 = stablehlo.multiply %a, %b : tensor<2x3xi32>
  %1 = stablehlo.add %s, %s : tensor<f64>
  return %0, %1 : tensor<2x3xi32>, tensor<f64>
}
"""

# Large enough that the fast path makes and frees its buffers per call
# (more than _client._FAST_KEEP_BYTES in all).
BIG_N = 1 << 18
BIG = """
func.func public @main(%a: tensor<Nxf32>, %b: tensor<Nxf32>) -> tensor<Nxf32> {
  %0 = stablehlo.subtract %a, %b : tensor<Nxf32>
  return %0 : tensor<Nxf32>
}
""".replace("N", str(BIG_N))

# Negation of a tensor<2x3xT> (the identity for pred: not).
NEGATE = """
func.func public @main(%a: tensor<2x3xT>) -> tensor<2x3xT> {
  %0 = stablehlo.OP %a : tensor<2x3xT>
  return %0 : tensor<2x3xT>
}
"""
NEGATE_TYPES = [(np.float16, "f16", "negate"), (np.float32, "f32", "negate"),
                (np.float64, "f64", "negate"), (np.int8, "i8", "negate"),
                (np.int16, "i16", "negate"), (np.int32, "i32", "negate"),
                (np.int64, "i64", "negate"), (np.uint8, "ui8", "not"),
                (np.uint16, "ui16", "not"), (np.uint32, "ui32", "not"),
                (np.uint64, "ui64", "not"), (np.bool_, "i1", "not"),
                (np.complex64, "complex<f32>", "negate"),
                (np.complex128, "complex<f64>", "negate")]


def fast_expected():
    env = os.environ.get("JITD_PYTHON_FAST", "")
    return env not in ("", "0", "off", "no", "false")


requires_fast = pytest.mark.skipif(_fastpath.module() is None,
                                   reason="jitd._fast is not loaded: %s" % _fastpath.reason())


@contextlib.contextmanager
def ctypes_path(exe):
    """exe without its fast path, as the package runs without jitd._fast."""
    fast, exe._fast = exe._fast, None
    try:
        yield exe
    finally:
        exe._fast = fast


@contextlib.contextmanager
def fast_only(exe):
    """Fails the test if a call on exe takes the ctypes path."""
    def refuse(*args, **kwargs):
        raise AssertionError("the call took the ctypes path")
    exe._run = refuse
    try:
        yield exe
    finally:
        del exe._run


def both_paths(exe, call):
    """call(exe) with the fast path and without it -> (fast, ctypes)."""
    fast = call(exe)
    with ctypes_path(exe):
        slow = call(exe)
    return fast, slow


def both_errors(exe, call):
    """The JitdErrors call(exe) raises on both paths -> (fast, ctypes)."""
    errors = []
    for ctx in (contextlib.nullcontext(exe), ctypes_path(exe)):
        with ctx:
            with pytest.raises(jitd.JitdError) as e:
                call(exe)
            errors.append(e.value)
    return errors


@pytest.fixture(scope="module")
def add(client):
    return client.compile_stablehlo(ADD)


X = np.array([1.5, -2, 3, 40], np.float32)
Y = np.array([0.25, 2, -8, 2], np.float32)


class TestLoading(object):
    def test_extension_loads_when_built(self):
        if fast_expected():
            assert _fastpath.module() is not None, _fastpath.reason()
            assert jitd.fast_path_status().startswith("jitd._fast (")
        else:
            assert _fastpath.module() is None
            assert jitd.fast_path_status().startswith("ctypes: ")

    @requires_fast
    def test_bound_to_the_package_library(self):
        assert _fastpath.module().API_VERSION == jitd._lib.lib().jitd_api_version()

    @requires_fast
    def test_executables_get_a_fast_path(self, add):
        assert add._fast is not None and add._fast.keeps_buffers


@requires_fast
class TestSameResults(object):
    def test_add(self, add):
        with fast_only(add):
            fast = add.Execute([X, Y])
            called = add(X, Y)
            python_values = add.ExecuteWithPythonValues([X, Y])
        with ctypes_path(add):
            slow = add.Execute([X, Y])
        for r in (fast, called, python_values, slow):
            assert_strict(r, X + Y)
        per_replica = add.ExecuteWithPythonValuesPerReplica([[X, Y]])
        assert isinstance(per_replica, list) and len(per_replica) == 1
        assert_strict(per_replica[0], X + Y)
        with pytest.raises(jitd.JitdError) as e:  # a one-replica program
            add.ExecuteWithPythonValuesPerReplica([[X, Y], [X, Y]])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT

    def test_tuple_of_two_dtypes(self, client):
        exe = client.compile_stablehlo(TWO_RESULTS)
        a = np.arange(6, dtype=np.int32).reshape(2, 3)
        b = np.array([[7, -1, 2], [3, 3, -9]], np.int32)
        s = np.float64(1.25)  # a numpy scalar for the 0-d parameter
        expected = (a * b, np.float64(2.5))
        with fast_only(exe):
            fast = exe.Execute([a, b, s])
            called = exe(a, b, np.array(1.25))
        fast2, slow = both_paths(exe, lambda e: e.Execute((a, b, s)))
        for r in (fast, called, fast2, slow):
            assert_strict(r, expected)

    @pytest.mark.parametrize("dtype,mlir,op", NEGATE_TYPES,
                             ids=[t[1] for t in NEGATE_TYPES])
    def test_every_dtype(self, client, dtype, mlir, op):
        exe = client.compile_stablehlo(NEGATE.replace("T", mlir).replace("OP", op))
        a = (np.arange(6) - 2).reshape(2, 3).astype(dtype)
        if dtype is np.bool_:
            a = np.array([[True, False, True], [False, False, True]])
        with fast_only(exe):
            fast = exe(a)
        slow = both_paths(exe, lambda e: e.Execute([a]))[1]
        expected = np.logical_not(a) if dtype is np.bool_ else (~a if op == "not" else -a)
        assert_strict(fast, expected)
        assert_strict(slow, expected)

    def test_non_contiguous_inputs(self, client):
        exe = client.compile_stablehlo(TWO_RESULTS)
        base = np.arange(24, dtype=np.int32).reshape(4, 6)
        a = base[::2, ::2]                      # strided
        b = np.arange(6, dtype=np.int32).reshape(3, 2).T  # transposed (Fortran order)
        assert not a.flags.c_contiguous and not b.flags.c_contiguous
        with fast_only(exe):
            fast = exe(a, b, np.float64(3))
        slow = both_paths(exe, lambda e: e.Execute([a, b, np.float64(3)]))[1]
        assert_strict(fast, (a * b, np.float64(6)))
        assert_strict(slow, (a * b, np.float64(6)))
        # Inputs are read, never written.
        assert_strict(base, np.arange(24, dtype=np.int32).reshape(4, 6))

    def test_large_inputs_use_per_call_buffers(self, client):
        exe = client.compile_stablehlo(BIG)
        assert not exe._fast.keeps_buffers
        a = np.linspace(-1, 1, BIG_N, dtype=np.float32)
        b = np.full(BIG_N, 0.5, np.float32)
        with fast_only(exe):
            first = exe(a, b)
            second = exe(b, a)
        slow = both_paths(exe, lambda e: e.Execute([a, b]))[1]
        assert_strict(first, a - b)
        assert_strict(second, b - a)
        assert_strict(slow, a - b)

    def test_results_are_fresh_owned_arrays(self, add):
        first = add(X, Y)
        second = add(Y, Y)
        assert first.flags.owndata and first.flags.writeable and first.flags.c_contiguous
        assert not np.shares_memory(first, second)
        first[0] = 100  # ours to write
        assert_strict(add(X, Y), X + Y)

    def test_results_survive_executable_and_client(self, daemon):
        c = jitd.Client(os.environ.get("JITD_TEST_PLATFORM", "interpreter"))
        exe = c.compile_stablehlo(ADD)
        with fast_only(exe):
            out = exe(X, Y)
        del exe, c
        gc.collect()
        junk = [np.full(4, 7, np.float32) for _ in range(100)]
        assert_strict(out, X + Y)
        del junk

    def test_timing_and_deadline(self, add):
        add(X, Y)
        t = add.last_timing
        assert set(t) == {"queue_micros", "execute_micros", "total_micros"}
        assert t["total_micros"] >= t["execute_micros"]
        with fast_only(add):
            assert_strict(add.Execute([X, Y], deadline_ms=5000), X + Y)
        with ctypes_path(add):
            add.Execute([X, Y])
        assert set(add.last_timing) == set(t)

    def test_a_retired_fast_path_declines(self, client):
        # After detach (the executable died or was compiled again), a thread
        # still holding the old object must not touch its handles.
        exe = client.compile_stablehlo(ADD)
        fast = exe._fast
        assert_strict(exe(X, Y), X + Y)
        exe._retire_fast()
        assert exe._fast is None
        assert fast.execute([X, Y]) is NotImplemented
        assert fast.detach() == []
        assert_strict(exe(X, Y), X + Y)  # the ctypes path

    def test_buffers_are_handed_back(self, client):
        exe = client.compile_stablehlo(ADD)
        exe(X, Y)
        conn = exe._conn
        before = len(conn._dead)
        del exe
        gc.collect()
        # Three kept buffers and the executable wait for the next call.
        assert len(conn._dead) >= before + 4
        client.stats()
        assert not conn._dead


@requires_fast
class TestSameErrors(object):
    @pytest.mark.parametrize("args", [
        [X],                                            # too few
        [X, Y, X],                                      # too many
        [X.astype(np.float64), Y],                      # dtype
        [X, Y.astype(np.int32)],
        [X.reshape(2, 2), Y],                           # shape
        [X[:3], Y],
        [np.float32(1), Y],                             # a scalar for an array
        [X.astype(">f4"), Y],                           # byte order
        [[1.0, 2.0, 3.0, 4.0], Y],                      # a list (float64)
        ["abcd", Y],
        [np.zeros(4, [("a", np.float32)]), Y],          # a structured dtype
    ], ids=["few", "many", "f64", "i32", "2x2", "3", "scalar", "big-endian", "list", "str",
            "structured"])
    def test_bad_arguments(self, add, args):
        fast, slow = both_errors(add, lambda e: e.Execute(args))
        assert fast.code == slow.code == jitd.StatusCode.INVALID_ARGUMENT
        assert fast.message == slow.message
        assert "Execute:" in fast.message

    def test_bad_call_arity(self, add):
        fast, slow = both_errors(add, lambda e: e(X))
        assert fast.code == slow.code and fast.message == slow.message
        assert "1 argument(s) given, the computation takes 2" in fast.message

    def test_python_scalars_take_the_ctypes_path(self, client):
        exe = client.compile_stablehlo(TWO_RESULTS)
        a = np.ones((2, 3), np.int32)
        fast, slow = both_paths(exe, lambda e: e(a, a, 2.0))
        assert_strict(fast, (a, np.float64(4)))
        assert_strict(slow, (a, np.float64(4)))

    @requires_builder
    def test_daemon_errors_pass_through(self, client):
        # An execute the daemon stops: an infeed nobody feeds, cut by a
        # deadline (the same status on both paths).
        b = jitd.ComputationBuilder("starved")
        x = b.ParameterFromNumpy(np.float32(0))
        b.Add(x, b.Infeed(jitd.Shape(np.float32, ())))
        exe = b.Build().Compile(client=client)
        fast, slow = both_errors(exe, lambda e: e.Execute([np.float32(1)], deadline_ms=20))
        assert fast.code == slow.code == jitd.StatusCode.DEADLINE_EXCEEDED
        assert type(fast) is type(slow)


@requires_fast
class TestThreads(object):
    def test_concurrent_calls_on_one_executable(self, add):
        errors = []

        def work(k):
            try:
                a = np.full(4, k, np.float32)
                b = np.arange(4, dtype=np.float32) * k
                for _ in range(200):
                    assert_strict(add(a, b), a + b)
            except Exception as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[0]

    @requires_builder
    def test_the_gil_is_released_during_the_call(self, client):
        # The call waits in the daemon for an infeed value that only this
        # thread, running Python meanwhile, can send.
        b = jitd.ComputationBuilder("waits")
        x = b.ParameterFromNumpy(np.float32(0))
        b.Add(x, b.Infeed(jitd.Shape(np.float32, ())))
        exe = b.Build().Compile(client=client)
        result = {}

        def call():
            try:
                with fast_only(exe):
                    result["value"] = exe.Execute([np.float32(1)], deadline_ms=30000)
            except Exception as e:  # noqa: BLE001
                result["error"] = e
        runner = threading.Thread(target=call)
        runner.start()
        spins = 0
        while runner.is_alive() and spins < 20:
            spins += 1  # Python runs here while the call waits
            threading.Event().wait(0.01)
        client.transfer_to_infeed(np.float32(2))
        runner.join(60)
        assert not runner.is_alive()
        assert "error" not in result, result.get("error")
        assert_strict(result["value"], np.float32(3))
        assert spins == 20

    def test_concurrent_calls_on_two_clients(self, daemon):
        platform = os.environ.get("JITD_TEST_PLATFORM", "interpreter")
        exes = [jitd.Client(platform).compile_stablehlo(ADD) for _ in range(2)]
        errors = []

        def work(exe, k):
            try:
                a = np.full(4, k, np.float32)
                for _ in range(200):
                    assert_strict(exe(a, a), a + a)
            except Exception as e:  # noqa: BLE001
                errors.append(e)
        threads = [threading.Thread(target=work, args=(exes[k % 2], k)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors[0]


def test_get_client_is_memoized(daemon):
    platform = os.environ.get("JITD_TEST_PLATFORM", "interpreter")
    assert jitd.get_client(platform) is jitd.get_client(platform)
    assert _client._clients[(platform, None)] is jitd.get_client(platform)


@requires_fast
def test_the_fast_path_follows_a_daemon_restart(place):
    socket_path, pids = place
    cache_dir = os.path.join(os.path.dirname(socket_path), "cache")
    first = _serve(socket_path, cache_dir)
    pids.append(first.pid)
    c = jitd.Client(os.environ.get("JITD_TEST_PLATFORM", "interpreter"), socket_path=socket_path)
    exe = c.compile_stablehlo(ADD)
    with fast_only(exe):
        assert_strict(exe(X, Y), X + Y)
    old = exe._fast
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    pids.append(_serve(socket_path, cache_dir).pid)
    # The fast path finds the daemon gone and leaves the call to the ctypes
    # path, which reconnects and compiles again; then the fast path is back,
    # on the new connection.
    assert_strict(exe(X, Y), X + Y)
    assert exe._fast is not None and exe._fast is not old
    with fast_only(exe):
        assert_strict(exe.Execute([Y, Y]), Y + Y)
