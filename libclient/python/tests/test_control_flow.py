"""Control flow in the builder: While (scalar and tuple state, zero trips, a
trip count from a parameter), Conditional (the two-branch form and the
indexed form, including out-of-range indices) and Call (tuple roots,
nesting, reuse). Oracles are plain Python loops."""

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import apply, scalar_fn

pytestmark = requires_builder


def _computation(name, shapes, body):
    """A Computation with parameters of `shapes` and root body(b, *params)."""
    b = jitd.ComputationBuilder(name)
    params = [b.ParameterWithShape(s) for s in shapes]
    return b.Build(body(b, *params))


def _pair(*shapes):
    return jitd.Shape.tuple_shape(list(shapes))


S32 = jitd.Shape(np.int32, ())
F32 = jitd.Shape(np.float32, ())


class TestWhile(object):

    @pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32],
                             ids=lambda d: np.dtype(d).name)
    def test_scalar_state(self, run, dtype):
        # x = 2; while x < 100: x *= 3
        below = scalar_fn(dtype, 1, lambda b, x: b.Lt(x, b.Constant(np.array(100, dtype))))
        triple = scalar_fn(dtype, 1, lambda b, x: b.Mul(x, b.Constant(np.array(3, dtype))))
        b = jitd.ComputationBuilder("grow")
        b.While(below, triple, b.Constant(np.array(2, dtype)))
        x = 2
        while x < 100:
            x *= 3
        assert_strict(run(b), np.array(x, dtype))

    def test_no_trip_returns_the_initial_state(self, run):
        never = scalar_fn(np.float64, 1, lambda b, x: b.ConstantPredScalar(False))
        boom = scalar_fn(np.float64, 1, lambda b, x: b.Div(x, b.ConstantF64Scalar(0.0)))
        v = np.float64(-6.5)
        assert_strict(apply(run, lambda b, x: b.While(never, boom, x), v), v)

    def test_collatz_steps_with_a_tuple_state(self, run):
        state = _pair(S32, S32)  # (n, steps)
        not_one = _computation("not_one", [state], lambda b, s: b.Ne(
            b.GetTupleElement(s, 0), b.ConstantS32Scalar(1)))

        def step(b, s):
            n = b.GetTupleElement(s, 0)
            even = b.Eq(b.Rem(n, b.ConstantS32Scalar(2)), b.ConstantS32Scalar(0))
            halved = b.Div(n, b.ConstantS32Scalar(2))
            tripled = b.Add(b.Mul(n, b.ConstantS32Scalar(3)), b.ConstantS32Scalar(1))
            return b.Tuple(b.Select(even, halved, tripled),
                           b.Add(b.GetTupleElement(s, 1), b.ConstantS32Scalar(1)))
        collatz = _computation("collatz", [state], step)

        def body(b, n):
            return b.GetTupleElement(b.While(not_one, collatz,
                                             b.Tuple(n, b.ConstantS32Scalar(0))), 1)
        for start in (1, 6, 27):
            n, steps = start, 0
            while n != 1:
                n, steps = (n // 2 if n % 2 == 0 else 3 * n + 1), steps + 1
            assert_strict(apply(run, body, np.int32(start)), np.int32(steps))

    def test_array_state_and_a_trip_count_parameter(self, run):
        # (i, v): while i < limit: v = 2 v + i; i += 1, with limit a
        # parameter of the outer computation carried in the state.
        vec = jitd.Shape(np.float32, (3,))
        state = _pair(S32, S32, vec)
        going = _computation("going", [state], lambda b, s: b.Lt(
            b.GetTupleElement(s, 0), b.GetTupleElement(s, 1)))

        def step(b, s):
            i = b.GetTupleElement(s, 0)
            v = b.GetTupleElement(s, 2)
            return b.Tuple(b.Add(i, b.ConstantS32Scalar(1)), b.GetTupleElement(s, 1),
                           b.Add(b.Mul(v, b.ConstantF32Scalar(2.0)),
                                 b.ConvertElementType(i, np.float32)))
        update = _computation("update", [state], step)

        def body(b, limit, v0):
            out = b.While(going, update, b.Tuple(b.ConstantS32Scalar(0), limit, v0))
            return b.Tuple(b.GetTupleElement(out, 0), b.GetTupleElement(out, 2))
        v0 = np.array([1.0, -0.5, 0.0], np.float32)
        for limit in (0, 1, 5):
            v = v0.copy()
            for i in range(limit):
                v = 2 * v + i
            assert_strict(apply(run, body, np.int32(limit), v0), (np.int32(limit), v))


class TestConditional(object):

    def test_predicate_picks_the_branch(self, run):
        double = scalar_fn(np.float32, 1, lambda b, x: b.Add(x, x), "double")
        negate_int = _computation("negate_sum", [jitd.Shape(np.int32, (3,))], lambda b, v: (
            b.ConvertElementType(b.Neg(b.Reduce(v, b.ConstantS32Scalar(0), scalar_fn(
                np.int32, 2, lambda bb, p, q: bb.Add(p, q)), [0])), np.float32)))
        ints = np.array([4, 5, 6], np.int32)

        def body(b, p, x, v):
            return b.Conditional(p, x, double, v, negate_int)
        assert_strict(apply(run, body, np.bool_(True), np.float32(1.75), ints), np.float32(3.5))
        assert_strict(apply(run, body, np.bool_(False), np.float32(1.75), ints),
                      np.float32(-15.0))

    def test_constant_predicate(self, run):
        keep = scalar_fn(np.int64, 1, lambda b, x: x, "keep")
        square = scalar_fn(np.int64, 1, lambda b, x: b.Mul(x, x), "square")
        for flag, expected in [(True, 12), (False, 144)]:
            b = jitd.ComputationBuilder("cond_const")
            x = b.ConstantS64Scalar(12)
            b.Conditional(b.ConstantPredScalar(flag), x, keep, x, square)
            assert_strict(run(b), np.int64(expected))

    def test_branches_returning_tuples(self, run):
        both = _computation("both", [F32], lambda b, x: b.Tuple(x, b.Neg(x)))
        swapped = _computation("swapped", [F32], lambda b, x: b.Tuple(b.Neg(x), x))

        def body(b, p, x):
            return b.Conditional(p, x, both, x, swapped)
        assert_strict(apply(run, body, np.bool_(False), np.float32(2.5)),
                      (np.float32(-2.5), np.float32(2.5)))

    @pytest.mark.parametrize("index,expected", [(0, 10.0), (1, 1.0), (2, -3.0),
                                                (3, -3.0), (-1, -3.0)])
    def test_indexed_branches(self, run, index, expected):
        # An index outside [0, n) runs the last branch.
        branches = [scalar_fn(np.float32, 1, lambda b, x: b.Mul(x, b.ConstantF32Scalar(10.0))),
                    scalar_fn(np.float32, 1, lambda b, x: b.Sqrt(x)),
                    scalar_fn(np.float32, 1, lambda b, x: b.Sub(b.ConstantF32Scalar(-2.0),
                                                                b.ConstantF32Scalar(1.0)))]

        def body(b, i, x):
            return b.Conditional(i, branches, [x, x, x])
        assert_strict(apply(run, body, np.int32(index), np.float32(1.0)), np.float32(expected))

    def test_indexed_branches_with_different_operands(self, run):
        first = scalar_fn(np.int32, 1, lambda b, x: b.ConvertElementType(x, np.float64))
        second = scalar_fn(np.float64, 1, lambda b, x: b.Mul(x, x))

        def body(b, i):
            return b.Conditional(i, [first, second], [b.ConstantS32Scalar(7),
                                                      b.ConstantF64Scalar(1.5)])
        assert_strict(apply(run, body, np.int32(0)), np.float64(7.0))
        assert_strict(apply(run, body, np.int32(1)), np.float64(2.25))


class TestCall(object):

    def test_call_a_scalar_function(self, run):
        cube = scalar_fn(np.float64, 1, lambda b, x: b.Mul(x, b.Mul(x, x)), "cube")
        assert_strict(apply(run, lambda b, x: b.Call(cube, [x]), np.float64(-1.5)),
                      np.float64(-3.375))

    def test_call_with_array_parameters_and_a_tuple_root(self, run):
        vec = jitd.Shape(np.int32, (4,))
        split = _computation("split", [vec, vec], lambda b, x, y: b.Tuple(
            b.Max(x, y), b.Min(x, y)))
        x = np.array([3, -8, 0, 12], np.int32)
        y = np.array([5, -9, 0, 2], np.int32)

        def body(b, p, q):
            t = b.Call(split, (p, q))
            return b.Sub(b.GetTupleElement(t, 0), b.GetTupleElement(t, 1))
        assert_strict(apply(run, body, x, y), np.abs(x - y))

    def test_the_same_computation_called_twice(self, run):
        add_three = scalar_fn(np.int16, 1, lambda b, x: b.Add(x, b.Constant(np.int16(3))))
        assert_strict(apply(run, lambda b, x: b.Call(add_three, [b.Call(add_three, [x])]),
                            np.int16(100)), np.int16(106))

    def test_nested_calls(self, run):
        inner = scalar_fn(np.float32, 2, lambda b, x, y: b.Mul(x, y), "inner")
        outer = scalar_fn(np.float32, 1, lambda b, x: b.Call(inner, [x, b.Call(inner, [x, x])]),
                          "outer")
        assert_strict(apply(run, lambda b, x: b.Call(outer, [x]), np.float32(1.5)),
                      np.float32(3.375))

    def test_calls_inside_a_loop_body(self, run):
        halve = scalar_fn(np.float64, 1, lambda b, x: b.Mul(x, b.ConstantF64Scalar(0.5)))
        step = scalar_fn(np.float64, 1, lambda b, x: b.Call(halve, [x]), "step")
        big = scalar_fn(np.float64, 1, lambda b, x: b.Gt(x, b.ConstantF64Scalar(1.0)), "big")
        assert_strict(apply(run, lambda b, x: b.While(big, step, x), np.float64(40.0)),
                      np.float64(0.625))
