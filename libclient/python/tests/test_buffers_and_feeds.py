"""Built computations with LocalBuffers (arguments and results in shared
memory), and the builder's tokens and feeds: Infeed / Outfeed (tokens
threaded in program order), InfeedWithToken / OutfeedWithToken,
CreateToken / AfterAll, and ReplicaId."""

import threading
import time

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import adder

pytestmark = requires_builder


def _compile(client, builder, root=None):
    return builder.Build(root).Compile(client=client)


class TestLocalBuffers(object):

    def test_arguments_and_result_as_buffers(self, client):
        b = jitd.ComputationBuilder("fma")
        x = b.ParameterFromNumpy(np.zeros(4, np.float64))
        y = b.ParameterFromNumpy(np.zeros(4, np.float64))
        b.Add(b.Mul(x, y), b.ConstantF64Scalar(0.5))
        exe = _compile(client, b)
        xs = np.array([1.0, -2.0, 0.25, 3.0])
        ys = np.array([4.0, 4.0, 8.0, -1.0])
        out = exe.ExecuteWithBuffers([jitd.LocalBuffer.from_pyval(xs, client=client),
                                      jitd.LocalBuffer.from_pyval(ys, client=client)])
        assert isinstance(out, jitd.LocalBuffer)
        assert out.shape() == jitd.Shape(np.float64, (4,))
        assert_strict(out.to_py(), xs * ys + 0.5)

    def test_a_result_buffer_feeds_the_next_run(self, client):
        b = jitd.ComputationBuilder("step")
        v = b.ParameterFromNumpy(np.zeros((2, 2), np.int32))
        b.Add(b.Mul(v, b.ConstantS32Scalar(2)), b.ConstantS32Scalar(1))
        exe = _compile(client, b)
        buf = jitd.LocalBuffer.from_pyval(np.zeros((2, 2), np.int32), client=client)
        for _ in range(4):
            buf = exe.ExecuteWithBuffers([buf])
        assert_strict(buf.to_py(), np.full((2, 2), 15, np.int32))  # 0, 1, 3, 7, 15

    def test_tuple_results_are_tuples_of_buffers(self, client):
        b = jitd.ComputationBuilder("parts")
        z = b.ParameterFromNumpy(np.zeros(2, np.complex64))
        b.Tuple(b.Real(z), b.Imag(z), b.Abs(z))
        exe = _compile(client, b)
        value = np.array([3 - 4j, -1j], np.complex64)
        out = exe.ExecuteWithBuffers([jitd.LocalBuffer.from_py(value, client=client)])
        assert isinstance(out, tuple) and len(out) == 3
        assert all(isinstance(o, jitd.LocalBuffer) for o in out)
        assert_strict(tuple(o.to_py() for o in out),
                      (value.real, value.imag, np.abs(value)), rtol=1e-6)

    def test_buffer_shapes(self, client):
        for value in [np.uint8(200), np.zeros((3, 0, 2), np.int16),
                      np.ones((2, 5), np.float16), np.array([True])]:
            buf = jitd.LocalBuffer.from_pyval(value, client=client)
            shape = buf.shape()
            assert shape.dimensions() == np.shape(value)
            assert np.dtype(shape.element_type()) == np.asarray(value).dtype
            assert_strict(buf.to_py(), np.asarray(value))

    def test_mixing_buffers_and_arrays_in_execute(self, client):
        b = jitd.ComputationBuilder("mixed")
        b.Sub(b.ParameterFromNumpy(np.zeros(3, np.int64)),
              b.ParameterFromNumpy(np.zeros(3, np.int64)))
        exe = _compile(client, b)
        left = jitd.LocalBuffer.from_pyval(np.array([10, 20, 30], np.int64), client=client)
        assert_strict(exe.Execute([left, np.array([1, 2, 3], np.int64)]),
                      np.array([9, 18, 27], np.int64))

    def test_deleted_buffer_is_refused_and_others_still_work(self, client):
        b = jitd.ComputationBuilder("neg")
        b.Neg(b.ParameterFromNumpy(np.zeros(2, np.float32)))
        exe = _compile(client, b)
        gone = jitd.LocalBuffer.from_pyval(np.array([1, 2], np.float32), client=client)
        gone.delete()
        assert gone.is_deleted()
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecuteWithBuffers([gone])
        assert e.value.code == jitd.StatusCode.FAILED_PRECONDITION
        with pytest.raises(jitd.JitdError) as e:
            gone.to_py()
        assert e.value.code == jitd.StatusCode.FAILED_PRECONDITION
        fresh = jitd.LocalBuffer.from_pyval(np.array([1, 2], np.float32), client=client)
        assert_strict(exe.ExecuteWithBuffers([fresh]).to_py(), np.array([-1, -2], np.float32))

    def test_buffer_of_the_wrong_shape_is_refused(self, client):
        b = jitd.ComputationBuilder("want3")
        b.Neg(b.ParameterFromNumpy(np.zeros(3, np.float32)))
        exe = _compile(client, b)
        with pytest.raises(jitd.JitdError) as e:
            exe.ExecuteWithBuffers([jitd.LocalBuffer.from_pyval(np.zeros(4, np.float32),
                                                                client=client)])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "f32[4]" in e.value.message and "f32[3]" in e.value.message

    def test_plain_arrays_are_not_buffers(self, client):
        b = jitd.ComputationBuilder("typed")
        b.Neg(b.ParameterFromNumpy(np.zeros(3, np.float32)))
        with pytest.raises(TypeError):
            _compile(client, b).ExecuteWithBuffers([np.zeros(3, np.float32)])


class TestTokensAndReplicas(object):

    def test_tokens_join(self, run):
        b = jitd.ComputationBuilder("tokens")
        joined = b.AfterAll([b.CreateToken(), b.CreateToken(), b.CreateToken()])
        assert b.GetShape(joined).is_token()
        assert b.GetShape(joined) == jitd.Shape.token_shape()
        b.ConstantS32Scalar(-4)  # the root; the tokens only order effects
        assert_strict(run(b), np.int32(-4))

    def test_replica_id_is_a_u32_zero(self, run):
        b = jitd.ComputationBuilder("replica")
        rid = b.ReplicaId()
        assert b.GetShape(rid) == jitd.Shape(np.uint32, ())
        assert_strict(run(b), np.uint32(0))

    def test_replica_id_in_arithmetic(self, run):
        b = jitd.ComputationBuilder("offset")
        x = b.ParameterFromNumpy(np.zeros(3, np.int64))
        b.Add(x, b.ConvertElementType(b.ReplicaId(), np.int64))
        assert_strict(run(b, np.array([-4, 0, 11], np.int64)), np.array([-4, 0, 11], np.int64))


class TestFeeds(object):

    def test_infeed_values_are_taken_one_per_run_in_order(self, client):
        b = jitd.ComputationBuilder("take")
        v = b.Infeed(jitd.Shape(np.float32, (2,)))
        b.Mul(v, b.ConstantF32Scalar(10.0))
        exe = _compile(client, b)
        values = [np.array([0.5, 1.0], np.float32), np.array([-2.0, 3.0], np.float32),
                  np.array([7.0, 0.0], np.float32)]
        for value in values:
            client.transfer_to_infeed(value)
        for value in values:
            assert_strict(exe.Execute(deadline_ms=20000), value * 10)

    def test_two_infeeds_read_in_program_order(self, client):
        b = jitd.ComputationBuilder("two_reads")
        first = b.Infeed(jitd.Shape(np.int32, ()))
        second = b.Infeed(jitd.Shape(np.int32, ()))
        b.Sub(first, second)
        exe = _compile(client, b)
        client.transfer_to_infeed(np.int32(50))
        client.transfer_to_infeed(np.int32(8))
        assert_strict(exe.Execute(deadline_ms=20000), np.int32(42))

    def test_outfeeds_arrive_in_program_order(self, client):
        b = jitd.ComputationBuilder("emit")
        x = b.ParameterFromNumpy(np.zeros(3, np.int16))
        b.Outfeed(x)
        b.Outfeed(b.Neg(x))
        root = b.Add(x, x)
        exe = _compile(client, b, root)
        x_val = np.array([1, -2, 300], np.int16)
        assert_strict(exe.Execute([x_val]), x_val * 2)
        shape = jitd.Shape(np.int16, (3,))
        assert_strict(client.transfer_from_outfeed(shape, timeout_ms=20000), x_val)
        assert_strict(client.transfer_from_outfeed(shape, timeout_ms=20000), -x_val)

    def test_round_trip_while_the_run_waits(self, client):
        # The run blocks on the infeed until this thread feeds it; the value
        # comes back through the outfeed, transformed.
        b = jitd.ComputationBuilder("echo")
        got = b.Infeed(jitd.Shape(np.float64, (2, 2)))
        b.Outfeed(b.Transpose(got, [1, 0]))
        root = b.Reduce(got, b.ConstantF64Scalar(0.0), adder(np.float64), [0, 1])
        exe = _compile(client, b, root)
        for k in range(3):
            value = np.array([[1.0, 2.0], [3.0, 4.0]]) * (k + 1)
            result = {}

            def execute():
                try:
                    result["value"] = exe.Execute(deadline_ms=20000)
                except Exception as e:  # reported by the assert below
                    result["error"] = e

            runner = threading.Thread(target=execute)
            runner.start()
            time.sleep(0.05)
            client.transfer_to_infeed(value)
            echoed = client.transfer_from_outfeed(jitd.Shape(np.float64, (2, 2)),
                                                  timeout_ms=20000)
            runner.join(30)
            assert not runner.is_alive()
            assert "error" not in result, result.get("error")
            assert_strict(echoed, value.T.copy())
            assert_strict(result["value"], np.float64(value.sum()))

    def test_tuple_infeed_and_outfeed_with_explicit_tokens(self, client):
        shape = jitd.Shape.tuple_shape([jitd.Shape(np.int32, (3,)), jitd.Shape(np.float32, ())])
        b = jitd.ComputationBuilder("tokens_explicit")
        value_and_token = b.InfeedWithToken(b.CreateToken(), shape)
        assert b.GetShape(value_and_token) == jitd.Shape.tuple_shape(
            [shape, jitd.Shape.token_shape()])
        value = b.GetTupleElement(value_and_token, 0)
        token = b.GetTupleElement(value_and_token, 1)
        counts = b.GetTupleElement(value, 0)
        scale = b.GetTupleElement(value, 1)
        scaled = b.Mul(b.ConvertElementType(counts, np.float32), scale)
        after = b.OutfeedWithToken(b.Tuple(scaled, counts), token)
        assert b.GetShape(after).is_token()
        root = b.Reduce(scaled, b.ConstantF32Scalar(0.0), adder(np.float32), [0])
        exe = _compile(client, b, root)
        client.transfer_to_infeed((np.array([2, 0, -5], np.int32), np.float32(0.5)))
        assert_strict(exe.Execute(deadline_ms=20000), np.float32(-1.5))
        out_shape = jitd.Shape.tuple_shape([jitd.Shape(np.float32, (3,)),
                                            jitd.Shape(np.int32, (3,))])
        assert_strict(client.transfer_from_outfeed(out_shape, timeout_ms=20000),
                      (np.array([1.0, 0.0, -2.5], np.float32), np.array([2, 0, -5], np.int32)))

    def test_a_run_with_nothing_fed_hits_its_deadline(self, client):
        b = jitd.ComputationBuilder("starved")
        b.Infeed(jitd.Shape(np.uint8, (1,)))
        exe = _compile(client, b)
        with pytest.raises(jitd.JitdError) as e:
            exe.Execute(deadline_ms=100)
        assert e.value.code == jitd.StatusCode.DEADLINE_EXCEEDED

