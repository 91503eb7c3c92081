"""Tuples and tokens across the wire (issue 16, item 6): computations whose
results are tokens (rooted at an Outfeed, as xla_client's tests build them)
or hold nested tuples, and whose parameters are tuples or tokens, compile
and run through the daemon. xla_client's conventions: a tuple result comes
back as a Python tuple (nested tuples nested), a token as None; a tuple
parameter takes a Python tuple, a token parameter None."""

import threading

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder

F32_2 = jitd.Shape(np.float32, (2,))

TOKEN_ROOT = """
func.func @main(%a: tensor<2xf32>) -> !stablehlo.token {
  %t = stablehlo.create_token : !stablehlo.token
  %t2 = "stablehlo.outfeed"(%a, %t) {outfeed_config = ""} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %t2 : !stablehlo.token
}
"""

NESTED_TUPLE_ROOT = """
func.func @main(%a: tensor<2xf32>, %b: tensor<i32>) -> tuple<tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>> {
  %k = stablehlo.create_token : !stablehlo.token
  %n = stablehlo.negate %a : tensor<2xf32>
  %t1 = stablehlo.tuple %b, %k : tuple<tensor<i32>, !stablehlo.token>
  %t = stablehlo.tuple %n, %t1 : tuple<tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>>
  return %t : tuple<tensor<2xf32>, tuple<tensor<i32>, !stablehlo.token>>
}
"""

TUPLE_AND_TOKEN_ARGUMENTS = """
func.func @main(%p: tuple<tensor<2xf32>, tuple<tensor<i32>>>, %k: !stablehlo.token, %x: tensor<2xf32>) -> (tensor<2xf32>, !stablehlo.token) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>, tuple<tensor<i32>>>) -> tensor<2xf32>
  %inner = stablehlo.get_tuple_element %p[1] : (tuple<tensor<2xf32>, tuple<tensor<i32>>>) -> tuple<tensor<i32>>
  %b = stablehlo.get_tuple_element %inner[0] : (tuple<tensor<i32>>) -> tensor<i32>
  %bf = stablehlo.convert %b : (tensor<i32>) -> tensor<f32>
  %bb = stablehlo.broadcast_in_dim %bf, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %m = stablehlo.multiply %a, %bb : tensor<2xf32>
  %s = stablehlo.add %m, %x : tensor<2xf32>
  %k2 = "stablehlo.outfeed"(%s, %k) {outfeed_config = ""} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %s, %k2 : tensor<2xf32>, !stablehlo.token
}
"""

A = np.array([1.5, -2.0], np.float32)


class TestStableHloText(object):

    def test_token_root_returns_none_and_feeds_the_outfeed(self, client):
        exe = client.compile_stablehlo(TOKEN_ROOT)
        assert exe.result_shapes == []  # a token has no buffer
        assert exe.Execute([A]) is None
        assert_strict(client.transfer_from_outfeed(F32_2, timeout_ms=20000), A)

    def test_nested_tuple_root_returns_nested_tuples(self, client):
        exe = client.compile_stablehlo(NESTED_TUPLE_ROOT)
        assert [str(s) for s in exe.result_shapes] == ["f32[2]", "s32[]"]
        got = exe.Execute([A, np.int32(7)])
        assert isinstance(got, tuple) and len(got) == 2
        assert_strict(got[0], -A)
        assert isinstance(got[1], tuple) and len(got[1]) == 2
        assert_strict(got[1][0], np.int32(7))
        assert got[1][1] is None
        # Called like a function too.
        again = exe(A, np.int32(-1))
        assert_strict(again[1][0], np.int32(-1))

    def test_tuple_and_token_arguments(self, client):
        exe = client.compile_stablehlo(TUPLE_AND_TOKEN_ARGUMENTS)
        x = np.array([10.0, 20.0], np.float32)
        got = exe.Execute([(A, (np.int32(3),)), None, x])
        assert isinstance(got, tuple) and len(got) == 2
        assert_strict(got[0], A * 3 + x)
        assert got[1] is None
        assert_strict(client.transfer_from_outfeed(F32_2, timeout_ms=20000), A * 3 + x)

    def test_tuple_arguments_with_the_wrong_tree_say_where(self, client):
        exe = client.compile_stablehlo(TUPLE_AND_TOKEN_ARGUMENTS)
        x = np.zeros(2, np.float32)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([(A,), None, x])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "argument 0 is a tuple of 1 element(s), the computation expects 2" in str(e.value)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([(A, np.int32(3)), None, x])
        assert "argument 0.1 must be a tuple of 1 element(s)" in str(e.value)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([(A, (np.int32(3),)), x, x])
        assert "argument 1 is a token parameter: pass None" in str(e.value)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute([(A, (np.int32(3),)), None])
        assert "2 argument(s) given, the computation takes 3 ((f32[2], (s32[])), token, f32[2])" \
            in str(e.value)

    def test_buffers_in_trees(self, client):
        exe = client.compile_stablehlo(NESTED_TUPLE_ROOT)
        a = jitd.LocalBuffer.from_pyval(A, client=client)
        b = jitd.LocalBuffer.from_pyval(np.int32(5), client=client)
        out = exe.ExecuteWithBuffers([a, b])
        assert isinstance(out, tuple) and isinstance(out[1], tuple)
        assert_strict(out[0].to_py(), -A)
        assert_strict(out[1][0].to_py(), np.int32(5))
        assert out[1][1] is None


@requires_builder
class TestBuilder(object):

    def test_outfeed_root_as_xla_client_tests_build_it(self, client):
        # xla_client's testInfeedThenOutfeed pattern: the computation is
        # rooted at the Outfeed (a token); Execute runs in a thread while the
        # test feeds the infeed and reads the outfeed.
        b = jitd.ComputationBuilder("round_trip")
        x_and_token = b.InfeedWithToken(b.CreateToken(), jitd.Shape(np.int32, ()))
        x = b.GetTupleElement(x_and_token, 0)
        token = b.GetTupleElement(x_and_token, 1)
        b.OutfeedWithToken(b.Add(x, b.ConstantS32Scalar(100)), token)
        exe = b.Build().Compile(client=client)
        for want in [1, 2, 3]:
            result = {}

            def execute():
                try:
                    result["value"] = exe.Execute([], deadline_ms=20000)
                except Exception as e:  # reported below
                    result["error"] = e

            runner = threading.Thread(target=execute)
            runner.start()
            client.transfer_to_infeed(np.int32(want))
            got = client.transfer_from_outfeed(jitd.Shape(np.int32, ()), timeout_ms=20000)
            runner.join(30)
            assert not runner.is_alive()
            assert "error" not in result, result.get("error")
            assert result["value"] is None  # the token root
            assert_strict(got, np.int32(want + 100))

    def test_implicit_outfeed_root(self, client):
        b = jitd.ComputationBuilder("outfeed_root")
        x = b.ParameterFromNumpy(np.zeros(2, np.float32))
        b.Outfeed(b.Neg(x))
        exe = b.Build().Compile(client=client)
        assert exe.Execute([A]) is None
        assert_strict(client.transfer_from_outfeed(F32_2, timeout_ms=20000), -A)

    def test_nested_tuple_root(self, client):
        b = jitd.ComputationBuilder("nested")
        x = b.ParameterFromNumpy(np.zeros(2, np.float32))
        b.Tuple(x, b.Tuple(b.Neg(x), b.Tuple()), b.CreateToken())
        exe = b.Build().Compile(client=client)
        got = exe.Execute([A])
        assert isinstance(got, tuple) and len(got) == 3
        assert_strict(got[0], A)
        assert isinstance(got[1], tuple) and len(got[1]) == 2
        assert_strict(got[1][0], -A)
        assert got[1][1] == ()
        assert got[2] is None

    def test_tuple_parameter(self, client):
        shape = jitd.Shape.tuple_shape([F32_2, jitd.Shape.tuple_shape(
            [jitd.Shape(np.int32, ())])])
        b = jitd.ComputationBuilder("tuple_param")
        p = b.ParameterWithShape(shape)
        a = b.GetTupleElement(p, 0)
        n = b.GetTupleElement(b.GetTupleElement(p, 1), 0)
        b.Mul(a, b.ConvertElementType(n, np.float32))
        exe = b.Build().Compile(client=client)
        assert_strict(exe.ExecuteWithPythonValues([(A, (np.int32(-2),))]), A * -2)


def test_replicated_tuple_programs_run(client):
    # The signature is flattened at compile time (issue 16): a replicated
    # program with tuples and tokens runs like any other.
    opts = jitd.CompileOptions()
    opts.replica_count = 2
    exe = client.compile_stablehlo("""
func.func @main(%p: tuple<tensor<2xf32>>, %k: !stablehlo.token) -> (tuple<tensor<2xf32>>, !stablehlo.token) {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<2xf32>>) -> tensor<2xf32>
  %r = stablehlo.replica_id : tensor<ui32>
  %f = stablehlo.convert %r : (tensor<ui32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %s = stablehlo.add %a, %b : tensor<2xf32>
  %t = stablehlo.tuple %s : tuple<tensor<2xf32>>
  return %t, %k : tuple<tensor<2xf32>>, !stablehlo.token
}
""", compile_options=opts)
    got = exe.ExecutePerReplica([[(A,), None], [(A,), None]])
    assert len(got) == 2
    for r in range(2):
        assert isinstance(got[r], tuple) and len(got[r]) == 2
        assert isinstance(got[r][0], tuple) and len(got[r][0]) == 1
        assert_strict(got[r][0][0], A + np.float32(r))
        assert got[r][1] is None


@requires_builder
@pytest.mark.filterwarnings("ignore:No GPU found")  # the default client, as the seeds use it
def test_seed_pattern_with_module_level_calls(daemon):
    # As the seeds' xla_client tests spell it: Build().Compile() on the
    # default client, Execute in a thread, the module-level
    # transfer_to_infeed / transfer_from_outfeed; the root is the outfeed's
    # token, which Execute returns as None.
    to_round_trip = np.array([1, 2, 3, 4], np.int32)
    c = jitd.ComputationBuilder("infeed_then_outfeed")
    x_and_token = c.InfeedWithToken(c.CreateToken(), jitd.Shape.from_pyval(to_round_trip[0]))
    x = c.GetTupleElement(x_and_token, 0)
    token = c.GetTupleElement(x_and_token, 1)
    c.OutfeedWithToken(x, token)
    compiled_c = c.Build().Compile()
    for want in to_round_trip:
        returned = []
        execution = threading.Thread(target=lambda: returned.append(compiled_c.Execute([])))
        execution.start()
        jitd.transfer_to_infeed(want)
        got = jitd.transfer_from_outfeed(jitd.Shape.from_pyval(to_round_trip[0]), timeout_ms=20000)
        execution.join(30)
        assert not execution.is_alive()
        assert returned == [None]
        assert_strict(got, want)
