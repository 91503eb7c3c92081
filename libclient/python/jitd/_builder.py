"""ComputationBuilder: xla_client's op-by-op builder over the C builder of
libjitd.so (include/jitd/jitd_builder.h). Shapes are inferred and checked in
the library as each op is added: an ill-typed op raises JitdError
(INVALID_ARGUMENT) naming the op, right there.

Thread safety: a builder is used from one thread at a time; a built
Computation is immutable and may be shared. Lifetime: an Op is valid with
its builder; a Computation outlives its builder.
"""

import ctypes
import enum

import numpy as np

from . import _lib
from ._status import JitdError, StatusCode
from ._types import Shape, to_jitd_dtype


class PrimitiveType(enum.IntEnum):
    """XLA's element types, valued as jitd_dtype_t."""
    PRED = 1
    S8 = 2
    S16 = 3
    S32 = 4
    S64 = 5
    U8 = 6
    U16 = 7
    U32 = 8
    U64 = 9
    F16 = 10
    BF16 = 11
    F32 = 12
    F64 = 13
    C64 = 14
    C128 = 15


def _dtype_code(element_type):
    if isinstance(element_type, PrimitiveType):
        return int(element_type)
    return to_jitd_dtype(element_type)


class PaddingType(enum.IntEnum):
    VALID = 0
    SAME = 1


class FftType(enum.IntEnum):
    """xla_client's FftType, valued as jitd_fft_type_t."""
    FFT = 0    # complex -> complex
    IFFT = 1   # complex -> complex
    RFFT = 2   # real -> complex, last dim fft_lengths[-1] // 2 + 1
    IRFFT = 3  # complex -> real, last dim fft_lengths[-1]


def _int32(value, what):
    """`value` as a C int32, refusing what does not fit (ctypes would wrap)."""
    v = int(value)
    if not -2**31 <= v < 2**31:
        raise JitdError(StatusCode.INVALID_ARGUMENT, "%s: %d does not fit in int32" % (what, v))
    return v


_UNARY = {
    "Not": 0, "Abs": 1, "Exp": 2, "Expm1": 3, "Floor": 4, "Round": 5, "Ceil": 6, "Log": 7,
    "Log1p": 8, "Sign": 9, "Cos": 10, "Sin": 11, "Tanh": 12, "Sqrt": 13, "Rsqrt": 14,
    "Cbrt": 15, "Square": 16, "IsFinite": 17, "Reciprocal": 18, "Neg": 19, "Logistic": 20,
    "Real": 21, "Imag": 22, "Conj": 23, "Tan": 24, "Clz": 25, "PopulationCount": 26,
    "RoundNearestEven": 27, "Erf": 28, "Erfc": 29, "ErfInv": 30, "Lgamma": 31, "Digamma": 32,
    "BesselI1e": 33, "Acos": 34, "Asin": 35, "Atan": 36, "Acosh": 37, "Asinh": 38,
    "Atanh": 39, "Cosh": 40, "Sinh": 41,
}

_BINARY = {
    "Eq": 0, "Ne": 1, "Ge": 2, "Gt": 3, "Lt": 4, "Le": 5, "Add": 6, "Sub": 7, "Mul": 8,
    "Div": 9, "Rem": 10, "Max": 11, "Min": 12, "And": 13, "Or": 14, "Xor": 15, "Pow": 16,
    "Atan2": 17, "ShiftLeft": 18, "ShiftRightArithmetic": 19, "ShiftRightLogical": 20,
    "Complex": 21, "NextAfter": 22,
}


class Op(object):
    """One value in a ComputationBuilder (xla_client's ComputationDataHandle /
    XlaOp). A plain handle: meaningful only to the builder that made it."""

    __slots__ = ("builder", "id")

    def __init__(self, builder, op_id):
        self.builder = builder
        self.id = op_id

    def __repr__(self):
        return "jitd.Op(%d)" % self.id


class GatherDimensionNumbers(object):
    def __init__(self, offset_dims=(), collapsed_slice_dims=(), start_index_map=(),
                 index_vector_dim=0):
        self.offset_dims = list(offset_dims)
        self.collapsed_slice_dims = list(collapsed_slice_dims)
        self.start_index_map = list(start_index_map)
        self.index_vector_dim = index_vector_dim


class ScatterDimensionNumbers(object):
    def __init__(self, update_window_dims=(), inserted_window_dims=(),
                 scatter_dims_to_operand_dims=(), index_vector_dim=0):
        self.update_window_dims = list(update_window_dims)
        self.inserted_window_dims = list(inserted_window_dims)
        self.scatter_dims_to_operand_dims = list(scatter_dims_to_operand_dims)
        self.index_vector_dim = index_vector_dim


class Computation(object):
    """A built computation (a jitd FlatBuffers module). Immutable."""

    def __init__(self, handle):
        self._handle = handle

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h:
            _lib.fn("jitd_computation_destroy")(h)
            self._handle = None

    def name(self):
        return _lib.fn("jitd_computation_name")(self._handle).decode()

    def GetParameterShapes(self):
        n = _lib.fn("jitd_computation_num_parameters")(self._handle)
        return [Shape._from_c(_lib.fn("jitd_computation_parameter_shape")(self._handle, i))
                for i in range(n)]

    def GetReturnValueShape(self):
        return Shape._from_c(_lib.fn("jitd_computation_result_shape")(self._handle))

    def GetProgramShape(self):
        """(parameter shapes, result shape)."""
        return self.GetParameterShapes(), self.GetReturnValueShape()

    def GetSerializedModule(self):
        """The FlatBuffers module bytes the daemon compiles."""
        data = ctypes.POINTER(ctypes.c_uint8)()
        size = ctypes.c_size_t()
        _lib.check(_lib.fn("jitd_computation_module")(self._handle, ctypes.byref(data),
                                                      ctypes.byref(size)))
        return ctypes.string_at(data, size.value)

    def GetStableHloText(self):
        """The computation as StableHLO text (jitd_computation_to_text)."""
        out = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_computation_to_text")(self._handle, ctypes.byref(out)))
        return _lib.take_string(out)

    as_text = GetStableHloText

    def Compile(self, argument_shapes=(), compile_options=None, layout_fn=None, client=None):
        """Compiles in the daemon (on `client`, default jitd.get_client()) ->
        LocalExecutable. argument_shapes, when given, must equal the
        parameters' shapes."""
        if layout_fn is not None:
            raise JitdError(StatusCode.UNIMPLEMENTED,
                            "Compile(layout_fn=...): jitd arrays are always dense row-major")
        from ._client import get_client
        client = client or get_client()
        return client._compile_computation(self, argument_shapes, compile_options,
                                           self.GetReturnValueShape().is_tuple())


# xla_client's name for a built computation.
LocalComputation = Computation


class ComputationBuilder(object):
    """Builds a computation op by op, with xla_client's method names."""

    def __init__(self, name="computation"):
        handle = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_builder_create")(name.encode(), ctypes.byref(handle)))
        self._handle = handle
        self._name = name
        self._parameter_numbering = 0
        self._last = None

    def __del__(self):
        h = getattr(self, "_handle", None)
        if h:
            _lib.fn("jitd_builder_destroy")(h)
            self._handle = None

    # -- plumbing ------------------------------------------------------------

    def _op(self, op):
        if not isinstance(op, Op):
            raise TypeError("expected a jitd Op (from a ComputationBuilder), got %r" % (op,))
        if op.builder is not self:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%r belongs to builder '%s', not to '%s'"
                            % (op, op.builder._name, self._name))
        return _lib.OpId(op.id)

    def _ops(self, ops):
        ops = list(ops)
        arr = (_lib.OpId * max(1, len(ops)))(*[self._op(o) for o in ops])
        return arr, len(ops)

    def _call(self, name, *args):
        out = _lib.OpId()
        _lib.check(_lib.fn(name)(self._handle, *(args + (ctypes.byref(out),))))
        op = Op(self, out.id)
        self._last = op  # Build()'s default root, as in xla_client
        return op

    def GetShape(self, operand):
        out = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_builder_get_shape")(self._handle, self._op(operand),
                                                     ctypes.byref(out)))
        try:
            return Shape._from_c(out)
        finally:
            _lib.fn("jitd_shape_destroy")(out)

    GetReturnValueShape = GetShape

    def Build(self, root=None):
        """The computation returning `root` (default: the last op a method of
        this builder returned)."""
        if root is None:
            root = self._last
        root_id = self._op(root) if root is not None else _lib.OpId(0)
        out = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_builder_build")(self._handle, root_id, ctypes.byref(out)))
        return Computation(out)

    # -- parameters and constants -------------------------------------------

    def ParameterWithShape(self, shape, name=None, parameter_num=None):
        if parameter_num is None:
            parameter_num = self._parameter_numbering
        self._parameter_numbering = max(self._parameter_numbering, parameter_num + 1)
        c_shape = shape._to_c()
        try:
            return self._call("jitd_builder_parameter", int(parameter_num), c_shape,
                              name.encode() if name else None)
        finally:
            _lib.fn("jitd_shape_destroy")(c_shape)

    def ParameterFromNumpy(self, value, name=None, parameter_num=None):
        return self.ParameterWithShape(Shape.from_numpy(value), name, parameter_num)

    def Constant(self, value):
        a = np.require(np.asarray(value), requirements="C")
        dims, n = _lib.int64_array(a.shape)
        return self._call("jitd_builder_constant_array", to_jitd_dtype(a.dtype), dims, n,
                          a.ctypes.data_as(ctypes.c_void_p), a.nbytes)

    NumpyArrayConstant = Constant
    ConstantLiteral = Constant

    def ConstantF32Scalar(self, value):
        return self._call("jitd_builder_constant_f32", ctypes.c_float(value))

    def ConstantF64Scalar(self, value):
        return self._call("jitd_builder_constant_f64", ctypes.c_double(value))

    def ConstantS32Scalar(self, value):
        return self._call("jitd_builder_constant_s32", ctypes.c_int32(value))

    def ConstantS64Scalar(self, value):
        return self._call("jitd_builder_constant_s64", ctypes.c_int64(value))

    def ConstantPredScalar(self, value):
        return self._call("jitd_builder_constant_pred", ctypes.c_int(1 if value else 0))

    # -- elementwise -----------------------------------------------------------

    def _unary(self, kind, operand):
        return self._call("jitd_builder_unary", kind, self._op(operand))

    def _binary(self, kind, lhs, rhs, broadcast_dimensions=()):
        dims, n = _lib.int64_array(broadcast_dimensions or ())
        return self._call("jitd_builder_binary", kind, self._op(lhs), self._op(rhs), dims, n)

    def ConvertElementType(self, operand, new_element_type):
        return self._call("jitd_builder_convert_element_type", self._op(operand),
                          _dtype_code(new_element_type))

    def BitcastConvertType(self, operand, new_element_type):
        return self._call("jitd_builder_bitcast_convert_type", self._op(operand),
                          _dtype_code(new_element_type))

    # -- shapes ---------------------------------------------------------------

    def Broadcast(self, operand, sizes):
        dims, n = _lib.int64_array(sizes)
        return self._call("jitd_builder_broadcast", self._op(operand), dims, n)

    def BroadcastInDim(self, operand, shape, broadcast_dimensions):
        out_dims, rank = _lib.int64_array(shape)
        bd, nbd = _lib.int64_array(broadcast_dimensions)
        return self._call("jitd_builder_broadcast_in_dim", self._op(operand), out_dims, rank,
                          bd, nbd)

    def Reshape(self, operand, dimensions, new_sizes):
        d, nd = _lib.int64_array(dimensions or ())
        s, ns = _lib.int64_array(new_sizes)
        return self._call("jitd_builder_reshape", self._op(operand), d, nd, s, ns)

    def Collapse(self, operand, dimensions):
        """Merges the consecutive `dimensions` of operand into one (a Reshape)."""
        dims = list(self.GetShape(operand).dimensions())
        dimensions = list(dimensions)
        if not dimensions or dimensions != list(range(dimensions[0],
                                                      dimensions[0] + len(dimensions))):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Collapse: dimensions %s must be consecutive and in order"
                            % dimensions)
        if dimensions[-1] >= len(dims) or dimensions[0] < 0:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Collapse: dimensions %s out of range for rank %d"
                            % (dimensions, len(dims)))
        merged = int(np.prod([dims[i] for i in dimensions], dtype=np.int64))
        new = dims[:dimensions[0]] + [merged] + dims[dimensions[-1] + 1:]
        return self.Reshape(operand, None, new)

    def Transpose(self, operand, permutation):
        p, n = _lib.int64_array(permutation)
        return self._call("jitd_builder_transpose", self._op(operand), p, n)

    def Rev(self, operand, dimensions):
        d, n = _lib.int64_array(dimensions)
        return self._call("jitd_builder_rev", self._op(operand), d, n)

    def Slice(self, operand, start_indices, limit_indices, strides=None):
        rank = len(start_indices)
        if len(limit_indices) != rank or (strides is not None and len(strides) != rank):
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Slice: start_indices, limit_indices and strides need one entry "
                            "per dimension (%d, %d, %s given)"
                            % (rank, len(limit_indices),
                               "-" if strides is None else len(strides)))
        s, _ = _lib.int64_array(start_indices)
        l, _ = _lib.int64_array(limit_indices)
        st, _ = _lib.int64_array(strides) if strides is not None else (None, 0)
        return self._call("jitd_builder_slice", self._op(operand), s, l, st, rank)

    def SliceInDim(self, operand, start_index, limit_index, stride, dimno):
        return self._call("jitd_builder_slice_in_dim", self._op(operand), int(start_index),
                          int(limit_index), int(stride), int(dimno))

    def _index_scalars(self, start_indices):
        """DynamicSlice's start indices: a list of scalar ops, or (xla_client's
        older form) one rank-1 op, split here into scalars."""
        if isinstance(start_indices, Op):
            shape = self.GetShape(start_indices)
            if shape.is_array() and shape.rank() == 1:
                return [self.Reshape(self.Slice(start_indices, [i], [i + 1]), None, [])
                        for i in range(shape.dimensions()[0])]
            return [start_indices]
        return list(start_indices)

    def DynamicSlice(self, operand, start_indices, slice_sizes):
        idx, n = self._ops(self._index_scalars(start_indices))
        s, ns = _lib.int64_array(slice_sizes)
        return self._call("jitd_builder_dynamic_slice", self._op(operand), idx, n, s, ns)

    def DynamicUpdateSlice(self, operand, update, start_indices):
        idx, n = self._ops(self._index_scalars(start_indices))
        return self._call("jitd_builder_dynamic_update_slice", self._op(operand),
                          self._op(update), idx, n)

    def ConcatInDim(self, operands, dimension):
        ops, n = self._ops(operands)
        return self._call("jitd_builder_concatenate", ops, n, int(dimension))

    Concatenate = ConcatInDim

    def Pad(self, operand, padding_value, padding_config):
        """padding_config: (low, high, interior) per dimension, or an object
        with .dimensions of (edge_padding_low, edge_padding_high,
        interior_padding) as xla_client's PaddingConfig."""
        if hasattr(padding_config, "dimensions"):
            triples = [(d.edge_padding_low, d.edge_padding_high, d.interior_padding)
                       for d in padding_config.dimensions]
        else:
            triples = [tuple(t) for t in padding_config]
        lo, rank = _lib.int64_array([t[0] for t in triples])
        hi, _ = _lib.int64_array([t[1] for t in triples])
        interior, _ = _lib.int64_array([t[2] for t in triples])
        return self._call("jitd_builder_pad", self._op(operand), self._op(padding_value), lo, hi,
                          interior, rank)

    def Iota(self, dtype, size):
        return self._call("jitd_builder_iota", _dtype_code(dtype), int(size))

    def BroadcastedIota(self, dtype, shape, dimension):
        s = Shape(np.dtype(dtype) if not isinstance(dtype, PrimitiveType)
                  else _numpy_of(dtype), shape)
        c_shape = s._to_c()
        try:
            return self._call("jitd_builder_broadcasted_iota", c_shape, int(dimension))
        finally:
            _lib.fn("jitd_shape_destroy")(c_shape)

    def Select(self, pred, on_true, on_false):
        return self._call("jitd_builder_select", self._op(pred), self._op(on_true),
                          self._op(on_false))

    def Clamp(self, min, operand, max):  # noqa: A002 (xla_client's parameter names)
        return self._call("jitd_builder_clamp", self._op(min), self._op(operand), self._op(max))

    # -- linear algebra -------------------------------------------------------

    def Dot(self, lhs, rhs):
        return self._call("jitd_builder_dot", self._op(lhs), self._op(rhs))

    def DotGeneral(self, lhs, rhs, dimension_numbers):
        """dimension_numbers: ((lhs_contracting, rhs_contracting),
        (lhs_batch, rhs_batch)), or an object with those four fields."""
        if hasattr(dimension_numbers, "lhs_contracting_dimensions"):
            dn = dimension_numbers
            parts = (dn.lhs_contracting_dimensions, dn.rhs_contracting_dimensions,
                     dn.lhs_batch_dimensions, dn.rhs_batch_dimensions)
        else:
            (lc, rc), (lb, rb) = dimension_numbers
            parts = (lc, rc, lb, rb)
        arrays = [_lib.int64_array(p) for p in parts]
        dn = _lib.DotDimensionNumbers(arrays[0][0], arrays[0][1], arrays[1][0], arrays[1][1],
                                      arrays[2][0], arrays[2][1], arrays[3][0], arrays[3][1])
        return self._call("jitd_builder_dot_general", self._op(lhs), self._op(rhs),
                          ctypes.byref(dn))

    def Conv(self, lhs, rhs, window_strides, padding):
        """NCHW input, OIHW kernel, `padding` a PaddingType."""
        s, n = _lib.int64_array(window_strides)
        return self._call("jitd_builder_conv", self._op(lhs), self._op(rhs), s, n,
                          int(PaddingType(padding)))

    def ConvWithGeneralPadding(self, lhs, rhs, window_strides, padding, lhs_dilation,
                               rhs_dilation):
        return self.ConvGeneralDilated(lhs, rhs, window_strides, padding, lhs_dilation,
                                       rhs_dilation)

    def ConvGeneralDilated(self, lhs, rhs, window_strides, padding, lhs_dilation=None,
                           rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                           batch_group_count=1):
        """padding: a PaddingType or (low, high) per spatial dimension;
        dimension_numbers: None (NCHW, OIHW, NCHW) or a (lhs, rhs, out) triple
        of layout strings such as ('NHWC', 'HWIO', 'NHWC')."""
        lhs_shape = self.GetShape(lhs).dimensions()
        rhs_shape = self.GetShape(rhs).dimensions()
        nsp = len(window_strides)
        if dimension_numbers is None:
            spatial = "HW" if nsp == 2 else "".join(chr(ord("a") + i) for i in range(nsp))
            dimension_numbers = ("NC" + spatial, "OI" + spatial, "NC" + spatial)
        lhs_spec, rhs_spec, out_spec = dimension_numbers
        opts = _lib.ConvOptions()
        opts.struct_size = ctypes.sizeof(_lib.ConvOptions)
        opts.num_spatial_dimensions = nsp
        keep = []

        def arr(values):
            a, _ = _lib.int64_array(values)
            keep.append(a)
            return a

        rhs_spatial = [i for i, c in enumerate(rhs_spec) if c not in "IO"]
        lhs_spatial = sorted((i for i, c in enumerate(lhs_spec) if c not in "NC"),
                             key=lambda i: rhs_spec.index(lhs_spec[i]))
        out_spatial = sorted((i for i, c in enumerate(out_spec) if c not in "NC"),
                             key=lambda i: rhs_spec.index(out_spec[i]))
        opts.input_batch_dimension = lhs_spec.index("N")
        opts.input_feature_dimension = lhs_spec.index("C")
        opts.input_spatial_dimensions = arr(lhs_spatial)
        opts.kernel_input_feature_dimension = rhs_spec.index("I")
        opts.kernel_output_feature_dimension = rhs_spec.index("O")
        opts.kernel_spatial_dimensions = arr(rhs_spatial)
        opts.output_batch_dimension = out_spec.index("N")
        opts.output_feature_dimension = out_spec.index("C")
        opts.output_spatial_dimensions = arr(out_spatial)
        opts.window_strides = arr(window_strides)
        if isinstance(padding, (PaddingType, int)) and not isinstance(padding, bool):
            in_dims = [lhs_shape[i] for i in lhs_spatial]
            win = [rhs_shape[i] for i in rhs_spatial]
            if rhs_dilation:
                win = [(w - 1) * d + 1 for w, d in zip(win, rhs_dilation)]
            low, high = self._padding_for(PaddingType(padding), in_dims, win, window_strides)
        else:
            low = [p[0] for p in padding]
            high = [p[1] for p in padding]
        opts.padding_low = arr(low)
        opts.padding_high = arr(high)
        opts.lhs_dilation = arr(lhs_dilation) if lhs_dilation else None
        opts.rhs_dilation = arr(rhs_dilation) if rhs_dilation else None
        opts.feature_group_count = int(feature_group_count)
        opts.batch_group_count = int(batch_group_count)
        return self._call("jitd_builder_conv_general_dilated", self._op(lhs), self._op(rhs),
                          ctypes.byref(opts))

    @staticmethod
    def _padding_for(padding_type, input_dims, window_dims, strides):
        rank = len(input_dims)
        strides = strides or [1] * len(window_dims)
        if len(window_dims) != rank or len(strides) != rank:
            # jitd_padding_for_type reads `rank` entries of each array.
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s padding: operand of rank %d but %d window dimensions and %d "
                            "strides" % (PaddingType(padding_type).name, rank,
                                         len(window_dims), len(strides)))
        i, _ = _lib.int64_array(input_dims)
        w, _ = _lib.int64_array(window_dims)
        s, _ = _lib.int64_array(strides)
        low = (ctypes.c_int64 * max(1, rank))()
        high = (ctypes.c_int64 * max(1, rank))()
        _lib.check(_lib.fn("jitd_padding_for_type")(int(padding_type), i, w, s, rank, low,
                                                    high))
        return list(low)[:rank], list(high)[:rank]

    # -- embedded computations ------------------------------------------------

    @staticmethod
    def _computation(c, what):
        if not isinstance(c, Computation):
            raise TypeError("%s needs a Computation (from ComputationBuilder.Build()), got %r"
                            % (what, c))
        return c._handle

    def Reduce(self, operand, init_value, computation_to_apply, dimensions):
        operands = list(operand) if isinstance(operand, (list, tuple)) else [operand]
        inits = list(init_value) if isinstance(init_value, (list, tuple)) else [init_value]
        ops, n = self._ops(operands)
        ini, _ = self._ops(inits)
        if len(inits) != n:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "Reduce: %d operands but %d init values" % (n, len(inits)))
        d, nd = _lib.int64_array(dimensions)
        return self._call("jitd_builder_reduce", ops, ini, n,
                          self._computation(computation_to_apply, "Reduce"), d, nd)

    def ReduceWindow(self, operand, init_value, computation_to_apply, window_dimensions,
                     window_strides, padding):
        """padding: a PaddingType (VALID / SAME) or (low, high) pairs."""
        if isinstance(padding, (PaddingType, int)) and not isinstance(padding, bool):
            dims = self.GetShape(operand).dimensions()
            low, high = self._padding_for(PaddingType(padding), dims, window_dimensions,
                                          window_strides)
            padding = list(zip(low, high))
        return self.ReduceWindowWithGeneralPadding(operand, init_value, computation_to_apply,
                                                   window_dimensions, window_strides, padding)

    def ReduceWindowWithGeneralPadding(self, operand, init_value, computation_to_apply,
                                       window_dimensions, window_strides, padding,
                                       base_dilations=None, window_dilations=None):
        self._check_window("ReduceWindow", window_dimensions, padding,
                           window_strides=window_strides, base_dilations=base_dilations,
                           window_dilations=window_dilations)
        operands = list(operand) if isinstance(operand, (list, tuple)) else [operand]
        inits = list(init_value) if isinstance(init_value, (list, tuple)) else [init_value]
        ops, n = self._ops(operands)
        ini, _ = self._ops(inits)
        rank = len(window_dimensions)
        wd, _ = _lib.int64_array(window_dimensions)
        ws, _ = _lib.int64_array(window_strides) if window_strides else (None, 0)
        bd, _ = _lib.int64_array(base_dilations) if base_dilations else (None, 0)
        wdl, _ = _lib.int64_array(window_dilations) if window_dilations else (None, 0)
        lo, _ = _lib.int64_array([p[0] for p in padding]) if padding else (None, 0)
        hi, _ = _lib.int64_array([p[1] for p in padding]) if padding else (None, 0)
        return self._call("jitd_builder_reduce_window", ops, ini, n,
                          self._computation(computation_to_apply, "ReduceWindow"), wd, ws, bd,
                          wdl, lo, hi, rank)

    def Map(self, operands, computation_to_apply, dimensions):
        ops, n = self._ops(operands)
        d, nd = _lib.int64_array(dimensions)
        return self._call("jitd_builder_map", ops, n,
                          self._computation(computation_to_apply, "Map"), d, nd)

    def Sort(self, operand, dimension=-1, comparator=None, is_stable=False):
        """Sorts one operand (or several, by `comparator` or by the first)
        along `dimension`; several operands give a tuple."""
        operands = list(operand) if isinstance(operand, (list, tuple)) else [operand]
        ops, n = self._ops(operands)
        comp = self._computation(comparator, "Sort") if comparator is not None else None
        return self._call("jitd_builder_sort", ops, n, int(dimension), comp,
                          1 if is_stable else 0)

    def SortKeyVal(self, keys, values, dimension=-1):
        """xla_client's older key/value sort: a tuple (sorted keys, values)."""
        return self.Sort((keys, values), dimension)

    def While(self, cond, body, init):
        return self._call("jitd_builder_while", self._computation(cond, "While"),
                          self._computation(body, "While"), self._op(init))

    def Conditional(self, pred, true_operand, true_computation=None, false_operand=None,
                    false_computation=None):
        """Conditional(pred, true_operand, true_computation, false_operand,
        false_computation), or Conditional(branch_index, branch_computations,
        branch_operands) with an S32 index."""
        if isinstance(true_operand, (list, tuple)):
            computations = list(true_operand)
            operands = list(true_computation or ())
            if len(computations) != len(operands):
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "Conditional: %d branch computations but %d operands"
                                % (len(computations), len(operands)))
            comps = (ctypes.c_void_p * max(1, len(computations)))(
                *[self._computation(c, "Conditional") for c in computations])
            ops, n = self._ops(operands)
            return self._call("jitd_builder_conditional_indexed", self._op(pred), comps, ops, n)
        return self._call("jitd_builder_conditional", self._op(pred), self._op(true_operand),
                          self._computation(true_computation, "Conditional"),
                          self._op(false_operand),
                          self._computation(false_computation, "Conditional"))

    # -- tuples, gather/scatter -----------------------------------------------

    def Tuple(self, *ops):
        arr, n = self._ops(ops)
        return self._call("jitd_builder_tuple", arr, n)

    def GetTupleElement(self, tup, index):
        return self._call("jitd_builder_get_tuple_element", self._op(tup), int(index))

    def Gather(self, a, start_indices, dimension_numbers, slice_sizes,
               indices_are_sorted=False):
        keep = [_lib.int64_array(dimension_numbers.offset_dims),
                _lib.int64_array(dimension_numbers.collapsed_slice_dims),
                _lib.int64_array(dimension_numbers.start_index_map)]
        dn = _lib.GatherDimensionNumbers(keep[0][0], keep[0][1], keep[1][0], keep[1][1],
                                         keep[2][0], keep[2][1],
                                         int(dimension_numbers.index_vector_dim))
        s, ns = _lib.int64_array(slice_sizes)
        return self._call("jitd_builder_gather", self._op(a), self._op(start_indices),
                          ctypes.byref(dn), s, ns, 1 if indices_are_sorted else 0)

    def Scatter(self, a, scatter_indices, updates, update_computation, dimension_numbers,
                indices_are_sorted=False, unique_indices=False):
        keep = [_lib.int64_array(dimension_numbers.update_window_dims),
                _lib.int64_array(dimension_numbers.inserted_window_dims),
                _lib.int64_array(dimension_numbers.scatter_dims_to_operand_dims)]
        dn = _lib.ScatterDimensionNumbers(keep[0][0], keep[0][1], keep[1][0], keep[1][1],
                                          keep[2][0], keep[2][1],
                                          int(dimension_numbers.index_vector_dim))
        return self._call("jitd_builder_scatter", self._op(a), self._op(scatter_indices),
                          self._op(updates), self._computation(update_computation, "Scatter"),
                          ctypes.byref(dn), 1 if indices_are_sorted else 0,
                          1 if unique_indices else 0)

    # -- tokens, infeed, outfeed ----------------------------------------------

    def CreateToken(self):
        return self._call("jitd_builder_create_token")

    def AfterAll(self, tokens):
        arr, n = self._ops(tokens)
        return self._call("jitd_builder_after_all", arr, n)

    def Infeed(self, shape, config=None):
        """A value of `shape` from the infeed (tokens threaded implicitly in
        program order)."""
        c_shape = shape._to_c()
        try:
            return self._call("jitd_builder_infeed", c_shape,
                              config.encode() if config else None)
        finally:
            _lib.fn("jitd_shape_destroy")(c_shape)

    def InfeedWithToken(self, token, shape, config=None):
        """(value, token) from the infeed after `token`, as one tuple op."""
        c_shape = shape._to_c()
        try:
            return self._call("jitd_builder_infeed_with_token", self._op(token), c_shape,
                              config.encode() if config else None)
        finally:
            _lib.fn("jitd_shape_destroy")(c_shape)

    def Outfeed(self, operand, config=None):
        """Writes `operand` to the outfeed (in program order); returns the token."""
        return self._call("jitd_builder_outfeed", self._op(operand),
                          config.encode() if config else None)

    def OutfeedWithToken(self, operand, token, config=None):
        return self._call("jitd_builder_outfeed_with_token", self._op(operand), self._op(token),
                          config.encode() if config else None)

    # -- more xla_client ops (C API version 4) --------------------------------

    def Call(self, computation_to_apply, operands):
        """Runs `computation_to_apply` on `operands` (one per parameter);
        inlined into this computation."""
        ops, n = self._ops(operands)
        return self._call("jitd_builder_call", self._computation(computation_to_apply, "Call"),
                          ops, n)

    def ReducePrecision(self, operand, exponent_bits, mantissa_bits):
        """Rounds floats to `exponent_bits` / `mantissa_bits` (XLA's rounding:
        nearest even, overflow to infinity, underflow to zero)."""
        return self._call("jitd_builder_reduce_precision", self._op(operand),
                          _int32(exponent_bits, "ReducePrecision: exponent_bits"),
                          _int32(mantissa_bits, "ReducePrecision: mantissa_bits"))

    def ReplicaId(self):
        """This replica's id, a U32 scalar (0: jitd runs one replica)."""
        return self._call("jitd_builder_replica_id")

    def Cholesky(self, a, lower=True):
        """The Cholesky factor of the [..., n, n] matrices `a`: lower (L L^H)
        or upper, the other triangle zero."""
        return self._call("jitd_builder_cholesky", self._op(a), 1 if lower else 0)

    def TriangularSolve(self, a, b, left_side=False, lower=False, transpose_a=False,
                        conjugate_a=False, unit_diagonal=False):
        """Solves op(a) x = b (left_side) or x op(a) = b for the triangular
        [..., n, n] `a`, where op(a) is a, a^T, conj(a) or a^H as
        transpose_a / conjugate_a say (xla_client's flags). The result has
        b's shape."""
        if not transpose_a:
            transpose = 0  # JITD_TRANSPOSE_NO
            if conjugate_a:
                a = self.Conj(a)  # as xla_client (Conj of a real `a` is `a`)
        else:
            transpose = 2 if conjugate_a else 1  # JITD_TRANSPOSE_ADJOINT / _YES
        return self._call("jitd_builder_triangular_solve", self._op(a), self._op(b),
                          1 if left_side else 0, 1 if lower else 0, 1 if unit_diagonal else 0,
                          transpose)

    def Fft(self, operand, fft_type, fft_lengths):
        """FftType FFT / IFFT / RFFT / IRFFT over the trailing
        len(fft_lengths) (1 to 3) dimensions."""
        lengths, n = _lib.int64_array(fft_lengths)
        return self._call("jitd_builder_fft", self._op(operand),
                          _int32(fft_type, "Fft: fft_type"), lengths, n)

    def RngUniform(self, a, b, dims):
        """An array of `dims` drawn uniformly from [a, b); a and b are scalars
        of the result's element type (integer or float)."""
        return self._rng("jitd_builder_rng_uniform", "RngUniform", a, b, dims)

    def RngNormal(self, mu, sigma, dims):
        """An array of `dims` drawn from N(mu, sigma^2); mu and sigma are
        float scalars of the result's element type."""
        return self._rng("jitd_builder_rng_normal", "RngNormal", mu, sigma, dims)

    def SelectAndScatter(self, operand, select, window_dimensions, window_strides, padding,
                         source, init_value, scatter):
        """padding: a PaddingType (VALID / SAME) or (low, high) pairs."""
        if isinstance(padding, (PaddingType, int)) and not isinstance(padding, bool):
            dims = self.GetShape(operand).dimensions()
            low, high = self._padding_for(PaddingType(padding), dims, window_dimensions,
                                          window_strides)
            padding = list(zip(low, high))
        return self.SelectAndScatterWithGeneralPadding(operand, select, window_dimensions,
                                                       window_strides, padding, source,
                                                       init_value, scatter)

    def SelectAndScatterWithGeneralPadding(self, operand, select, window_dimensions,
                                           window_strides, padding, source, init_value,
                                           scatter):
        """For each window of `operand`, `select` (two scalars -> PRED) picks
        an element; the matching element of `source` is combined into it with
        `scatter`, starting from `init_value`. padding: (low, high) pairs."""
        self._check_window("SelectAndScatter", window_dimensions, padding,
                           window_strides=window_strides)
        rank = len(window_dimensions)
        wd, _ = _lib.int64_array(window_dimensions)
        ws, _ = _lib.int64_array(window_strides) if window_strides else (None, 0)
        lo, _ = _lib.int64_array([p[0] for p in padding]) if padding else (None, 0)
        hi, _ = _lib.int64_array([p[1] for p in padding]) if padding else (None, 0)
        return self._call("jitd_builder_select_and_scatter", self._op(operand),
                          self._computation(select, "SelectAndScatter"), wd, ws, lo, hi, rank,
                          self._op(source), self._op(init_value),
                          self._computation(scatter, "SelectAndScatter"))

    @staticmethod
    def _check_window(what, window_dimensions, padding=None, **arrays):
        """The C API reads `rank` entries of every window array: each given
        one (padding, and the named `arrays`) must have one entry per window
        dimension."""
        rank = len(window_dimensions)
        for name, values in sorted(arrays.items()):
            if values and len(values) != rank:
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "%s: %d %s for %d window dimensions"
                                % (what, len(values), name, rank))
        if padding and len(padding) != rank:
            raise JitdError(StatusCode.INVALID_ARGUMENT,
                            "%s: %d padding pairs for %d window dimensions"
                            % (what, len(padding), rank))
        for p in padding or ():
            if len(p) != 2:
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "%s: padding %r is not a (low, high) pair" % (what, p))

    def _dtype_code_of(self, op, what):
        """The jitd_dtype_t of array op `op` (a JitdError for a tuple or a
        token), read from the C shape so that every jitd dtype works."""
        shape = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_builder_get_shape")(self._handle, self._op(op),
                                                     ctypes.byref(shape)))
        try:
            if _lib.fn("jitd_shape_kind")(shape) != 0:  # JITD_SHAPE_ARRAY
                raise JitdError(StatusCode.INVALID_ARGUMENT,
                                "%s: %r is not an array" % (what, op))
            return _lib.fn("jitd_shape_dtype")(shape)
        finally:
            _lib.fn("jitd_shape_destroy")(shape)

    def _rng(self, c_name, what, a, b, dims):
        # The result's element type is a's, as in xla_client.
        dtype = self._dtype_code_of(a, what)
        d, n = _lib.int64_array(dims)
        out_shape = ctypes.c_void_p()
        _lib.check(_lib.fn("jitd_shape_create_array")(dtype, d, n, ctypes.byref(out_shape)))
        try:
            return self._call(c_name, self._op(a), self._op(b), out_shape)
        finally:
            _lib.fn("jitd_shape_destroy")(out_shape)


def _numpy_of(primitive_type):
    from ._types import from_jitd_dtype
    return from_jitd_dtype(int(primitive_type))


def _add_elementwise():
    for name, kind in _UNARY.items():
        def unary(self, operand, _kind=kind):
            return self._unary(_kind, operand)
        unary.__name__ = name
        unary.__doc__ = "Elementwise %s." % name
        setattr(ComputationBuilder, name, unary)
    for name, kind in _BINARY.items():
        def binary(self, lhs, rhs, broadcast_dimensions=(), _kind=kind):
            return self._binary(_kind, lhs, rhs, broadcast_dimensions)
        binary.__name__ = name
        binary.__doc__ = "Elementwise %s with XLA broadcasting." % name
        setattr(ComputationBuilder, name, binary)


_add_elementwise()
