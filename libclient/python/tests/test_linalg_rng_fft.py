"""Dot products and convolutions, the matrix factorizations (Cholesky,
TriangularSolve), Fft, and the random number generators. numpy.linalg and
numpy.fft are the oracles; convolution is checked against the direct sum
in support.conv_reference. Random values are implementation-defined, so the
rng tests check type, shape, range, spread and that a program draws the
same numbers each run."""

import itertools

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import apply, conv_reference

pytestmark = requires_builder

RNG = np.random.RandomState(314159)


class TestDot(object):

    @pytest.mark.parametrize("lhs_shape,rhs_shape", [((5,), (5,)), ((3, 5), (5,)),
                                                     ((5,), (5, 2)), ((3, 5), (5, 2))])
    def test_vector_and_matrix_products(self, run, lhs_shape, rhs_shape):
        lhs = RNG.uniform(-2, 2, lhs_shape)
        rhs = RNG.uniform(-2, 2, rhs_shape)
        expected = np.asarray(np.dot(lhs, rhs))
        b = jitd.ComputationBuilder("dot")
        op = b.Dot(b.ParameterFromNumpy(lhs), b.ParameterFromNumpy(rhs))
        assert b.GetShape(op) == jitd.Shape(np.float64, expected.shape)
        assert_strict(run(b, lhs, rhs), expected, rtol=1e-13)

    @pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.complex64],
                             ids=lambda d: np.dtype(d).name)
    def test_types(self, run, dtype):
        lhs = (np.arange(12).reshape(3, 4) - 5).astype(dtype)
        rhs = (np.arange(8).reshape(4, 2) % 3 - 1).astype(dtype)
        if dtype == np.complex64:
            rhs = rhs * (1 - 1j)
        assert_strict(apply(run, lambda b, x, y: b.Dot(x, y), lhs, rhs), lhs @ rhs, rtol=1e-6)

    def test_dot_general_batched_matmul(self, run):
        lhs = RNG.standard_normal((4, 2, 3)).astype(np.float32)
        rhs = RNG.standard_normal((4, 3, 5)).astype(np.float32)
        dims = (([2], [1]), ([0], [0]))
        assert_strict(apply(run, lambda b, x, y: b.DotGeneral(x, y, dims), lhs, rhs),
                      np.matmul(lhs, rhs), rtol=1e-5, atol=1e-6)

    def test_dot_general_contracting_the_first_dimensions(self, run):
        # sum_k lhs[k, i] rhs[k, j]: lhs^T rhs, with no batch dimensions.
        lhs = RNG.uniform(-1, 1, (6, 3))
        rhs = RNG.uniform(-1, 1, (6, 2))
        dims = (([0], [0]), ([], []))
        assert_strict(apply(run, lambda b, x, y: b.DotGeneral(x, y, dims), lhs, rhs),
                      lhs.T @ rhs, rtol=1e-13)

    def test_dot_general_takes_a_dimension_numbers_object(self, run):
        class Numbers(object):
            lhs_contracting_dimensions = [1]
            rhs_contracting_dimensions = [2]
            lhs_batch_dimensions = [0]
            rhs_batch_dimensions = [1]

        lhs = RNG.uniform(-1, 1, (2, 4))
        rhs = RNG.uniform(-1, 1, (3, 2, 4))
        expected = np.einsum("bk,jbk->bj", lhs, rhs)
        assert_strict(apply(run, lambda b, x, y: b.DotGeneral(x, y, Numbers()), lhs, rhs),
                      expected, rtol=1e-13)


def _ramp(*shape):
    return (np.arange(np.prod(shape)) % 7 - 3).reshape(shape).astype(np.float32)


class TestConvolution(object):

    @pytest.mark.parametrize("strides", [(1, 1), (2, 1), (1, 3)])
    def test_valid(self, run, strides):
        lhs, rhs = _ramp(2, 3, 5, 6), _ramp(4, 3, 2, 3)
        expected = conv_reference(lhs, rhs, strides, (0, 0), (0, 0))
        out = apply(run, lambda b, x, k: b.Conv(x, k, strides, jitd.PaddingType.VALID), lhs, rhs)
        assert_strict(out, expected)

    @pytest.mark.parametrize("strides", [(1, 1), (2, 2)])
    def test_same_keeps_the_size_over_the_stride(self, run, strides):
        lhs, rhs = _ramp(1, 2, 5, 4), _ramp(3, 2, 3, 2)
        pads = []
        for n, k, s in zip(lhs.shape[2:], rhs.shape[2:], strides):
            total = max((-(-n // s) - 1) * s + k - n, 0)
            pads.append((total // 2, total - total // 2))
        expected = conv_reference(lhs, rhs, strides, [p[0] for p in pads], [p[1] for p in pads])
        assert expected.shape[2:] == tuple(-(-n // s) for n, s in zip(lhs.shape[2:], strides))
        out = apply(run, lambda b, x, k: b.Conv(x, k, strides, jitd.PaddingType.SAME), lhs, rhs)
        assert_strict(out, expected)

    def test_general_padding_and_dilations(self, run):
        lhs, rhs = _ramp(1, 2, 4, 3), _ramp(2, 2, 2, 2)
        pads, lhs_dil, rhs_dil = [(2, 1), (0, 1)], (1, 2), (2, 1)
        expected = conv_reference(lhs, rhs, (1, 1), (2, 0), (1, 1), lhs_dil, rhs_dil)
        out = apply(run, lambda b, x, k: b.ConvWithGeneralPadding(x, k, (1, 1), pads, lhs_dil,
                                                                  rhs_dil), lhs, rhs)
        assert_strict(out, expected)

    def test_one_spatial_dimension(self, run):
        lhs, rhs = _ramp(2, 1, 9), _ramp(2, 1, 3)
        expected = conv_reference(lhs, rhs, (2,), (1,), (1,))
        out = apply(run, lambda b, x, k: b.ConvGeneralDilated(x, k, (2,), [(1, 1)]), lhs, rhs)
        assert_strict(out, expected)

    def test_channels_last_layouts(self, run):
        # The same convolution with the input as NHWC, the kernel as HWIO
        # and the output as NHWC.
        lhs, rhs = _ramp(2, 3, 4, 5), _ramp(6, 3, 3, 2)
        expected = conv_reference(lhs, rhs, (1, 2), (1, 0), (1, 1))

        def body(b, x, k):
            return b.ConvGeneralDilated(x, k, (1, 2), [(1, 1), (0, 1)],
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))
        out = apply(run, body, np.transpose(lhs, (0, 2, 3, 1)).copy(),
                    np.transpose(rhs, (2, 3, 1, 0)).copy())
        assert_strict(out, np.transpose(expected, (0, 2, 3, 1)).copy())

    def test_spatial_dimensions_in_an_unusual_order(self, run):
        # Output layout CWNH: the result comes back in that dimension order.
        lhs, rhs = _ramp(1, 2, 3, 4), _ramp(2, 2, 1, 2)
        expected = conv_reference(lhs, rhs, (1, 1), (0, 0), (0, 0))

        def body(b, x, k):
            return b.ConvGeneralDilated(x, k, (1, 1), [(0, 0), (0, 0)],
                                        dimension_numbers=("NCHW", "OIHW", "CWNH"))
        assert_strict(apply(run, body, lhs, rhs), np.transpose(expected, (1, 3, 0, 2)).copy())

    def test_feature_groups(self, run):
        # Four input features in two groups; each output feature sees one group.
        lhs, rhs = _ramp(1, 4, 3, 3), _ramp(6, 2, 2, 2)
        expected = conv_reference(lhs, rhs, (1, 1), (0, 0), (1, 0), feature_groups=2)
        out = apply(run, lambda b, x, k: b.ConvGeneralDilated(
            x, k, (1, 1), [(0, 1), (0, 0)], feature_group_count=2), lhs, rhs)
        assert_strict(out, expected)


class TestCholesky(object):

    @pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-4), (np.float64, 1e-12)],
                             ids=["f32", "f64"])
    def test_lower_factor(self, run, dtype, rtol):
        factor = np.array([[3, 0, 0], [-1, 2, 0], [4, 0.5, 1]], dtype)
        spd = factor @ factor.T
        assert_strict(apply(run, lambda b, a: b.Cholesky(a), spd), factor, rtol=rtol,
                      atol=rtol)

    def test_upper_factor(self, run):
        spd = np.array([[4.0, 2.0], [2.0, 5.0]])
        assert_strict(apply(run, lambda b, a: b.Cholesky(a, lower=False), spd),
                      np.array([[2.0, 1.0], [0.0, 2.0]]), rtol=1e-14)

    def test_batched(self, run):
        m = RNG.standard_normal((3, 2, 4, 4))
        spd = m @ np.swapaxes(m, -1, -2) + 4 * np.eye(4)
        assert_strict(apply(run, lambda b, a: b.Cholesky(a), spd), np.linalg.cholesky(spd),
                      rtol=1e-10, atol=1e-12)

    def test_complex_hermitian(self, run):
        m = RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))
        hpd = m @ m.conj().T + 3 * np.eye(3)
        factor = apply(run, lambda b, a: b.Cholesky(a), hpd)
        assert_strict(factor, np.linalg.cholesky(hpd), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(factor @ factor.conj().T, hpd, rtol=1e-12)


class TestTriangularSolve(object):

    @pytest.mark.parametrize("left_side,lower,transpose_a,unit_diagonal",
                             list(itertools.product([True, False], repeat=4)))
    def test_every_flag_combination(self, run, left_side, lower, transpose_a, unit_diagonal):
        a = RNG.standard_normal((3, 3)) + 5 * np.eye(3)
        # Only the named triangle (and, without unit_diagonal, the diagonal)
        # may be read: everything else holds NaN to prove it is not.
        ones = np.ones((3, 3), bool)
        inside = np.tril(ones, -1) if lower else np.triu(ones, 1)
        diagonal = np.eye(3, dtype=bool)
        a_given = np.where(inside | (diagonal & (not unit_diagonal)), a, np.nan)
        tri = np.where(inside, a, 0.0) + (np.eye(3) if unit_diagonal else np.diag(np.diag(a)))
        op_a = tri.T if transpose_a else tri
        rhs = RNG.standard_normal((3, 2) if left_side else (2, 3))
        expected = np.linalg.solve(op_a, rhs) if left_side else np.linalg.solve(op_a.T, rhs.T).T

        def body(b, x, y):
            return b.TriangularSolve(x, y, left_side=left_side, lower=lower,
                                     transpose_a=transpose_a, unit_diagonal=unit_diagonal)
        assert_strict(apply(run, body, a_given, rhs), expected, rtol=1e-12, atol=1e-13)

    def test_batched_f32(self, run):
        a = np.tril(RNG.uniform(1, 2, (2, 4, 4))).astype(np.float32)
        rhs = RNG.uniform(-1, 1, (2, 4, 3)).astype(np.float32)
        expected = np.linalg.solve(a.astype(np.float64), rhs.astype(np.float64))
        out = apply(run, lambda b, x, y: b.TriangularSolve(x, y, left_side=True, lower=True),
                    a, rhs)
        assert_strict(out, expected.astype(np.float32), rtol=1e-4, atol=1e-5)

    @pytest.mark.parametrize("transpose_a", [False, True])
    def test_conjugate_for_complex(self, run, transpose_a):
        a = np.triu(RNG.standard_normal((3, 3)) + 1j * RNG.standard_normal((3, 3))) \
            + 4 * np.eye(3)
        rhs = RNG.standard_normal((3, 1)) + 1j * RNG.standard_normal((3, 1))
        op_a = a.conj().T if transpose_a else a.conj()

        def body(b, x, y):
            return b.TriangularSolve(x, y, left_side=True, lower=False, transpose_a=transpose_a,
                                     conjugate_a=True)
        assert_strict(apply(run, body, a, rhs), np.linalg.solve(op_a, rhs), rtol=1e-12,
                      atol=1e-13)

    def test_conjugate_of_a_real_matrix_changes_nothing(self, run):
        a = np.array([[4.0, 0.0], [2.0, 1.0]], np.float32)
        rhs = np.array([[8.0], [5.0]], np.float32)

        def body(b, x, y):
            return b.TriangularSolve(x, y, left_side=True, lower=True, conjugate_a=True)
        assert_strict(apply(run, body, a, rhs), np.array([[2.0], [1.0]], np.float32))


class TestFft(object):

    def test_fft_and_ifft_over_the_last_dimensions(self, run):
        x = (RNG.standard_normal((3, 4, 6)) + 1j * RNG.standard_normal((3, 4, 6))) \
            .astype(np.complex64)
        for kind, oracle in [(jitd.FftType.FFT, np.fft.fftn), (jitd.FftType.IFFT,
                                                              np.fft.ifftn)]:
            for lengths in ([6], [4, 6], [3, 4, 6]):
                axes = tuple(range(3 - len(lengths), 3))
                out = apply(run, lambda b, v: b.Fft(v, kind, lengths), x)
                assert_strict(out, oracle(x, axes=axes).astype(np.complex64), rtol=1e-4,
                              atol=1e-4)

    def test_rfft_shape_and_values(self, run):
        x = RNG.standard_normal((2, 5, 8)).astype(np.float32)
        b = jitd.ComputationBuilder("rfft")
        op = b.Fft(b.ParameterFromNumpy(x), jitd.FftType.RFFT, [5, 8])
        assert b.GetShape(op) == jitd.Shape(np.complex64, (2, 5, 5))  # 8 // 2 + 1
        assert_strict(run(b, x), np.fft.rfftn(x, axes=(1, 2)).astype(np.complex64), rtol=1e-4,
                      atol=1e-4)

    def test_irfft_of_an_odd_length(self, run):
        signal = RNG.standard_normal((3, 9))
        spectrum = np.fft.rfft(signal)  # 9 // 2 + 1 = 5 bins
        b = jitd.ComputationBuilder("irfft")
        op = b.Fft(b.ParameterFromNumpy(spectrum), jitd.FftType.IRFFT, [9])
        assert b.GetShape(op) == jitd.Shape(np.float64, (3, 9))
        assert_strict(run(b, spectrum), signal, rtol=1e-10, atol=1e-12)

    def test_round_trip_in_double_precision(self, run):
        x = RNG.standard_normal((4, 10)) + 1j * RNG.standard_normal((4, 10))

        def body(b, v):
            return b.Fft(b.Fft(v, jitd.FftType.FFT, [10]), jitd.FftType.IFFT, [10])
        assert_strict(apply(run, body, x), x, rtol=1e-12, atol=1e-13)

    def test_impulse_has_a_flat_spectrum(self, run):
        impulse = np.zeros(16, np.complex64)
        impulse[0] = 2
        assert_strict(apply(run, lambda b, v: b.Fft(v, 0, [16]), impulse),
                      np.full(16, 2, np.complex64), rtol=0, atol=1e-6)


class TestRng(object):

    @staticmethod
    def _three_runs(client, builder):
        """Two runs of one compiled program and one of a second compile."""
        comp = builder.Build()
        exe = comp.Compile(client=client)
        return exe.Execute(()), exe.Execute(()), comp.Compile(client=client).Execute(())

    @pytest.mark.parametrize("dtype,low,high", [(np.float32, -5.0, -1.0),
                                                (np.float64, 0.0, 1e-3),
                                                (np.int32, -7, 9), (np.int64, 100, 103)],
                             ids=["f32", "f64", "s32", "s64"])
    def test_uniform_stays_in_the_half_open_range(self, client, dtype, low, high):
        b = jitd.ComputationBuilder("uniform")
        op = b.RngUniform(b.Constant(np.array(low, dtype)), b.Constant(np.array(high, dtype)),
                          dims=(50, 40))
        assert b.GetShape(op) == jitd.Shape(dtype, (50, 40))
        first, second, third = self._three_runs(client, b)
        assert first.dtype == np.dtype(dtype) and first.shape == (50, 40)
        assert np.all(first >= low) and np.all(first < high)
        np.testing.assert_array_equal(first, second)  # the same program draws the same
        np.testing.assert_array_equal(first, third)
        if np.dtype(dtype).kind == "i":
            assert set(np.unique(first)) == set(range(low, high))  # every value appears

    def test_uniform_is_flat(self, run):
        b = jitd.ComputationBuilder("flat")
        b.RngUniform(b.ConstantF64Scalar(10.0), b.ConstantF64Scalar(20.0), dims=(20000,))
        x = run(b)
        counts, _ = np.histogram(x, bins=10, range=(10.0, 20.0))
        # 2000 per bin expected; a binomial standard deviation is about 42.
        assert np.all(np.abs(counts - 2000) < 250), counts
        assert abs(x.mean() - 15.0) < 0.1

    def test_uniform_scalar(self, run):
        b = jitd.ComputationBuilder("one")
        b.RngUniform(b.ConstantF32Scalar(1.0), b.ConstantF32Scalar(2.0), dims=())
        x = run(b)
        assert isinstance(x, np.ndarray) and x.shape == () and x.dtype == np.float32
        assert 1.0 <= x < 2.0

    @pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
    def test_normal_moments(self, client, dtype):
        mu, sigma = -1.5, 0.5
        b = jitd.ComputationBuilder("normal")
        b.RngNormal(b.Constant(np.array(mu, dtype)), b.Constant(np.array(sigma, dtype)),
                    dims=(100, 300))
        x, again, _ = self._three_runs(client, b)
        assert x.dtype == np.dtype(dtype) and x.shape == (100, 300)
        np.testing.assert_array_equal(x, again)
        z = (x.astype(np.float64) - mu) / sigma
        assert abs(z.mean()) < 0.03 and abs(z.std() - 1.0) < 0.03
        # Tail fractions of the standard normal: P(|z| > 1) = 0.3173,
        # P(|z| > 2) = 0.0455.
        assert abs(np.mean(np.abs(z) > 1) - 0.3173) < 0.015
        assert abs(np.mean(np.abs(z) > 2) - 0.0455) < 0.006

    def test_two_rng_ops_draw_different_numbers(self, run):
        b = jitd.ComputationBuilder("two")
        lo, hi = b.ConstantF32Scalar(0.0), b.ConstantF32Scalar(1.0)
        b.Tuple(b.RngUniform(lo, hi, dims=(32,)), b.RngUniform(lo, hi, dims=(32,)))
        a, c = run(b)
        assert a.shape == c.shape == (32,) and not np.array_equal(a, c)

    def test_rng_in_a_called_computation_draws_per_call(self, run):
        noisy = jitd.ComputationBuilder("noisy")
        noisy = noisy.Build(noisy.Add(noisy.ParameterFromNumpy(np.float64(0)), noisy.RngNormal(
            noisy.ConstantF64Scalar(0.0), noisy.ConstantF64Scalar(1.0), dims=(6,))))
        b = jitd.ComputationBuilder("calls")
        zero = b.ConstantF64Scalar(0.0)
        b.Tuple(b.Call(noisy, [zero]), b.Call(noisy, [zero]))
        first, second = run(b)
        assert first.dtype == second.dtype == np.float64 and first.shape == (6,)
        assert not np.array_equal(first, second)

    def test_builder_and_its_text_draw_the_same_numbers(self, client):
        # The text form keeps the op locations that seed the generators.
        b = jitd.ComputationBuilder("same_draws")
        u = b.RngUniform(b.ConstantS32Scalar(0), b.ConstantS32Scalar(1000), dims=(4, 4))
        n = b.RngNormal(b.ConstantF32Scalar(2.0), b.ConstantF32Scalar(3.0), dims=(5,))
        b.Tuple(u, n)
        comp = b.Build()
        from_builder = comp.Compile(client=client).Execute(())
        from_text = client.compile_stablehlo(comp.GetStableHloText()).Execute(())
        assert_strict(from_text, from_builder, rtol=0)
