"""Constants and parameters: every element type a constant can hold comes
back bit for bit with its dtype and shape; parameters are numbered in
order or explicitly, carry their shapes into the built computation, and
take arguments of exactly those shapes."""

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import ALL_DTYPES

pytestmark = requires_builder

# Values at the edges of each type's range.
EDGE_VALUES = {
    np.bool_: [True, False, False],
    np.int8: [-128, 127, -1],
    np.int16: [-32768, 32767, 7],
    np.int32: [-2**31, 2**31 - 1, -5],
    np.int64: [-2**63, 2**63 - 1, 3],
    np.uint8: [0, 255, 128],
    np.uint16: [0, 65535, 4097],
    np.uint32: [0, 2**32 - 1, 2**31],
    np.uint64: [0, 2**64 - 1, 2**63 + 11],
    np.float16: [65504.0, -6.1e-05, -0.0],
    np.float32: [3.4028235e38, 1.4e-45, -0.0],
    np.float64: [1.7976931348623157e308, 5e-324, -2.75],
    np.complex64: [1e30 - 2j, -0.5 + 7.25j, 0j],
    np.complex128: [1e300 + 1e-300j, -3 - 4j, 1j],
}


class TestConstants(object):

    @pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
    def test_array_constant_round_trips_exactly(self, run, dtype):
        value = np.array(EDGE_VALUES[dtype], dtype).reshape(3, 1)
        b = jitd.ComputationBuilder("const_array")
        op = b.Constant(value)
        assert b.GetShape(op) == jitd.Shape(dtype, (3, 1))
        out = run(b)
        assert_strict(out, value)
        assert out.tobytes() == value.tobytes()  # -0.0 stays -0.0

    @pytest.mark.parametrize("dtype", ALL_DTYPES, ids=lambda d: np.dtype(d).name)
    def test_numpy_scalar_constant_is_zero_d(self, run, dtype):
        value = dtype(EDGE_VALUES[dtype][1])
        b = jitd.ComputationBuilder("const_scalar")
        b.Constant(value)
        out = run(b)
        assert out.shape == () and out.dtype == np.dtype(dtype)
        assert_strict(out, np.array(value))

    @pytest.mark.parametrize("method,dtype,value", [
        ("ConstantF32Scalar", np.float32, -0.125),
        ("ConstantF64Scalar", np.float64, 2.0 ** -1000),
        ("ConstantS32Scalar", np.int32, -2**31),
        ("ConstantS64Scalar", np.int64, 2**62 + 3),
        ("ConstantPredScalar", np.bool_, True),
    ])
    def test_typed_scalar_helpers(self, run, method, dtype, value):
        b = jitd.ComputationBuilder("typed_scalar")
        getattr(b, method)(value)
        assert_strict(run(b), np.array(value, dtype), rtol=0)

    def test_pred_scalar_false_and_not(self, run):
        b = jitd.ComputationBuilder("pred")
        b.Tuple(b.ConstantPredScalar(False), b.Not(b.ConstantPredScalar(0)))
        assert_strict(run(b), (np.bool_(False), np.bool_(True)))

    def test_aliases_of_constant(self, run):
        b = jitd.ComputationBuilder("aliases")
        x = b.NumpyArrayConstant(np.array([5, 6], np.int16))
        y = b.ConstantLiteral(np.array([-1, 1], np.int16))
        b.Mul(x, y)
        assert_strict(run(b), np.array([-5, 6], np.int16))

    def test_non_contiguous_and_fortran_arrays(self, run):
        base = np.arange(24, dtype=np.float64).reshape(4, 6)
        strided = base[::2, 1::2]  # a view with steps
        fortran = np.asfortranarray(base.T)
        b = jitd.ComputationBuilder("layouts")
        b.Tuple(b.Constant(strided), b.Constant(fortran))
        assert_strict(run(b), (np.ascontiguousarray(strided), base.T.copy()))

    def test_empty_arrays(self, run):
        b = jitd.ComputationBuilder("empty")
        b.Tuple(b.Constant(np.zeros((0,), np.int32)), b.Constant(np.zeros((2, 0, 3), np.float32)))
        assert_strict(run(b), (np.zeros((0,), np.int32), np.zeros((2, 0, 3), np.float32)))

    def test_scalar_and_one_element_matrix_differ(self, run):
        b = jitd.ComputationBuilder("shapes")
        b.Tuple(b.ConstantS32Scalar(9), b.Constant(np.array([[9]], np.int32)))
        scalar, matrix = run(b)
        assert scalar.shape == () and matrix.shape == (1, 1)
        with pytest.raises(AssertionError):
            assert_strict(scalar, matrix)

    def test_big_endian_arrays_are_refused(self):
        b = jitd.ComputationBuilder("endian")
        with pytest.raises(jitd.JitdError) as e:
            b.Constant(np.array([1, 2], ">i4"))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "big-endian" in e.value.message

    def test_unsupported_dtype_is_refused(self):
        b = jitd.ComputationBuilder("strings")
        with pytest.raises(jitd.JitdError) as e:
            b.Constant(np.array(["a"]))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT


class TestIota(object):

    @pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.float64, np.int64],
                             ids=lambda d: np.dtype(d).name)
    def test_iota(self, run, dtype):
        b = jitd.ComputationBuilder("iota")
        b.Iota(dtype, 7)
        assert_strict(run(b), np.arange(7, dtype=dtype))

    def test_iota_takes_a_primitive_type(self, run):
        b = jitd.ComputationBuilder("iota_pt")
        b.Iota(jitd.PrimitiveType.S16, 3)
        assert_strict(run(b), np.array([0, 1, 2], np.int16))

    @pytest.mark.parametrize("dimension", [0, 1, 2])
    def test_broadcasted_iota_counts_along_one_dimension(self, run, dimension):
        shape = (2, 3, 4)
        b = jitd.ComputationBuilder("biota")
        b.BroadcastedIota(np.float32, shape, dimension)
        expected = np.indices(shape)[dimension].astype(np.float32)
        assert_strict(run(b), expected)

    def test_broadcasted_iota_with_a_primitive_type(self, run):
        b = jitd.ComputationBuilder("biota_pt")
        b.BroadcastedIota(jitd.PrimitiveType.U32, (3, 2), 0)
        assert_strict(run(b), np.array([[0, 0], [1, 1], [2, 2]], np.uint32))


class TestParameters(object):

    def test_parameters_number_in_order(self, run):
        b = jitd.ComputationBuilder("order")
        x = b.ParameterFromNumpy(np.zeros(3, np.float64))
        y = b.ParameterFromNumpy(np.zeros((), np.float64))
        b.Sub(x, y)  # not commutative: catches swapped parameters
        x_val, y_val = np.array([0.5, -4.0, 10.0]), np.float64(1.25)
        assert_strict(run(b, x_val, y_val), x_val - y_val)

    def test_explicit_numbers_given_out_of_order(self, client):
        b = jitd.ComputationBuilder("explicit")
        second = b.ParameterFromNumpy(np.zeros((), np.int64), parameter_num=1)
        first = b.ParameterFromNumpy(np.zeros(2, np.int64), parameter_num=0)
        b.Div(first, second)
        comp = b.Build()
        assert comp.GetParameterShapes() == [jitd.Shape(np.int64, (2,)),
                                             jitd.Shape(np.int64, ())]
        exe = comp.Compile(client=client)
        assert_strict(exe.Execute([np.array([90, -45], np.int64), np.int64(9)]),
                      np.array([10, -5], np.int64))

    def test_parameter_with_shape_and_name(self, client):
        b = jitd.ComputationBuilder("named")
        v = b.ParameterWithShape(jitd.Shape.array_shape(np.uint16, (2, 2)), name="v")
        b.Add(v, v)
        comp = b.Build()
        assert comp.GetParameterShapes() == [jitd.Shape(np.uint16, (2, 2))]
        assert comp.GetReturnValueShape() == jitd.Shape(np.uint16, (2, 2))
        assert comp.GetProgramShape() == ([jitd.Shape(np.uint16, (2, 2))],
                                          jitd.Shape(np.uint16, (2, 2)))
        text = comp.GetStableHloText()
        assert "@main(" in text and "tensor<2x2xui16>" in text and "stablehlo.add" in text
        exe = comp.Compile(argument_shapes=[jitd.Shape(np.uint16, (2, 2))], client=client)
        value = np.array([[1, 40000], [3, 65535]], np.uint16)
        assert_strict(exe.Execute([value]), value + value)  # wraps modulo 2^16

    def test_tuple_parameter(self, run):
        shape = jitd.Shape.tuple_shape([jitd.Shape(np.float32, (2,)), jitd.Shape(np.int8, ())])
        b = jitd.ComputationBuilder("tuple_param")
        t = b.ParameterWithShape(shape)
        assert b.GetShape(t) == shape
        b.Mul(b.GetTupleElement(t, 0), b.ConvertElementType(b.GetTupleElement(t, 1),
                                                            np.float32))
        comp = b.Build()
        assert comp.GetParameterShapes() == [shape]

    def test_builder_shape_queries(self):
        b = jitd.ComputationBuilder("queries")
        p = b.ParameterFromNumpy(np.zeros((4, 5), np.complex64))
        assert b.GetShape(p) == jitd.Shape(np.complex64, (4, 5))
        r = b.Real(p)
        assert b.GetReturnValueShape(r) == jitd.Shape(np.float32, (4, 5))
        assert b.GetShape(r).rank() == 2
        assert b.GetShape(r).element_type() == np.dtype(np.float32)

    def test_python_scalars_become_the_parameter_type(self, run):
        b = jitd.ComputationBuilder("py_scalars")
        x = b.ParameterFromNumpy(np.float64(0))
        n = b.ParameterFromNumpy(np.int32(0))
        flag = b.ParameterFromNumpy(np.bool_(False))
        b.Select(flag, b.Mul(x, b.ConvertElementType(n, np.float64)), x)
        assert_strict(run(b, 1.5, 4, True), np.float64(6.0))
        assert_strict(run(b, 1.5, 4, False), np.float64(1.5))

    def test_computation_has_a_name_and_a_module(self):
        b = jitd.ComputationBuilder("my_name")
        b.Neg(b.ParameterFromNumpy(np.zeros(2, np.float32)))
        comp = b.Build()
        assert comp.name() == "my_name"
        assert len(comp.GetSerializedModule()) > 0
        assert comp.as_text() == comp.GetStableHloText()
        assert "stablehlo.negate" in comp.as_text()
        assert jitd.LocalComputation is jitd.Computation

    def test_build_with_an_explicit_root(self, run):
        b = jitd.ComputationBuilder("root")
        x = b.ConstantS32Scalar(6)
        y = b.Mul(x, x)
        b.Neg(y)  # the last op, but not the root
        assert_strict(run(b, root=y), np.int32(36))

    def test_compiled_twice_hits_the_cache(self, client):
        b = jitd.ComputationBuilder("cached")
        b.Abs(b.ParameterFromNumpy(np.zeros(3, np.int8)))
        comp = b.Build()
        comp.Compile(client=client)
        exe = comp.Compile(client=client)
        assert exe.cache_hit
        assert exe.argument_shapes == [jitd.Shape(np.int8, (3,))]
        assert exe.result_shapes == [jitd.Shape(np.int8, (3,))]
        assert_strict(exe.Execute([np.array([-128, -7, 7], np.int8)]),
                      np.array([-128, 7, 7], np.int8))  # |-128| wraps to -128 in s8
