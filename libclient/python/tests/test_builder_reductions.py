"""Builder methods that take an embedded computation and apply it across
elements: Reduce (one operand or several), ReduceWindow, Map, Sort (with and
without a comparator) and SelectAndScatter. The embedded computations are
built with support.scalar_fn; results are checked against numpy, or against
the loop-by-loop references in support.py for the windowed ops."""

import itertools

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import (adder, apply, maximum, reduce_window_reference, scalar_fn,
                     select_and_scatter_reference)

pytestmark = requires_builder

CUBE = (np.arange(60, dtype=np.float64).reshape(3, 4, 5) - 17.5) / 8


def _same_padding(size, window, stride):
    """(low, high) padding that makes the output ceil(size / stride) long,
    the extra element on the high side."""
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return total // 2, total - total // 2


class TestReduce(object):

    @pytest.mark.parametrize("dims", [d for r in (1, 2, 3)
                                      for d in itertools.combinations(range(3), r)])
    def test_sum_over_each_set_of_dimensions(self, run, dims):
        def body(b, x):
            return b.Reduce(x, b.ConstantF64Scalar(0.0), adder(np.float64), list(dims))
        assert_strict(apply(run, body, CUBE), np.sum(CUBE, axis=dims), rtol=1e-13, atol=1e-13)

    @pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16, np.float32],
                             ids=lambda d: np.dtype(d).name)
    def test_max_with_the_lowest_value_as_init(self, run, dtype):
        x = np.array([[3, 9, 1], [7, 2, 8]], dtype)
        lowest = np.finfo(dtype).min if np.dtype(dtype).kind == "f" else np.iinfo(dtype).min

        def body(b, v):
            return b.Reduce(v, b.Constant(np.array(lowest, dtype)), maximum(dtype), [1])
        assert_strict(apply(run, body, x), np.max(x, axis=1))

    def test_product_of_integers(self, run):
        x = np.array([[2, -3, 4], [1, 5, -1]], np.int64)
        mul = scalar_fn(np.int64, 2, lambda b, p, q: b.Mul(p, q), "mul")
        assert_strict(apply(run, lambda b, v: b.Reduce(v, b.ConstantS64Scalar(1), mul, [0, 1]),
                            x), np.int64(120))

    def test_logical_any_over_bools(self, run):
        x = np.array([[False, False], [True, False], [False, False]])
        anyof = scalar_fn(np.bool_, 2, lambda b, p, q: b.Or(p, q), "any")
        assert_strict(apply(run, lambda b, v: b.Reduce(v, b.ConstantPredScalar(False), anyof,
                                                       [1]), x), np.any(x, axis=1))

    def test_empty_dimension_gives_the_init_value(self, run):
        x = np.zeros((3, 0), np.float32)
        assert_strict(apply(run, lambda b, v: b.Reduce(v, b.ConstantF32Scalar(1.25),
                                                       adder(np.float32), [1]), x),
                      np.full(3, 1.25, np.float32))

    def test_two_operands_find_the_first_minimum_and_its_index(self, run):
        # The reducer takes (value, index) pairs: the smaller value wins, and
        # on a tie the smaller index.
        def pick(b, va, ia, vb, ib):
            a_wins = b.Or(b.Lt(va, vb), b.And(b.Eq(va, vb), b.Lt(ia, ib)))
            return b.Tuple(b.Select(a_wins, va, vb), b.Select(a_wins, ia, ib))

        argmin = jitd.ComputationBuilder("argmin")
        params = [argmin.ParameterFromNumpy(np.zeros((), t))
                  for t in (np.float32, np.int32, np.float32, np.int32)]
        argmin = argmin.Build(pick(argmin, *params))
        x = np.array([[4.0, -1.0, 3.0, -1.0], [0.5, 0.5, 9.0, 0.25]], np.float32)

        def body(b, v):
            idx = b.BroadcastedIota(np.int32, x.shape, 1)
            out = b.Reduce([v, idx], [b.ConstantF32Scalar(np.inf), b.ConstantS32Scalar(-1)],
                           argmin, [1])
            return b.Tuple(b.GetTupleElement(out, 0), b.GetTupleElement(out, 1))
        assert_strict(apply(run, body, x), (np.min(x, axis=1), np.argmin(x, axis=1)
                                            .astype(np.int32)))


class TestReduceWindow(object):

    @pytest.mark.parametrize("window,strides", [((2, 2), (1, 1)), ((3, 1), (2, 1)),
                                                ((1, 4), (1, 3)), ((4, 5), (1, 1))])
    def test_valid_sum(self, run, window, strides):
        x = np.arange(20, dtype=np.float32).reshape(4, 5)
        expected = reduce_window_reference(x, 0.0, np.add, window, strides, (0, 0), (0, 0))

        def body(b, v):
            return b.ReduceWindow(v, b.ConstantF32Scalar(0.0), adder(np.float32), window,
                                  strides, jitd.PaddingType.VALID)
        assert_strict(apply(run, body, x), expected)

    @pytest.mark.parametrize("window,strides", [((2, 2), (1, 1)), ((3, 2), (2, 2)),
                                                ((2, 3), (3, 1))])
    def test_same_max(self, run, window, strides):
        x = np.array([[5, -2, 7, 1, 0], [3, 8, -6, 4, 2], [-1, 6, 9, -3, 5], [2, 0, 1, 7, -8]],
                     np.int32)
        lows, highs = zip(*[_same_padding(n, w, s) for n, w, s in zip(x.shape, window,
                                                                       strides)])
        lowest = np.iinfo(np.int32).min
        expected = reduce_window_reference(x, lowest, max, window, strides, lows, highs)
        assert expected.shape == tuple(-(-n // s) for n, s in zip(x.shape, strides))

        def body(b, v):
            return b.ReduceWindow(v, b.ConstantS32Scalar(lowest), maximum(np.int32), window,
                                  strides, jitd.PaddingType.SAME)
        assert_strict(apply(run, body, x), expected)

    def test_general_padding(self, run):
        x = np.array([[1.0, 2.0, 4.0], [8.0, 16.0, 32.0]], np.float64)
        pads = [(1, 0), (2, 1)]
        expected = reduce_window_reference(x, 0.0, np.add, (2, 2), (1, 2), (1, 2), (0, 1))

        def body(b, v):
            return b.ReduceWindowWithGeneralPadding(v, b.ConstantF64Scalar(0.0),
                                                    adder(np.float64), (2, 2), (1, 2), pads)
        assert_strict(apply(run, body, x), expected)

    @pytest.mark.parametrize("base,win", [((2, 1), None), (None, (1, 2)), ((2, 2), (2, 1))])
    def test_dilations(self, run, base, win):
        x = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
        expected = reduce_window_reference(x, 0.0, np.add, (2, 2), (1, 1), (0, 1), (1, 0),
                                           base, win)

        def body(b, v):
            return b.ReduceWindowWithGeneralPadding(v, b.ConstantF32Scalar(0.0),
                                                    adder(np.float32), (2, 2), (1, 1),
                                                    [(0, 1), (1, 0)], base_dilations=base,
                                                    window_dilations=win)
        assert_strict(apply(run, body, x), expected)

    def test_one_dimensional_running_max(self, run):
        x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0], np.float32)

        def body(b, v):
            return b.ReduceWindowWithGeneralPadding(v, b.ConstantF32Scalar(-np.inf),
                                                    maximum(np.float32), (3,), (1,), [(2, 0)])
        expected = np.array([x[max(0, i - 2):i + 1].max() for i in range(len(x))], np.float32)
        assert_strict(apply(run, body, x), expected)


class TestMap(object):

    def test_unary_function(self, run):
        x = np.array([[-1.5, 0.0], [2.0, 3.5]], np.float32)
        square_plus_one = scalar_fn(np.float32, 1,
                                    lambda b, v: b.Add(b.Mul(v, v), b.ConstantF32Scalar(1.0)))
        assert_strict(apply(run, lambda b, v: b.Map([v], square_plus_one, [0, 1]), x),
                      x * x + 1)

    def test_two_operands(self, run):
        x = np.array([9.0, 4.0, -1.0], np.float64)
        y = np.array([1.0, 0.5, 2.0], np.float64)
        x_minus_twice_y = scalar_fn(np.float64, 2,
                                    lambda b, p, q: b.Sub(p, b.Mul(b.ConstantF64Scalar(2.0), q)))
        assert_strict(apply(run, lambda b, p, q: b.Map((p, q), x_minus_twice_y, [0]), x, y),
                      x - 2 * y)

    def test_result_type_is_the_function_result_type(self, run):
        x = np.array([0.5, 3.0, -2.0, 7.0], np.float32)
        is_big = scalar_fn(np.float32, 1, lambda b, v: b.Gt(v, b.ConstantF32Scalar(2.0)))
        b = jitd.ComputationBuilder("map_pred")
        op = b.Map([b.ParameterFromNumpy(x)], is_big, [0])
        assert b.GetShape(op) == jitd.Shape(np.bool_, (4,))
        assert_strict(run(b, x), x > 2.0)

    def test_function_ignoring_its_argument(self, run):
        x = np.array([1.0, -1.0, 8.0], np.float64)
        seven = scalar_fn(np.float64, 1, lambda b, v: b.ConstantS32Scalar(7), "seven")
        assert_strict(apply(run, lambda b, v: b.Map([v], seven, [0]), x),
                      np.full(3, 7, np.int32))

    def test_maps_in_sequence(self, run):
        x = np.array([1, 2, 3], np.int32)
        inc = scalar_fn(np.int32, 1, lambda b, v: b.Add(v, b.ConstantS32Scalar(1)), "inc")
        to_f = scalar_fn(np.int32, 1, lambda b, v: b.ConvertElementType(v, np.float32), "to_f")
        half = scalar_fn(np.float32, 1, lambda b, v: b.Mul(v, b.ConstantF32Scalar(0.5)), "half")

        def body(b, v):
            return b.Map([b.Map([b.Map([v], inc, [0])], to_f, [0])], half, [0])
        assert_strict(apply(run, body, x), ((x + 1) * 0.5).astype(np.float32))


class TestSort(object):

    @pytest.mark.parametrize("dimension", [0, 1, -1])
    def test_one_operand_ascending(self, run, dimension):
        x = np.array([[3.5, -1.0, 2.0], [0.0, 9.0, -4.5], [1.0, 1.0, -8.0]], np.float32)
        assert_strict(apply(run, lambda b, v: b.Sort(v, dimension=dimension), x),
                      np.sort(x, axis=dimension))

    @pytest.mark.parametrize("dtype", [np.int8, np.uint32, np.int64, np.float64],
                             ids=lambda d: np.dtype(d).name)
    def test_each_type(self, run, dtype):
        x = np.array([7, 0, 100, 3, 3, 42, 1], dtype)
        assert_strict(apply(run, lambda b, v: b.Sort(v), x), np.sort(x))

    def test_values_follow_their_keys(self, run):
        keys = np.array([30, 10, 20, 0], np.int32)
        values = np.array([3.0, 1.0, 2.0, 0.0], np.float32)
        order = np.argsort(keys)
        assert_strict(apply(run, lambda b, k, v: b.Sort((k, v)), keys, values),
                      (keys[order], values[order]))

    def test_sort_key_val(self, run):
        keys = np.array([[2, 1], [0, 5]], np.int64)
        values = np.array([[-1, -2], [-3, -4]], np.int16)
        order = np.argsort(keys, axis=0)
        assert_strict(apply(run, lambda b, k, v: b.SortKeyVal(k, v, dimension=0), keys, values),
                      (np.take_along_axis(keys, order, 0), np.take_along_axis(values, order, 0)))

    def test_descending_comparator(self, run):
        x = np.array([0.25, 8.0, -3.0, 2.0], np.float64)
        descending = scalar_fn(np.float64, 2, lambda b, p, q: b.Gt(p, q), "descending")
        assert_strict(apply(run, lambda b, v: b.Sort(v, comparator=descending), x),
                      np.sort(x)[::-1])

    def test_stable_sort_keeps_equal_keys_in_order(self, run):
        keys = np.array([2, 1, 2, 1, 2, 0], np.int32)
        tags = np.arange(6, dtype=np.int32)
        by_key = jitd.ComputationBuilder("by_key")
        k1, k2, t1, t2 = [by_key.ParameterFromNumpy(np.int32(0)) for _ in range(4)]
        by_key = by_key.Build(by_key.Lt(k1, k2))
        # Parameters come in pairs per operand: (keys_a, keys_b, tags_a, tags_b).
        order = np.argsort(keys, kind="stable")
        assert_strict(apply(run, lambda b, k, t: b.Sort((k, t), comparator=by_key,
                                                        is_stable=True), keys, tags),
                      (keys[order], tags[order]))

    def test_two_key_comparator(self, run):
        # Ascending on the first key, descending on the second on ties.
        first = np.array([1, 0, 1, 0, 1], np.int32)
        second = np.array([5, 7, 9, 2, 6], np.int32)
        lex = jitd.ComputationBuilder("lex")
        a1, b1, a2, b2 = [lex.ParameterFromNumpy(np.int32(0)) for _ in range(4)]
        lex = lex.Build(lex.Or(lex.Lt(a1, b1), lex.And(lex.Eq(a1, b1), lex.Gt(a2, b2))))
        order = sorted(range(5), key=lambda i: (first[i], -second[i]))
        assert_strict(apply(run, lambda b, p, q: b.Sort((p, q), dimension=0, comparator=lex),
                            first, second), (first[order], second[order]))


class TestSelectAndScatter(object):
    """For each window of the operand the select computation picks one
    element; the source element of that window is scattered onto it."""

    @staticmethod
    def _ge():
        return scalar_fn(np.float32, 2, lambda b, p, q: b.Ge(p, q), "ge")

    def test_valid_windows_scatter_to_the_maximum(self, run):
        x = np.array([[1.0, 7.0, 3.0, 2.0], [6.0, 0.0, 5.0, 8.0]], np.float32)
        source = np.array([[10.0, 20.0]], np.float32)  # one per 2x2 window, stride 2
        expected = select_and_scatter_reference(x, source, (2, 2), (2, 2), (0, 0), 0.0,
                                                lambda a, c: a >= c, np.add)
        np.testing.assert_array_equal(np.nonzero(expected), ([0, 1], [1, 3]))

        def body(b, v, s):
            return b.SelectAndScatter(v, self._ge(), (2, 2), (2, 2), jitd.PaddingType.VALID, s,
                                      b.ConstantF32Scalar(0.0), adder(np.float32))
        assert_strict(apply(run, body, x, source), expected)

    def test_overlapping_windows_accumulate(self, run):
        x = np.array([4.0, 1.0, 9.0, 2.0, 3.0], np.float32)
        source = np.array([1.0, 10.0, 100.0, 1000.0], np.float32)  # windows of 2, stride 1
        expected = select_and_scatter_reference(x, source, (2,), (1,), (0,), 0.5,
                                                lambda a, c: a >= c, np.add)
        assert expected[2] == 0.5 + 10 + 100

        def body(b, v, s):
            return b.SelectAndScatter(v, self._ge(), (2,), (1,), jitd.PaddingType.VALID, s,
                                      b.ConstantF32Scalar(0.5), adder(np.float32))
        assert_strict(apply(run, body, x, source), expected)

    def test_same_padding(self, run):
        rng = np.random.RandomState(5150)
        x = rng.permutation(35).reshape(5, 7).astype(np.float32)
        window, strides = (2, 3), (2, 2)
        lows = [_same_padding(n, w, s)[0] for n, w, s in zip(x.shape, window, strides)]
        source = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
        expected = select_and_scatter_reference(x, source, window, strides, lows, 0.0,
                                                lambda a, c: a >= c, np.add)

        def body(b, v, s):
            return b.SelectAndScatter(v, self._ge(), window, strides, jitd.PaddingType.SAME, s,
                                      b.ConstantF32Scalar(0.0), adder(np.float32))
        assert_strict(apply(run, body, x, source), expected, rtol=1e-6)

    def test_general_padding_minimum_and_max_combiner(self, run):
        x = np.array([[6, 2, 8], [4, 9, 1], [7, 3, 5]], np.int32)
        source = np.array([[5, 7], [3, 11], [2, 13]], np.int32)
        le = scalar_fn(np.int32, 2, lambda b, p, q: b.Le(p, q), "le")
        expected = select_and_scatter_reference(x, source, (2, 2), (1, 2), (0, 1), -100,
                                                lambda a, c: a <= c, max)

        def body(b, v, s):
            return b.SelectAndScatterWithGeneralPadding(
                v, le, (2, 2), (1, 2), [(0, 1), (1, 1)], s, b.ConstantS32Scalar(-100),
                maximum(np.int32))
        assert_strict(apply(run, body, x, source), expected)
