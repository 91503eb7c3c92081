"""Elementwise builder methods on floating-point operands: every unary
function against numpy or math, the binary arithmetic and comparisons,
broadcasting (scalars, and broadcast_dimensions), Select and Clamp, and the
element-type conversions. Integer, unsigned, bool and complex operands
have their own file (test_element_types.py)."""

import math

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import apply

pytestmark = requires_builder

EULER_GAMMA = 0.57721566490153286061


def _digamma_oracle(x):
    """psi at positive integers and half-integers from psi(1) = -gamma,
    psi(1/2) = -gamma - 2 ln 2 and the recurrence psi(x + 1) = psi(x) + 1/x."""
    start = 1.0 if float(x).is_integer() else 0.5
    value = -EULER_GAMMA if start == 1.0 else -EULER_GAMMA - 2 * math.log(2)
    while start < x:
        value += 1 / start
        start += 1
    return value


def _bessel_i1e_oracle(x):
    """exp(-|x|) I1(x) with I1 summed from its power series
    sum_k (x/2)^(2k+1) / (k! (k+1)!), which converges fast for |x| < 20."""
    half = x / 2
    term, total, k = half, half, 0
    while abs(term) > 1e-18 * abs(total) or k < 2:
        k += 1
        term *= half * half / (k * (k + 1))
        total += term
    return math.exp(-abs(x)) * total


def _vector(fn):
    return lambda a: np.array([fn(float(v)) for v in a.ravel()]).reshape(a.shape)


# (method, numpy/math oracle, inputs in the function's domain)
UNARY_FLOAT = [
    ("Exp", np.exp, [-3.75, 0.0, 2.5, 20.0]),
    ("Expm1", np.expm1, [-2.0, -1e-7, 1e-6, 0.75]),
    ("Log", np.log, [1e-3, 0.5, 7.0, 1e6]),
    ("Log1p", np.log1p, [-0.5, 1e-8, 3.0, 1e5]),
    ("Neg", np.negative, [-7.5, 0.0, 3.25]),
    ("Abs", np.abs, [-7.5, -0.0, 3.25]),
    ("Sign", np.sign, [-7.5, 0.0, 3.25, -1e-30]),
    ("Floor", np.floor, [-2.5, -0.25, 0.0, 1.75, 8.0]),
    ("Ceil", np.ceil, [-2.5, -0.25, 0.0, 1.75, 8.0]),
    ("Sqrt", np.sqrt, [0.0, 0.36, 2.0, 1e4]),
    ("Rsqrt", lambda x: 1 / np.sqrt(x), [0.01, 0.25, 3.0, 400.0]),
    ("Cbrt", np.cbrt, [-64.0, -0.001, 0.0, 5.0, 1000.0]),
    ("Square", np.square, [-3.5, 0.5, 11.0]),
    ("Reciprocal", np.reciprocal, [-8.0, 0.2, 3.0]),
    ("Logistic", lambda x: 1 / (1 + np.exp(-x)), [-6.0, -0.5, 0.0, 2.25]),
    ("Sin", np.sin, [-2.2, 0.1, 1.5, 10.0]),
    ("Cos", np.cos, [-2.2, 0.1, 1.5, 10.0]),
    ("Tan", np.tan, [-1.2, 0.05, 0.7]),
    ("Tanh", np.tanh, [-4.0, -0.3, 0.0, 1.2]),
    ("Acos", np.arccos, [-1.0, -0.45, 0.2, 0.95]),
    ("Asin", np.arcsin, [-1.0, -0.45, 0.2, 0.95]),
    ("Atan", np.arctan, [-50.0, -0.6, 0.0, 2.0]),
    ("Acosh", np.arccosh, [1.0, 1.25, 30.0]),
    ("Asinh", np.arcsinh, [-12.0, -0.1, 0.4, 7.0]),
    ("Atanh", np.arctanh, [-0.8, -0.05, 0.35, 0.99]),
    ("Cosh", np.cosh, [-3.0, -0.2, 0.6, 4.5]),
    ("Sinh", np.sinh, [-3.0, -0.2, 0.6, 4.5]),
    ("Erf", _vector(math.erf), [-2.3, -0.2, 0.7, 3.1]),
    ("Erfc", _vector(math.erfc), [-2.3, -0.2, 0.7, 3.1]),
    ("Lgamma", _vector(math.lgamma), [0.1, 1.5, 3.0, 12.5, -2.5]),
    ("Digamma", _vector(_digamma_oracle), [1.0, 4.0, 0.5, 2.5]),
    ("BesselI1e", _vector(_bessel_i1e_oracle), [-3.0, 0.0, 0.5, 2.0, 9.0]),
]


class TestUnaryFloat(object):

    @pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
    @pytest.mark.parametrize("name,oracle,values", UNARY_FLOAT, ids=[u[0] for u in UNARY_FLOAT])
    def test_against_oracle(self, run, name, oracle, values, dtype):
        x = np.array(values, dtype)
        b = jitd.ComputationBuilder(name)
        op = getattr(b, name)(b.ParameterFromNumpy(x))
        assert b.GetShape(op) == jitd.Shape(dtype, x.shape)
        expected = oracle(x.astype(np.float64)).astype(dtype)
        tight = dtype == np.float64
        assert_strict(run(b, x), expected, rtol=1e-13 if tight else 2e-6,
                      atol=1e-300 if tight else 1e-37)

    def test_on_a_matrix_keeps_the_shape(self, run):
        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
        assert_strict(apply(run, lambda b, v: b.Tanh(v), x), np.tanh(x), rtol=2e-6, atol=1e-7)

    def test_erf_inv(self, run):
        y = np.array([-0.999, -0.3, 0.0, 0.6, 0.95], np.float64)
        x = apply(run, lambda b, v: b.ErfInv(v), y)
        assert x.dtype == np.float64 and x.shape == (5,)
        # The oracle is erf itself: erf(erf_inv(y)) == y.
        np.testing.assert_allclose([math.erf(v) for v in x], y, rtol=1e-14, atol=1e-16)
        assert x[2] == 0.0 and np.all(np.diff(x) > 0)

    def test_erf_after_erf_inv_is_the_identity(self, run):
        y = np.array([-0.75, 0.125, 0.5], np.float32)
        assert_strict(apply(run, lambda b, v: b.Erf(b.ErfInv(v)), y), y, rtol=1e-6)

    def test_round_goes_half_away_from_zero(self, run):
        x = np.array([-3.5, -2.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -7.6], np.float32)
        assert_strict(apply(run, lambda b, v: b.Round(v), x),
                      (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.float32))

    def test_round_nearest_even_breaks_ties_to_even(self, run):
        x = np.array([-3.5, -2.5, -0.5, 0.5, 1.5, 2.5, 2.4999, -7.6], np.float64)
        assert_strict(apply(run, lambda b, v: b.RoundNearestEven(v), x), np.rint(x))

    @pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64],
                             ids=["f16", "f32", "f64"])
    def test_is_finite(self, run, dtype):
        x = np.array([np.nan, np.inf, -np.inf, 0.0, -1.5, np.finfo(dtype).max], dtype)
        b = jitd.ComputationBuilder("is_finite")
        op = b.IsFinite(b.ParameterFromNumpy(x))
        assert b.GetShape(op) == jitd.Shape(np.bool_, (6,))
        assert_strict(run(b, x), np.isfinite(x))

    def test_special_values_propagate(self, run):
        x = np.array([np.nan, np.inf, -np.inf], np.float64)
        e, s, l = apply(run, lambda b, v: b.Tuple(b.Exp(v), b.Sqrt(v), b.Log(v)), x)
        assert_strict(e, np.array([np.nan, np.inf, 0.0]))
        assert_strict(s, np.array([np.nan, np.inf, np.nan]))
        assert_strict(l, np.array([np.nan, np.inf, np.nan]))


RNG_VALUES = np.random.RandomState(20240611)
LHS = RNG_VALUES.uniform(0.25, 9.0, 7)
RHS = RNG_VALUES.uniform(-4.0, 4.0, 7)

BINARY_FLOAT = [
    ("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply), ("Div", np.divide),
    ("Max", np.maximum), ("Min", np.minimum), ("Pow", np.power), ("Atan2", np.arctan2),
    ("Rem", np.fmod),
]


class TestBinaryFloat(object):

    @pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
    @pytest.mark.parametrize("name,oracle", BINARY_FLOAT, ids=[n for n, _ in BINARY_FLOAT])
    def test_against_numpy(self, run, name, oracle, dtype):
        x, y = LHS.astype(dtype), RHS.astype(dtype)
        b = jitd.ComputationBuilder(name)
        getattr(b, name)(b.ParameterFromNumpy(x), b.ParameterFromNumpy(y))
        rtol = 1e-14 if dtype == np.float64 else 1e-6
        assert_strict(run(b, x, y), oracle(x, y), rtol=rtol)

    def test_atan2_covers_the_four_quadrants(self, run):
        y = np.array([1.0, 1.0, -1.0, -1.0, 0.0, -0.0], np.float64)
        x = np.array([2.0, -2.0, -2.0, 2.0, -1.0, -1.0], np.float64)
        out = apply(run, lambda b, p, q: b.Atan2(p, q), y, x)
        assert_strict(out, np.arctan2(y, x), rtol=1e-15)
        assert out[4] == np.pi and out[5] == -np.pi  # the sign of zero picks the side

    def test_rem_takes_the_sign_of_the_dividend(self, run):
        x = np.array([7.5, -7.5, 7.5, -7.5, 0.25], np.float32)
        y = np.array([2.0, 2.0, -2.0, -2.0, 3.0], np.float32)
        assert_strict(apply(run, lambda b, p, q: b.Rem(p, q), x, y),
                      np.array([1.5, -1.5, 1.5, -1.5, 0.25], np.float32), rtol=0)

    def test_division_by_zero_gives_ieee_results(self, run):
        x = np.array([1.0, -1.0, 0.0], np.float64)
        out = apply(run, lambda b, v: b.Div(v, b.ConstantF64Scalar(0.0)), x)
        assert out[0] == np.inf and out[1] == -np.inf and np.isnan(out[2])

    def test_max_and_min_propagate_nan(self, run):
        x = np.array([np.nan, 1.0, -2.0], np.float32)
        y = np.array([3.0, np.nan, -5.0], np.float32)
        hi, lo = apply(run, lambda b, p, q: b.Tuple(b.Max(p, q), b.Min(p, q)), x, y)
        assert_strict(hi, np.maximum(x, y))
        assert_strict(lo, np.minimum(x, y))

    @pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
    def test_next_after(self, run, dtype):
        x = np.array([1.0, 1.0, 0.0, -3.0, 5.0], dtype)
        toward = np.array([2.0, -2.0, -1.0, -3.0, np.inf], dtype)
        out = apply(run, lambda b, p, q: b.NextAfter(p, q), x, toward)
        assert_strict(out, np.nextafter(x, toward), rtol=0)
        assert out[2] == -np.finfo(dtype).smallest_subnormal


COMPARISONS = [("Eq", np.equal), ("Ne", np.not_equal), ("Lt", np.less),
               ("Le", np.less_equal), ("Gt", np.greater), ("Ge", np.greater_equal)]


class TestComparisons(object):

    @pytest.mark.parametrize("name,oracle", COMPARISONS, ids=[n for n, _ in COMPARISONS])
    def test_floats_with_nan_and_signed_zero(self, run, name, oracle):
        x = np.array([1.5, np.nan, 0.0, -np.inf, 2.0, np.nan], np.float32)
        y = np.array([1.5, 1.0, -0.0, -1e38, -2.0, np.nan], np.float32)
        b = jitd.ComputationBuilder(name)
        op = getattr(b, name)(b.ParameterFromNumpy(x), b.ParameterFromNumpy(y))
        assert b.GetShape(op) == jitd.Shape(np.bool_, (6,))
        assert_strict(run(b, x, y), oracle(x, y))

    @pytest.mark.parametrize("name,oracle", COMPARISONS, ids=[n for n, _ in COMPARISONS])
    def test_integers(self, run, name, oracle):
        x = np.array([-9, 0, 12, 5, -2**63], np.int64)
        y = np.array([-9, 1, -12, 4, 2**63 - 1], np.int64)
        assert_strict(apply(run, lambda b, p, q: getattr(b, name)(p, q), x, y), oracle(x, y))


class TestBroadcasting(object):

    def test_scalar_with_array_either_side(self, run):
        v = np.array([[1.0, -2.0], [0.5, 4.0]], np.float64)
        b = jitd.ComputationBuilder("scalar_bcast")
        three = b.ConstantF64Scalar(3.0)
        p = b.ParameterFromNumpy(v)
        b.Tuple(b.Sub(three, p), b.Div(p, three))
        assert_strict(run(b, v), (3.0 - v, v / 3.0), rtol=1e-15)

    def test_vector_along_rows_or_columns(self, run):
        m = np.arange(12, dtype=np.float32).reshape(3, 4)
        rows = np.array([100, 200, 300], np.float32)  # one per row: dimension 0
        cols = np.array([-1, -2, -3, -4], np.float32)  # one per column: dimension 1
        b = jitd.ComputationBuilder("bcast_dims")
        pm, pr, pc = (b.ParameterFromNumpy(a) for a in (m, rows, cols))
        by_row = b.Add(pm, pr, broadcast_dimensions=(0,))
        by_col = b.Mul(pm, pc, broadcast_dimensions=(1,))
        assert b.GetShape(by_row) == jitd.Shape(np.float32, (3, 4))
        b.Tuple(by_row, by_col)
        assert_strict(run(b, m, rows, cols), (m + rows[:, None], m * cols[None, :]))

    def test_lower_rank_on_the_left(self, run):
        m = np.arange(6, dtype=np.int32).reshape(2, 3)
        v = np.array([10, 20], np.int32)
        out = apply(run, lambda b, p, q: b.Sub(p, q, broadcast_dimensions=(0,)), v, m)
        assert_strict(out, v[:, None] - m)

    def test_matrix_into_rank_three(self, run):
        t = np.arange(24, dtype=np.int64).reshape(2, 3, 4)
        m = np.array([[1, 0, 2, 0], [0, 3, 0, 4]], np.int64)  # dims 0 and 2 of t
        out = apply(run, lambda b, p, q: b.Max(p, q, broadcast_dimensions=(0, 2)), t, m)
        assert_strict(out, np.maximum(t, m[:, None, :]))


class TestSelectAndClamp(object):

    def test_select_picks_per_element(self, run):
        pred = np.array([[True, False], [False, True]])
        a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
        z = np.array([[-1.0, -2.0], [-3.0, -4.0]], np.float32)
        assert_strict(apply(run, lambda b, p, x, y: b.Select(p, x, y), pred, a, z),
                      np.where(pred, a, z))

    def test_select_with_a_scalar_predicate(self, run):
        a = np.array([5, 6, 7], np.uint8)
        z = np.array([0, 1, 2], np.uint8)
        b = jitd.ComputationBuilder("select_scalar_pred")
        flag = b.ParameterFromNumpy(np.bool_(False))
        b.Select(flag, b.Constant(a), b.Constant(z))
        assert_strict(run(b, True), a)
        assert_strict(run(b, False), z)

    @pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint32],
                             ids=lambda d: np.dtype(d).name)
    def test_clamp_with_scalar_bounds(self, run, dtype):
        x = np.array([0, 3, 9, 12, 20], dtype)
        out = apply(run, lambda b, lo, v, hi: b.Clamp(lo, v, hi), np.array(3, dtype), x,
                    np.array(12, dtype))
        assert_strict(out, np.clip(x, 3, 12).astype(dtype))

    def test_clamp_with_array_bounds(self, run):
        lo = np.array([-1.0, 0.0, 2.0], np.float64)
        hi = np.array([1.0, 0.5, 8.0], np.float64)
        x = np.array([-3.0, 0.25, 9.0], np.float64)
        assert_strict(apply(run, lambda b, l, v, h: b.Clamp(l, v, h), lo, x, hi),
                      np.array([-1.0, 0.25, 8.0]))


CONVERTIBLE = [np.bool_, np.int8, np.int32, np.int64, np.uint8, np.uint32, np.float16,
               np.float32, np.float64]


class TestConversions(object):

    @pytest.mark.parametrize("target", CONVERTIBLE, ids=lambda d: np.dtype(d).name)
    @pytest.mark.parametrize("source", CONVERTIBLE, ids=lambda d: np.dtype(d).name)
    def test_convert_small_values_between_types(self, run, source, target):
        # Values every type here holds exactly; to bool, nonzero is True.
        x = np.array([0, 1, 0, 7, 100], source)
        b = jitd.ComputationBuilder("convert")
        op = b.ConvertElementType(b.ParameterFromNumpy(x), target)
        assert b.GetShape(op) == jitd.Shape(target, (5,))
        assert_strict(run(b, x), x.astype(target))

    def test_float_to_int_truncates_toward_zero(self, run):
        x = np.array([2.9, -2.9, 0.5, -0.5, 100.99], np.float64)
        assert_strict(apply(run, lambda b, v: b.ConvertElementType(v, jitd.PrimitiveType.S32), x),
                      np.array([2, -2, 0, 0, 100], np.int32))

    def test_to_and_from_complex(self, run):
        x = np.array([1.5, -2.0], np.float32)
        def body(b, v):
            z = b.ConvertElementType(v, np.complex64)
            return b.Tuple(z, b.ConvertElementType(z, jitd.PrimitiveType.C128))
        assert_strict(apply(run, body, x), (x.astype(np.complex64), x.astype(np.complex128)))

    def test_f32_through_bf16_rounds_to_eight_mantissa_bits(self, run):
        x = np.array([1.0, 1.00390625, 1.01171875, 3.14159265, -1e-3, 65504.0], np.float32)
        b = jitd.ComputationBuilder("bf16")
        b.ConvertElementType(b.ConvertElementType(b.ParameterFromNumpy(x),
                                                  jitd.PrimitiveType.BF16), np.float32)
        # bf16 is the top half of an f32: round the low 16 bits to nearest,
        # ties to even.
        bits = x.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        assert_strict(run(b, x), rounded.view(np.float32), rtol=0)

    @pytest.mark.parametrize("source,target", [
        (np.float32, np.int32), (np.int32, np.float32), (np.float32, np.uint32),
        (np.float64, np.int64), (np.uint64, np.float64), (np.int64, np.uint64),
        (np.float16, np.int16), (np.uint16, np.float16), (np.int8, np.uint8),
    ], ids=lambda d: np.dtype(d).name)
    def test_bitcast_reinterprets_the_bits(self, run, source, target):
        x = np.array([0, 1, 3, 64], np.int64).astype(source)
        x = np.concatenate([x, np.array([-2 if np.dtype(source).kind != "u" else 250],
                                        source)])
        b = jitd.ComputationBuilder("bitcast")
        op = b.BitcastConvertType(b.ParameterFromNumpy(x), target)
        assert b.GetShape(op) == jitd.Shape(target, (5,))
        out = run(b, x)
        assert_strict(out, x.view(target), rtol=0)

    def test_bitcast_with_a_primitive_type(self, run):
        b = jitd.ComputationBuilder("bitcast_pt")
        b.BitcastConvertType(b.Constant(np.array([1.0, -0.0], np.float32)),
                             jitd.PrimitiveType.U32)
        assert_strict(run(b), np.array([0x3F800000, 0x80000000], np.uint32))


class TestReducePrecision(object):

    def test_five_and_ten_bits_is_f16_rounding(self, run):
        # Normal f16 values, ties, values past f16's largest (to infinity).
        x = np.array([1.0 / 3, -2.7182817, 1234.567, 65504.0, 65536.0, -1e7, 6.2e-5,
                      1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, np.inf], np.float32)
        b = jitd.ComputationBuilder("rp_f16")
        b.ReducePrecision(b.ParameterFromNumpy(x), exponent_bits=5, mantissa_bits=10)
        with np.errstate(over="ignore"):
            expected = x.astype(np.float16).astype(np.float32)
        assert np.isinf(expected[4]) and expected[7] == 1.0  # overflow; tie to even
        assert_strict(run(b, x), expected, rtol=0)

    def test_eight_and_twenty_three_bits_is_f32_rounding(self, run):
        rng = np.random.RandomState(77)
        x = rng.standard_normal(12) * 10.0 ** rng.randint(-30, 30, 12)
        assert_strict(apply(run, lambda b, v: b.ReducePrecision(v, 8, 23), x),
                      x.astype(np.float32).astype(np.float64), rtol=0)

    def test_nan_stays_and_tiny_values_flush_to_signed_zero(self, run):
        x = np.array([np.nan, 3e-9, -3e-9, 0.75], np.float32)
        out = apply(run, lambda b, v: b.ReducePrecision(v, 5, 10), x)
        assert out.dtype == np.float32 and out.shape == (4,)
        assert np.isnan(out[0])
        np.testing.assert_array_equal(out[1:], np.array([0.0, -0.0, 0.75], np.float32))
        assert not np.signbit(out[1]) and np.signbit(out[2])


class TestConstantOperands(object):
    """With constant operands the cpu device folds an op at compile time (the
    evaluator computes it); with parameters it compiles the op. The two agree
    to within 2 units in the last place (the compiled f32 tanh, for one, is
    not always correctly rounded)."""

    @pytest.mark.parametrize("name", ["Exp", "Log1p", "Tanh", "Sin", "Cbrt", "Logistic",
                                      "Erf", "Lgamma", "Atanh", "RoundNearestEven"])
    def test_folded_equals_compiled_unary(self, run, name):
        x = np.linspace(-0.9, 0.95, 9).astype(np.float32) * 0.999
        if name == "Lgamma":
            x = x + 2.0
        b = jitd.ComputationBuilder("folded")
        getattr(b, name)(b.Constant(x))
        folded = run(b)
        compiled = apply(run, lambda bb, v: getattr(bb, name)(v), x)
        assert folded.dtype == compiled.dtype == np.float32
        assert folded.shape == compiled.shape == x.shape
        np.testing.assert_array_max_ulp(folded, compiled, maxulp=2)

    @pytest.mark.parametrize("name", ["Pow", "Atan2", "Rem", "Div", "NextAfter"])
    def test_folded_equals_compiled_binary(self, run, name):
        x = np.array([0.5, 2.0, 7.25, 1e-3], np.float64)
        y = np.array([3.0, -1.5, 0.75, 2.0], np.float64)
        b = jitd.ComputationBuilder("folded")
        getattr(b, name)(b.Constant(x), b.Constant(y))
        folded = run(b)
        compiled = apply(run, lambda bb, p, q: getattr(bb, name)(p, q), x, y)
        assert folded.dtype == compiled.dtype == np.float64
        assert folded.shape == compiled.shape == x.shape
        np.testing.assert_array_max_ulp(folded, compiled, maxulp=2)
