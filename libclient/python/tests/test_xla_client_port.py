"""xla_client's test classes (xla_client_test.py of the seeds) ported to
jitd: ComputationsWithConstantsTest, ParametersTest, LocalBufferTest,
SingleOpTest, EmbeddedComputationsTest and ErrorTest, plus the infeed /
outfeed round trip, on a real daemon. Results are compared strictly: the
dtype and the shape must be exactly the expected ones (assert_strict)."""

import itertools
import math
import threading
import time

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder

pytestmark = requires_builder


def NumpyArrayF32(*args, **kwargs):
    return np.array(*args, dtype=np.float32, **kwargs)


def NumpyArrayF64(*args, **kwargs):
    return np.array(*args, dtype=np.float64, **kwargs)


def NumpyArrayS32(*args, **kwargs):
    return np.array(*args, dtype=np.int32, **kwargs)


def NumpyArrayS64(*args, **kwargs):
    return np.array(*args, dtype=np.int64, **kwargs)


def NumpyArrayBool(*args, **kwargs):
    return np.array(*args, dtype=np.bool_, **kwargs)


class ComputationTest(object):
    """Base: builds, compiles and executes on the test daemon's client."""

    @pytest.fixture(autouse=True)
    def _client(self, client):
        self.client = client

    def _NewComputation(self, name="test"):
        return jitd.ComputationBuilder(name)

    def _Execute(self, c, arguments):
        compiled = c.Build().Compile(client=self.client)
        return compiled.Execute(arguments)

    def _ExecuteAndCompareExact(self, c, arguments=(), expected=None):
        assert_strict(self._Execute(c, arguments), expected)

    def _ExecuteAndCompareClose(self, c, arguments=(), expected=None, rtol=1e-6, atol=0.0):
        assert_strict(self._Execute(c, arguments), expected, rtol=rtol, atol=atol)


class TestComputationsWithConstants(ComputationTest):

    def testConstantScalarSumF32(self):
        c = self._NewComputation()
        c.Add(c.ConstantF32Scalar(1.11), c.ConstantF32Scalar(3.14))
        self._ExecuteAndCompareClose(c, expected=np.float32(4.25))

    def testConstantScalarSumF64(self):
        c = self._NewComputation()
        c.Add(c.ConstantF64Scalar(1.11), c.ConstantF64Scalar(3.14))
        self._ExecuteAndCompareClose(c, expected=np.float64(4.25))

    def testConstantScalarSumS32(self):
        c = self._NewComputation()
        c.Add(c.ConstantS32Scalar(1), c.ConstantS32Scalar(2))
        self._ExecuteAndCompareExact(c, expected=np.int32(3))

    def testConstantScalarSumS64(self):
        c = self._NewComputation()
        c.Add(c.ConstantS64Scalar(1), c.ConstantS64Scalar(2))
        self._ExecuteAndCompareExact(c, expected=np.int64(3))

    def testScalarIsNotAMatrix(self):
        c = self._NewComputation()
        c.Add(c.ConstantS32Scalar(1), c.ConstantS32Scalar(3))
        result = self._Execute(c, ())
        assert result.shape == ()
        with pytest.raises(AssertionError):
            assert_strict(result, NumpyArrayS32([[4]]))

    def testConstantVectorMulF32(self):
        c = self._NewComputation()
        c.Mul(c.Constant(NumpyArrayF32([2.5, 3.3, -1.2, 0.7])),
              c.Constant(NumpyArrayF32([-1.2, 2, -2, -3])))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([-3, 6.6, 2.4, -2.1]))

    def testConstantVectorMulF64(self):
        c = self._NewComputation()
        c.Mul(c.Constant(NumpyArrayF64([2.5, 3.3, -1.2, 0.7])),
              c.Constant(NumpyArrayF64([-1.2, 2, -2, -3])))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF64([-3, 6.6, 2.4, -2.1]))

    def testConstantVectorScalarDivF32(self):
        c = self._NewComputation()
        c.Div(c.Constant(NumpyArrayF32([1.5, 2.5, 3.0, -10.8])), c.ConstantF32Scalar(2.0))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([0.75, 1.25, 1.5, -5.4]))

    def testConstantVectorScalarDivF64(self):
        c = self._NewComputation()
        c.Div(c.Constant(NumpyArrayF64([1.5, 2.5, 3.0, -10.8])), c.ConstantF64Scalar(2.0))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF64([0.75, 1.25, 1.5, -5.4]))

    def testConstantVectorScalarPowF32(self):
        c = self._NewComputation()
        c.Pow(c.Constant(NumpyArrayF32([1.5, 2.5, 3.0])), c.ConstantF32Scalar(2.))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([2.25, 6.25, 9.]))

    def testConstantVectorScalarPowF64(self):
        c = self._NewComputation()
        c.Pow(c.Constant(NumpyArrayF64([1.5, 2.5, 3.0])), c.ConstantF64Scalar(2.))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF64([2.25, 6.25, 9.]))

    def testIota(self):
        c = self._NewComputation()
        c.Iota(np.float32, 10)
        self._ExecuteAndCompareExact(c, expected=np.arange(10, dtype=np.float32))

    def testBroadcastedIota(self):
        c = self._NewComputation()
        c.BroadcastedIota(np.int64, (2, 3), 1)
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS64([[0, 1, 2], [0, 1, 2]]))

    def testBooleanAnd(self):
        c = self._NewComputation()
        c.And(c.Constant(NumpyArrayBool([True, False, True, False])),
              c.Constant(NumpyArrayBool([True, True, False, False])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayBool([True, False, False, False]))

    def testBooleanOr(self):
        c = self._NewComputation()
        c.Or(c.Constant(NumpyArrayBool([True, False, True, False])),
             c.Constant(NumpyArrayBool([True, True, False, False])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayBool([True, True, True, False]))

    def testBooleanXor(self):
        c = self._NewComputation()
        c.Xor(c.Constant(NumpyArrayBool([True, False, True, False])),
              c.Constant(NumpyArrayBool([True, True, False, False])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayBool([False, True, True, False]))

    def testSum2DF32(self):
        c = self._NewComputation()
        c.Add(c.Constant(NumpyArrayF32([[1, 2, 3], [4, 5, 6]])),
              c.Constant(NumpyArrayF32([[1, -1, 1], [-1, 1, -1]])))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[2, 1, 4], [3, 6, 5]]))

    def testShiftLeft(self):
        c = self._NewComputation()
        c.ShiftLeft(c.Constant(NumpyArrayS32([3])), c.Constant(NumpyArrayS32([2])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([12]))

    def testShiftRightArithmetic(self):
        c = self._NewComputation()
        c.ShiftRightArithmetic(c.Constant(NumpyArrayS32([-2])), c.Constant(NumpyArrayS32([1])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([-1]))

    def testShiftRightLogical(self):
        c = self._NewComputation()
        c.ShiftRightLogical(c.Constant(NumpyArrayS32([-1])), c.Constant(NumpyArrayS32([1])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([2**31 - 1]))

    def testSum2DWith1DBroadcastDim0F32(self):
        # Adds a vector to each column of a matrix.
        c = self._NewComputation()
        c.Add(c.Constant(NumpyArrayF32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
              c.Constant(NumpyArrayF32([10, 20, 30])), broadcast_dimensions=(0,))
        self._ExecuteAndCompareClose(
            c, expected=NumpyArrayF32([[11, 12, 13], [24, 25, 26], [37, 38, 39]]))

    def testSum2DWith1DBroadcastDim1F64(self):
        # Adds a vector to each row of a matrix.
        c = self._NewComputation()
        c.Add(c.Constant(NumpyArrayF64([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
              c.Constant(NumpyArrayF64([10, 20, 30])), broadcast_dimensions=(1,))
        self._ExecuteAndCompareClose(
            c, expected=NumpyArrayF64([[11, 22, 33], [14, 25, 36], [17, 28, 39]]))

    def testConstantAxpyF32(self):
        c = self._NewComputation()
        c.Add(c.Mul(c.ConstantF32Scalar(2), c.Constant(NumpyArrayF32([2.2, 3.3, 4.4, 5.5]))),
              c.Constant(NumpyArrayF32([100, -100, 200, -200])))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([104.4, -93.4, 208.8, -189]))

    def testConstantAxpyF64(self):
        c = self._NewComputation()
        c.Add(c.Mul(c.ConstantF64Scalar(2), c.Constant(NumpyArrayF64([2.2, 3.3, 4.4, 5.5]))),
              c.Constant(NumpyArrayF64([100, -100, 200, -200])))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF64([104.4, -93.4, 208.8, -189]))

    def testConstantPredScalar(self):
        c = self._NewComputation()
        c.Not(c.ConstantPredScalar(False))
        self._ExecuteAndCompareExact(c, expected=np.bool_(True))

    def testConstantsOfEveryNumpyType(self):
        for dtype in [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                      np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
                      np.complex128]:
            value = np.array([[1, 0], [1, 1]], dtype=dtype)
            c = self._NewComputation()
            c.Constant(value)
            self._ExecuteAndCompareExact(c, expected=value)
            c = self._NewComputation()
            c.Constant(dtype(1))
            self._ExecuteAndCompareExact(c, expected=np.array(1, dtype=dtype))


class TestParameters(ComputationTest):
    f32_scalar_2 = NumpyArrayF32(2.0)
    f32_4vector = NumpyArrayF32([-2.3, 3.3, -4.3, 5.3])
    f64_scalar_2 = NumpyArrayF64(2.0)
    f64_4vector = NumpyArrayF64([-2.3, 3.3, -4.3, 5.3])
    s32_scalar_3 = NumpyArrayS32(3)
    s32_4vector = NumpyArrayS32([10, 15, -2, 7])
    s64_scalar_3 = NumpyArrayS64(3)
    s64_4vector = NumpyArrayS64([10, 15, -2, 7])

    def testScalarTimesVectorAutonumberF32(self):
        c = self._NewComputation()
        p0 = c.ParameterFromNumpy(self.f32_scalar_2)
        p1 = c.ParameterFromNumpy(self.f32_4vector)
        c.Mul(p0, p1)
        self._ExecuteAndCompareClose(c, arguments=[self.f32_scalar_2, self.f32_4vector],
                                     expected=NumpyArrayF32([-4.6, 6.6, -8.6, 10.6]))

    def testScalarTimesVectorAutonumberF64(self):
        c = self._NewComputation()
        p0 = c.ParameterFromNumpy(self.f64_scalar_2)
        p1 = c.ParameterFromNumpy(self.f64_4vector)
        c.Mul(p0, p1)
        self._ExecuteAndCompareClose(c, arguments=[self.f64_scalar_2, self.f64_4vector],
                                     expected=NumpyArrayF64([-4.6, 6.6, -8.6, 10.6]))

    def testScalarTimesVectorS32(self):
        c = self._NewComputation()
        p0 = c.ParameterFromNumpy(self.s32_scalar_3)
        p1 = c.ParameterFromNumpy(self.s32_4vector)
        c.Mul(p0, p1)
        self._ExecuteAndCompareExact(c, arguments=[self.s32_scalar_3, self.s32_4vector],
                                     expected=NumpyArrayS32([30, 45, -6, 21]))

    def testScalarTimesVectorS64(self):
        c = self._NewComputation()
        p0 = c.ParameterFromNumpy(self.s64_scalar_3)
        p1 = c.ParameterFromNumpy(self.s64_4vector)
        c.Mul(p0, p1)
        self._ExecuteAndCompareExact(c, arguments=[self.s64_scalar_3, self.s64_4vector],
                                     expected=NumpyArrayS64([30, 45, -6, 21]))

    def testScalarMinusVectorExplicitNumberingF32(self):
        # Use explicit numbering and pass parameter_num first. Sub is used
        # since it's not commutative and can help catch parameter reversal.
        c = self._NewComputation()
        p1 = c.ParameterFromNumpy(self.f32_4vector, parameter_num=1)
        p0 = c.ParameterFromNumpy(self.f32_scalar_2, parameter_num=0)
        c.Sub(p1, p0)
        self._ExecuteAndCompareClose(c, arguments=[self.f32_scalar_2, self.f32_4vector],
                                     expected=NumpyArrayF32([-4.3, 1.3, -6.3, 3.3]))

    def testScalarMinusVectorExplicitNumberingF64(self):
        c = self._NewComputation()
        p1 = c.ParameterFromNumpy(self.f64_4vector, parameter_num=1)
        p0 = c.ParameterFromNumpy(self.f64_scalar_2, parameter_num=0)
        c.Sub(p1, p0)
        self._ExecuteAndCompareClose(c, arguments=[self.f64_scalar_2, self.f64_4vector],
                                     expected=NumpyArrayF64([-4.3, 1.3, -6.3, 3.3]))

    def testParameterWithShapeAndName(self):
        c = self._NewComputation()
        x = c.ParameterWithShape(jitd.Shape.array_shape(np.int32, (2,)), name="x")
        c.Neg(x)
        comp = c.Build()
        assert comp.GetParameterShapes() == [jitd.Shape(np.int32, (2,))]
        exe = comp.Compile(argument_shapes=[jitd.Shape(np.int32, (2,))], client=self.client)
        assert_strict(exe.Execute([NumpyArrayS32([1, -2])]), NumpyArrayS32([-1, 2]))


class TestLocalBuffer(ComputationTest):

    def _Execute(self, c, arguments):
        compiled = c.Build().Compile(client=self.client)
        arg_buffers = [jitd.LocalBuffer.from_pyval(arg, client=self.client)
                       for arg in arguments]
        result_buffer = compiled.ExecuteWithBuffers(arg_buffers)
        return result_buffer.to_py()

    def testConstantSum(self):
        c = self._NewComputation()
        c.Add(c.ConstantF32Scalar(1.11), c.ConstantF32Scalar(3.14))
        self._ExecuteAndCompareClose(c, expected=np.float32(4.25))

    def testOneParameterSum(self):
        c = self._NewComputation()
        c.Add(c.ParameterFromNumpy(NumpyArrayF32(0.)), c.ConstantF32Scalar(3.14))
        self._ExecuteAndCompareClose(c, arguments=[NumpyArrayF32(1.11)],
                                     expected=np.float32(4.25))

    def testTwoParameterSum(self):
        c = self._NewComputation()
        c.Add(c.ParameterFromNumpy(NumpyArrayF32(0.)), c.ParameterFromNumpy(NumpyArrayF32(0.)))
        self._ExecuteAndCompareClose(c, arguments=[NumpyArrayF32(1.11), NumpyArrayF32(3.14)],
                                     expected=np.float32(4.25))

    def testCannotCallWithDeletedBuffers(self):
        c = self._NewComputation()
        c.Add(c.ParameterFromNumpy(NumpyArrayF32(0.)), c.ConstantF32Scalar(3.14))
        arg = NumpyArrayF32(1.11)
        compiled = c.Build().Compile(client=self.client)
        arg_buffer = jitd.LocalBuffer.from_pyval(arg, client=self.client)
        arg_buffer.delete()
        with pytest.raises(jitd.JitdError):
            compiled.ExecuteWithBuffers([arg_buffer])

    def testFromPyIsFromPyval(self):
        assert_strict(jitd.LocalBuffer.from_py(NumpyArrayS32([1, 2]), client=self.client).to_py(),
                      NumpyArrayS32([1, 2]))

    def testShape(self):
        pyval = np.array([[1., 2.]], np.float32)
        local_buffer = jitd.LocalBuffer.from_pyval(pyval, client=self.client)
        xla_shape = local_buffer.shape()
        assert xla_shape.dimensions() == (1, 2)
        assert np.dtype(xla_shape.element_type()) == np.dtype(np.float32)

    def testRoundTrip(self):
        for value in [np.float32(1.5), np.arange(12, dtype=np.int16).reshape(3, 4),
                      np.zeros((2, 0), np.float64), np.array([True, False, True])]:
            assert_strict(jitd.LocalBuffer.from_pyval(value, client=self.client).to_py(),
                          np.asarray(value))

    def testTupleResultIsATupleOfBuffers(self):
        c = self._NewComputation()
        p = c.ParameterFromNumpy(NumpyArrayS32([1, 2]))
        c.Tuple(c.Neg(p), c.Add(p, p))
        compiled = c.Build().Compile(client=self.client)
        out = compiled.ExecuteWithBuffers(
            [jitd.LocalBuffer.from_pyval(NumpyArrayS32([1, 2]), client=self.client)])
        assert isinstance(out, tuple) and len(out) == 2
        assert_strict(out[0].to_py(), NumpyArrayS32([-1, -2]))
        assert_strict(out[1].to_py(), NumpyArrayS32([2, 4]))


class TestSingleOp(ComputationTest):
    """One op at a time; every op of the builder."""

    def testConcatenateF32(self):
        c = self._NewComputation()
        c.ConcatInDim([c.Constant(NumpyArrayF32([1.0, 2.0, 3.0])),
                       c.Constant(NumpyArrayF32([4.0, 5.0, 6.0]))], dimension=0)
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([1, 2, 3, 4, 5, 6]))

    def testConcatenate2D(self):
        c = self._NewComputation()
        c.ConcatInDim([c.Constant(NumpyArrayS32([[1], [2]])),
                       c.Constant(NumpyArrayS32([[3, 4], [5, 6]]))], dimension=1)
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 3, 4], [2, 5, 6]]))

    def testConvertElementType(self):
        xla_types = {np.bool_: jitd.PrimitiveType.PRED, np.int32: jitd.PrimitiveType.S32,
                     np.int64: jitd.PrimitiveType.S64, np.float32: jitd.PrimitiveType.F32,
                     np.float64: jitd.PrimitiveType.F64}

        def _ConvertAndTest(template, src_dtype, dst_dtype):
            c = self._NewComputation()
            x = c.Constant(np.array(template, dtype=src_dtype))
            c.ConvertElementType(x, xla_types[dst_dtype])
            result = self._Execute(c, ())
            expected = np.array(template, dtype=dst_dtype)
            assert_strict(result, expected)

        x = [0, 1, 0, 0, 1]
        for src_dtype, dst_dtype in itertools.product(xla_types, xla_types):
            _ConvertAndTest(x, src_dtype, dst_dtype)

    def testConvertElementTypeAcceptsNumpyDtypes(self):
        c = self._NewComputation()
        c.ConvertElementType(c.Constant(NumpyArrayF32([1.7, -2.7])), np.int32)
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([1, -2]))

    def testBitcastConvertType(self):
        xla_x32_types = {np.int32: jitd.PrimitiveType.S32, np.float32: jitd.PrimitiveType.F32}
        xla_x64_types = {np.int64: jitd.PrimitiveType.S64, np.float64: jitd.PrimitiveType.F64}

        def _ConvertAndTest(template, src_dtype, dst_dtype, dst_etype):
            c = self._NewComputation()
            x = c.Constant(np.array(template, dtype=src_dtype))
            c.BitcastConvertType(x, dst_etype)
            result = self._Execute(c, ())
            expected = np.array(template, src_dtype).view(dst_dtype)
            assert_strict(result, expected)

        x = [0, 1, 0, 0, 1]
        for xla_types in [xla_x32_types, xla_x64_types]:
            for src_dtype, dst_dtype in itertools.product(xla_types, xla_types):
                _ConvertAndTest(x, src_dtype, dst_dtype, xla_types[dst_dtype])

    def testDotMatrixVectorF32(self):
        c = self._NewComputation()
        lhs = NumpyArrayF32([[2.0, 3.0], [4.0, 5.0]])
        rhs = NumpyArrayF32([[10.0], [20.0]])
        c.Dot(c.Constant(lhs), c.Constant(rhs))
        self._ExecuteAndCompareClose(c, expected=np.dot(lhs, rhs))

    def testDotMatrixVectorF64(self):
        c = self._NewComputation()
        lhs = NumpyArrayF64([[2.0, 3.0], [4.0, 5.0]])
        rhs = NumpyArrayF64([[10.0], [20.0]])
        c.Dot(c.Constant(lhs), c.Constant(rhs))
        self._ExecuteAndCompareClose(c, expected=np.dot(lhs, rhs))

    def testDotMatrixMatrixF32(self):
        c = self._NewComputation()
        lhs = NumpyArrayF32([[2.0, 3.0], [4.0, 5.0]])
        rhs = NumpyArrayF32([[10.0, 20.0], [100.0, 200.0]])
        c.Dot(c.Constant(lhs), c.Constant(rhs))
        self._ExecuteAndCompareClose(c, expected=np.dot(lhs, rhs))

    def testDotVectorVector(self):
        c = self._NewComputation()
        c.Dot(c.Constant(NumpyArrayS32([1, 2, 3])), c.Constant(NumpyArrayS32([4, 5, 6])))
        self._ExecuteAndCompareExact(c, expected=np.int32(32))

    def testDotGeneral(self):
        c = self._NewComputation()
        rng = np.random.RandomState(0)
        lhs = NumpyArrayF32(rng.randn(10, 3, 4))
        rhs = NumpyArrayF32(rng.randn(10, 4, 5))
        dimension_numbers = (([2], [1]), ([0], [0]))
        c.DotGeneral(c.Constant(lhs), c.Constant(rhs), dimension_numbers)
        self._ExecuteAndCompareClose(c, expected=np.matmul(lhs, rhs), rtol=1e-5)

    def testConvF32Same(self):
        c = self._NewComputation()
        a = lambda *dims: np.arange(np.prod(dims)).reshape(dims).astype("float32")
        lhs = a(1, 2, 3, 4)
        rhs = a(1, 2, 1, 2) * 10
        c.Conv(c.Constant(lhs), c.Constant(rhs), [1, 1], jitd.PaddingType.SAME)
        result = np.array([[[[640., 700., 760., 300.],
                             [880., 940., 1000., 380.],
                             [1120., 1180., 1240., 460.]]]], np.float32)
        self._ExecuteAndCompareClose(c, expected=result)

    def testConvF32Valid(self):
        c = self._NewComputation()
        a = lambda *dims: np.arange(np.prod(dims)).reshape(dims).astype("float32")
        lhs = a(1, 2, 3, 4)
        rhs = a(1, 2, 1, 2) * 10
        c.Conv(c.Constant(lhs), c.Constant(rhs), [2, 1], jitd.PaddingType.VALID)
        result = np.array([[[[640., 700., 760.],
                             [1120., 1180., 1240.]]]], np.float32)
        self._ExecuteAndCompareClose(c, expected=result)

    def testConvWithGeneralPaddingF32(self):
        c = self._NewComputation()
        a = lambda *dims: np.arange(np.prod(dims)).reshape(dims).astype("float32")
        lhs = a(1, 1, 2, 3)
        rhs = a(1, 1, 1, 2) * 10
        strides = [1, 1]
        pads = [(1, 0), (0, 1)]
        lhs_dilation = (2, 1)
        rhs_dilation = (1, 1)
        c.ConvWithGeneralPadding(c.Constant(lhs), c.Constant(rhs), strides, pads, lhs_dilation,
                                 rhs_dilation)
        result = np.array([[[[0., 0., 0.],
                             [10., 20., 0.],
                             [0., 0., 0.],
                             [40., 50., 0.]]]], np.float32)
        self._ExecuteAndCompareClose(c, expected=result)

    def testConvGeneralDilatedF32(self):
        c = self._NewComputation()
        a = lambda *dims: np.arange(np.prod(dims)).reshape(dims).astype("float32")
        lhs = a(1, 1, 2, 3)
        rhs = a(1, 1, 1, 2) * 10
        strides = [1, 1]
        pads = [(1, 0), (0, 1)]
        lhs_dilation = (2, 1)
        rhs_dilation = (1, 1)
        dimension_numbers = ("NCHW", "OIHW", "NCHW")
        c.ConvGeneralDilated(c.Constant(lhs), c.Constant(rhs), strides, pads, lhs_dilation,
                             rhs_dilation, dimension_numbers)
        result = np.array([[[[0., 0., 0.],
                             [10., 20., 0.],
                             [0., 0., 0.],
                             [40., 50., 0.]]]], np.float32)
        self._ExecuteAndCompareClose(c, expected=result)

    def testConvGeneralDilatedPermutedF32(self):
        c = self._NewComputation()
        a = lambda *dims: np.arange(np.prod(dims)).reshape(dims).astype("float32")
        lhs = a(1, 1, 2, 3)
        rhs = a(1, 1, 1, 2) * 10
        strides = [1, 1]
        pads = [(1, 0), (0, 1)]
        lhs_dilation = (2, 1)
        rhs_dilation = (1, 1)
        dimension_numbers = ("NHWC", "OIHW", "CWNH")
        c.ConvGeneralDilated(c.Constant(np.transpose(lhs, (0, 2, 3, 1))), c.Constant(rhs),
                             strides, pads, lhs_dilation, rhs_dilation, dimension_numbers)
        result = np.array([[[[0., 0., 0.],
                             [10., 20., 0.],
                             [0., 0., 0.],
                             [40., 50., 0.]]]], np.float32)
        self._ExecuteAndCompareClose(c, expected=np.transpose(result, (1, 3, 0, 2)))

    def testConvGeneralDilatedGroupedConvolutionF32(self):
        c = self._NewComputation()
        a = lambda *dims: np.arange(np.prod(dims)).reshape(dims).astype("float32")
        lhs = a(1, 2, 2, 3)
        rhs = a(2, 1, 1, 2) * 10
        strides = [1, 1]
        pads = [(1, 0), (0, 1)]
        lhs_dilation = (2, 1)
        rhs_dilation = (1, 1)
        dimension_numbers = ("NCHW", "OIHW", "NCHW")
        feature_group_count = 2
        c.ConvGeneralDilated(c.Constant(lhs), c.Constant(rhs), strides, pads, lhs_dilation,
                             rhs_dilation, dimension_numbers, feature_group_count)
        result = np.array([[[[0., 0., 0.],
                             [10., 20., 0.],
                             [0., 0., 0.],
                             [40., 50., 0.]],
                            [[0., 0., 0.],
                             [330., 380., 160.],
                             [0., 0., 0.],
                             [480., 530., 220.]]]], np.float32)
        self._ExecuteAndCompareClose(c, expected=result)

    def testBooleanNot(self):
        c = self._NewComputation()
        arr = NumpyArrayBool([True, False, True])
        c.Not(c.Constant(arr))
        self._ExecuteAndCompareClose(c, expected=~arr)

    def testIntegerNot(self):
        c = self._NewComputation()
        c.Not(c.Constant(NumpyArrayS32([0, -1, 5])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([-1, 0, -6]))

    @pytest.mark.parametrize("name,fn,dtype,values", [
        ("Exp", np.exp, np.float32, [3.3, 12.1]),
        ("Expm1", np.expm1, np.float32, [3.3, 1e-5]),
        ("Log", np.log, np.float32, [3.3, 12.1]),
        ("Log1p", np.log1p, np.float32, [3.3, 1e-5]),
        ("Neg", np.negative, np.float32, [3.3, 12.1]),
        ("Floor", np.floor, np.float32, [3.3, -12.1, 0.5]),
        ("Ceil", np.ceil, np.float32, [3.3, -12.1, 0.5]),
        ("Abs", np.abs, np.float32, [3.3, -12.1, 2.4, -1.]),
        ("Tanh", np.tanh, np.float32, [3.3, 12.1]),
        ("Sin", np.sin, np.float32, [3.3, 12.1]),
        ("Cos", np.cos, np.float32, [3.3, 12.1]),
        ("Tan", np.tan, np.float32, [0.3, -1.1]),
        ("Sqrt", np.sqrt, np.float32, [3.3, 12.1]),
        ("Rsqrt", lambda x: 1 / np.sqrt(x), np.float32, [3.3, 12.1]),
        ("Cbrt", np.cbrt, np.float64, [27., -8., 2.]),
        ("Square", np.square, np.float32, [3.3, 12.1]),
        ("Reciprocal", np.reciprocal, np.float32, [3.3, 12.1]),
        ("Sign", np.sign, np.float32, [-2.5, 0., 3.]),
        ("Logistic", lambda x: 1 / (1 + np.exp(-x)), np.float32, [-2.5, 0., 3.]),
        ("Acos", np.arccos, np.float64, [0.3, -0.9]),
        ("Asin", np.arcsin, np.float64, [0.3, -0.9]),
        ("Atan", np.arctan, np.float64, [0.3, -9.]),
        ("Acosh", np.arccosh, np.float64, [1.5, 9.]),
        ("Asinh", np.arcsinh, np.float64, [0.3, -9.]),
        ("Atanh", np.arctanh, np.float64, [0.3, -0.9]),
        ("Cosh", np.cosh, np.float64, [0.3, -2.]),
        ("Sinh", np.sinh, np.float64, [0.3, -2.]),
        ("Erf", np.vectorize(math.erf), np.float64, [0.3, -1.5]),
        ("Erfc", np.vectorize(math.erfc), np.float64, [0.3, -1.5]),
        ("Lgamma", np.vectorize(math.lgamma), np.float64, [0.3, 4.5]),
    ])
    def testUnaryFloat(self, name, fn, dtype, values):
        arr = np.array(values, dtype=dtype)
        c = self._NewComputation()
        getattr(c, name)(c.Constant(arr))
        self._ExecuteAndCompareClose(c, expected=fn(arr).astype(dtype), rtol=1e-5, atol=1e-7)

    def testRound(self):
        c = self._NewComputation()
        c.Round(c.Constant(NumpyArrayF32([3.5, -2.5, 0.4, -0.6])))  # half away from zero
        self._ExecuteAndCompareExact(c, expected=NumpyArrayF32([4, -3, 0, -1]))

    def testRoundNearestEven(self):
        c = self._NewComputation()
        c.RoundNearestEven(c.Constant(NumpyArrayF32([3.5, -2.5, 0.4, 1.5])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayF32([4, -2, 0, 2]))

    def testIsFinite(self):
        c = self._NewComputation()
        c.IsFinite(c.Constant(NumpyArrayF32([1., np.inf, -np.inf, np.nan])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayBool([True, False, False, False]))

    def testErfInvInvertsErf(self):
        x = NumpyArrayF64([-0.9, 0.1, 0.5])
        c = self._NewComputation()
        c.Erf(c.ErfInv(c.Constant(x)))
        self._ExecuteAndCompareClose(c, expected=x, rtol=1e-12)

    def testDigamma(self):
        c = self._NewComputation()
        c.Digamma(c.Constant(NumpyArrayF64([1.0, 0.5])))
        euler = 0.5772156649015329
        self._ExecuteAndCompareClose(
            c, expected=NumpyArrayF64([-euler, -euler - 2 * math.log(2)]), rtol=1e-12)

    def testBesselI1e(self):
        c = self._NewComputation()
        c.BesselI1e(c.Constant(NumpyArrayF64([1.0, 0.0])))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF64([0.2079104153497085, 0.0]),
                                     rtol=1e-12)

    def testComplexParts(self):
        z = np.array([1 + 2j, -3.5 - 0.5j], np.complex64)
        for name, fn in [("Real", np.real), ("Imag", np.imag), ("Conj", np.conj)]:
            c = self._NewComputation()
            getattr(c, name)(c.Constant(z))
            self._ExecuteAndCompareExact(c, expected=fn(z))
        c = self._NewComputation()
        c.Complex(c.Constant(NumpyArrayF32([1, 2])), c.Constant(NumpyArrayF32([3, 4])))
        self._ExecuteAndCompareExact(c, expected=np.array([1 + 3j, 2 + 4j], np.complex64))
        c = self._NewComputation()
        c.Abs(c.Constant(np.array([3 + 4j], np.complex64)))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([5]))

    def testBitCounts(self):
        c = self._NewComputation()
        c.Clz(c.Constant(NumpyArrayS32([1, 0, -1, 256])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([31, 32, 0, 23]))
        c = self._NewComputation()
        c.PopulationCount(c.Constant(NumpyArrayS32([1, 0, -1, 7])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([1, 0, 32, 3]))

    @pytest.mark.parametrize("name,fn", [
        ("Eq", np.equal), ("Ne", np.not_equal), ("Gt", np.greater), ("Ge", np.greater_equal),
        ("Lt", np.less), ("Le", np.less_equal)])
    def testCompare(self, name, fn):
        a = NumpyArrayS32([1, 2, 3, 4])
        b = NumpyArrayS32([4, 2, 3, 1])
        c = self._NewComputation()
        getattr(c, name)(c.Constant(a), c.Constant(b))
        self._ExecuteAndCompareExact(c, expected=fn(a, b))

    def testCompareFloatsWithNan(self):
        c = self._NewComputation()
        c.Ne(c.Constant(NumpyArrayF32([np.nan, 2])), c.Constant(NumpyArrayF32([np.nan, 2])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayBool([True, False]))

    @pytest.mark.parametrize("name,fn,dtype", [
        ("Max", np.maximum, np.float32), ("Min", np.minimum, np.float32),
        ("Max", np.maximum, np.int32), ("Min", np.minimum, np.int32),
        ("Sub", np.subtract, np.float64), ("Mul", np.multiply, np.int64),
        ("Atan2", np.arctan2, np.float64), ("Pow", np.power, np.float64)])
    def testBinary(self, name, fn, dtype):
        a = np.array([1.0, 2.0, 3.0, 4.0, 9.0, 7.0], dtype)
        b = np.array([5.0, 2.0, 3.0, 1.0, 2.0, 2.0], dtype)
        c = self._NewComputation()
        getattr(c, name)(c.Constant(a), c.Constant(b))
        self._ExecuteAndCompareClose(c, expected=fn(a, b).astype(dtype))

    def testMaxBroadcastsAScalar(self):
        c = self._NewComputation()
        c.Max(c.Constant(NumpyArrayF64([1.0, 2.0, 3.0, 7.0, 12.0])), c.ConstantF64Scalar(5.0))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayF64([5.0, 5.0, 5.0, 7.0, 12.0]))

    def testDivAndRemOfIntegersTruncate(self):
        a = NumpyArrayS32([7, -7, 7, -7])
        b = NumpyArrayS32([2, 2, -2, -2])
        c = self._NewComputation()
        c.Div(c.Constant(a), c.Constant(b))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([3, -3, -3, 3]))
        c = self._NewComputation()
        c.Rem(c.Constant(a), c.Constant(b))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([1, -1, 1, -1]))

    def testRemF32(self):
        c = self._NewComputation()
        c.Rem(c.Constant(NumpyArrayF32([5.5, -5.5])), c.ConstantF32Scalar(2.0))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayF32([1.5, -1.5]))

    def testNextAfter(self):
        c = self._NewComputation()
        c.NextAfter(c.Constant(NumpyArrayF32([1.0])), c.Constant(NumpyArrayF32([2.0])))
        self._ExecuteAndCompareExact(c, expected=np.nextafter(NumpyArrayF32([1.0]),
                                                               NumpyArrayF32([2.0])))

    def testReshape(self):
        c = self._NewComputation()
        c.Reshape(c.Constant(NumpyArrayS32([[1, 2], [3, 4], [5, 6]])), dimensions=[0, 1],
                  new_sizes=[2, 3])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 2, 3], [4, 5, 6]]))

    def testReshapeWithDimensionOrder(self):
        c = self._NewComputation()
        c.Reshape(c.Constant(NumpyArrayS32([[1, 2], [3, 4], [5, 6]])), dimensions=[1, 0],
                  new_sizes=[6])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([1, 3, 5, 2, 4, 6]))

    def testReshapeToScalar(self):
        c = self._NewComputation()
        c.Reshape(c.Constant(NumpyArrayS32([[4]])), None, [])
        self._ExecuteAndCompareExact(c, expected=np.int32(4))

    def testCollapse(self):
        c = self._NewComputation()
        c.Collapse(c.Constant(NumpyArrayS32([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])),
                   dimensions=[1, 2])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 2, 3, 4], [5, 6, 7, 8]]))

    def testRev(self):
        c = self._NewComputation()
        c.Rev(c.Constant(NumpyArrayS32([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])),
              dimensions=[0, 2])
        self._ExecuteAndCompareExact(
            c, expected=NumpyArrayS32([[[6, 5], [8, 7]], [[2, 1], [4, 3]]]))

    def testClampF32(self):
        c = self._NewComputation()
        c.Clamp(c.ConstantF32Scalar(-1), c.Constant(NumpyArrayF32([-2, -1, 0, 1, 2, 3])),
                c.ConstantF32Scalar(2))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayF32([-1, -1, 0, 1, 2, 2]))

    def testClampS32(self):
        c = self._NewComputation()
        c.Clamp(c.ConstantS32Scalar(-1), c.Constant(NumpyArrayS32([-2, -1, 0, 1, 2, 3])),
                c.ConstantS32Scalar(2))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([-1, -1, 0, 1, 2, 2]))

    def testSelect(self):
        c = self._NewComputation()
        c.Select(c.Constant(NumpyArrayBool([True, False, False, True, False])),
                 c.Constant(NumpyArrayS32([1, 2, 3, 4, 5])),
                 c.Constant(NumpyArrayS32([-1, -2, -3, -4, -5])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([1, -2, -3, 4, -5]))

    def testSlice(self):
        c = self._NewComputation()
        c.Slice(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])), [1, 0], [3, 2])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[4, 5], [7, 8]]))

    def testSliceWithStrides(self):
        c = self._NewComputation()
        c.Slice(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])), [0, 0], [3, 3],
                [2, 2])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 3], [7, 9]]))

    def testSliceInDim(self):
        c = self._NewComputation()
        c.SliceInDim(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
                     start_index=1, limit_index=2, stride=1, dimno=1)
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[2], [5], [8]]))
        c = self._NewComputation()
        c.SliceInDim(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
                     start_index=0, limit_index=3, stride=2, dimno=0)
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 2, 3], [7, 8, 9]]))

    def testDynamicSlice(self):
        c = self._NewComputation()
        c.DynamicSlice(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
                       c.Constant(NumpyArrayS32([1, 0])), [2, 2])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[4, 5], [7, 8]]))

    def testDynamicSliceWithScalarIndices(self):
        c = self._NewComputation()
        c.DynamicSlice(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
                       [c.ConstantS32Scalar(2), c.ConstantS32Scalar(2)], [2, 2])
        # Start indices are clamped so the slice fits: (1, 1).
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[5, 6], [8, 9]]))

    def testDynamicUpdateSlice(self):
        c = self._NewComputation()
        c.DynamicUpdateSlice(c.Constant(NumpyArrayS32([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
                             c.Constant(NumpyArrayS32([[1, 2], [3, 4]])),
                             c.Constant(NumpyArrayS32([1, 1])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 2, 3], [4, 1, 2],
                                                                [7, 3, 4]]))

    def testTranspose(self):

        def _TransposeAndTest(array, permutation):
            c = self._NewComputation()
            c.Transpose(c.Constant(array), permutation)
            expected = np.transpose(array, permutation)
            self._ExecuteAndCompareExact(c, expected=expected)

        _TransposeAndTest(NumpyArrayS32([[1, 2, 3], [4, 5, 6]]), [0, 1])
        _TransposeAndTest(NumpyArrayS32([[1, 2, 3], [4, 5, 6]]), [1, 0])
        _TransposeAndTest(NumpyArrayS32([[1, 2], [4, 5]]), [0, 1])
        _TransposeAndTest(NumpyArrayS32([[1, 2], [4, 5]]), [1, 0])

        arr = np.random.RandomState(0).randn(2, 3, 4).astype(np.float32)
        for permutation in itertools.permutations(range(arr.ndim)):
            _TransposeAndTest(arr, permutation)
            _TransposeAndTest(np.asfortranarray(arr), permutation)

    def testBroadcast(self):
        c = self._NewComputation()
        c.Broadcast(c.Constant(NumpyArrayS32([10, 20, 30, 40])), sizes=(3,))
        self._ExecuteAndCompareExact(
            c, expected=NumpyArrayS32([[10, 20, 30, 40]] * 3))

    def testBroadcastInDim(self):
        c = self._NewComputation()
        c.BroadcastInDim(c.Constant(NumpyArrayS32([1, 2])), [2, 2], [0])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 1], [2, 2]]))
        c = self._NewComputation()
        c.BroadcastInDim(c.Constant(NumpyArrayS32([1, 2])), [2, 2], [1])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([[1, 2], [1, 2]]))

    def testPad(self):
        c = self._NewComputation()
        c.Pad(c.Constant(NumpyArrayF32([[1.0, 2.0], [3.0, 4.0]])), c.Constant(NumpyArrayF32(0.0)),
              [(1, 2, 1), (0, 1, 0)])
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[0.0, 0.0, 0.0],
                                                                [1.0, 2.0, 0.0],
                                                                [0.0, 0.0, 0.0],
                                                                [3.0, 4.0, 0.0],
                                                                [0.0, 0.0, 0.0],
                                                                [0.0, 0.0, 0.0]]))

    def testPadWithPaddingConfig(self):

        class Dim(object):
            def __init__(self, lo, hi, interior):
                self.edge_padding_low = lo
                self.edge_padding_high = hi
                self.interior_padding = interior

        class PaddingConfig(object):
            dimensions = [Dim(1, 2, 1), Dim(0, 1, 0)]

        c = self._NewComputation()
        c.Pad(c.Constant(NumpyArrayF32([[1.0, 2.0], [3.0, 4.0]])), c.Constant(NumpyArrayF32(0.0)),
              PaddingConfig())
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[0.0, 0.0, 0.0],
                                                                [1.0, 2.0, 0.0],
                                                                [0.0, 0.0, 0.0],
                                                                [3.0, 4.0, 0.0],
                                                                [0.0, 0.0, 0.0],
                                                                [0.0, 0.0, 0.0]]))

    def testTuple(self):
        c = self._NewComputation()
        c.Tuple(c.ConstantS32Scalar(42), c.Constant(NumpyArrayF32([1.0, 2.0])),
                c.Constant(NumpyArrayBool([True, False, False, True])))
        result = self._Execute(c, ())
        assert isinstance(result, tuple)
        assert_strict(result, (np.int32(42), NumpyArrayF32([1.0, 2.0]),
                               NumpyArrayBool([True, False, False, True])))

    def testGetTupleElement(self):
        c = self._NewComputation()
        c.GetTupleElement(c.Tuple(c.ConstantS32Scalar(42), c.Constant(NumpyArrayF32([1.0, 2.0])),
                                  c.Constant(NumpyArrayBool([True, False, False, True]))), 1)
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([1.0, 2.0]))

    def testSort(self):
        keys = NumpyArrayF32([[2, 4, 1, 3], [3, 1, 4, 2]])
        c = self._NewComputation()
        c.Sort(c.Constant(keys))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[1, 2, 3, 4], [1, 2, 3, 4]]))

    def testSortKeyValue(self):
        keys = NumpyArrayS32([[2, 4, 1, 3], [3, 1, 4, 2]])
        values = NumpyArrayS32([[0, 1, 2, 3], [4, 5, 6, 7]])
        c = self._NewComputation()
        c.Sort((c.Constant(keys), c.Constant(values)), dimension=0)
        result = self._Execute(c, ())
        assert_strict(result, (NumpyArrayS32([[2, 1, 1, 2], [3, 4, 4, 3]]),
                               NumpyArrayS32([[0, 5, 2, 7], [4, 1, 6, 3]])))

    def testSortKeyVal(self):
        c = self._NewComputation()
        c.SortKeyVal(c.Constant(NumpyArrayS32([3, 1, 2])), c.Constant(NumpyArrayF32([30, 10, 20])))
        assert_strict(self._Execute(c, ()), (NumpyArrayS32([1, 2, 3]),
                                             NumpyArrayF32([10, 20, 30])))

    def testSortWithComparator(self):
        keys = NumpyArrayS32([[2, 3, 1, 3], [3, 1, 2, 2]])
        values = NumpyArrayS32([[0, 1, 2, 3], [4, 5, 6, 7]])
        comparator = self._NewComputation("comparator")
        p0 = comparator.ParameterFromNumpy(NumpyArrayS32(0))
        q0 = comparator.ParameterFromNumpy(NumpyArrayS32(0))
        p1 = comparator.ParameterFromNumpy(NumpyArrayS32(0))
        q1 = comparator.ParameterFromNumpy(NumpyArrayS32(0))
        comparator.Or(comparator.Lt(p0, q0), comparator.And(comparator.Eq(p0, q0),
                                                            comparator.Gt(p1, q1)))
        c = self._NewComputation()
        c.Sort((c.Constant(keys), c.Constant(values)), dimension=1,
               comparator=comparator.Build())
        result = self._Execute(c, ())
        assert_strict(result, (NumpyArrayS32([[1, 2, 3, 3], [1, 2, 2, 3]]),
                               NumpyArrayS32([[2, 0, 3, 1], [5, 7, 6, 4]])))

    def testGather(self):
        a = np.arange(9).astype(np.int32).reshape((3, 3))
        indices = np.array([[[0, 2], [2, 1]], [[1, 2], [2, 0]]], dtype=np.int32)
        dnums = jitd.GatherDimensionNumbers(offset_dims=[], collapsed_slice_dims=[0, 1],
                                            start_index_map=[0, 1], index_vector_dim=2)
        c = self._NewComputation()
        c.Gather(c.Constant(a), c.Constant(indices), dnums, slice_sizes=[1, 1])
        g = self._Execute(c, ())
        expected = np.array([[[[2, 7]]], [[[5, 6]]]], dtype=np.int32).reshape(2, 2)
        assert_strict(g, expected)

    def testScatter(self):
        a = np.arange(9).astype(np.int32).reshape((3, 3))
        scatter_indices = np.array([0, 2], dtype=np.int32)
        updates = np.array([[10, 20, 30], [70, 80, 90]], dtype=np.int32)
        dnums = jitd.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                             scatter_dims_to_operand_dims=(0,),
                                             index_vector_dim=1)
        add = self._NewComputation("add")
        add.Add(add.ParameterFromNumpy(NumpyArrayS32(0)), add.ParameterFromNumpy(NumpyArrayS32(0)))
        c = self._NewComputation()
        c.Scatter(c.Constant(a), c.Constant(scatter_indices), c.Constant(updates), add.Build(),
                  dnums)
        expected = np.array([[10, 21, 32], [3, 4, 5], [76, 87, 98]], dtype=np.int32)
        self._ExecuteAndCompareExact(c, expected=expected)

    def testCreateTokenAndAfterAll(self):
        c = self._NewComputation()
        t = c.AfterAll([c.CreateToken(), c.CreateToken()])
        assert c.GetShape(t).is_token()
        c.ConstantS32Scalar(1)
        self._ExecuteAndCompareExact(c, expected=np.int32(1))


class TestEmbeddedComputations(ComputationTest):

    def _CreateConstantS32Computation(self):
        """Computation (f32) -> s32 that returns a constant 1 for any input."""
        c = self._NewComputation("constant_s32_one")
        # TODO(eliben): consider adding a nicer way to create new parameters without
        # having to create dummy Numpy arrays or populating Shape messages. Perhaps
        # we need our own (Python-client-own) way to create Shapes conveniently.
        c.ParameterFromNumpy(NumpyArrayF32(0))
        c.ConstantS32Scalar(1)
        return c.Build()

    def _CreateMulBy2Computation(self, dtype):
        c = self._NewComputation("mul_f32_by2")
        c.Mul(c.ParameterFromNumpy(np.array(0, dtype)), c.Constant(np.array(2, dtype)))
        return c.Build()

    def _CreateMulF32ByParamComputation(self):
        c = self._NewComputation("mul_f32_by_param")
        c.Mul(c.ParameterFromNumpy(NumpyArrayF32(0)), c.ParameterFromNumpy(NumpyArrayF32(0)))
        return c.Build()

    def _CreateBinaryAddComputation(self, dtype):
        c = self._NewComputation("add_param0_by_param1")
        c.Add(c.ParameterFromNumpy(np.array(0, dtype)), c.ParameterFromNumpy(np.array(0, dtype)))
        return c.Build()

    def _CreateBinaryDivComputation(self, dtype):
        c = self._NewComputation("div_param0_by_param1")
        c.Div(c.ParameterFromNumpy(np.array(0, dtype)), c.ParameterFromNumpy(np.array(0, dtype)))
        return c.Build()

    def _CreateTestF32Lt10Computation(self):
        c = self._NewComputation("test_f32_lt_10")
        c.Lt(c.ParameterFromNumpy(NumpyArrayF32(0)), c.ConstantF32Scalar(10.))
        return c.Build()

    def _CreateBinaryGeComputation(self, dtype):
        c = self._NewComputation("param0_lt_param1")
        c.Ge(c.ParameterFromNumpy(np.array(0, dtype)), c.ParameterFromNumpy(np.array(0, dtype)))
        return c.Build()

    def _CreateMaxComputation(self, dtype):
        c = self._NewComputation("max")
        c.Max(c.ParameterFromNumpy(np.array(0, dtype)), c.ParameterFromNumpy(np.array(0, dtype)))
        return c.Build()

    def _MakeSample3DArray(self, dtype):
        return np.array([[[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 5, 6]],
                         [[1, 2, 3], [4, 5, 6]], [[1, 2, 3], [4, 5, 6]]], dtype=dtype)

    def testMapEachElementToS32Constant(self):
        c = self._NewComputation()
        c.Map([c.Constant(NumpyArrayF32([1.0, 2.0, 3.0, 4.0]))],
              self._CreateConstantS32Computation(), [0])
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([1, 1, 1, 1]))

    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def testMapMulBy2(self, dtype):
        c = self._NewComputation()
        c.Map([c.Constant(np.array([1.0, 2.0, 3.0, 4.0], dtype))],
              self._CreateMulBy2Computation(dtype), [0])
        self._ExecuteAndCompareClose(c, expected=np.array([2.0, 4.0, 6.0, 8.0], dtype))

    def testSimpleMapChainF32(self):
        # Chains a map of constant-s32 with a map of mul-by-2
        c = self._NewComputation()
        const_s32 = c.Map([c.Constant(NumpyArrayF32([1.0, 2.0, 3.0, 4.0]))],
                          self._CreateConstantS32Computation(), [0])
        f32 = c.ConvertElementType(const_s32, np.float32)
        c.Map([f32], self._CreateMulBy2Computation(np.float32), [0])
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([2.0, 2.0, 2.0, 2.0]))

    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def testDivVectorsWithMap(self, dtype):
        c = self._NewComputation()
        c.Map((c.Constant(np.array([1.0, 2.0, 3.0, 4.0], dtype)),
               c.Constant(np.array([5.0, 5.0, 4.0, 4.0], dtype))),
              self._CreateBinaryDivComputation(dtype), [0])
        self._ExecuteAndCompareClose(c, expected=np.array([0.2, 0.4, 0.75, 1.0], dtype))

    def testMapWithTwoParameters(self):
        c = self._NewComputation()
        c.Map((c.Constant(NumpyArrayF32([[1, 2], [3, 4]])),
               c.Constant(NumpyArrayF32([[5, 6], [7, 8]]))),
              self._CreateMulF32ByParamComputation(), [0, 1])
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[5, 12], [21, 32]]))

    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def testReduce1DtoScalar(self, dtype):
        c = self._NewComputation()
        c.Reduce(operand=c.Constant(np.array([1.0, 2.0, 3.0, 4.0], dtype)),
                 init_value=c.Constant(np.array(0, dtype)),
                 computation_to_apply=self._CreateBinaryAddComputation(dtype), dimensions=[0])
        self._ExecuteAndCompareClose(c, expected=np.array(10, dtype))

    @pytest.mark.parametrize("dtype", [np.float32, np.int32])
    def testReduce2DTo1DDim0(self, dtype):
        input_array = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype)
        c = self._NewComputation()
        c.Reduce(operand=c.Constant(input_array), init_value=c.Constant(np.array(0, dtype)),
                 computation_to_apply=self._CreateBinaryAddComputation(dtype), dimensions=[0])
        self._ExecuteAndCompareClose(c, expected=np.array([5, 7, 9], dtype))

    @pytest.mark.parametrize("dtype", [np.float64, np.int64])
    def testReduce2DTo1DDim1(self, dtype):
        input_array = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype)
        c = self._NewComputation()
        c.Reduce(operand=c.Constant(input_array), init_value=c.Constant(np.array(0, dtype)),
                 computation_to_apply=self._CreateBinaryAddComputation(dtype), dimensions=[1])
        self._ExecuteAndCompareClose(c, expected=np.array([6, 15], dtype))

    def testReduce3DAllPossibleWaysF32(self):
        input_array = self._MakeSample3DArray(np.float32)

        def _ReduceAndTest(*dims):
            c = self._NewComputation()
            c.Reduce(operand=c.Constant(input_array), init_value=c.ConstantF32Scalar(0),
                     computation_to_apply=self._CreateBinaryAddComputation(np.float32),
                     dimensions=dims)
            self._ExecuteAndCompareClose(c, expected=np.sum(input_array, axis=tuple(dims)))

        _ReduceAndTest(0)
        _ReduceAndTest(0, 1)
        _ReduceAndTest(0, 2)
        _ReduceAndTest(1, 2)
        _ReduceAndTest(0, 1, 2)

    def testReduceVariadicArgmax(self):
        # Two operands (values, indices) reduced together: the max and where.
        red = self._NewComputation("argmax")
        av = red.ParameterFromNumpy(NumpyArrayF32(0))
        ai = red.ParameterFromNumpy(NumpyArrayS32(0))
        bv = red.ParameterFromNumpy(NumpyArrayF32(0))
        bi = red.ParameterFromNumpy(NumpyArrayS32(0))
        take_a = red.Ge(av, bv)
        red.Tuple(red.Select(take_a, av, bv), red.Select(take_a, ai, bi))
        c = self._NewComputation()
        out = c.Reduce([c.Constant(NumpyArrayF32([3, 9, 1, 9])), c.Iota(np.int32, 4)],
                       [c.ConstantF32Scalar(-np.inf), c.ConstantS32Scalar(-1)], red.Build(), [0])
        c.Tuple(c.GetTupleElement(out, 0), c.GetTupleElement(out, 1))
        assert_strict(self._Execute(c, ()), (np.float32(9), np.int32(1)))

    def testReduceWindowValidUnitStridesF32(self):
        input_array = NumpyArrayF32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        c = self._NewComputation()
        c.ReduceWindow(operand=c.Constant(input_array), init_value=c.ConstantF32Scalar(0),
                       computation_to_apply=self._CreateBinaryAddComputation(np.float32),
                       window_dimensions=(2, 1), window_strides=(1, 1),
                       padding=jitd.PaddingType.VALID)
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[5., 7., 9.]]))

    def testReduceWindowSameUnitStridesF32(self):
        input_array = NumpyArrayF32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        c = self._NewComputation()
        c.ReduceWindow(operand=c.Constant(input_array), init_value=c.ConstantF32Scalar(0),
                       computation_to_apply=self._CreateBinaryAddComputation(np.float32),
                       window_dimensions=(2, 1), window_strides=(1, 1),
                       padding=jitd.PaddingType.SAME)
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[5., 7., 9.], [4., 5., 6.]]))

    def testReduceWindowValidGeneralStridesF32(self):
        input_array = NumpyArrayF32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        c = self._NewComputation()
        c.ReduceWindow(operand=c.Constant(input_array), init_value=c.ConstantF32Scalar(0),
                       computation_to_apply=self._CreateBinaryAddComputation(np.float32),
                       window_dimensions=(2, 1), window_strides=(1, 2),
                       padding=jitd.PaddingType.VALID)
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[5., 9.]]))

    def testReduceWindowMaxWithGeneralPadding(self):
        input_array = NumpyArrayF32([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        c = self._NewComputation()
        c.ReduceWindowWithGeneralPadding(
            c.Constant(input_array), c.ConstantF32Scalar(-np.inf),
            self._CreateMaxComputation(np.float32), (1, 2), (1, 1), [(0, 0), (1, 0)])
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[1, 2, 3], [4, 5, 6]]))

    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def testWhile(self, dtype):
        cond = self._NewComputation("cond")
        cond.Lt(cond.ParameterFromNumpy(np.array(0, dtype)), cond.Constant(np.array(10, dtype)))
        cond = cond.Build()
        body = self._CreateMulBy2Computation(dtype)
        c = self._NewComputation()
        init = c.Constant(np.array(1., dtype))
        c.While(cond, body, init)
        self._ExecuteAndCompareClose(c, expected=np.array(16., dtype))

    def testWhileWithATupleState(self):
        # (i, acc): while i < 5: acc += i; i += 1.
        shape = jitd.Shape.tuple_shape([jitd.Shape(np.int32, ()), jitd.Shape(np.int32, ())])
        cond = self._NewComputation("cond")
        s = cond.ParameterWithShape(shape)
        cond.Lt(cond.GetTupleElement(s, 0), cond.ConstantS32Scalar(5))
        body = self._NewComputation("body")
        s = body.ParameterWithShape(shape)
        i = body.GetTupleElement(s, 0)
        body.Tuple(body.Add(i, body.ConstantS32Scalar(1)),
                   body.Add(body.GetTupleElement(s, 1), i))
        c = self._NewComputation()
        out = c.While(cond.Build(), body.Build(),
                      c.Tuple(c.ConstantS32Scalar(0), c.ConstantS32Scalar(0)))
        c.GetTupleElement(out, 1)
        self._ExecuteAndCompareExact(c, expected=np.int32(10))

    def testConditionalTrue(self):
        c = self._NewComputation()
        pred = c.ConstantPredScalar(True)
        true_operand = c.ConstantF32Scalar(3.)
        true_computation = self._CreateMulBy2Computation(np.float32)
        false_operand = c.ConstantF32Scalar(2.)
        false_computation = self._CreateConstantS32Computation()
        c.Conditional(pred, true_operand, true_computation, false_operand,
                      self._CreateMulBy2Computation(np.float32))
        self._ExecuteAndCompareClose(c, expected=np.float32(6.))
        del false_computation

    def testConditionalFalse(self):
        c = self._NewComputation()
        pred = c.ConstantPredScalar(False)
        true_operand = c.ConstantF32Scalar(3.)
        true_computation = self._CreateMulBy2Computation(np.float32)
        false_operand = c.ConstantF32Scalar(2.)
        false_computation = self._CreateMulF32Square()
        c.Conditional(pred, true_operand, true_computation, false_operand, false_computation)
        self._ExecuteAndCompareClose(c, expected=np.float32(4.))

    def _CreateMulF32Square(self):
        c = self._NewComputation("square")
        p = c.ParameterFromNumpy(NumpyArrayF32(0))
        c.Mul(p, p)
        return c.Build()

    def testConditionalIndexed(self):
        branches = [self._CreateMulBy2Computation(np.float32), self._CreateMulF32Square()]
        for index, expected in [(0, 6.), (1, 9.), (7, 9.)]:
            c = self._NewComputation()
            c.Conditional(c.ConstantS32Scalar(index), branches,
                          [c.ConstantF32Scalar(3.), c.ConstantF32Scalar(3.)])
            self._ExecuteAndCompareClose(c, expected=np.float32(expected))

    def testConditionalWithParameters(self):
        c = self._NewComputation()
        p = c.ParameterFromNumpy(np.bool_(True))
        x = c.ParameterFromNumpy(NumpyArrayF32(0))
        c.Conditional(p, x, self._CreateMulBy2Computation(np.float32), x,
                      self._CreateMulF32Square())
        exe = c.Build().Compile(client=self.client)
        assert_strict(exe.Execute([np.bool_(True), NumpyArrayF32(5)]), np.float32(10))
        assert_strict(exe.Execute([np.bool_(False), NumpyArrayF32(5)]), np.float32(25))

    def testInfeedS32Values(self):
        to_infeed = NumpyArrayS32([1, 2, 3, 4])
        c = self._NewComputation()
        c.Infeed(jitd.Shape.from_numpy(to_infeed[0]))
        compiled_c = c.Build().Compile(client=self.client)
        for item in to_infeed:
            self.client.transfer_to_infeed(item)
        for item in to_infeed:
            result = compiled_c.Execute()
            assert_strict(result, item)

    def testInfeedThenOutfeedS32(self):
        to_round_trip = NumpyArrayS32([1, 2, 3, 4])
        c = self._NewComputation()
        x = c.Infeed(jitd.Shape.from_numpy(to_round_trip[0]))
        c.Outfeed(x)
        c.Add(x, x)
        compiled_c = c.Build().Compile(client=self.client)

        for want in to_round_trip:
            results = {}
            execution = threading.Thread(
                target=lambda: results.setdefault("r", compiled_c.Execute(deadline_ms=20000)))
            execution.start()
            time.sleep(0.05)
            self.client.transfer_to_infeed(want)
            got = self.client.transfer_from_outfeed(jitd.Shape.from_numpy(to_round_trip[0]),
                                                    timeout_ms=20000)
            execution.join(30)
            assert not execution.is_alive()
            assert_strict(got, want)
            assert_strict(results["r"], np.int32(2 * want))

    def testInfeedTupleAndOutfeedWithTokens(self):
        shape = jitd.Shape.tuple_shape([jitd.Shape(np.float32, (2,)), jitd.Shape(np.int32, ())])
        c = self._NewComputation()
        value_and_token = c.InfeedWithToken(c.CreateToken(), shape)
        value = c.GetTupleElement(value_and_token, 0)
        token = c.GetTupleElement(value_and_token, 1)
        v = c.GetTupleElement(value, 0)
        n = c.GetTupleElement(value, 1)
        scaled = c.Mul(v, c.ConvertElementType(n, np.float32))
        c.OutfeedWithToken(c.Tuple(scaled, n), token)
        c.Neg(scaled)
        exe = c.Build().Compile(client=self.client)
        self.client.transfer_to_infeed((NumpyArrayF32([1.5, -2]), np.int32(3)))
        assert_strict(exe.Execute(), NumpyArrayF32([-4.5, 6]))
        assert_strict(self.client.transfer_from_outfeed(shape),
                      (NumpyArrayF32([4.5, -6]), np.int32(3)))


class TestErrors(ComputationTest):

    def setup_method(self, method):
        self.f32_scalar_2 = NumpyArrayF32(2.0)
        self.s32_scalar_2 = NumpyArrayS32(2)

    def testInvokeWithWrongElementType(self):
        c = self._NewComputation()
        c.ParameterFromNumpy(self.s32_scalar_2)
        with pytest.raises(jitd.JitdError) as e:
            self._Execute(c, [self.f32_scalar_2])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "argument 0 is f32[]" in e.value.message and "s32[]" in e.value.message

    def testWrongArgumentShapesAtExecute(self):
        c = self._NewComputation()
        p = c.ParameterFromNumpy(NumpyArrayF32([[0, 0]]))
        c.Add(p, p)
        exe = c.Build().Compile(client=self.client)
        for bad in [NumpyArrayF32([0, 0]), NumpyArrayF32([[0], [0]]), NumpyArrayF32(0),
                    NumpyArrayF32([[[0, 0]]])]:
            with pytest.raises(jitd.JitdError) as e:
                exe.Execute([bad])
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
            assert "f32[1,2]" in e.value.message
        with pytest.raises(jitd.JitdError):
            exe.Execute([])
        assert_strict(exe.Execute([NumpyArrayF32([[1, 2]])]), NumpyArrayF32([[2, 4]]))

    def testIllTypedOpsNameTheOp(self):
        c = self._NewComputation()
        cases = [
            (lambda: c.Add(c.Constant(NumpyArrayF32([1, 2])), c.Constant(NumpyArrayS32([1, 2]))),
             "Add"),
            (lambda: c.Dot(c.Constant(NumpyArrayF32([[1, 2]])),
                           c.Constant(NumpyArrayF32([[1, 2]]))), "Dot"),
            (lambda: c.Reshape(c.Constant(NumpyArrayF32([1, 2, 3])), None, [2, 2]), "Reshape"),
            (lambda: c.Transpose(c.Constant(NumpyArrayF32([[1, 2]])), [0, 0]), "Transpose"),
            (lambda: c.Slice(c.Constant(NumpyArrayF32([1, 2])), [0], [3]), "Slice"),
            (lambda: c.ConcatInDim([c.Constant(NumpyArrayF32([1])),
                                    c.Constant(NumpyArrayF32([[1]]))], 0), "Concat"),
            (lambda: c.Select(c.Constant(NumpyArrayS32([1])), c.Constant(NumpyArrayF32([1])),
                              c.Constant(NumpyArrayF32([1]))), "Select"),
            (lambda: c.Add(c.Constant(NumpyArrayF32([1, 2, 3])),
                           c.Constant(NumpyArrayF32([[1, 2]]))), "Add"),
        ]
        for make, name in cases:
            with pytest.raises(jitd.JitdError) as e:
                make()
            assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
            assert name in e.value.message, (name, e.value.message)
        # The builder keeps its first error, and Build reports it.
        with pytest.raises(jitd.JitdError) as e:
            c.Build()
        assert "Add" in e.value.message

    def testEmbeddedComputationOfTheWrongSignature(self):
        bad = self._NewComputation("three_params")
        bad.Add(bad.Add(bad.ParameterFromNumpy(NumpyArrayF32(0)),
                        bad.ParameterFromNumpy(NumpyArrayF32(0))),
                bad.ParameterFromNumpy(NumpyArrayF32(0)))
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.Reduce(c.Constant(NumpyArrayF32([1, 2])), c.ConstantF32Scalar(0), bad.Build(), [0])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "Reduce" in e.value.message
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.Map([c.Constant(NumpyArrayF32([1, 2]))], bad.Build(), [0])
        assert "Map" in e.value.message

    def testOpsOfAnotherBuilderAreRefused(self):
        a = self._NewComputation("a")
        b = self._NewComputation("b")
        x = a.ConstantF32Scalar(1)
        with pytest.raises(jitd.JitdError) as e:
            b.Neg(x)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT

    def testEmptyBuilderDoesNotBuild(self):
        with pytest.raises(jitd.JitdError):
            self._NewComputation("empty").Build()

    def testDaemonStillServesAfterErrors(self):
        c = self._NewComputation()
        c.Add(c.ConstantS32Scalar(2), c.ConstantS32Scalar(2))
        self._ExecuteAndCompareExact(c, expected=np.int32(4))
