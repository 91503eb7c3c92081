"""The client side without the builder: get_client, compile_stablehlo,
Execute, LocalBuffer, CompileOptions, errors, infeed/outfeed, against a real
daemon (the `daemon` fixture)."""

import os
import re
import threading
import time
import warnings

import numpy as np
import pytest

import jitd
from jitd import _lib
from conftest import assert_strict

ADD_ONE = """
func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<3xf32>
  %0 = stablehlo.add %x, %c : tensor<3xf32>
  return %0 : tensor<3xf32>
}
"""

SUM_AND_MAX = """
func.func @main(%x: tensor<2x2xi32>) -> (tensor<i32>, tensor<2xi32>) {
  %z = stablehlo.constant dense<0> : tensor<i32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0, 1]
       : (tensor<2x2xi32>, tensor<i32>) -> tensor<i32>
  %lo = stablehlo.constant dense<-2147483648> : tensor<i32>
  %m = stablehlo.reduce(%x init: %lo) applies stablehlo.maximum across dimensions = [1]
       : (tensor<2x2xi32>, tensor<i32>) -> tensor<2xi32>
  return %s, %m : tensor<i32>, tensor<2xi32>
}
"""

FEED = """
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:3 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, tensor<i32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  %t2 = "stablehlo.outfeed"(%s, %v#1, %v#2) : (tensor<2xf32>, tensor<i32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
}
"""


class TestGetClient(object):
    def test_memoized(self, client):
        platform = os.environ.get("JITD_TEST_PLATFORM", "interpreter")
        assert jitd.get_client(platform) is client
        assert client.platform == platform

    def test_default_falls_back_with_a_warning(self, daemon):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c = jitd.get_client()
        assert c.requested_platform == "cuda"
        if c.platform != "cuda":
            assert c.platform in ("cpu", "interpreter")
            assert any(str(w.message).startswith("No GPU found, falling back to ")
                       for w in caught), \
                [str(w.message) for w in caught]
        assert jitd.get_client() is c

    def test_cpu_falls_back_to_the_interpreter_visibly(self, daemon):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            c = jitd.get_client("cpu")
        if c.platform == "interpreter":
            assert any("no 'cpu' device" in str(w.message) for w in caught)
        else:
            assert c.platform == "cpu"

    def test_unknown_platform(self, daemon):
        with pytest.raises(jitd.JitdError) as e:
            jitd.get_client("tpu")
        # The daemon has no such device; the message lists the ones it has.
        assert e.value.code == jitd.StatusCode.NOT_FOUND
        assert "tpu" in e.value.message and "interpreter" in e.value.message

    def test_no_daemon_is_unavailable(self, tmp_path, monkeypatch):
        monkeypatch.setenv("JITD_NO_AUTOSTART", "1")  # else one is started
        with pytest.raises(jitd.JitdError) as e:
            jitd.Client("interpreter", socket_path=str(tmp_path / "nobody.sock"))
        assert e.value.code == jitd.StatusCode.UNAVAILABLE
        assert "nobody.sock" in e.value.message


class TestCompileStablehlo(object):
    def test_execute_returns_exact_shapes(self, client):
        exe = jitd.compile_stablehlo(ADD_ONE, client=client)
        assert exe.argument_shapes == [jitd.Shape(np.float32, (3,))]
        out = exe.Execute([np.array([1, 2, 3], np.float32)])
        assert_strict(out, np.array([2, 3, 4], np.float32))

    def test_scalar_result_is_zero_d_and_tuples_are_tuples(self, client):
        exe = client.compile_stablehlo(SUM_AND_MAX)
        s, m = exe.Execute([np.array([[1, 5], [7, 2]], np.int32)])
        assert_strict(s, np.int32(15))
        assert s.shape == ()
        assert_strict(m, np.array([5, 7], np.int32))

    def test_argument_shapes_are_checked_at_compile(self, client):
        exe = client.compile_stablehlo(ADD_ONE, argument_shapes=[jitd.Shape(np.float32, (3,))])
        assert exe.result_shapes == [jitd.Shape(np.float32, (3,))]
        with pytest.raises(jitd.JitdError) as e:
            client.compile_stablehlo(ADD_ONE, argument_shapes=[jitd.Shape(np.float32, (4,))])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "f32[4]" in e.value.message and "f32[3]" in e.value.message

    def test_cache_hit_on_recompile(self, client):
        client.compile_stablehlo(ADD_ONE)
        assert client.compile_stablehlo(ADD_ONE).cache_hit


class TestCompileOptions(object):
    def test_dumps_go_to_the_directories_each_field_names(self, client, tmp_path):
        options = jitd.CompileOptions()
        options.dump_unoptimized_hlo_proto_to = str(tmp_path / "unoptimized")
        options.dump_per_pass_hlo_proto_to = tmp_path / "per_pass"  # a PathLike works too
        options.dump_optimized_hlo_proto_to = str(tmp_path / "optimized")
        exe = client.compile_stablehlo(ADD_ONE, compile_options=options)
        assert not exe.cache_hit  # a compile for dumps always compiles
        assert_strict(exe.Execute([np.array([1, 2, 3], np.float32)]),
                      np.array([2, 3, 4], np.float32))
        assert os.listdir(tmp_path / "unoptimized") == ["000-input.mlir"]
        text = (tmp_path / "unoptimized" / "000-input.mlir").read_text()
        assert "stablehlo.add" in text
        optimized = sorted(os.listdir(tmp_path / "optimized"))
        assert "optimized.mlir" in optimized
        per_pass = sorted(os.listdir(tmp_path / "per_pass"))
        if client.platform == "cpu":
            # The cpu device runs the compiler passes and generates code.
            assert per_pass[0] == "000-input.mlir" and per_pass[1] == "001-inline.mlir"
            assert {"llvm.ll", "llvm.opt.ll", "asm.s"} <= set(optimized)
        else:
            assert per_pass == ["000-input.mlir"]  # the interpreter runs no passes

    def test_dump_dir_gets_everything(self, client, tmp_path):
        options = jitd.CompileOptions()
        options.dump_dir = str(tmp_path)
        client.compile_stablehlo(ADD_ONE, compile_options=options)
        names = set(os.listdir(tmp_path))
        assert {"000-input.mlir", "optimized.mlir"} <= names

    def test_generate_hlo_graph_is_refused(self, client):
        options = jitd.CompileOptions()
        options.generate_hlo_graph = "add"
        with pytest.raises(NotImplementedError) as e:
            client.compile_stablehlo(ADD_ONE, compile_options=options)
        assert "generate_hlo_graph" in str(e.value)
        assert e.value.code == jitd.StatusCode.UNIMPLEMENTED

    def test_hlo_profile_fills_last_profile(self, client):
        plain = client.compile_stablehlo(ADD_ONE)
        plain.Execute([np.array([1, 2, 3], np.float32)])
        assert plain.last_profile is None
        options = jitd.CompileOptions()
        options.hlo_profile = True
        exe = client.compile_stablehlo(ADD_ONE, compile_options=options)
        exe.Execute([np.array([1, 2, 3], np.float32)])
        rows = exe.last_profile
        assert rows, rows
        assert all(r["count"] >= 1 and r["name"] for r in rows)
        assert [r["nanos"] for r in rows] == sorted((r["nanos"] for r in rows), reverse=True)
        names = " ".join(r["name"] for r in rows)
        assert ("stablehlo.add" in names) or ("kernel" in names), names
        assert exe.last_profile_omitted == 0

    def test_replica_count(self, client):
        options = jitd.CompileOptions()
        assert client.compile_stablehlo(ADD_ONE, compile_options=options).replica_count == 1
        options.replica_count = 2  # test_replicas.py runs such programs
        assert client.compile_stablehlo(ADD_ONE, compile_options=options).replica_count == 2
        options.replica_count = 0
        with pytest.raises(jitd.JitdError) as e:
            client.compile_stablehlo(ADD_ONE, compile_options=options)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT


class TestLocalBuffer(object):
    def test_round_trip_keeps_dtype_and_shape(self, client):
        for value in [np.arange(6, dtype=np.float32).reshape(2, 3), np.int64(-7),
                      np.array([True, False]), np.array([1 + 2j], np.complex64),
                      np.zeros((0, 3), np.float64), np.array([1, 2], np.uint16)]:
            buf = jitd.LocalBuffer.from_pyval(value, client=client)
            assert buf.shape() == jitd.Shape.from_numpy(value)
            assert_strict(buf.to_py(), np.asarray(value))

    def test_view_is_the_shared_memory(self, client):
        buf = jitd.LocalBuffer.from_pyval(np.array([1, 2, 3], np.float32), client=client)
        view = buf.view()
        assert view.ctypes.data == _lib.fn("jitd_buffer_data")(buf._handle)
        assert not view.flags.writeable
        copy = buf.to_py()
        assert copy.ctypes.data != view.ctypes.data
        del buf  # the view keeps the memory alive
        assert_strict(view, np.array([1, 2, 3], np.float32))

    def test_execute_with_buffers(self, client):
        exe = client.compile_stablehlo(ADD_ONE)
        arg = jitd.LocalBuffer.from_pyval(np.array([0, 1, 2], np.float32), client=client)
        out = exe.ExecuteWithBuffers([arg])
        assert isinstance(out, jitd.LocalBuffer)
        again = exe.ExecuteWithBuffers([out])
        assert_strict(again.to_py(), np.array([2, 3, 4], np.float32))
        # Whole microseconds: a compiled add can take under one, so 0 is a
        # valid reading; the total still covers the execute and is sane.
        t = exe.last_timing
        assert set(t) == {"queue_micros", "execute_micros", "total_micros"}
        assert t["execute_micros"] <= t["total_micros"] < 10_000_000

    def test_deleted_buffer_is_refused(self, client):
        exe = client.compile_stablehlo(ADD_ONE)
        arg = jitd.LocalBuffer.from_pyval(np.array([0, 1, 2], np.float32), client=client)
        arg.delete()
        assert arg.is_deleted()
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecuteWithBuffers([arg])
        assert e.value.code == jitd.StatusCode.FAILED_PRECONDITION

    def test_tuples_are_not_buffers(self, client):
        with pytest.raises(jitd.JitdNotImplementedError):
            jitd.LocalBuffer.from_pyval((np.float32(1), np.float32(2)), client=client)


class TestErrorsWithText(object):
    def test_ill_typed_program(self, client):
        bad = ADD_ONE.replace("%0 = stablehlo.add %x, %c : tensor<3xf32>",
                              "%0 = stablehlo.add %x, %c : tensor<4xf32>")
        with pytest.raises(jitd.JitdError) as e:
            client.compile_stablehlo(bad)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert re.match(r"^4:\d+: ", e.value.message), e.value.message  # line:col
        assert "tensor<4xf32>" in e.value.message
        # A rule the verifier checks: the message names the op.
        bad = ADD_ONE.replace("%0 = stablehlo.add %x, %c : tensor<3xf32>",
                              "%0 = stablehlo.concatenate %x, %c, dim = 0 : "
                              "(tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>")
        with pytest.raises(jitd.JitdError) as e:
            client.compile_stablehlo(bad)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "stablehlo.concatenate" in e.value.message, e.value.message

    def test_wrong_argument_shape_dtype_and_count(self, client):
        exe = client.compile_stablehlo(ADD_ONE)
        for args, words in [([np.zeros(4, np.float32)], ["argument 0", "f32[4]", "f32[3]"]),
                            ([np.zeros(3, np.float64)], ["f64[3]", "f32[3]"]),
                            ([np.zeros((1, 3), np.float32)], ["f32[1,3]"]),
                            ([], ["0 argument(s) given", "takes 1"]),
                            ([np.zeros(3, np.float32)] * 2, ["2 argument(s)"])]:
            with pytest.raises(jitd.JitdError) as e:
                exe.Execute(args)
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
            for w in words:
                assert w in e.value.message, (w, e.value.message)
        # The client and the daemon are fine afterwards.
        assert_strict(exe.Execute([np.ones(3, np.float32)]), np.full(3, 2, np.float32))

    def test_python_scalars_take_the_parameter_type(self, client):
        exe = client.compile_stablehlo(
            "func.func @main(%x: tensor<i32>) -> tensor<i32> {\n"
            "  %0 = stablehlo.multiply %x, %x : tensor<i32>\n  return %0 : tensor<i32>\n}\n")
        assert_strict(exe.Execute([7]), np.int32(49))
        with pytest.raises(jitd.JitdError):
            exe.Execute([2.5])  # does not fit an s32
        with pytest.raises(jitd.JitdError):
            exe.Execute([np.int64(7)])  # numpy values keep their dtype


class TestInfeedOutfeed(object):
    def test_round_trip_with_a_thread_executing(self, client):
        exe = client.compile_stablehlo(FEED)
        result = {}

        def run():
            try:
                result["value"] = exe.Execute([np.array([1, 2], np.float32)],
                                              deadline_ms=20000)
            except Exception as e:  # reported below
                result["error"] = e

        t = threading.Thread(target=run)
        t.start()
        time.sleep(0.2)  # the execute now waits on the infeed
        assert t.is_alive()
        client.transfer_to_infeed((np.array([10, 20], np.float32), np.int32(7)))
        t.join(30)
        assert not t.is_alive()
        assert "error" not in result, result.get("error")
        assert_strict(result["value"], np.array([11, 22], np.float32))
        out = client.transfer_from_outfeed(
            jitd.Shape.tuple_shape([jitd.Shape(np.float32, (2,)), jitd.Shape(np.int32, ())]))
        assert_strict(out, (np.array([11, 22], np.float32), np.int32(7)))

    def test_feed_first_then_execute(self, client):
        exe = client.compile_stablehlo(FEED)
        client.transfer_to_infeed(np.array([1, 1], np.float32))
        client.transfer_to_infeed(np.int32(3))
        assert_strict(exe.Execute([np.array([0, 1], np.float32)]), np.array([1, 2], np.float32))
        # A wrong shape takes nothing; the right one then reads the value.
        with pytest.raises(jitd.JitdError) as e:
            client.transfer_from_outfeed(jitd.Shape(np.float32, (3,)), timeout_ms=1000)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert_strict(client.transfer_from_outfeed(jitd.Shape(np.float32, (2,))),
                      np.array([1, 2], np.float32))
        assert_strict(client.transfer_from_outfeed(jitd.Shape(np.int32, ())), np.int32(3))

    def test_unfed_infeed_hits_the_deadline(self, client):
        exe = client.compile_stablehlo(FEED)
        start = time.time()
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([np.zeros(2, np.float32)], deadline_ms=200)
        assert time.time() - start >= 0.2
        assert e.value.code == jitd.StatusCode.DEADLINE_EXCEEDED
        assert "stablehlo.infeed" in e.value.message and "deadline" in e.value.message

    def test_empty_outfeed_times_out(self, client):
        with pytest.raises(jitd.JitdError) as e:
            client.transfer_from_outfeed(jitd.Shape(np.float32, (2,)), timeout_ms=50)
        assert e.value.code == jitd.StatusCode.DEADLINE_EXCEEDED

    def test_replicas_out_of_range_are_refused(self, client):
        with pytest.raises(jitd.JitdError) as e:
            client.transfer_to_infeed(np.float32(1), replica_number=100000)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "replica 100000 is out of range [0, " in e.value.message
