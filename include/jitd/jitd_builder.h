/* jitd_builder.h: the computation builder of libjitd.so (C API).
 *
 * xla_client's ComputationBuilder in C: a builder adds ops one at a time,
 * inferring and checking each op's shape as it is added; jitd_builder_build
 * turns it into a computation, which is a jitd FlatBuffers module (the format
 * of ipc/module.fbs, documented in docs/ARCHITECTURE.md) that the daemon
 * compiles and caches exactly like StableHLO text
 * (jitd_client_compile_computation). libjitd.so links no compiler or IR: shape
 * inference, serialization and the StableHLO text printer live in the library.
 *
 * Errors. Every fallible function returns a jitd_status_t* (NULL = success;
 * see jitd.h). An op whose operands do not fit (a shape error, an operand of
 * another builder, a bad dimension) returns JITD_INVALID_ARGUMENT naming the
 * op and the shapes ("Add: shapes f32[2,3] and f32[4] are incompatible ...")
 * and leaves *out_op unchanged. The builder then stays in an error state:
 * later ops still check their own operands, and jitd_builder_build returns
 * the first error. jitd_builder_status reports that error at any time.
 *
 * Ownership and lifetime. jitd_builder_create, jitd_shape_create_*,
 * jitd_builder_get_shape and jitd_builder_build hand the caller an object it
 * frees exactly once with jitd_builder_destroy / jitd_shape_destroy /
 * jitd_computation_destroy. A jitd_op_t is a plain value (copy it freely)
 * naming one value in one builder: it is meaningful only to the builder that
 * returned it and only while that builder lives; giving it to another builder
 * is JITD_INVALID_ARGUMENT, never a crash. A computation is independent of its
 * builder (the builder may be destroyed first, or go on adding ops and be
 * built again). Passing a computation to an op (Reduce, Map, Sort, While,
 * Conditional, Scatter, ReduceWindow) copies it into the builder: the caller
 * may destroy the computation right after the call. Pointers returned by
 * accessors (jitd_computation_name, jitd_computation_module, the dims of a
 * shape, jitd_computation_parameter_shape ...) are borrowed and live as long
 * as the object they came from. Strings returned through char** are freed
 * with jitd_string_free. Array arguments (dims, operands, ...) are copied and
 * need not outlive the call; a NULL array with count 0 is fine.
 *
 * Thread safety. A builder is not thread safe: use it from one thread at a
 * time. Shapes and computations are immutable once created and may be read
 * from any number of threads at once.
 *
 * Semantics follow xla_client. Elementwise binary ops broadcast like XLA:
 * a scalar against anything (implicit scalar broadcasting); operands of equal
 * rank whose dims are equal or 1 (degenerate broadcasting); or, with
 * `broadcast_dimensions`, the lower-rank operand's dimension i maps to
 * dimension broadcast_dimensions[i] of the higher-rank one (sizes equal, or 1
 * in either). Different ranks without broadcast_dimensions (other than a
 * scalar) are a shape error, as in XLA. Ops whose
 * XLA result is several values (variadic Reduce / ReduceWindow / Sort, Infeed
 * with a token) return one tuple-shaped jitd_op_t; take its parts with
 * jitd_builder_get_tuple_element. A computation whose root is a Tuple op has
 * one result per tuple element (the entry function returns them flattened),
 * any other root gives one result.
 */
#ifndef JITD_JITD_BUILDER_H_
#define JITD_JITD_BUILDER_H_

#include <stddef.h>
#include <stdint.h>

#include "jitd.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Shapes -------------------------------------------------------------- */

/* An immutable shape: an array (dtype + dims), a tuple of shapes, or a token.
 * Opaque. */
typedef struct jitd_shape jitd_shape_t;

typedef enum jitd_shape_kind_t {
  JITD_SHAPE_ARRAY = 0,
  JITD_SHAPE_TUPLE = 1,
  JITD_SHAPE_TOKEN = 2,
} jitd_shape_kind_t;

/* An array shape of `dtype` with dims[0..rank) (rank <= 16, dims >= 0). */
JITD_API jitd_status_t* jitd_shape_create_array(jitd_dtype_t dtype, const int64_t* dims,
                                                size_t rank, jitd_shape_t** out_shape);
/* A tuple of copies of elements[0..num_elements) (nesting <= 16). */
JITD_API jitd_status_t* jitd_shape_create_tuple(const jitd_shape_t* const* elements,
                                                size_t num_elements,
                                                jitd_shape_t** out_shape);
/* The token shape. */
JITD_API jitd_status_t* jitd_shape_create_token(jitd_shape_t** out_shape);
/* Frees a shape the caller owns; NULL is a no-op. */
JITD_API void jitd_shape_destroy(jitd_shape_t* shape);

/* Accessors (NULL shape: ARRAY / INVALID / 0 / NULL). */
JITD_API jitd_shape_kind_t jitd_shape_kind(const jitd_shape_t* shape);
JITD_API jitd_dtype_t jitd_shape_dtype(const jitd_shape_t* shape);      /* arrays */
JITD_API size_t jitd_shape_rank(const jitd_shape_t* shape);             /* arrays */
JITD_API const int64_t* jitd_shape_dims(const jitd_shape_t* shape);     /* borrowed */
JITD_API size_t jitd_shape_tuple_size(const jitd_shape_t* shape);       /* tuples */
/* Element `index` of a tuple, borrowed from `shape`; NULL when out of range. */
JITD_API const jitd_shape_t* jitd_shape_tuple_element(const jitd_shape_t* shape,
                                                      size_t index);
/* XLA's spelling: "f32[2,3]", "(f32[], s32[4])", "token". Caller frees. */
JITD_API jitd_status_t* jitd_shape_to_string(const jitd_shape_t* shape, char** out_string);

/* ---- Builder ------------------------------------------------------------- */

/* Builds one computation op by op. Opaque; see the header comment. */
typedef struct jitd_builder jitd_builder_t;

/* One value in a builder. id 0 (JITD_OP_NONE) is no value. */
typedef struct jitd_op_t {
  uint64_t id;
} jitd_op_t;
#define JITD_OP_NONE_ID 0

/* A builder for a computation called `name` (NULL = "computation"). */
JITD_API jitd_status_t* jitd_builder_create(const char* name, jitd_builder_t** out_builder);
/* Frees the builder (computations built from it stay valid). NULL: no-op. */
JITD_API void jitd_builder_destroy(jitd_builder_t* builder);
/* NULL when the builder has no error, else a copy of its first error (the
 * caller frees it). */
JITD_API jitd_status_t* jitd_builder_status(const jitd_builder_t* builder);
/* The shape of `op`; the caller frees *out_shape. */
JITD_API jitd_status_t* jitd_builder_get_shape(const jitd_builder_t* builder, jitd_op_t op,
                                               jitd_shape_t** out_shape);

/* Parameter number `index` of the computation, of `shape`, called `name`
 * (NULL = "p<index>"). Indices must be distinct; at build they must be
 * 0..n-1. */
JITD_API jitd_status_t* jitd_builder_parameter(jitd_builder_t* builder, int64_t index,
                                               const jitd_shape_t* shape, const char* name,
                                               jitd_op_t* out_op);

/* A scalar constant of `dtype` read from `value`: one element in host layout
 * (PRED: one byte 0/1; F16/BF16/F8*: the raw bits, 2 or 1 bytes; C64: two
 * floats; C128: two doubles; S2/S4/U2/U4: one byte). */
JITD_API jitd_status_t* jitd_builder_constant_scalar(jitd_builder_t* builder,
                                                     jitd_dtype_t dtype, const void* value,
                                                     jitd_op_t* out_op);
/* Conveniences for the common scalar types (ConstantF32Scalar ...). */
JITD_API jitd_status_t* jitd_builder_constant_f32(jitd_builder_t* builder, float value,
                                                  jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_constant_f64(jitd_builder_t* builder, double value,
                                                  jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_constant_s32(jitd_builder_t* builder, int32_t value,
                                                  jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_constant_s64(jitd_builder_t* builder, int64_t value,
                                                  jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_constant_pred(jitd_builder_t* builder, int value,
                                                   jitd_op_t* out_op);
/* An array constant of `dtype` and dims[0..rank) copied from `data`
 * (row-major, dense, `size_bytes` must equal the shape's byte size with one
 * byte per element for PRED and sub-byte types). */
JITD_API jitd_status_t* jitd_builder_constant_array(jitd_builder_t* builder,
                                                    jitd_dtype_t dtype, const int64_t* dims,
                                                    size_t rank, const void* data,
                                                    size_t size_bytes, jitd_op_t* out_op);

/* Elementwise unary ops (xla_client's names). ROUND rounds half away from
 * zero; SQUARE is x*x; RECIPROCAL is 1/x; the ERF... group, LGAMMA, DIGAMMA,
 * the inverse/hyperbolic trig ops, BESSEL_I1E and CONJ are CHLO ops. */
typedef enum jitd_unary_op_t {
  JITD_UNARY_NOT = 0,
  JITD_UNARY_ABS = 1,
  JITD_UNARY_EXP = 2,
  JITD_UNARY_EXPM1 = 3,
  JITD_UNARY_FLOOR = 4,
  JITD_UNARY_ROUND = 5,
  JITD_UNARY_CEIL = 6,
  JITD_UNARY_LOG = 7,
  JITD_UNARY_LOG1P = 8,
  JITD_UNARY_SIGN = 9,
  JITD_UNARY_COS = 10,
  JITD_UNARY_SIN = 11,
  JITD_UNARY_TANH = 12,
  JITD_UNARY_SQRT = 13,
  JITD_UNARY_RSQRT = 14,
  JITD_UNARY_CBRT = 15,
  JITD_UNARY_SQUARE = 16,
  JITD_UNARY_IS_FINITE = 17,
  JITD_UNARY_RECIPROCAL = 18,
  JITD_UNARY_NEG = 19,
  JITD_UNARY_LOGISTIC = 20,
  JITD_UNARY_REAL = 21,
  JITD_UNARY_IMAG = 22,
  JITD_UNARY_CONJ = 23,
  JITD_UNARY_TAN = 24,
  JITD_UNARY_CLZ = 25,
  JITD_UNARY_POPULATION_COUNT = 26,
  JITD_UNARY_ROUND_NEAREST_EVEN = 27,
  JITD_UNARY_ERF = 28,
  JITD_UNARY_ERFC = 29,
  JITD_UNARY_ERF_INV = 30,
  JITD_UNARY_LGAMMA = 31,
  JITD_UNARY_DIGAMMA = 32,
  JITD_UNARY_BESSEL_I1E = 33,
  JITD_UNARY_ACOS = 34,
  JITD_UNARY_ASIN = 35,
  JITD_UNARY_ATAN = 36,
  JITD_UNARY_ACOSH = 37,
  JITD_UNARY_ASINH = 38,
  JITD_UNARY_ATANH = 39,
  JITD_UNARY_COSH = 40,
  JITD_UNARY_SINH = 41,
} jitd_unary_op_t;

JITD_API jitd_status_t* jitd_builder_unary(jitd_builder_t* builder, jitd_unary_op_t kind,
                                           jitd_op_t operand, jitd_op_t* out_op);

/* Elementwise binary ops (xla_client's names). EQ..LE compare (PRED result;
 * floats compare as FLOAT, signed as SIGNED, others as UNSIGNED); COMPLEX
 * makes complex numbers from real and imaginary parts. */
typedef enum jitd_binary_op_t {
  JITD_BINARY_EQ = 0,
  JITD_BINARY_NE = 1,
  JITD_BINARY_GE = 2,
  JITD_BINARY_GT = 3,
  JITD_BINARY_LT = 4,
  JITD_BINARY_LE = 5,
  JITD_BINARY_ADD = 6,
  JITD_BINARY_SUB = 7,
  JITD_BINARY_MUL = 8,
  JITD_BINARY_DIV = 9,
  JITD_BINARY_REM = 10,
  JITD_BINARY_MAX = 11,
  JITD_BINARY_MIN = 12,
  JITD_BINARY_AND = 13,
  JITD_BINARY_OR = 14,
  JITD_BINARY_XOR = 15,
  JITD_BINARY_POW = 16,
  JITD_BINARY_ATAN2 = 17,
  JITD_BINARY_SHIFT_LEFT = 18,
  JITD_BINARY_SHIFT_RIGHT_ARITHMETIC = 19,
  JITD_BINARY_SHIFT_RIGHT_LOGICAL = 20,
  JITD_BINARY_COMPLEX = 21,
  JITD_BINARY_NEXT_AFTER = 22,
} jitd_binary_op_t;

/* `lhs kind rhs` with XLA broadcasting (see the header comment).
 * broadcast_dimensions may be NULL with num_broadcast_dimensions 0. */
JITD_API jitd_status_t* jitd_builder_binary(jitd_builder_t* builder, jitd_binary_op_t kind,
                                            jitd_op_t lhs, jitd_op_t rhs,
                                            const int64_t* broadcast_dimensions,
                                            size_t num_broadcast_dimensions,
                                            jitd_op_t* out_op);

/* ConvertElementType / BitcastConvertType to `dtype` (bitcast: same bit
 * width per element, or XLA's rank change for different widths). */
JITD_API jitd_status_t* jitd_builder_convert_element_type(jitd_builder_t* builder,
                                                          jitd_op_t operand,
                                                          jitd_dtype_t dtype,
                                                          jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_bitcast_convert_type(jitd_builder_t* builder,
                                                          jitd_op_t operand,
                                                          jitd_dtype_t dtype,
                                                          jitd_op_t* out_op);

/* Broadcast: prepends dims sizes[0..n) to operand's shape. */
JITD_API jitd_status_t* jitd_builder_broadcast(jitd_builder_t* builder, jitd_op_t operand,
                                               const int64_t* sizes, size_t num_sizes,
                                               jitd_op_t* out_op);
/* BroadcastInDim: result dims out_dims[0..out_rank); operand dimension i
 * maps to result dimension broadcast_dimensions[i] (one per operand dim). */
JITD_API jitd_status_t* jitd_builder_broadcast_in_dim(
    jitd_builder_t* builder, jitd_op_t operand, const int64_t* out_dims, size_t out_rank,
    const int64_t* broadcast_dimensions, size_t num_broadcast_dimensions, jitd_op_t* out_op);
/* Reshape to new_sizes; `dimensions` (NULL = identity, else a permutation of
 * the operand's dims) is XLA's order to collapse the operand in. */
JITD_API jitd_status_t* jitd_builder_reshape(jitd_builder_t* builder, jitd_op_t operand,
                                             const int64_t* dimensions, size_t num_dimensions,
                                             const int64_t* new_sizes, size_t num_new_sizes,
                                             jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_transpose(jitd_builder_t* builder, jitd_op_t operand,
                                               const int64_t* permutation, size_t rank,
                                               jitd_op_t* out_op);
/* Rev: reverses the listed dimensions. */
JITD_API jitd_status_t* jitd_builder_rev(jitd_builder_t* builder, jitd_op_t operand,
                                         const int64_t* dimensions, size_t num_dimensions,
                                         jitd_op_t* out_op);
/* Slice with start/limit/strides of length rank (strides NULL = all 1). */
JITD_API jitd_status_t* jitd_builder_slice(jitd_builder_t* builder, jitd_op_t operand,
                                           const int64_t* start_indices,
                                           const int64_t* limit_indices,
                                           const int64_t* strides, size_t rank,
                                           jitd_op_t* out_op);
/* SliceInDim: a slice of one dimension. */
JITD_API jitd_status_t* jitd_builder_slice_in_dim(jitd_builder_t* builder, jitd_op_t operand,
                                                  int64_t start_index, int64_t limit_index,
                                                  int64_t stride, int64_t dimno,
                                                  jitd_op_t* out_op);
/* DynamicSlice: start_indices are rank scalar integer ops (same type). */
JITD_API jitd_status_t* jitd_builder_dynamic_slice(jitd_builder_t* builder, jitd_op_t operand,
                                                   const jitd_op_t* start_indices,
                                                   size_t num_start_indices,
                                                   const int64_t* slice_sizes,
                                                   size_t num_slice_sizes, jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_dynamic_update_slice(
    jitd_builder_t* builder, jitd_op_t operand, jitd_op_t update,
    const jitd_op_t* start_indices, size_t num_start_indices, jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_concatenate(jitd_builder_t* builder,
                                                 const jitd_op_t* operands,
                                                 size_t num_operands, int64_t dimension,
                                                 jitd_op_t* out_op);
/* Pad: low/high edge padding (may be negative) and interior padding, each of
 * length rank; padding_value is a scalar of the operand's dtype. */
JITD_API jitd_status_t* jitd_builder_pad(jitd_builder_t* builder, jitd_op_t operand,
                                         jitd_op_t padding_value, const int64_t* edge_low,
                                         const int64_t* edge_high, const int64_t* interior,
                                         size_t rank, jitd_op_t* out_op);
/* Iota: [0, 1, ..., size-1] of `dtype`. */
JITD_API jitd_status_t* jitd_builder_iota(jitd_builder_t* builder, jitd_dtype_t dtype,
                                          int64_t size, jitd_op_t* out_op);
/* BroadcastedIota: an array of `shape` counting along iota_dimension. */
JITD_API jitd_status_t* jitd_builder_broadcasted_iota(jitd_builder_t* builder,
                                                      const jitd_shape_t* shape,
                                                      int64_t iota_dimension,
                                                      jitd_op_t* out_op);
/* Select(pred, on_true, on_false): pred is PRED, scalar or of the others'
 * dims. */
JITD_API jitd_status_t* jitd_builder_select(jitd_builder_t* builder, jitd_op_t pred,
                                            jitd_op_t on_true, jitd_op_t on_false,
                                            jitd_op_t* out_op);
/* Clamp(min, operand, max): min and max scalar or of the operand's shape. */
JITD_API jitd_status_t* jitd_builder_clamp(jitd_builder_t* builder, jitd_op_t min,
                                           jitd_op_t operand, jitd_op_t max,
                                           jitd_op_t* out_op);

/* Dot: vector.vector, matrix.vector, vector.matrix or matrix.matrix. */
JITD_API jitd_status_t* jitd_builder_dot(jitd_builder_t* builder, jitd_op_t lhs,
                                         jitd_op_t rhs, jitd_op_t* out_op);
/* DotGeneral's dimension numbers (arrays borrowed for the call). */
typedef struct jitd_dot_dimension_numbers_t {
  const int64_t* lhs_contracting_dimensions;
  size_t num_lhs_contracting_dimensions;
  const int64_t* rhs_contracting_dimensions;
  size_t num_rhs_contracting_dimensions;
  const int64_t* lhs_batch_dimensions;
  size_t num_lhs_batch_dimensions;
  const int64_t* rhs_batch_dimensions;
  size_t num_rhs_batch_dimensions;
} jitd_dot_dimension_numbers_t;
/* Result dims: batch, then lhs free, then rhs free (XLA's order). */
JITD_API jitd_status_t* jitd_builder_dot_general(
    jitd_builder_t* builder, jitd_op_t lhs, jitd_op_t rhs,
    const jitd_dot_dimension_numbers_t* dimension_numbers, jitd_op_t* out_op);

/* ConvGeneralDilated's parameters. An options struct: set struct_size; all
 * arrays have num_spatial_dimensions entries except where said; NULL arrays
 * take the default (strides / dilations 1, padding 0). */
typedef struct jitd_conv_options_t {
  size_t struct_size; /* JITD_CONV_OPTIONS_STRUCT_SIZE or more */
  size_t num_spatial_dimensions;
  const int64_t* window_strides;
  const int64_t* padding_low;
  const int64_t* padding_high;
  const int64_t* lhs_dilation;
  const int64_t* rhs_dilation;
  /* Dimension numbers: which dimension of the input (lhs), kernel (rhs) and
   * output is which. */
  int64_t input_batch_dimension;
  int64_t input_feature_dimension;
  const int64_t* input_spatial_dimensions;
  int64_t kernel_input_feature_dimension;
  int64_t kernel_output_feature_dimension;
  const int64_t* kernel_spatial_dimensions;
  int64_t output_batch_dimension;
  int64_t output_feature_dimension;
  const int64_t* output_spatial_dimensions;
  int64_t feature_group_count; /* 0 = 1 */
  int64_t batch_group_count;   /* 0 = 1 */
} jitd_conv_options_t;
#define JITD_CONV_OPTIONS_STRUCT_SIZE JITD_STRUCT_SIZE(jitd_conv_options_t, batch_group_count)
JITD_API jitd_status_t* jitd_builder_conv_general_dilated(jitd_builder_t* builder,
                                                          jitd_op_t lhs, jitd_op_t rhs,
                                                          const jitd_conv_options_t* options,
                                                          jitd_op_t* out_op);

/* XLA's PaddingType for Conv and ReduceWindow. */
typedef enum jitd_padding_type_t {
  JITD_PADDING_VALID = 0,
  JITD_PADDING_SAME = 1,
} jitd_padding_type_t;
/* The explicit (low, high) padding XLA uses for `type` on an input of
 * input_dims with window_dims and strides (all of length rank), written to
 * out_low[0..rank) and out_high[0..rank). */
JITD_API jitd_status_t* jitd_padding_for_type(jitd_padding_type_t type,
                                              const int64_t* input_dims,
                                              const int64_t* window_dims,
                                              const int64_t* strides, size_t rank,
                                              int64_t* out_low, int64_t* out_high);
/* Conv (xla_client): NCHW input, OIHW kernel, NCHW output, `type` padding,
 * strides of length rank-2. */
JITD_API jitd_status_t* jitd_builder_conv(jitd_builder_t* builder, jitd_op_t lhs,
                                          jitd_op_t rhs, const int64_t* window_strides,
                                          size_t num_spatial_dimensions,
                                          jitd_padding_type_t padding, jitd_op_t* out_op);

/* ---- Computations -------------------------------------------------------- */

/* A built computation: an immutable jitd FlatBuffers module (entry function
 * "main", public; computations it embeds as regions or private functions)
 * with its program shape. Opaque. */
typedef struct jitd_computation jitd_computation_t;

/* Builds the computation returning `root` (JITD_OP_NONE id = the last op
 * added). Fails with the builder's first error, when parameter indices are
 * not 0..n-1, or when there are no ops. The builder stays usable. */
JITD_API jitd_status_t* jitd_builder_build(jitd_builder_t* builder, jitd_op_t root,
                                           jitd_computation_t** out_computation);
JITD_API void jitd_computation_destroy(jitd_computation_t* computation);
/* Borrowed accessors. */
JITD_API const char* jitd_computation_name(const jitd_computation_t* computation);
/* The FlatBuffers module bytes (ipc/module.fbs), borrowed. */
JITD_API jitd_status_t* jitd_computation_module(const jitd_computation_t* computation,
                                                const uint8_t** out_data, size_t* out_size);
JITD_API size_t jitd_computation_num_parameters(const jitd_computation_t* computation);
/* NULL when out of range. */
JITD_API const jitd_shape_t* jitd_computation_parameter_shape(
    const jitd_computation_t* computation, size_t index);
/* The root's shape (a tuple for a Tuple root). */
JITD_API const jitd_shape_t* jitd_computation_result_shape(
    const jitd_computation_t* computation);
/* The computation as StableHLO text (MLIR generic op form) that jitd's
 * parser accepts. Caller frees *out_text with jitd_string_free. */
JITD_API jitd_status_t* jitd_computation_to_text(const jitd_computation_t* computation,
                                                 char** out_text);

/* Compiles `computation` in the daemon (sent as FLATBUFFER_MODULE; cached by
 * its bytes like text). `options` may be NULL. */
JITD_API jitd_status_t* jitd_client_compile_computation(
    jitd_client_t* client, const jitd_computation_t* computation,
    const jitd_compile_options_t* options, jitd_executable_t** out_executable);
/* Compiles FlatBuffers module bytes (ipc/module.fbs) in the daemon. */
JITD_API jitd_status_t* jitd_client_compile_module(jitd_client_t* client,
                                                   const uint8_t* module_bytes, size_t size,
                                                   const jitd_compile_options_t* options,
                                                   jitd_executable_t** out_executable);

/* ---- Ops with embedded computations -------------------------------------- */

/* Reduce operands[0..n) with init_values[0..n) (scalars) by `computation`
 * (2n scalar parameters: accumulators then elements; returns one scalar, or a
 * tuple of n) over dimensions. n > 1 returns a tuple of n arrays. */
JITD_API jitd_status_t* jitd_builder_reduce(jitd_builder_t* builder,
                                            const jitd_op_t* operands,
                                            const jitd_op_t* init_values, size_t num_operands,
                                            const jitd_computation_t* computation,
                                            const int64_t* dimensions, size_t num_dimensions,
                                            jitd_op_t* out_op);
/* ReduceWindow: window dims/strides of length rank (strides NULL = 1),
 * base/window dilations NULL = 1, padding_low/high NULL = 0. */
JITD_API jitd_status_t* jitd_builder_reduce_window(
    jitd_builder_t* builder, const jitd_op_t* operands, const jitd_op_t* init_values,
    size_t num_operands, const jitd_computation_t* computation,
    const int64_t* window_dimensions, const int64_t* window_strides,
    const int64_t* base_dilations, const int64_t* window_dilations,
    const int64_t* padding_low, const int64_t* padding_high, size_t rank,
    jitd_op_t* out_op);
/* Map `computation` (one scalar parameter per operand) over operands of
 * equal shape; dimensions must be 0..rank-1 in order (XLA's rule). */
JITD_API jitd_status_t* jitd_builder_map(jitd_builder_t* builder, const jitd_op_t* operands,
                                         size_t num_operands,
                                         const jitd_computation_t* computation,
                                         const int64_t* dimensions, size_t num_dimensions,
                                         jitd_op_t* out_op);
/* Sort operands (equal dims) along `dimension` (-1 = last) by `comparator`
 * (2n scalar parameters, lhs/rhs of each operand interleaved as in XLA;
 * returns PRED), or NULL = ascending by operand 0 (total order for floats).
 * n > 1 returns a tuple. */
JITD_API jitd_status_t* jitd_builder_sort(jitd_builder_t* builder, const jitd_op_t* operands,
                                          size_t num_operands, int64_t dimension,
                                          const jitd_computation_t* comparator, int is_stable,
                                          jitd_op_t* out_op);
/* While: `condition` (one parameter of init's shape -> PRED scalar), `body`
 * (one parameter -> init's shape). */
JITD_API jitd_status_t* jitd_builder_while(jitd_builder_t* builder,
                                           const jitd_computation_t* condition,
                                           const jitd_computation_t* body, jitd_op_t init,
                                           jitd_op_t* out_op);
/* Conditional(pred, true_operand, true_computation, false_operand,
 * false_computation): each computation has one parameter and both return
 * the same shape. */
JITD_API jitd_status_t* jitd_builder_conditional(
    jitd_builder_t* builder, jitd_op_t pred, jitd_op_t true_operand,
    const jitd_computation_t* true_computation, jitd_op_t false_operand,
    const jitd_computation_t* false_computation, jitd_op_t* out_op);
/* Conditional(branch_index, branches, operands): S32 scalar index; branch i
 * takes operands[i]; an index out of range runs the last branch. */
JITD_API jitd_status_t* jitd_builder_conditional_indexed(
    jitd_builder_t* builder, jitd_op_t branch_index,
    const jitd_computation_t* const* branch_computations, const jitd_op_t* branch_operands,
    size_t num_branches, jitd_op_t* out_op);

/* ---- Tuples, gather / scatter, tokens, infeed / outfeed ------------------ */

JITD_API jitd_status_t* jitd_builder_tuple(jitd_builder_t* builder, const jitd_op_t* elements,
                                           size_t num_elements, jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_get_tuple_element(jitd_builder_t* builder,
                                                       jitd_op_t tuple, int64_t index,
                                                       jitd_op_t* out_op);

typedef struct jitd_gather_dimension_numbers_t {
  const int64_t* offset_dims;
  size_t num_offset_dims;
  const int64_t* collapsed_slice_dims;
  size_t num_collapsed_slice_dims;
  const int64_t* start_index_map;
  size_t num_start_index_map;
  int64_t index_vector_dim;
} jitd_gather_dimension_numbers_t;
JITD_API jitd_status_t* jitd_builder_gather(
    jitd_builder_t* builder, jitd_op_t operand, jitd_op_t start_indices,
    const jitd_gather_dimension_numbers_t* dimension_numbers, const int64_t* slice_sizes,
    size_t num_slice_sizes, int indices_are_sorted, jitd_op_t* out_op);

typedef struct jitd_scatter_dimension_numbers_t {
  const int64_t* update_window_dims;
  size_t num_update_window_dims;
  const int64_t* inserted_window_dims;
  size_t num_inserted_window_dims;
  const int64_t* scatter_dims_to_operand_dims;
  size_t num_scatter_dims_to_operand_dims;
  int64_t index_vector_dim;
} jitd_scatter_dimension_numbers_t;
/* Scatter(operand, scatter_indices, updates, update_computation (two
 * scalars -> scalar), dimension numbers). */
JITD_API jitd_status_t* jitd_builder_scatter(
    jitd_builder_t* builder, jitd_op_t operand, jitd_op_t scatter_indices, jitd_op_t updates,
    const jitd_computation_t* update_computation,
    const jitd_scatter_dimension_numbers_t* dimension_numbers, int indices_are_sorted,
    int unique_indices, jitd_op_t* out_op);

/* CreateToken / AfterAll. */
JITD_API jitd_status_t* jitd_builder_create_token(jitd_builder_t* builder, jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_after_all(jitd_builder_t* builder, const jitd_op_t* tokens,
                                               size_t num_tokens, jitd_op_t* out_op);

/* InfeedWithToken: reads one value of `shape` (an array or a tuple of
 * arrays) after `token`; returns the tuple (value, token). Emitted as
 * stablehlo.infeed with infeed_config = `config` (NULL = ""), whose results
 * are the array(s) then the token. */
JITD_API jitd_status_t* jitd_builder_infeed_with_token(jitd_builder_t* builder,
                                                       jitd_op_t token,
                                                       const jitd_shape_t* shape,
                                                       const char* config, jitd_op_t* out_op);
/* OutfeedWithToken: writes `operand` (an array, or a tuple: its elements)
 * after `token`; returns the new token. stablehlo.outfeed with
 * outfeed_config = `config` (NULL = ""). */
JITD_API jitd_status_t* jitd_builder_outfeed_with_token(jitd_builder_t* builder,
                                                        jitd_op_t operand, jitd_op_t token,
                                                        const char* config, jitd_op_t* out_op);
/* Infeed / Outfeed without tokens (xla_client's older methods): the builder
 * threads an implicit token through them in the order they were added, so
 * they happen in program order. Infeed returns the value only; Outfeed
 * returns the token. */
JITD_API jitd_status_t* jitd_builder_infeed(jitd_builder_t* builder, const jitd_shape_t* shape,
                                            const char* config, jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_outfeed(jitd_builder_t* builder, jitd_op_t operand,
                                             const char* config, jitd_op_t* out_op);

/* ---- More xla_client ops (JITD_API_VERSION 4) ----------------------------- */

/* Call: runs `computation` on operands[0..n) (one per parameter, of its
 * shapes); the result is the computation's root (a tuple for a Tuple root).
 * The computation is inlined. */
JITD_API jitd_status_t* jitd_builder_call(jitd_builder_t* builder,
                                          const jitd_computation_t* computation,
                                          const jitd_op_t* operands, size_t num_operands,
                                          jitd_op_t* out_op);
/* ReducePrecision: rounds floats to exponent_bits (>= 1) / mantissa_bits. */
JITD_API jitd_status_t* jitd_builder_reduce_precision(jitd_builder_t* builder,
                                                      jitd_op_t operand, int32_t exponent_bits,
                                                      int32_t mantissa_bits, jitd_op_t* out_op);
/* ReplicaId: a U32 scalar. */
JITD_API jitd_status_t* jitd_builder_replica_id(jitd_builder_t* builder, jitd_op_t* out_op);
/* Cholesky of [..., n, n] float or complex matrices; nonzero `lower`: the
 * lower triangle (L L^H), else the upper. */
JITD_API jitd_status_t* jitd_builder_cholesky(jitd_builder_t* builder, jitd_op_t a, int lower,
                                              jitd_op_t* out_op);
typedef enum jitd_transpose_t {
  JITD_TRANSPOSE_NO = 0,
  JITD_TRANSPOSE_YES = 1,
  JITD_TRANSPOSE_ADJOINT = 2,
} jitd_transpose_t;
/* TriangularSolve: solves op(a) x = b (left_side) or x op(a) = b with a
 * [..., n, n] triangular (lower / upper, unit_diagonal); result of b's
 * shape. */
JITD_API jitd_status_t* jitd_builder_triangular_solve(jitd_builder_t* builder, jitd_op_t a,
                                                      jitd_op_t b, int left_side, int lower,
                                                      int unit_diagonal,
                                                      jitd_transpose_t transpose_a,
                                                      jitd_op_t* out_op);
typedef enum jitd_fft_type_t {
  JITD_FFT_FFT = 0,   /* complex -> complex */
  JITD_FFT_IFFT = 1,  /* complex -> complex */
  JITD_FFT_RFFT = 2,  /* real -> complex, last dim fft_length[-1]/2+1 */
  JITD_FFT_IRFFT = 3, /* complex -> real, last dim fft_length[-1] */
} jitd_fft_type_t;
/* Fft over the trailing fft_length[0..n) dimensions (1 <= n <= 3). */
JITD_API jitd_status_t* jitd_builder_fft(jitd_builder_t* builder, jitd_op_t operand,
                                         jitd_fft_type_t fft_type, const int64_t* fft_length,
                                         size_t num_fft_length, jitd_op_t* out_op);
/* RngUniform(a, b, shape): values in [a, b) (integers or floats);
 * RngNormal(mu, sigma, shape): floats. a/b and mu/sigma are scalars of the
 * shape's element type. */
JITD_API jitd_status_t* jitd_builder_rng_uniform(jitd_builder_t* builder, jitd_op_t a,
                                                 jitd_op_t b, const jitd_shape_t* shape,
                                                 jitd_op_t* out_op);
JITD_API jitd_status_t* jitd_builder_rng_normal(jitd_builder_t* builder, jitd_op_t mu,
                                                jitd_op_t sigma, const jitd_shape_t* shape,
                                                jitd_op_t* out_op);
/* SelectAndScatter: for each window of `operand` (window dims / strides of
 * length rank, strides NULL = 1, padding NULL = 0), `select` (two scalars ->
 * PRED) picks an element, and the matching element of `source` (of the
 * windowed shape) is combined into it with `scatter` (two scalars -> scalar),
 * starting from init_value. */
JITD_API jitd_status_t* jitd_builder_select_and_scatter(
    jitd_builder_t* builder, jitd_op_t operand, const jitd_computation_t* select,
    const int64_t* window_dimensions, const int64_t* window_strides,
    const int64_t* padding_low, const int64_t* padding_high, size_t rank, jitd_op_t source,
    jitd_op_t init_value, const jitd_computation_t* scatter, jitd_op_t* out_op);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif  /* JITD_JITD_BUILDER_H_ */
