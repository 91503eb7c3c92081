"""Builder methods that move elements rather than compute them: reshape,
collapse, transpose, reverse, slices (static and dynamic), concatenation,
padding, broadcasts, tuples, gather and scatter. Each test checks the shape
the builder infers (GetShape) before running, and the values after."""

import itertools

import numpy as np
import pytest

import jitd
from conftest import assert_strict, requires_builder
from support import adder, apply, gather_reference, pad_reference, scalar_fn, scatter_reference

pytestmark = requires_builder


def _inferred(body, *arrays):
    """The shape the builder infers for body(builder, *parameters)."""
    b = jitd.ComputationBuilder("infer")
    return b.GetShape(body(b, *[b.ParameterFromNumpy(a) for a in arrays]))


def _check(run, body, expected, *arrays):
    """Checks the inferred shape against `expected`'s, then the values."""
    expected = np.asarray(expected)
    assert _inferred(body, *arrays) == jitd.Shape(expected.dtype, expected.shape)
    assert_strict(apply(run, body, *arrays), expected)


GRID = np.arange(1, 25, dtype=np.int32).reshape(2, 3, 4) * 7 - 50


class TestReshape(object):

    @pytest.mark.parametrize("new_sizes", [(24,), (4, 6), (6, 2, 2), (1, 24, 1)])
    def test_row_major_order_is_kept(self, run, new_sizes):
        _check(run, lambda b, x: b.Reshape(x, None, new_sizes), GRID.reshape(new_sizes), GRID)

    def test_dimensions_transpose_first(self, run):
        # Reshape(x, dimensions=[2, 0, 1], ...) reads x in that dimension order.
        expected = np.transpose(GRID, (2, 0, 1)).reshape(4, 6)
        _check(run, lambda b, x: b.Reshape(x, [2, 0, 1], [4, 6]), expected, GRID)

    def test_to_and_from_a_scalar(self, run):
        one = np.array([[[-3.5]]], np.float64)
        _check(run, lambda b, x: b.Reshape(x, None, []), np.float64(-3.5), one)
        _check(run, lambda b, x: b.Reshape(x, None, [1, 1]), np.array([[2.0]]), np.float64(2.0))

    @pytest.mark.parametrize("dims,expected_shape", [([0, 1], (6, 4)), ([1, 2], (2, 12)),
                                                     ([0, 1, 2], (24,))])
    def test_collapse_merges_consecutive_dimensions(self, run, dims, expected_shape):
        _check(run, lambda b, x: b.Collapse(x, dims), GRID.reshape(expected_shape), GRID)


class TestTransposeAndRev(object):

    @pytest.mark.parametrize("permutation", list(itertools.permutations(range(3))))
    def test_every_permutation_of_rank_three(self, run, permutation):
        _check(run, lambda b, x: b.Transpose(x, permutation), np.transpose(GRID, permutation),
               GRID)

    def test_fortran_ordered_argument(self, run):
        x = np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3))
        _check(run, lambda b, v: b.Transpose(v, [1, 0]), np.ascontiguousarray(x.T), x)

    @pytest.mark.parametrize("dims", [[0], [2], [0, 1], [0, 1, 2], []])
    def test_rev(self, run, dims):
        _check(run, lambda b, x: b.Rev(x, dims), np.flip(GRID, dims) if dims else GRID, GRID)


class TestSlices(object):

    def test_slice(self, run):
        _check(run, lambda b, x: b.Slice(x, [1, 0, 1], [2, 2, 4]), GRID[1:2, 0:2, 1:4], GRID)

    def test_slice_with_strides(self, run):
        _check(run, lambda b, x: b.Slice(x, [0, 0, 0], [2, 3, 4], [1, 2, 3]),
               GRID[:, ::2, ::3], GRID)

    def test_empty_slice(self, run):
        _check(run, lambda b, x: b.Slice(x, [0, 2, 0], [2, 2, 4]), GRID[:, 2:2, :], GRID)

    @pytest.mark.parametrize("start,limit,stride,dimno", [(1, 3, 1, 1), (0, 4, 3, 2),
                                                          (1, 2, 1, 0)])
    def test_slice_in_dim(self, run, start, limit, stride, dimno):
        where = [slice(None)] * 3
        where[dimno] = slice(start, limit, stride)
        _check(run, lambda b, x: b.SliceInDim(x, start, limit, stride, dimno),
               GRID[tuple(where)], GRID)

    def test_dynamic_slice_with_scalar_index_operands(self, run):
        b = jitd.ComputationBuilder("dyn")
        x = b.ParameterFromNumpy(GRID)
        i = b.ParameterFromNumpy(np.int32(0))
        j = b.ParameterFromNumpy(np.int32(0))
        op = b.DynamicSlice(x, [i, j, b.ConstantS32Scalar(1)], [1, 2, 3])
        assert b.GetShape(op) == jitd.Shape(np.int32, (1, 2, 3))
        assert_strict(run(b, GRID, np.int32(1), np.int32(1)), GRID[1:2, 1:3, 1:4])
        assert_strict(run(b, GRID, np.int32(0), np.int32(0)), GRID[0:1, 0:2, 1:4])

    def test_dynamic_slice_with_an_index_vector(self, run):
        starts = np.array([1, 0], np.int64)
        m = np.arange(20, dtype=np.float32).reshape(4, 5)
        _check(run, lambda b, x, s: b.DynamicSlice(x, s, [2, 3]), m[1:3, 0:3], m, starts)

    def test_dynamic_slice_clamps_the_start_so_the_slice_fits(self, run):
        m = np.arange(20, dtype=np.float32).reshape(4, 5)
        for starts, rows, cols in [([9, 9], slice(2, 4), slice(2, 5)),
                                   ([-4, 1], slice(0, 2), slice(1, 4))]:
            _check(run, lambda b, x, s: b.DynamicSlice(x, s, [2, 3]), m[rows, cols], m,
                   np.array(starts, np.int32))

    def test_dynamic_update_slice(self, run):
        m = np.zeros((4, 5), np.int16)
        patch = np.array([[1, 2], [3, 4], [5, 6]], np.int16)
        expected = m.copy()
        expected[1:4, 2:4] = patch
        _check(run, lambda b, x, p, s: b.DynamicUpdateSlice(x, p, s), expected, m, patch,
               np.array([1, 2], np.int32))

    def test_dynamic_update_slice_clamps_and_takes_scalar_ops(self, run):
        m = np.full((3, 3), -1.0, np.float64)
        patch = np.array([[7.0, 8.0]])
        expected = m.copy()
        expected[2, 1:3] = patch  # start (5, 2) clamped to (2, 1)

        def body(b, x, p):
            return b.DynamicUpdateSlice(x, p, [b.ConstantS32Scalar(5), b.ConstantS32Scalar(2)])
        _check(run, body, expected, m, patch)


class TestConcatenateAndPad(object):

    def test_concatenate_along_each_dimension(self, run):
        a = np.arange(6, dtype=np.uint8).reshape(2, 3)
        for dim, other in [(0, np.full((1, 3), 9, np.uint8)), (1, np.full((2, 2), 8, np.uint8))]:
            _check(run, lambda b, x, y, d=dim: b.ConcatInDim([x, y], d),
                   np.concatenate([a, other], dim), a, other)

    def test_three_operands_with_the_concatenate_alias(self, run):
        parts = [np.array([1.5], np.float32), np.array([], np.float32),
                 np.array([2.5, 3.5], np.float32)]
        _check(run, lambda b, *xs: b.Concatenate(list(xs), 0), np.concatenate(parts), *parts)

    @pytest.mark.parametrize("config", [
        [(1, 2, 0), (0, 1, 1)],
        [(0, 0, 2), (3, 0, 0)],
        [(-1, 1, 0), (1, -2, 1)],   # negative edges cut elements off
    ])
    def test_pad(self, run, config):
        x = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
        expected = pad_reference(x, np.float32(-9), config)
        _check(run, lambda b, v, f: b.Pad(v, f, config), expected, x, np.float32(-9))

    def test_pad_takes_a_padding_config_object(self, run):
        class Dimension(object):
            def __init__(self, low, high, interior):
                self.edge_padding_low = low
                self.edge_padding_high = high
                self.interior_padding = interior

        class Config(object):
            dimensions = [Dimension(2, 0, 1)]

        x = np.array([5, 6, 7], np.int32)
        _check(run, lambda b, v: b.Pad(v, b.ConstantS32Scalar(0), Config()),
               np.array([0, 0, 5, 0, 6, 0, 7], np.int32), x)


class TestBroadcast(object):

    def test_broadcast_adds_leading_dimensions(self, run):
        v = np.array([3, -1], np.int64)
        _check(run, lambda b, x: b.Broadcast(x, (4, 3)), np.broadcast_to(v, (4, 3, 2)), v)

    def test_broadcast_a_scalar(self, run):
        _check(run, lambda b, x: b.Broadcast(x, (2, 2)), np.full((2, 2), 0.25, np.float32),
               np.float32(0.25))

    def test_broadcast_in_dim_places_the_operand_dimensions(self, run):
        col = np.array([1.0, 2.0, 3.0], np.float64)
        _check(run, lambda b, x: b.BroadcastInDim(x, [3, 4], [0]),
               np.broadcast_to(col[:, None], (3, 4)), col)
        _check(run, lambda b, x: b.BroadcastInDim(x, [2, 3], [1]),
               np.broadcast_to(col[None, :], (2, 3)), col)

    def test_broadcast_in_dim_expands_size_one_dimensions(self, run):
        m = np.array([[10], [20]], np.int32)  # 2x1: dimension 1 grows from 1 to 3
        _check(run, lambda b, x: b.BroadcastInDim(x, [2, 5, 3], [0, 2]),
               np.broadcast_to(m[:, None, :], (2, 5, 3)), m)


class TestTuples(object):

    def test_tuple_of_mixed_types(self, run):
        parts = (np.int8(-5), np.array([0.5, 0.25], np.float64), np.array([[True], [False]]))
        b = jitd.ComputationBuilder("tuple")
        t = b.Tuple(*[b.ParameterFromNumpy(p) for p in parts])
        assert b.GetShape(t) == jitd.Shape.from_numpy(parts)
        assert b.GetShape(t).is_tuple()
        out = run(b, *parts)
        assert isinstance(out, tuple)
        assert_strict(out, tuple(np.asarray(p) for p in parts))

    @pytest.mark.parametrize("index", [0, 1, 2])
    def test_get_tuple_element(self, run, index):
        parts = (np.uint16(9), np.array([1.0, -1.0], np.float32), np.array([3 + 1j]))
        b = jitd.ComputationBuilder("gte")
        t = b.Tuple(*[b.ParameterFromNumpy(p) for p in parts])
        op = b.GetTupleElement(t, index)
        assert b.GetShape(op) == jitd.Shape.from_numpy(parts[index])
        assert_strict(run(b, *parts), np.asarray(parts[index]))

    def test_nested_tuples(self, run):
        b = jitd.ComputationBuilder("nested")
        inner = b.Tuple(b.ConstantS32Scalar(1), b.ConstantF32Scalar(2.0))
        outer = b.Tuple(inner, b.ConstantS64Scalar(3))
        b.GetTupleElement(b.GetTupleElement(outer, 0), 1)
        assert_strict(run(b), np.float32(2.0))


TABLE = np.arange(30, dtype=np.float32).reshape(5, 6) / 4


class TestGather(object):

    def test_rows_by_index(self, run):
        # One index per output row: whole rows of the table (like TABLE[idx]).
        idx = np.array([4, 0, 2, 2], np.int32)
        dn = jitd.GatherDimensionNumbers(offset_dims=[1], collapsed_slice_dims=[0],
                                         start_index_map=[0], index_vector_dim=1)
        _check(run, lambda b, t, i: b.Gather(t, i, dn, slice_sizes=[1, 6]), TABLE[idx], TABLE,
               idx)

    def test_points_by_coordinate_pairs(self, run):
        coords = np.array([[[0, 5], [4, 0]], [[3, 3], [1, 2]]], np.int32)
        dn = jitd.GatherDimensionNumbers(offset_dims=[], collapsed_slice_dims=[0, 1],
                                         start_index_map=[0, 1], index_vector_dim=2)
        _check(run, lambda b, t, i: b.Gather(t, i, dn, [1, 1]),
               TABLE[coords[..., 0], coords[..., 1]], TABLE, coords)

    def test_windows_with_clamped_starts(self, run):
        # 2x3 windows; a start past the edge moves back so the window fits.
        starts = np.array([[0, 0], [4, 5], [1, 2]], np.int64)
        dn = jitd.GatherDimensionNumbers(offset_dims=[1, 2], collapsed_slice_dims=[],
                                         start_index_map=[0, 1], index_vector_dim=1)
        expected = gather_reference(TABLE, starts, [1, 2], [], [0, 1], 1, [2, 3])
        assert_strict(expected[1], TABLE[3:5, 3:6])  # the oracle clamps too
        _check(run, lambda b, t, i: b.Gather(t, i, dn, [2, 3], indices_are_sorted=False),
               expected, TABLE, starts)

    def test_columns_with_the_index_in_front(self, run):
        # start_index_map onto dimension 1, index vectors along dimension 0.
        idx = np.array([[5, 1, 0]], np.int32)
        dn = jitd.GatherDimensionNumbers(offset_dims=[0], collapsed_slice_dims=[1],
                                         start_index_map=[1], index_vector_dim=0)
        expected = gather_reference(TABLE, idx, [0], [1], [1], 0, [5, 1])
        assert_strict(expected, TABLE[:, [5, 1, 0]])
        _check(run, lambda b, t, i: b.Gather(t, i, dn, [5, 1]), expected, TABLE, idx)


class TestScatter(object):

    def test_add_rows(self, run):
        base = np.ones((4, 3), np.int32)
        idx = np.array([3, 0, 3], np.int32)  # row 3 twice: both updates add up
        updates = np.array([[1, 2, 3], [10, 20, 30], [100, 200, 300]], np.int32)
        dn = jitd.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,), index_vector_dim=1)
        expected = base.copy()
        np.add.at(expected, idx, updates)
        assert_strict(scatter_reference(base, idx, updates, np.add, [1], [0], [0], 1), expected)
        _check(run, lambda b, o, i, u: b.Scatter(o, i, u, adder(np.int32), dn), expected, base,
               idx, updates)

    def test_overwrite_points(self, run):
        # A combiner that returns the update: a plain store (unique indices).
        base = np.zeros((3, 4), np.float64)
        coords = np.array([[0, 3], [2, 1], [1, 1]], np.int32)
        values = np.array([1.5, -2.5, 4.0])
        store = scalar_fn(np.float64, 2, lambda b, old, new: new, "store")
        dn = jitd.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0, 1),
                                          scatter_dims_to_operand_dims=(0, 1),
                                          index_vector_dim=1)
        expected = base.copy()
        expected[coords[:, 0], coords[:, 1]] = values
        _check(run, lambda b, o, i, u: b.Scatter(o, i, u, store, dn, unique_indices=True),
               expected, base, coords, values)

    def test_multiply_windows(self, run):
        base = np.arange(1, 13, dtype=np.float32).reshape(3, 4)
        starts = np.array([[0, 1], [1, 2]], np.int32)
        windows = np.array([[[2, 2], [2, 2]], [[-1, 0.5], [3, 1]]], np.float32)
        multiply = scalar_fn(np.float32, 2, lambda b, x, y: b.Mul(x, y), "multiply")
        dn = jitd.ScatterDimensionNumbers(update_window_dims=(1, 2), inserted_window_dims=(),
                                          scatter_dims_to_operand_dims=(0, 1),
                                          index_vector_dim=1)
        expected = scatter_reference(base, starts, windows, np.multiply, [1, 2], [], [0, 1], 1)
        _check(run, lambda b, o, i, u: b.Scatter(o, i, u, multiply, dn), expected, base, starts,
               windows)
