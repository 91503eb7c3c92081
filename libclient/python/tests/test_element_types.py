"""The element-type families one by one: signed and unsigned integers (all
widths), bool, complex, and f16, through the elementwise methods that
apply to each. Integer results are exact; numpy (which also wraps modulo
2^bits) is the oracle."""

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import COMPLEX, SIGNED, UNSIGNED, apply

pytestmark = requires_builder


def _name(dtype):
    return np.dtype(dtype).name


def _binary(run, method, x, y):
    return apply(run, lambda b, p, q: getattr(b, method)(p, q), x, y)


def _unary(run, method, x):
    return apply(run, lambda b, p: getattr(b, method)(p), x)


class TestSignedIntegers(object):

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_arithmetic_wraps_like_twos_complement(self, run, dtype):
        info = np.iinfo(dtype)
        x = np.array([info.max, info.min, -3, 17, 0], dtype)
        y = np.array([1, -1, 5, -4, info.min], dtype)
        with np.errstate(over="ignore"):
            for method, oracle in [("Add", np.add), ("Sub", np.subtract),
                                   ("Mul", np.multiply)]:
                assert_strict(_binary(run, method, x, y), oracle(x, y))

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_div_and_rem_truncate_toward_zero(self, run, dtype):
        x = np.array([17, -17, 17, -17, 5, 0], dtype)
        y = np.array([5, 5, -5, -5, 9, -3], dtype)
        quotient = np.trunc(x.astype(np.float64) / y).astype(dtype)
        assert_strict(_binary(run, "Div", x, y), quotient)
        assert_strict(_binary(run, "Rem", x, y), (x - quotient * y).astype(dtype))

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_max_min_abs_neg_sign(self, run, dtype):
        x = np.array([-7, 0, 9, np.iinfo(dtype).max], dtype)
        y = np.array([-8, 1, 9, -1], dtype)
        assert_strict(_binary(run, "Max", x, y), np.maximum(x, y))
        assert_strict(_binary(run, "Min", x, y), np.minimum(x, y))
        assert_strict(_unary(run, "Abs", x), np.abs(x))
        assert_strict(_unary(run, "Neg", x), np.negative(x))
        assert_strict(_unary(run, "Sign", x), np.sign(x).astype(dtype))

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_bitwise_and_or_xor_not(self, run, dtype):
        x = np.array([0b0110, -1, 0x55, 0], dtype)
        y = np.array([0b0011, 0x2A, -0x56, -1], dtype)
        assert_strict(_binary(run, "And", x, y), x & y)
        assert_strict(_binary(run, "Or", x, y), x | y)
        assert_strict(_binary(run, "Xor", x, y), x ^ y)
        assert_strict(_unary(run, "Not", x), ~x)

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_shifts(self, run, dtype):
        bits = np.iinfo(dtype).bits
        x = np.array([3, -20, -1, 1, 100], dtype)
        n = np.array([2, 1, 1, bits - 1, 0], dtype)
        assert_strict(_binary(run, "ShiftLeft", x, n), (x << n).astype(dtype))
        assert_strict(_binary(run, "ShiftRightArithmetic", x, n), x >> n)
        unsigned = x.view("u%d" % (bits // 8))
        logical = (unsigned >> n.view(unsigned.dtype)).view(dtype)
        assert_strict(_binary(run, "ShiftRightLogical", x, n), logical)

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_shifts_by_the_width_or_more(self, run, dtype):
        # jitd's choice where the spec leaves it open: every bit shifted out
        # (0; the sign for an arithmetic right shift).
        bits = np.iinfo(dtype).bits
        x = np.array([5, -5, 5, -5], dtype)
        n = np.array([bits, bits, bits + 3, bits + 3], dtype)
        assert_strict(_binary(run, "ShiftLeft", x, n), np.zeros(4, dtype))
        assert_strict(_binary(run, "ShiftRightLogical", x, n), np.zeros(4, dtype))
        assert_strict(_binary(run, "ShiftRightArithmetic", x, n),
                      np.array([0, -1, 0, -1], dtype))

    @pytest.mark.parametrize("dtype", SIGNED, ids=_name)
    def test_count_leading_zeros_and_population(self, run, dtype):
        bits = np.iinfo(dtype).bits
        x = np.array([0, 1, -1, 6, np.iinfo(dtype).max], dtype)
        assert_strict(_unary(run, "Clz", x), np.array([bits, bits - 1, 0, bits - 3, 1], dtype))
        assert_strict(_unary(run, "PopulationCount", x),
                      np.array([0, 1, bits, 2, bits - 1], dtype))

    def test_integer_power(self, run):
        x = np.array([3, -2, 7, 0, 1], np.int32)
        y = np.array([4, 5, 0, 3, 30], np.int32)
        assert_strict(_binary(run, "Pow", x, y), np.array([81, -32, 1, 0, 1], np.int32))


class TestUnsignedIntegers(object):

    @pytest.mark.parametrize("dtype", UNSIGNED, ids=_name)
    def test_arithmetic_wraps_modulo_two_to_the_bits(self, run, dtype):
        top = np.iinfo(dtype).max
        x = np.array([top, 0, 40, 7], dtype)
        y = np.array([2, 1, 6, 3], dtype)
        with np.errstate(over="ignore"):
            assert_strict(_binary(run, "Add", x, y), x + y)
            assert_strict(_binary(run, "Sub", x, y), x - y)
            assert_strict(_binary(run, "Mul", x, y), x * y)
        assert_strict(_binary(run, "Div", x, y), x // y)
        assert_strict(_binary(run, "Rem", x, y), x % y)

    @pytest.mark.parametrize("dtype", UNSIGNED, ids=_name)
    def test_order_is_unsigned(self, run, dtype):
        # Values with the top bit set are large, not negative.
        high = np.iinfo(dtype).max - 1
        x = np.array([high, 3, 0], dtype)
        y = np.array([5, high, 0], dtype)
        assert_strict(_binary(run, "Gt", x, y), x > y)
        assert_strict(_binary(run, "Max", x, y), np.maximum(x, y))
        assert_strict(_binary(run, "Min", x, y), np.minimum(x, y))

    @pytest.mark.parametrize("dtype", UNSIGNED, ids=_name)
    def test_bits(self, run, dtype):
        bits = np.iinfo(dtype).bits
        x = np.array([0, 1, np.iinfo(dtype).max, 12], dtype)
        n = np.array([1, bits - 1, 4, 2], dtype)
        assert_strict(_unary(run, "Not", x), ~x)
        assert_strict(_unary(run, "Clz", x), np.array([bits, bits - 1, 0, bits - 4], dtype))
        assert_strict(_unary(run, "PopulationCount", x), np.array([0, 1, bits, 2], dtype))
        assert_strict(_binary(run, "ShiftLeft", x, n), x << n)
        assert_strict(_binary(run, "ShiftRightLogical", x, n), x >> n)
        assert_strict(_binary(run, "Xor", x, n), x ^ n)


class TestBool(object):
    X = np.array([True, True, False, False])
    Y = np.array([True, False, True, False])

    @pytest.mark.parametrize("method,oracle", [
        ("And", np.logical_and), ("Or", np.logical_or), ("Xor", np.logical_xor),
        ("Eq", np.equal), ("Ne", np.not_equal), ("Max", np.logical_or),
        ("Min", np.logical_and)])
    def test_binary(self, run, method, oracle):
        assert_strict(_binary(run, method, self.X, self.Y), oracle(self.X, self.Y))

    def test_not(self, run):
        assert_strict(_unary(run, "Not", self.X), ~self.X)

    def test_predicates_combine(self, run):
        x = np.array([0.5, 3.0, -1.0, 8.0], np.float32)
        b = jitd.ComputationBuilder("in_range")
        v = b.ParameterFromNumpy(x)
        inside = b.And(b.Ge(v, b.ConstantF32Scalar(0.0)), b.Lt(v, b.ConstantF32Scalar(5.0)))
        b.Select(inside, v, b.Neg(v))
        assert_strict(run(b, x), np.where((x >= 0) & (x < 5), x, -x))


class TestComplex(object):

    @pytest.mark.parametrize("dtype", COMPLEX, ids=_name)
    def test_arithmetic(self, run, dtype):
        x = np.array([1 - 2j, -0.5 + 3j, 4j], dtype)
        y = np.array([3 + 1j, 2 - 2j, -1 + 0.5j], dtype)
        rtol = 1e-6 if dtype == np.complex64 else 1e-14
        for method, oracle in [("Add", np.add), ("Sub", np.subtract), ("Mul", np.multiply),
                               ("Div", np.divide)]:
            assert_strict(_binary(run, method, x, y), oracle(x, y), rtol=rtol)

    @pytest.mark.parametrize("dtype", COMPLEX, ids=_name)
    def test_parts(self, run, dtype):
        z = np.array([2.5 - 1j, -3 + 0.25j], dtype)
        part = np.float32 if dtype == np.complex64 else np.float64
        assert_strict(_unary(run, "Real", z), z.real.astype(part))
        assert_strict(_unary(run, "Imag", z), z.imag.astype(part))
        assert_strict(_unary(run, "Conj", z), np.conj(z))
        assert_strict(_unary(run, "Neg", z), -z)

    def test_abs_is_the_modulus_in_the_real_type(self, run):
        z = np.array([3 + 4j, -5 - 12j, 0j], np.complex128)
        assert_strict(_unary(run, "Abs", z), np.array([5.0, 13.0, 0.0]), rtol=1e-15)

    def test_complex_from_two_real_arrays(self, run):
        re = np.array([1.0, -2.0], np.float64)
        im = np.array([0.5, 8.0], np.float64)
        b = jitd.ComputationBuilder("complex")
        op = b.Complex(b.ParameterFromNumpy(re), b.ParameterFromNumpy(im))
        assert b.GetShape(op) == jitd.Shape(np.complex128, (2,))
        assert_strict(run(b, re, im), re + 1j * im)

    @pytest.mark.parametrize("method,oracle", [("Exp", np.exp), ("Log", np.log),
                                               ("Sqrt", np.sqrt)])
    def test_transcendental(self, run, method, oracle):
        z = np.array([1 + 1j, -2 + 0.5j, 0.25 - 3j], np.complex128)
        assert_strict(_unary(run, method, z), oracle(z), rtol=1e-14)

    def test_equality(self, run):
        x = np.array([1 + 2j, 1 + 2j, 3j], np.complex64)
        y = np.array([1 + 2j, 1 - 2j, 3j], np.complex64)
        assert_strict(_binary(run, "Eq", x, y), np.array([True, False, True]))
        assert_strict(_binary(run, "Ne", x, y), np.array([False, True, False]))


class TestHalf(object):

    def test_each_op_rounds_once_to_f16(self, run):
        # An f16 sum, product or square root computed exactly and rounded
        # once is what f32 arithmetic rounded to f16 gives.
        x = np.array([1.0009766, 3.140625, 1000.0, 0.0001], np.float16)
        y = np.array([2.0019531, -0.33325195, 64.0, 3.0], np.float16)
        wide_x, wide_y = x.astype(np.float32), y.astype(np.float32)
        for method, expected in [("Add", wide_x + wide_y), ("Mul", wide_x * wide_y),
                                 ("Div", wide_x / wide_y)]:
            assert_strict(_binary(run, method, x, y), expected.astype(np.float16), rtol=0)
        assert_strict(_unary(run, "Sqrt", np.abs(x)),
                      np.sqrt(np.abs(wide_x)).astype(np.float16), rtol=0)

    def test_overflow_to_infinity(self, run):
        x = np.array([60000.0, -60000.0], np.float16)
        with np.errstate(over="ignore"):
            expected = (x.astype(np.float32) * 2).astype(np.float16)
        assert_strict(_binary(run, "Add", x, x), expected)
        assert np.all(np.isinf(expected))
