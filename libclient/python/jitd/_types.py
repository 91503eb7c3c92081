"""Element types and shapes: numpy dtypes <-> jitd_dtype_t, and `Shape`
(xla_client's Shape: an array, a tuple of shapes, or a token)."""

import ctypes

import numpy as np

from . import _lib
from ._status import JitdError, StatusCode

# jitd_dtype_t values (include/jitd/jitd.h) for the dtypes numpy has.
DTYPE_TO_JITD = {
    np.dtype(np.bool_): 1,
    np.dtype(np.int8): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.int64): 5,
    np.dtype(np.uint8): 6,
    np.dtype(np.uint16): 7,
    np.dtype(np.uint32): 8,
    np.dtype(np.uint64): 9,
    np.dtype(np.float16): 10,
    np.dtype(np.float32): 12,
    np.dtype(np.float64): 13,
    np.dtype(np.complex64): 14,
    np.dtype(np.complex128): 15,
}
JITD_TO_DTYPE = {v: k for k, v in DTYPE_TO_JITD.items()}
# XLA's names for the element types (Shape's repr, error messages).
_XLA_NAMES = {1: "pred", 2: "s8", 3: "s16", 4: "s32", 5: "s64", 6: "u8", 7: "u16", 8: "u32",
              9: "u64", 10: "f16", 11: "bf16", 12: "f32", 13: "f64", 14: "c64", 15: "c128"}


def to_jitd_dtype(dtype):
    """The jitd_dtype_t of a numpy dtype (or anything np.dtype accepts)."""
    try:
        d = np.dtype(dtype)
    except TypeError as e:
        raise JitdError(StatusCode.INVALID_ARGUMENT, "not an element type: %r (%s)" % (dtype, e))
    if d.byteorder == ">":
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "big-endian %s arrays are not supported; use native byte order" % d)
    d = d.newbyteorder("=")
    if d not in DTYPE_TO_JITD:
        raise JitdError(StatusCode.INVALID_ARGUMENT,
                        "numpy dtype %s has no jitd element type (supported: %s)"
                        % (d, ", ".join(str(k) for k in DTYPE_TO_JITD)))
    return DTYPE_TO_JITD[d]


def from_jitd_dtype(code):
    """The numpy dtype of a jitd_dtype_t."""
    if code not in JITD_TO_DTYPE:
        raise JitdError(StatusCode.UNIMPLEMENTED,
                        "jitd element type %s has no numpy dtype in this package"
                        % _XLA_NAMES.get(code, code))
    return JITD_TO_DTYPE[code]


class Shape(object):
    """An array shape (numpy dtype + dimensions), a tuple of shapes, or a
    token. Immutable value; compare with ==.

    Shape.array_shape(np.float32, (2, 3)); Shape.tuple_shape([...]);
    Shape.from_numpy(ndarray or tuple of them) (alias from_pyval).
    """

    def __init__(self, np_dtype, dimensions):
        # xla_client's constructor: Shape(np_dtype, dimensions) for arrays,
        # Shape(tuple, shapes) for tuples.
        if np_dtype is tuple:
            self._kind = "tuple"
            self._dtype = None
            self._dims = tuple(dimensions)
            for s in self._dims:
                if not isinstance(s, Shape):
                    raise TypeError("a tuple shape holds Shapes, got %r" % (s,))
        elif np_dtype == "token":
            self._kind = "token"
            self._dtype = None
            self._dims = ()
        else:
            self._kind = "array"
            self._dtype = np.dtype(np_dtype)
            to_jitd_dtype(self._dtype)  # refuses what jitd cannot hold
            dims = tuple(int(d) for d in dimensions)
            for d in dims:
                if d < 0:
                    raise JitdError(StatusCode.INVALID_ARGUMENT,
                                    "negative dimension in %s%s" % (self._dtype, list(dims)))
            self._dims = dims

    @staticmethod
    def array_shape(element_type, dimensions):
        return Shape(element_type, dimensions)

    @staticmethod
    def tuple_shape(tuple_shapes):
        return Shape(tuple, tuple_shapes)

    @staticmethod
    def token_shape():
        return Shape("token", ())

    @staticmethod
    def from_numpy(npval):
        """The shape of an ndarray (or numpy scalar), or of a tuple of them."""
        if isinstance(npval, (tuple, list)) and not isinstance(npval, np.ndarray):
            return Shape.tuple_shape([Shape.from_numpy(v) for v in npval])
        a = np.asarray(npval)
        return Shape(a.dtype, a.shape)

    from_pyval = from_numpy

    def is_tuple(self):
        return self._kind == "tuple"

    def is_array(self):
        return self._kind == "array"

    def is_token(self):
        return self._kind == "token"

    def element_type(self):
        """The numpy dtype of an array shape."""
        if self._kind != "array":
            raise ValueError("%r has no element type" % self)
        return self._dtype

    numpy_dtype = element_type

    def dimensions(self):
        if self._kind != "array":
            raise ValueError("%r has no dimensions" % self)
        return self._dims

    def rank(self):
        return len(self.dimensions())

    def tuple_shapes(self):
        if self._kind != "tuple":
            raise ValueError("%r is not a tuple shape" % self)
        return self._dims

    def __eq__(self, other):
        return (isinstance(other, Shape) and self._kind == other._kind and
                self._dtype == other._dtype and self._dims == other._dims)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((self._kind, self._dtype, self._dims))

    def __repr__(self):
        return "Shape(%s)" % self.to_string()

    def to_string(self):
        """XLA's spelling: f32[2,3], (f32[], s32[4]), token."""
        if self._kind == "token":
            return "token"
        if self._kind == "tuple":
            return "(" + ", ".join(s.to_string() for s in self._dims) + ")"
        return "%s[%s]" % (_XLA_NAMES[DTYPE_TO_JITD[self._dtype]],
                           ",".join(str(d) for d in self._dims))

    __str__ = to_string

    # -- the C side ---------------------------------------------------------

    def _to_c(self):
        """A new jitd_shape_t* (the caller destroys it)."""
        L = _lib
        out = ctypes.c_void_p()
        if self._kind == "array":
            dims, n = L.int64_array(self._dims)
            L.check(L.fn("jitd_shape_create_array")(to_jitd_dtype(self._dtype), dims, n,
                                                      ctypes.byref(out)))
        elif self._kind == "token":
            L.check(L.fn("jitd_shape_create_token")(ctypes.byref(out)))
        else:
            elements = [s._to_c() for s in self._dims]
            try:
                arr = (ctypes.c_void_p * max(1, len(elements)))(*elements)
                L.check(L.fn("jitd_shape_create_tuple")(arr, len(elements), ctypes.byref(out)))
            finally:
                for e in elements:
                    L.fn("jitd_shape_destroy")(e)
        return out

    @staticmethod
    def _from_c(ptr):
        """A Shape from a borrowed jitd_shape_t*."""
        L = _lib
        kind = L.fn("jitd_shape_kind")(ptr)
        if kind == 2:
            return Shape.token_shape()
        if kind == 1:
            n = L.fn("jitd_shape_tuple_size")(ptr)
            return Shape.tuple_shape(
                [Shape._from_c(L.fn("jitd_shape_tuple_element")(ptr, i)) for i in range(n)])
        rank = L.fn("jitd_shape_rank")(ptr)
        dims = L.fn("jitd_shape_dims")(ptr)
        return Shape(from_jitd_dtype(L.fn("jitd_shape_dtype")(ptr)),
                     [dims[i] for i in range(rank)])


def shape_of_executable(exe, index, result):
    """The Shape of argument/result `index` of a jitd_executable_t*."""
    L = _lib
    dtype = ctypes.c_int()
    rank = ctypes.c_size_t()
    dims = ctypes.POINTER(ctypes.c_int64)()
    name = "jitd_executable_result_shape" if result else "jitd_executable_argument_shape"
    L.check(L.fn(name)(exe, index, ctypes.byref(dtype), ctypes.byref(rank), ctypes.byref(dims)))
    return Shape(from_jitd_dtype(dtype.value), [dims[i] for i in range(rank.value)])
