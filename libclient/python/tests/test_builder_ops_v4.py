"""The ComputationBuilder methods over the C builder's JITD_API_VERSION 4
functions: Call, ReducePrecision, ReplicaId, Cholesky, TriangularSolve, Fft,
RngUniform, RngNormal, SelectAndScatter(WithGeneralPadding). Each runs on the
test daemon and is checked strictly (dtype and shape exactly) against numpy;
xla_client's own tests for these methods are ported where it had them. The
rng tests check dtype, shape, range, spread and determinism (the values are
implementation-defined)."""

import itertools

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from test_xla_client_port import ComputationTest, NumpyArrayF32, NumpyArrayS32

pytestmark = requires_builder


def _binary_computation(name, method, dtype):
    c = jitd.ComputationBuilder(name)
    getattr(c, method)(c.ParameterFromNumpy(np.array(0, dtype)),
                       c.ParameterFromNumpy(np.array(0, dtype)))
    return c.Build()


def _select_and_scatter_ge_add(operand, source, window, strides, pad_low, init):
    """numpy reference of SelectAndScatter with select = Ge (the first
    largest element of each window, padding never selected) and scatter =
    Add, for any rank."""
    result = np.full(operand.shape, init, operand.dtype)
    for src_index in itertools.product(*[range(n) for n in source.shape]):
        best = None
        for offset in itertools.product(*[range(w) for w in window]):
            index = tuple(i * s - p + o
                          for i, s, p, o in zip(src_index, strides, pad_low, offset))
            if any(i < 0 or i >= n for i, n in zip(index, operand.shape)):
                continue  # padding
            if best is None or not operand[best] >= operand[index]:
                best = index
        result[best] += source[src_index]
    return result


class TestCall(ComputationTest):

    def testCallF32(self):  # xla_client's testCallF32
        mul_by_2 = jitd.ComputationBuilder("mul_f32_by2")
        mul_by_2.Mul(mul_by_2.ParameterFromNumpy(NumpyArrayF32(0)),
                     mul_by_2.ConstantF32Scalar(2.0))
        c = self._NewComputation()
        c.Call(mul_by_2.Build(), operands=(c.ConstantF32Scalar(5.0),))
        self._ExecuteAndCompareClose(c, expected=np.float32(10.0))

    def testCallWithTupleRootAndParameters(self):
        f = jitd.ComputationBuilder("sum_and_product")
        x = f.ParameterFromNumpy(np.zeros(3, np.int32))
        y = f.ParameterFromNumpy(np.zeros(3, np.int32))
        f.Tuple(f.Add(x, y), f.Mul(x, y))
        c = self._NewComputation()
        p = c.ParameterFromNumpy(np.zeros(3, np.int32))
        q = c.ParameterFromNumpy(np.zeros(3, np.int32))
        t = c.Call(f.Build(), (p, q))
        c.Sub(c.GetTupleElement(t, 0), c.GetTupleElement(t, 1))
        a, b = NumpyArrayS32([1, 2, 3]), NumpyArrayS32([4, -5, 6])
        self._ExecuteAndCompareExact(c, (a, b), expected=(a + b) - a * b)

    def testCallTheSameComputationTwice(self):
        mul_by_2 = jitd.ComputationBuilder("mul_by_2")
        mul_by_2.Mul(mul_by_2.ParameterFromNumpy(np.zeros((2, 2), np.float64)),
                     mul_by_2.ConstantF64Scalar(2.0))
        comp = mul_by_2.Build()
        c = self._NewComputation()
        x = c.ParameterFromNumpy(np.zeros((2, 2), np.float64))
        c.Call(comp, [c.Call(comp, [x])])
        x_val = np.array([[1.5, -2], [0.25, 8]], np.float64)
        self._ExecuteAndCompareClose(c, (x_val,), expected=4 * x_val)

    def testCallWithOperandsThatDoNotFitIsRefused(self):
        f = jitd.ComputationBuilder("f")
        f.Neg(f.ParameterFromNumpy(NumpyArrayF32(0)))
        comp = f.Build()
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.Call(comp, [c.ConstantS32Scalar(1)])
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        assert "Call" in str(e.value)
        with pytest.raises(jitd.JitdError) as e:
            c.Call(comp, [])
        assert "Call" in str(e.value)


class TestReducePrecisionAndReplicaId(ComputationTest):

    def testReducePrecisionF32ToF16Range(self):
        # exponent 5 / mantissa 10 bits is f16: for values in f16's normal
        # range and beyond it the result is the f16 rounding, back in f32.
        values = NumpyArrayF32([1.0, 1.0 / 3, -2.7182817, 1000.123, 65504.0, 65520.0, 1e6,
                                -1e6, 6.1035156e-05, 1.00048828125, 1.00146484375,
                                np.inf, -np.inf])
        c = self._NewComputation()
        c.ReducePrecision(c.Constant(values), exponent_bits=5, mantissa_bits=10)
        with np.errstate(over="ignore"):
            expected = values.astype(np.float16).astype(np.float32)
        assert np.isinf(expected[5]) and expected[9] == 1.0  # overflow; ties to even
        self._ExecuteAndCompareExact(c, expected=expected)

    def testReducePrecisionF64ToF32(self):
        rng = np.random.RandomState(0)
        values = rng.randn(4, 5) * np.exp(rng.uniform(-20, 20, (4, 5)))
        c = self._NewComputation()
        c.ReducePrecision(c.Constant(values), 8, 23)
        self._ExecuteAndCompareExact(c, expected=values.astype(np.float32).astype(np.float64))

    def testReducePrecisionKeepsNaNAndFlushesTinyValues(self):
        c = self._NewComputation()
        c.ReducePrecision(c.Constant(NumpyArrayF32([np.nan, 1e-30, -1e-30, 3.0])), 5, 10)
        result = self._Execute(c, ())
        assert result.dtype == np.float32 and result.shape == (4,)
        assert np.isnan(result[0])
        np.testing.assert_array_equal(result[1:], NumpyArrayF32([0.0, -0.0, 3.0]))
        assert np.signbit(result[2])

    def testReducePrecisionRefusesBadArguments(self):
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.ReducePrecision(c.Constant(NumpyArrayF32([1.0])), 0, 10)
        assert "ReducePrecision" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.ReducePrecision(c.Constant(NumpyArrayF32([1.0])), 2**32 + 5, 10)
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):
            c.ReducePrecision(c.Constant(NumpyArrayS32([1])), 5, 10)

    def testReplicaId(self):
        c = self._NewComputation()
        c.ReplicaId()
        self._ExecuteAndCompareExact(c, expected=np.uint32(0))

    def testReplicaIdInArithmetic(self):
        c = self._NewComputation()
        c.Add(c.ConvertElementType(c.ReplicaId(), np.int32), c.Constant(NumpyArrayS32([5, 6])))
        self._ExecuteAndCompareExact(c, expected=NumpyArrayS32([5, 6]))


class TestLinearAlgebra(ComputationTest):

    def testCholesky(self):  # xla_client's testCholesky
        l = np.array([[4, 0, 0, 0], [6, 5, 0, 0], [2, 14, 16, 0], [3, 6, 1, 4]],
                     dtype=np.float32)
        c = self._NewComputation()
        c.Cholesky(c.Constant(np.dot(l, l.T)))
        self._ExecuteAndCompareClose(c, expected=l, rtol=1e-4)

    def testCholeskyUpper(self):
        l = np.array([[4, 0, 0], [6, 5, 0], [2, 14, 16]], dtype=np.float64)
        c = self._NewComputation()
        c.Cholesky(c.Constant(np.dot(l, l.T)), lower=False)
        self._ExecuteAndCompareClose(c, expected=l.T, rtol=1e-12)

    def testCholeskyBatchedF64(self):
        rng = np.random.RandomState(1)
        m = rng.randn(2, 3, 5, 5)
        spd = np.matmul(m, np.swapaxes(m, -1, -2)) + 5 * np.eye(5)
        c = self._NewComputation()
        c.Cholesky(c.ParameterFromNumpy(spd))
        self._ExecuteAndCompareClose(c, (spd,), expected=np.linalg.cholesky(spd), rtol=1e-10,
                                     atol=1e-12)

    def testCholeskyComplex(self):
        rng = np.random.RandomState(2)
        m = (rng.randn(4, 4) + 1j * rng.randn(4, 4)).astype(np.complex64)
        hpd = (m @ m.conj().T + 4 * np.eye(4)).astype(np.complex64)
        c = self._NewComputation()
        c.Cholesky(c.Constant(hpd))
        expected = np.linalg.cholesky(hpd.astype(np.complex128)).astype(np.complex64)
        self._ExecuteAndCompareClose(c, expected=expected, rtol=1e-4, atol=1e-5)

    def testCholeskyOfANonSquareMatrixIsRefused(self):
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.Cholesky(c.Constant(np.ones((2, 3), np.float32)))
        assert "Cholesky" in str(e.value)

    def testTriangularSolve(self):  # xla_client's testTriangularSolve
        a_vals = np.array([[2, 0, 0, 0], [3, 6, 0, 0], [4, 7, 9, 0], [5, 8, 10, 11]],
                          dtype=np.float32)
        b_vals = np.array([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], dtype=np.float32)
        c = self._NewComputation()
        c.TriangularSolve(c.Constant(a_vals), c.Constant(b_vals), left_side=False, lower=True,
                          transpose_a=True)
        self._ExecuteAndCompareClose(c, expected=np.array([
            [0.5, 0.08333334, 0.04629629, 0.03367003],
            [2.5, -0.25, -0.1388889, -0.1010101],
            [4.5, -0.58333331, -0.32407406, -0.23569024],
        ], dtype=np.float32), rtol=1e-4)

    @pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal",
                             list(itertools.product([False, True], repeat=4)))
    def testTriangularSolveAllFlagsF64(self, left_side, lower, transpose_a, unit_diagonal):
        rng = np.random.RandomState(3)
        a = rng.randn(2, 4, 4) + 4 * np.eye(4)
        # Only a's triangle is read: fill the other one with junk.
        a_tri = np.tril(a) if lower else np.triu(a)
        if unit_diagonal:
            a_tri = a_tri - np.eye(4) * a_tri + np.eye(4)
        b = rng.randn(2, 4, 3) if left_side else rng.randn(2, 3, 4)
        op_a = np.swapaxes(a_tri, -1, -2) if transpose_a else a_tri
        if left_side:
            expected = np.linalg.solve(op_a, b)
        else:
            expected = np.swapaxes(np.linalg.solve(np.swapaxes(op_a, -1, -2),
                                                   np.swapaxes(b, -1, -2)), -1, -2)
        c = self._NewComputation()
        c.TriangularSolve(c.ParameterFromNumpy(a), c.ParameterFromNumpy(b), left_side=left_side,
                          lower=lower, transpose_a=transpose_a, unit_diagonal=unit_diagonal)
        self._ExecuteAndCompareClose(c, (a, b), expected=expected, rtol=1e-10, atol=1e-12)

    @pytest.mark.parametrize("transpose_a", [False, True])
    def testTriangularSolveConjugateComplex(self, transpose_a):
        rng = np.random.RandomState(4)
        a = np.tril(rng.randn(3, 3) + 1j * rng.randn(3, 3)) + 3 * np.eye(3)
        b = rng.randn(3, 2) + 1j * rng.randn(3, 2)
        op_a = np.conj(a).T if transpose_a else np.conj(a)  # a^H, or conj(a)
        c = self._NewComputation()
        c.TriangularSolve(c.Constant(a), c.Constant(b), left_side=True, lower=True,
                          transpose_a=transpose_a, conjugate_a=True)
        self._ExecuteAndCompareClose(c, expected=np.linalg.solve(op_a, b), rtol=1e-10,
                                     atol=1e-12)

    def testTriangularSolveConjugateOfRealIsNoOp(self):
        a = np.array([[2, 0], [1, 4]], np.float32)
        b = np.array([[2], [9]], np.float32)
        c = self._NewComputation()
        c.TriangularSolve(c.Constant(a), c.Constant(b), left_side=True, lower=True,
                          conjugate_a=True)
        self._ExecuteAndCompareClose(c, expected=np.array([[1], [2]], np.float32))

    def testTriangularSolveShapeMismatchIsRefused(self):
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:
            c.TriangularSolve(c.Constant(np.eye(3, dtype=np.float32)),
                              c.Constant(np.ones((4, 2), np.float32)), left_side=True)
        assert "TriangularSolve" in str(e.value)


class TestFft(ComputationTest):

    def testFft(self):  # xla_client's testFft
        shape = [2, 3, 4, 5]
        rng = np.random.RandomState(0)
        a = (rng.randn(*shape) + 1.0j * rng.randn(*shape)).astype(np.complex64)
        # FFT
        c = self._NewComputation()
        c.Fft(c.Constant(a), jitd.FftType.FFT, shape[-3:])
        self._ExecuteAndCompareClose(
            c, expected=np.fft.fftn(a, axes=(1, 2, 3)).astype(np.complex64), rtol=1e-4,
            atol=1e-4)
        # IFFT
        c = self._NewComputation()
        c.Fft(c.Constant(a), jitd.FftType.IFFT, shape[-3:])
        self._ExecuteAndCompareClose(
            c, expected=np.fft.ifftn(a, axes=(1, 2, 3)).astype(np.complex64), rtol=1e-4,
            atol=1e-5)
        # RFFT
        b = rng.randn(*shape).astype(np.float32)
        c = self._NewComputation()
        c.Fft(c.Constant(b), jitd.FftType.RFFT, shape[-3:])
        self._ExecuteAndCompareClose(
            c, expected=np.fft.rfftn(b, axes=(1, 2, 3)).astype(np.complex64), rtol=1e-4,
            atol=1e-4)
        # IRFFT
        c = self._NewComputation()
        c.Fft(c.Constant(a), jitd.FftType.IRFFT, [3, 4, 8])
        self._ExecuteAndCompareClose(
            c, expected=np.fft.irfftn(a, s=[3, 4, 8], axes=(1, 2, 3)).astype(np.float32),
            rtol=1e-4, atol=1e-5)

    def testFft1DComplex128(self):
        rng = np.random.RandomState(5)
        a = rng.randn(3, 16) + 1j * rng.randn(3, 16)
        c = self._NewComputation()
        c.Fft(c.ParameterFromNumpy(a), jitd.FftType.FFT, [16])
        self._ExecuteAndCompareClose(c, (a,), expected=np.fft.fft(a), rtol=1e-10, atol=1e-12)

    def testRfftThenIrfftRoundTrips(self):
        x = np.random.RandomState(6).randn(4, 7)  # odd length
        c = self._NewComputation()
        spectrum = c.Fft(c.ParameterFromNumpy(x), jitd.FftType.RFFT, [7])
        assert c.GetShape(spectrum) == jitd.Shape.array_shape(np.complex128, (4, 4))
        c.Fft(spectrum, jitd.FftType.IRFFT, [7])
        self._ExecuteAndCompareClose(c, (x,), expected=x, rtol=1e-10, atol=1e-12)

    def testFftAcceptsPlainInts(self):
        a = np.arange(8, dtype=np.complex64)
        c = self._NewComputation()
        c.Fft(c.Constant(a), 0, [8])
        self._ExecuteAndCompareClose(c, expected=np.fft.fft(a).astype(np.complex64),
                                     rtol=1e-5, atol=1e-4)

    def testFftRefusesBadArguments(self):
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # a real operand to FFT
            c.Fft(c.Constant(np.zeros(8, np.float32)), jitd.FftType.FFT, [8])
        assert "Fft" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):  # length does not match the dimension
            c.Fft(c.Constant(np.zeros(8, np.complex64)), jitd.FftType.FFT, [4])
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):  # no such fft type
            c.Fft(c.Constant(np.zeros(8, np.complex64)), 9, [8])
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):  # not FFT (0) modulo 2^32 either
            c.Fft(c.Constant(np.zeros(8, np.complex64)), 2**32, [8])
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):  # no lengths
            c.Fft(c.Constant(np.zeros(8, np.complex64)), jitd.FftType.FFT, [])


class TestRng(ComputationTest):

    def _ExecuteTwice(self, c):
        """Two executions of one compiled computation, and one more of a fresh
        compile of the same computation."""
        comp = c.Build()
        exe = comp.Compile(client=self.client)
        first, second = exe.Execute(()), exe.Execute(())
        third = comp.Compile(client=self.client).Execute(())
        return first, second, third

    def testRngUniformF32(self):  # xla_client's testRngUniformF32, + determinism
        lo, hi = 2., 4.
        shape = (2, 3)
        c = self._NewComputation()
        c.RngUniform(c.Constant(NumpyArrayF32(lo)), c.Constant(NumpyArrayF32(hi)), dims=shape)
        first, second, third = self._ExecuteTwice(c)
        assert first.dtype == np.float32 and first.shape == shape
        assert len(np.unique(first)) == np.prod(shape)
        assert np.all(lo <= first) and np.all(first < hi)
        np.testing.assert_array_equal(first, second)
        np.testing.assert_array_equal(first, third)

    def testRngUniformS32(self):  # xla_client's testRngUniformS32
        lo, hi = 2, 4
        shape = (2, 3)
        c = self._NewComputation()
        c.RngUniform(c.Constant(NumpyArrayS32(lo)), c.Constant(NumpyArrayS32(hi)), dims=shape)
        result = self._Execute(c, ())
        assert result.dtype == np.int32 and result.shape == shape
        assert np.all(lo <= result) and np.all(result < hi)

    def testRngUniformSpreadF64(self):
        c = self._NewComputation()
        c.RngUniform(c.ConstantF64Scalar(-1.0), c.ConstantF64Scalar(3.0), dims=(100, 100))
        x = self._Execute(c, ())
        assert x.dtype == np.float64 and x.shape == (100, 100)
        assert np.all(-1.0 <= x) and np.all(x < 3.0)
        assert abs(x.mean() - 1.0) < 0.05
        counts, _ = np.histogram(x, bins=8, range=(-1.0, 3.0))
        assert np.all(np.abs(counts - 1250) < 150), counts

    def testRngUniformS64CoversTheRange(self):
        c = self._NewComputation()
        c.RngUniform(c.ConstantS64Scalar(-3), c.ConstantS64Scalar(4), dims=(1000,))
        x = self._Execute(c, ())
        assert x.dtype == np.int64 and x.shape == (1000,)
        assert set(np.unique(x).tolist()) == set(range(-3, 4))

    def testRngUniformScalar(self):
        c = self._NewComputation()
        c.RngUniform(c.ConstantF32Scalar(0.0), c.ConstantF32Scalar(1.0), dims=())
        x = self._Execute(c, ())
        assert isinstance(x, np.ndarray) and x.dtype == np.float32 and x.shape == ()
        assert 0.0 <= x < 1.0

    def testRngNormal(self):  # xla_client's testRngNormal, + determinism
        shape = (2, 3)
        c = self._NewComputation()
        c.RngNormal(c.Constant(NumpyArrayF32(0.)), c.Constant(NumpyArrayF32(1.)), dims=shape)
        first, second, third = self._ExecuteTwice(c)
        assert first.dtype == np.float32 and first.shape == shape
        assert len(np.unique(first)) == np.prod(shape)
        np.testing.assert_array_equal(first, second)
        np.testing.assert_array_equal(first, third)

    @pytest.mark.parametrize("dtype", [np.float32, np.float64])
    def testRngNormalMomentsFollowMuAndSigma(self, dtype):
        c = self._NewComputation()
        c.RngNormal(c.Constant(np.array(3.0, dtype)), c.Constant(np.array(2.0, dtype)),
                    dims=(200, 100))
        x = self._Execute(c, ())
        assert x.dtype == dtype and x.shape == (200, 100)
        assert np.all(np.isfinite(x))
        assert abs(x.mean() - 3.0) < 0.05
        assert abs(x.std() - 2.0) < 0.05
        # about 68% within one sigma, 95% within two
        assert abs(np.mean(np.abs(x - 3.0) < 2.0) - 0.6827) < 0.02
        assert abs(np.mean(np.abs(x - 3.0) < 4.0) - 0.9545) < 0.01

    def testTwoRngOpsDrawDifferentValues(self):
        c = self._NewComputation()
        u1 = c.RngUniform(c.ConstantF32Scalar(0.0), c.ConstantF32Scalar(1.0), dims=(16,))
        u2 = c.RngUniform(c.ConstantF32Scalar(0.0), c.ConstantF32Scalar(1.0), dims=(16,))
        c.Tuple(u1, u2)
        a, b = self._Execute(c, ())
        assert a.shape == b.shape == (16,)
        assert not np.array_equal(a, b)

    def testRngInsideAComputationCalledTwiceDrawsTwice(self):
        f = jitd.ComputationBuilder("noise")
        f.Add(f.ParameterFromNumpy(NumpyArrayF32(0)),
              f.RngNormal(f.ConstantF32Scalar(0.0), f.ConstantF32Scalar(1.0), dims=(8,)))
        comp = f.Build()
        c = self._NewComputation()
        zero = c.ConstantF32Scalar(0.0)
        c.Tuple(c.Call(comp, [zero]), c.Call(comp, [zero]))
        a, b = self._Execute(c, ())
        assert a.dtype == b.dtype == np.float32 and a.shape == b.shape == (8,)
        assert not np.array_equal(a, b)

    def testModuleAndTextDrawTheSameNumbers(self):
        # The module's op locations are those of the text form, and the
        # interpreter seeds rng from them.
        c = self._NewComputation()
        keys = c.Constant(np.arange(4, dtype=np.float32))
        body = jitd.ComputationBuilder("body")
        body.Add(body.ParameterFromNumpy(NumpyArrayF32(0)),
                 body.ParameterFromNumpy(NumpyArrayF32(0)))
        total = c.Reduce(keys, c.ConstantF32Scalar(0.0), body.Build(), [0])
        u = c.RngUniform(c.ConstantF32Scalar(0.0), total, dims=(3, 5))
        n = c.RngNormal(c.ConstantF64Scalar(1.0), c.ConstantF64Scalar(2.0), dims=(7,))
        c.Tuple(u, n)
        comp = c.Build()
        from_module = comp.Compile(client=self.client).Execute(())
        from_text = self.client.compile_stablehlo(comp.GetStableHloText()).Execute(())
        assert_strict(from_text, from_module, rtol=0)
        assert np.all(from_module[0] < 6.0) and from_module[0].dtype == np.float32

    def testRngRefusesBadArguments(self):
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # mixed element types
            c.RngUniform(c.ConstantF32Scalar(0.0), c.ConstantF64Scalar(1.0), dims=(2,))
        assert "RngUniform" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # not scalars
            c.RngUniform(c.Constant(NumpyArrayF32([0.0])), c.Constant(NumpyArrayF32([1.0])),
                         dims=(2,))
        assert "RngUniform" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # an integer normal
            c.RngNormal(c.ConstantS32Scalar(0), c.ConstantS32Scalar(1), dims=(2,))
        assert "RngNormal" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # a token
            c.RngNormal(c.CreateToken(), c.ConstantF32Scalar(1.0), dims=(2,))
        assert e.value.code == jitd.StatusCode.INVALID_ARGUMENT
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):  # a negative dimension
            c.RngNormal(c.ConstantF32Scalar(0.0), c.ConstantF32Scalar(1.0), dims=(2, -1))


class TestSelectAndScatter(ComputationTest):

    def testSelectAndScatterF32(self):  # xla_client's testSelectAndScatterF32
        c = self._NewComputation()
        c.SelectAndScatter(c.Constant(NumpyArrayF32([[1., 2., 6.], [4., 5., 3.]])),
                           select=_binary_computation("ge", "Ge", np.float32),
                           window_dimensions=(2, 1),
                           window_strides=(1, 2),
                           padding=jitd.PaddingType.VALID,
                           source=c.Constant(NumpyArrayF32([[0.1, 0.2]])),
                           init_value=c.Constant(NumpyArrayF32(0)),
                           scatter=_binary_computation("add", "Add", np.float32))
        self._ExecuteAndCompareClose(c, expected=NumpyArrayF32([[0., 0., 0.2], [0.1, 0., 0.]]))

    def testSelectAndScatterSamePaddingMatchesNumpy(self):
        rng = np.random.RandomState(7)
        operand = rng.permutation(5 * 7).reshape(5, 7).astype(np.float32)
        window, strides = (3, 2), (2, 2)
        c = self._NewComputation()
        x = c.ParameterFromNumpy(operand)
        # SAME: 5x7 with window 3x2, stride 2 -> a 3x4 source; pads (1, 1), (0, 1).
        source = rng.uniform(1, 2, (3, 4)).astype(np.float32)
        src = c.ParameterFromNumpy(source)
        c.SelectAndScatter(x, _binary_computation("ge", "Ge", np.float32), window, strides,
                           jitd.PaddingType.SAME, src, c.ConstantF32Scalar(0.5),
                           _binary_computation("add", "Add", np.float32))
        expected = _select_and_scatter_ge_add(operand, source, window, strides, (1, 0), 0.5)
        self._ExecuteAndCompareClose(c, (operand, source), expected=expected)

    def testSelectAndScatterWithGeneralPaddingS32(self):
        operand = np.array([[7, 2, 9, 4], [1, 8, 3, 6], [5, 0, 11, 10]], np.int32)
        source = np.arange(1, 3 * 3 + 1, dtype=np.int32).reshape(3, 3)
        c = self._NewComputation()
        # windows of 2x2, stride 1x2, padded by (0, 1) rows and (1, 1) cols.
        c.SelectAndScatterWithGeneralPadding(
            c.Constant(operand), _binary_computation("ge", "Ge", np.int32), (2, 2), (1, 2),
            [(0, 1), (1, 1)], c.Constant(source), c.ConstantS32Scalar(0),
            _binary_computation("add", "Add", np.int32))
        expected = _select_and_scatter_ge_add(operand, source, (2, 2), (1, 2), (0, 1), 0)
        self._ExecuteAndCompareExact(c, expected=expected)

    def testSelectAndScatterRefusesBadArguments(self):
        ge = _binary_computation("ge", "Ge", np.float32)
        add = _binary_computation("add", "Add", np.float32)
        operand = NumpyArrayF32([[1., 2., 6.], [4., 5., 3.]])
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # source of the wrong shape
            c.SelectAndScatter(c.Constant(operand), ge, (2, 1), (1, 2), jitd.PaddingType.VALID,
                               c.Constant(NumpyArrayF32([[0.1, 0.2, 0.3]])),
                               c.ConstantF32Scalar(0), add)
        assert "SelectAndScatter" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # strides shorter than the window
            c.SelectAndScatterWithGeneralPadding(
                c.Constant(operand), ge, (2, 1), (1,), [(0, 0), (0, 0)],
                c.Constant(NumpyArrayF32([[0.1, 0.2]])), c.ConstantF32Scalar(0), add)
        assert "window_strides" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError) as e:  # padding shorter than the window
            c.SelectAndScatterWithGeneralPadding(
                c.Constant(operand), ge, (2, 1), (1, 2), [(0, 0)],
                c.Constant(NumpyArrayF32([[0.1, 0.2]])), c.ConstantF32Scalar(0), add)
        assert "padding" in str(e.value)
        c = self._NewComputation()
        with pytest.raises(jitd.JitdError):  # a select that returns no PRED
            c.SelectAndScatter(c.Constant(operand), add, (2, 1), (1, 2), jitd.PaddingType.VALID,
                               c.Constant(NumpyArrayF32([[0.1, 0.2]])),
                               c.ConstantF32Scalar(0), add)

    def testReduceWindowRefusesShortWindowArrays(self):
        # The same length checks guard ReduceWindow (the C API reads `rank`
        # entries of every window array).
        add = _binary_computation("add", "Add", np.float32)
        c = self._NewComputation()
        x = c.Constant(np.ones((4, 4), np.float32))
        with pytest.raises(jitd.JitdError) as e:
            c.ReduceWindowWithGeneralPadding(x, c.ConstantF32Scalar(0), add, (2, 2), (1,),
                                             [(0, 0), (0, 0)])
        assert "window_strides" in str(e.value)
        with pytest.raises(jitd.JitdError) as e:
            c.ReduceWindowWithGeneralPadding(x, c.ConstantF32Scalar(0), add, (2, 2), (1, 1),
                                             [(0, 0), (0, 0)], base_dilations=(1,))
        assert "base_dilations" in str(e.value)
        with pytest.raises(jitd.JitdError) as e:
            c.ReduceWindow(x, c.ConstantF32Scalar(0), add, (2,), (1,), jitd.PaddingType.SAME)
        assert "SAME" in str(e.value)
