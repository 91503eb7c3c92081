"""jitd's seeded fill of elided dense_resource constants, reproduced in numpy.

jitd fills a `dense_resource<__elided__>` constant (the exporter dropped the
weights' bytes) with eval::ResourceFillLiteral (jit/eval/evaluator.cc):

  seed'  = seed;  for each byte c of the handle: seed' = seed' * 1099511628211 + c
  seed' += place << 32            (mod 2**64)
  element i (row-major) = offset + scale * unit(splitmix64 step i + 1 from seed')
  unit(r) = (r >> 11) * 2**-53, computed in double, then rounded to f32

`place` numbers the constants of one handle in the order eval::ComputeOpPlaces
walks the program: the entry function first, each op before its successors,
an op's regions (block 0 first) and a called function's body (the first call
reaches it) walked right after the op, then the functions no call reached, in
module order. `fill` "weights" (jitd's default, --resource-fill=weights):
floats of rank >= 2 uniform in +-sqrt(3 / fan_in), fan_in the product of all
dimensions but the last; floats of rank <= 1 uniform in [0.5, 1.5).
"uniform": floats uniform in [-1, 1). Integers and booleans as eval's
RandomLiteral (not needed by the shared models, but reproduced).

The functions here take plain shapes and numpy dtypes; `resource_places`
walks a module parsed with jaxlib's MLIR bindings (the venv's python).
"""
import math

import numpy as np

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
_FNV_PRIME = 1099511628211


def resource_seed(handle, place, seed):
    """The splitmix64 state ResourceFillLiteral starts from."""
    s = seed & _MASK
    for c in handle.encode("utf-8"):
        s = (s * _FNV_PRIME + c) & _MASK
    return (s + ((place << 32) & _MASK)) & _MASK


def splitmix_stream(state, n):
    """The first n outputs of splitmix64 from `state` (uint64 array)."""
    with np.errstate(over="ignore"):
        z = np.uint64(state) + np.arange(1, n + 1, dtype=np.uint64) * np.uint64(_GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(_M1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(_M2)
        return z ^ (z >> np.uint64(31))


def _unit(r):
    return (r >> np.uint64(11)).astype(np.float64) * (2.0 ** -53)


def random_literal(shape, dtype, seed, fill="weights"):
    """eval::RandomLiteral(type, seed, fill) for real or integer types."""
    shape = tuple(int(d) for d in shape)
    dtype = np.dtype(dtype)
    n = math.prod(shape)
    offset, scale = -1.0, 2.0
    if fill == "weights":
        if len(shape) >= 2:
            fan_in = max(math.prod(shape[:-1]), 1)
            bound = math.sqrt(3.0 / fan_in)
            offset, scale = -bound, 2 * bound
        else:
            offset, scale = 0.5, 1.0
    elif fill != "uniform":
        raise ValueError(f"unknown fill {fill!r} (expected 'weights' or 'uniform')")
    if dtype.kind == "c":
        # Two draws per element (real, then imaginary), as RandomLiteral.
        r = splitmix_stream(seed, 2 * n)
        v = (offset + scale * _unit(r[0::2])) + 1j * (offset + scale * _unit(r[1::2]))
        return v.astype(dtype).reshape(shape)
    r = splitmix_stream(seed, n)
    if dtype == np.bool_:
        return (r & np.uint64(1)).astype(np.bool_).reshape(shape)
    if dtype.kind == "u":
        return (r % np.uint64(8)).astype(dtype).reshape(shape)
    if dtype.kind == "i":
        return ((r % np.uint64(9)).astype(np.int64) - 4).astype(dtype).reshape(shape)
    if dtype.kind == "f":
        # offset + scale * unit in double (no fused multiply-add: jitd is
        # built for baseline x86-64, so none is emitted), then rounded.
        return (offset + scale * _unit(r)).astype(dtype).reshape(shape)
    raise ValueError(f"no fill for dtype {dtype}")


def resource_fill(shape, dtype, handle, place, seed=0, fill="weights"):
    """eval::ResourceFillLiteral: the contents jitd gives an elided constant."""
    return random_literal(shape, dtype, resource_seed(handle, place, seed), fill)


# ---------------------------------------------------------------- places

def _func_name(op):
    return op.attributes["sym_name"].value if "sym_name" in op.attributes else None


def resource_places(module):
    """[(op, handle, place)] for every elided dense_resource constant of a
    jaxlib MLIR module, in eval::ComputeOpPlaces's walk order."""
    functions = []
    by_name = {}
    for op in module.body.operations:
        if op.operation.name == "func.func":
            name = _func_name(op.operation)
            functions.append(op.operation)
            by_name[name] = op.operation
    entry = by_name.get("main")
    if entry is None:
        public = [f for f in functions
                  if "sym_visibility" not in f.attributes
                  or f.attributes["sym_visibility"].value == "public"]
        entry = public[0] if len(public) == 1 else None
    counters = {}
    out = []
    reached = set()

    def push_region(stack, region):
        blocks = list(region.blocks)
        for b in reversed(blocks):
            stack.append([list(b.operations), 0])

    def walk(fn):
        if fn is None or _func_name(fn) in reached:
            return
        reached.add(_func_name(fn))
        stack = []
        push_region(stack, fn.regions[0])
        while stack:
            frame = stack[-1]
            if frame[1] == len(frame[0]):
                stack.pop()
                continue
            o = frame[0][frame[1]].operation
            frame[1] += 1
            if o.name == "stablehlo.constant":
                value = o.attributes["value"]
                text = str(value)
                if text.startswith("dense_resource<"):
                    handle = text[len("dense_resource<"):text.index(">")]
                    key = "dense_resource<" + handle + ">"
                    place = counters.get(key, 0)
                    counters[key] = place + 1
                    out.append((o, handle, place))
            elif o.name == "stablehlo.rng":
                counters["stablehlo.rng"] = counters.get("stablehlo.rng", 0) + 1
            for r in reversed(list(o.regions)):
                push_region(stack, r)
            if o.name == "func.call":
                callee = str(o.attributes["callee"]).lstrip("@")
                fn2 = by_name.get(callee)
                if fn2 is not None and callee not in reached:
                    reached.add(callee)
                    push_region(stack, fn2.regions[0])

    walk(entry)
    for f in functions:
        walk(f)
    return out
