"""Helpers for the builder tests: small embedded computations, `apply` (run
an op on values fed as parameters), and numpy references for the ops numpy
has no function for (convolution, windowed reduction, select-and-scatter,
gather, scatter, pad with interior or negative padding). The references are
written from the StableHLO spec's definitions, one output element at a
time: slow, and easy to check by eye, which is what an oracle should be.
"""

import itertools

import numpy as np

import jitd

# The element-type families jitd promises, with the numpy dtypes of each.
FLOATS = (np.float16, np.float32, np.float64)
SIGNED = (np.int8, np.int16, np.int32, np.int64)
UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
COMPLEX = (np.complex64, np.complex128)
ALL_DTYPES = (np.bool_,) + SIGNED + UNSIGNED + FLOATS + COMPLEX


def scalar_fn(dtype, arity, body, name="scalar_fn"):
    """A Computation of `arity` scalar parameters of `dtype` whose root is
    body(builder, *parameters). Used for reducers, comparators, map
    functions and branches."""
    b = jitd.ComputationBuilder(name)
    params = [b.ParameterFromNumpy(np.zeros((), dtype)) for _ in range(arity)]
    return b.Build(body(b, *params))


def adder(dtype):
    return scalar_fn(dtype, 2, lambda b, x, y: b.Add(x, y), "adder")


def maximum(dtype):
    return scalar_fn(dtype, 2, lambda b, x, y: b.Max(x, y), "maximum")


def strided_windows(operand, init, window, strides, pad_low, pad_high, base_dilation=None,
                    window_dilation=None):
    """Yields (output index, output shape, the operand values in its window)
    for a windowed op, padding with `init`. The operand is first dilated by
    base_dilation (holes hold `init`), then padded, then windows are taken
    every `strides` with taps every window_dilation apart."""
    rank = operand.ndim
    base_dilation = base_dilation or (1,) * rank
    window_dilation = window_dilation or (1,) * rank
    dilated_shape = [(n - 1) * d + 1 if n else 0 for n, d in zip(operand.shape, base_dilation)]
    dilated = np.full(dilated_shape, init, operand.dtype)
    dilated[tuple(slice(None, None, d) for d in base_dilation)] = operand
    padded = np.full([n + lo + hi for n, lo, hi in zip(dilated_shape, pad_low, pad_high)], init,
                     operand.dtype)
    padded[tuple(slice(lo, lo + n) for lo, n in zip(pad_low, dilated_shape))] = dilated
    span = [(w - 1) * d + 1 for w, d in zip(window, window_dilation)]
    out_shape = [(n - s) // st + 1 if n >= s else 0
                 for n, s, st in zip(padded.shape, span, strides)]
    for out_index in itertools.product(*[range(n) for n in out_shape]):
        values = []
        for tap in itertools.product(*[range(w) for w in window]):
            where = tuple(o * st + t * d for o, st, t, d in
                          zip(out_index, strides, tap, window_dilation))
            values.append(padded[where])
        yield out_index, out_shape, values


def reduce_window_reference(operand, init, combine, window, strides, pad_low, pad_high,
                            base_dilation=None, window_dilation=None):
    out = None
    for index, shape, values in strided_windows(operand, init, window, strides, pad_low,
                                                pad_high, base_dilation, window_dilation):
        if out is None:
            out = np.empty(shape, operand.dtype)
        acc = operand.dtype.type(init)
        for v in values:
            acc = combine(acc, v)
        out[index] = acc
    return out


def select_and_scatter_reference(operand, source, window, strides, pad_low, init, prefer,
                                 combine):
    """For each window (over the operand padded at the low side by pad_low;
    padding is never selected) the element `prefer` keeps when scanning in
    row-major order gets source's value combined into it. prefer(a, b) is
    the select computation: True keeps the current choice a."""
    result = np.full(operand.shape, init, operand.dtype)
    for s_index in itertools.product(*[range(n) for n in source.shape]):
        chosen = None
        for tap in itertools.product(*[range(w) for w in window]):
            at = tuple(i * st - lo + t for i, st, lo, t in zip(s_index, strides, pad_low, tap))
            if not all(0 <= a < n for a, n in zip(at, operand.shape)):
                continue
            if chosen is None or not prefer(operand[chosen], operand[at]):
                chosen = at
        result[chosen] = combine(result[chosen], source[s_index])
    return result


def conv_reference(lhs, rhs, strides, pad_low, pad_high, lhs_dilation=None, rhs_dilation=None,
                   feature_groups=1):
    """Convolution in the NCHW / OIHW / NCHW layouts (any number of spatial
    dimensions): out[n, o, y...] = sum over the input features of group
    g = o // (O / groups) and the kernel taps of lhs_padded[n, i, y*s + k*d]
    * rhs[o, i, k]. Accumulates in float64."""
    spatial = lhs.ndim - 2
    lhs_dilation = lhs_dilation or (1,) * spatial
    rhs_dilation = rhs_dilation or (1,) * spatial
    batch, in_features = lhs.shape[:2]
    out_features, group_in = rhs.shape[:2]
    assert in_features == group_in * feature_groups
    out_per_group = out_features // feature_groups
    # Dilate and pad the input once (zeros in the holes and the padding).
    dilated = [(n - 1) * d + 1 for n, d in zip(lhs.shape[2:], lhs_dilation)]
    padded = np.zeros((batch, in_features) + tuple(
        n + lo + hi for n, lo, hi in zip(dilated, pad_low, pad_high)))
    inner = tuple(slice(lo, lo + n, d) for lo, n, d in zip(pad_low, dilated, lhs_dilation))
    padded[(slice(None), slice(None)) + inner] = lhs
    taps = rhs.shape[2:]
    span = [(k - 1) * d + 1 for k, d in zip(taps, rhs_dilation)]
    out_spatial = [(n - s) // st + 1 for n, s, st in zip(padded.shape[2:], span, strides)]
    out = np.zeros((batch, out_features) + tuple(out_spatial))
    for n, o in itertools.product(range(batch), range(out_features)):
        g = o // out_per_group
        for y in itertools.product(*[range(m) for m in out_spatial]):
            total = 0.0
            for i in range(group_in):
                for k in itertools.product(*[range(t) for t in taps]):
                    at = tuple(yy * st + kk * d for yy, st, kk, d in
                               zip(y, strides, k, rhs_dilation))
                    total += padded[(n, g * group_in + i) + at] * rhs[(o, i) + k]
            out[(n, o) + y] = total
    return out.astype(lhs.dtype)


def apply(run, body, *arrays):
    """Runs body(builder, *parameters) on `arrays`, fed as parameters: the
    values reach the device at run time, so the cpu device compiles the op
    instead of folding it away at compile time as it does for constants."""
    b = jitd.ComputationBuilder("apply")
    params = [b.ParameterFromNumpy(a) for a in arrays]
    return run(b, *arrays, root=body(b, *params))


def _index_vector(indices, batch, index_vector_dim):
    """The index vector of batch position `batch` (the entries of `indices`
    along index_vector_dim)."""
    where = list(batch[:index_vector_dim]) + [slice(None)] + list(batch[index_vector_dim:])
    return [int(v) for v in indices[tuple(where)]]


def gather_reference(operand, indices, offset_dims, collapsed_slice_dims, start_index_map,
                     index_vector_dim, slice_sizes):
    """gather as the spec defines it: result index = batch part + offset
    part; the start index (clamped so the slice fits) comes from `indices` at
    the batch part."""
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    batch_shape = [n for d, n in enumerate(indices.shape) if d != index_vector_dim]
    window_dims = [d for d in range(operand.ndim) if d not in collapsed_slice_dims]
    rank = len(batch_shape) + len(window_dims)
    batch_positions = [d for d in range(rank) if d not in offset_dims]
    out_shape = [0] * rank
    for pos, n in zip(batch_positions, batch_shape):
        out_shape[pos] = n
    for pos, d in zip(offset_dims, window_dims):
        out_shape[pos] = slice_sizes[d]
    out = np.empty(out_shape, operand.dtype)
    for index in np.ndindex(*out_shape):
        start_vector = _index_vector(indices, [index[p] for p in batch_positions],
                                     index_vector_dim)
        at = [0] * operand.ndim
        for k, d in enumerate(start_index_map):
            at[d] = min(max(start_vector[k], 0), operand.shape[d] - slice_sizes[d])
        for pos, d in zip(offset_dims, window_dims):
            at[d] += index[pos]
        out[index] = operand[tuple(at)]
    return out


def scatter_reference(operand, indices, updates, combine, update_window_dims,
                      inserted_window_dims, scatter_dims_to_operand_dims, index_vector_dim):
    """scatter as the spec defines it, for updates that land in bounds:
    each update element goes to start (from `indices`) + its window offset,
    combined with what is there."""
    if index_vector_dim == indices.ndim:
        indices = indices[..., None]
    result = operand.copy()
    scatter_positions = [d for d in range(updates.ndim) if d not in update_window_dims]
    window_dims = [d for d in range(operand.ndim) if d not in inserted_window_dims]
    for u in np.ndindex(*updates.shape):
        start_vector = _index_vector(indices, [u[p] for p in scatter_positions],
                                     index_vector_dim)
        at = [0] * operand.ndim
        for k, d in enumerate(scatter_dims_to_operand_dims):
            at[d] += start_vector[k]
        for pos, d in zip(update_window_dims, window_dims):
            at[d] += u[pos]
        assert all(0 <= a < n for a, n in zip(at, operand.shape)), "test data out of bounds"
        result[tuple(at)] = combine(result[tuple(at)], updates[u])
    return result


def pad_reference(operand, value, config):
    """pad: `interior` copies of `value` between neighbours, then `low` and
    `high` of them at the ends (negative: that many elements cut off)."""
    out = operand
    for axis, (low, high, interior) in enumerate(config):
        n = out.shape[axis]
        grown = list(out.shape)
        grown[axis] = n + max(n - 1, 0) * interior
        spread = np.full(grown, value, operand.dtype)
        where = [slice(None)] * out.ndim
        where[axis] = slice(None, None, interior + 1)
        spread[tuple(where)] = out
        if low > 0:
            shape = list(spread.shape)
            shape[axis] = low
            spread = np.concatenate([np.full(shape, value, operand.dtype), spread], axis)
        elif low < 0:
            spread = np.take(spread, range(-low, spread.shape[axis]), axis)
        if high > 0:
            shape = list(spread.shape)
            shape[axis] = high
            spread = np.concatenate([spread, np.full(shape, value, operand.dtype)], axis)
        elif high < 0:
            spread = np.take(spread, range(0, spread.shape[axis] + high), axis)
        out = spread
    return out
