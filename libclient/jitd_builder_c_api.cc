// The C API of include/jitd/jitd_builder.h over libclient/builder.h.
//
// Every entry point checks its pointers first, then calls the builder inside
// GuardStatus (libclient/c_api_internal.h) so no C++ exception reaches C.
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "jitd/jitd.h"
#include "jitd/jitd_builder.h"
#include "libclient/builder.h"
#include "libclient/c_api_internal.h"

struct jitd_builder {
  explicit jitd_builder(std::string name) : builder(std::move(name)) {}
  jitd::client::Builder builder;
};

namespace {

using jitd::InvalidArgument;
using jitd::Status;
using jitd::StatusOr;
using jitd::client::Builder;
using jitd::client::Computation;
using jitd::client::ElementType;
using jitd::client::OpId;
using jitd::client::Shape;
using jitd::c_api::GuardStatus;
using jitd::c_api::ToC;

static_assert(JITD_DTYPE_F6E3M2FN == static_cast<int>(jitd::fbmodule::ElementType_MAX));
static_assert(JITD_DTYPE_F32 == static_cast<int>(jitd::fbmodule::ElementType_F32));
static_assert(JITD_DTYPE_PRED == static_cast<int>(jitd::fbmodule::ElementType_PRED));
static_assert(JITD_UNARY_SINH == static_cast<int>(jitd::client::UnaryOp::kLast));
static_assert(JITD_BINARY_NEXT_AFTER == static_cast<int>(jitd::client::BinaryOp::kLast));

jitd_status_t* Invalid(const std::string& message) { return ToC(InvalidArgument(message)); }

// INVALID for values beyond the element type enum's byte; the builder
// refuses INVALID and unknown values with a message.
ElementType DType(const jitd_dtype_t& d) {
  const int r = jitd::c_api::RawEnum(d);
  return r >= 0 && r <= 255 ? static_cast<ElementType>(r) : jitd::fbmodule::ElementType_INVALID;
}
jitd::client::Padding PaddingOf(int raw) {
  return raw == JITD_PADDING_SAME ? jitd::client::Padding::kSame : jitd::client::Padding::kValid;
}

std::unique_ptr<jitd_shape> Wrap(const Shape& shape) {
  auto out = std::make_unique<jitd_shape>();
  out->shape = shape;
  for (const Shape& e : shape.elements()) out->elements.push_back(Wrap(e));
  return out;
}

template <typename T>
std::span<const T> Span(const T* data, size_t n) {
  return n == 0 || data == nullptr ? std::span<const T>() : std::span<const T>(data, n);
}

std::vector<OpId> Ops(const jitd_op_t* ops, size_t n) {
  std::vector<OpId> out;
  for (size_t i = 0; ops != nullptr && i < n; ++i) out.push_back(ops[i].id);
  return out;
}

// Runs an op-adding call and stores its result in *out_op.
template <typename Body>
jitd_status_t* AddOp(jitd_builder_t* builder, jitd_op_t* out_op, const char* what, Body&& body) {
  if (builder == nullptr) return Invalid(std::string(what) + ": builder is NULL");
  if (out_op == nullptr) return Invalid(std::string(what) + ": out_op is NULL");
  return GuardStatus([&]() -> Status {
    StatusOr<OpId> op = body(builder->builder);
    if (!op.ok()) return op.status();
    out_op->id = *op;
    return Status::Ok();
  });
}

// Checks arrays given with a nonzero count are not NULL.
bool Missing(const void* p, size_t n) { return n != 0 && p == nullptr; }

}  // namespace

// ---- Shapes ---------------------------------------------------------------------

jitd_status_t* jitd_shape_create_array(jitd_dtype_t dtype, const int64_t* dims, size_t rank,
                                       jitd_shape_t** out_shape) {
  if (out_shape == nullptr) return Invalid("jitd_shape_create_array: out_shape is NULL");
  if (Missing(dims, rank)) return Invalid("jitd_shape_create_array: dims is NULL");
  return GuardStatus([&]() -> Status {
    if (rank > static_cast<size_t>(Shape::kMaxRank)) {
      return InvalidArgument("jitd_shape_create_array: rank " + std::to_string(rank) +
                             " exceeds the limit of 16");
    }
    StatusOr<Shape> s = Shape::CheckedArray(DType(dtype),
                                            std::vector<int64_t>(dims, dims + rank));
    if (!s.ok()) return InvalidArgument("jitd_shape_create_array: " + s.status().message());
    *out_shape = Wrap(*s).release();
    return Status::Ok();
  });
}

jitd_status_t* jitd_shape_create_tuple(const jitd_shape_t* const* elements, size_t num_elements,
                                       jitd_shape_t** out_shape) {
  if (out_shape == nullptr) return Invalid("jitd_shape_create_tuple: out_shape is NULL");
  if (Missing(elements, num_elements)) return Invalid("jitd_shape_create_tuple: elements is NULL");
  return GuardStatus([&]() -> Status {
    std::vector<Shape> shapes;
    for (size_t i = 0; i < num_elements; ++i) {
      if (elements[i] == nullptr) {
        return InvalidArgument("jitd_shape_create_tuple: element " + std::to_string(i) +
                               " is NULL");
      }
      shapes.push_back(elements[i]->shape);
    }
    *out_shape = Wrap(Shape::Tuple(std::move(shapes))).release();
    return Status::Ok();
  });
}

jitd_status_t* jitd_shape_create_token(jitd_shape_t** out_shape) {
  if (out_shape == nullptr) return Invalid("jitd_shape_create_token: out_shape is NULL");
  return GuardStatus([&]() -> Status {
    *out_shape = Wrap(Shape::Token()).release();
    return Status::Ok();
  });
}

void jitd_shape_destroy(jitd_shape_t* shape) { delete shape; }

jitd_shape_kind_t jitd_shape_kind(const jitd_shape_t* shape) {
  if (shape == nullptr) return JITD_SHAPE_ARRAY;
  switch (shape->shape.kind()) {
    case Shape::Kind::kTuple: return JITD_SHAPE_TUPLE;
    case Shape::Kind::kToken: return JITD_SHAPE_TOKEN;
    case Shape::Kind::kArray: break;
  }
  return JITD_SHAPE_ARRAY;
}
jitd_dtype_t jitd_shape_dtype(const jitd_shape_t* shape) {
  return shape == nullptr || !shape->shape.is_array() ? JITD_DTYPE_INVALID
                                                      : static_cast<jitd_dtype_t>(shape->shape.dtype());
}
size_t jitd_shape_rank(const jitd_shape_t* shape) {
  return shape == nullptr ? 0 : shape->shape.dims().size();
}
const int64_t* jitd_shape_dims(const jitd_shape_t* shape) {
  return shape == nullptr || shape->shape.dims().empty() ? nullptr : shape->shape.dims().data();
}
size_t jitd_shape_tuple_size(const jitd_shape_t* shape) {
  return shape == nullptr ? 0 : shape->elements.size();
}
const jitd_shape_t* jitd_shape_tuple_element(const jitd_shape_t* shape, size_t index) {
  return shape == nullptr || index >= shape->elements.size() ? nullptr
                                                             : shape->elements[index].get();
}
jitd_status_t* jitd_shape_to_string(const jitd_shape_t* shape, char** out_string) {
  if (shape == nullptr) return Invalid("jitd_shape_to_string: shape is NULL");
  if (out_string == nullptr) return Invalid("jitd_shape_to_string: out_string is NULL");
  return GuardStatus([&]() -> Status {
    const std::string s = shape->shape.ToString();
    char* out = static_cast<char*>(std::malloc(s.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, s.c_str(), s.size() + 1);
    *out_string = out;
    return Status::Ok();
  });
}

// ---- Builder ----------------------------------------------------------------------

jitd_status_t* jitd_builder_create(const char* name, jitd_builder_t** out_builder) {
  if (out_builder == nullptr) return Invalid("jitd_builder_create: out_builder is NULL");
  return GuardStatus([&]() -> Status {
    *out_builder = new jitd_builder(name == nullptr ? "computation" : name);
    return Status::Ok();
  });
}

void jitd_builder_destroy(jitd_builder_t* builder) { delete builder; }

jitd_status_t* jitd_builder_status(const jitd_builder_t* builder) {
  if (builder == nullptr) return Invalid("jitd_builder_status: builder is NULL");
  return ToC(builder->builder.status());
}

jitd_status_t* jitd_builder_get_shape(const jitd_builder_t* builder, jitd_op_t op,
                                      jitd_shape_t** out_shape) {
  if (builder == nullptr) return Invalid("jitd_builder_get_shape: builder is NULL");
  if (out_shape == nullptr) return Invalid("jitd_builder_get_shape: out_shape is NULL");
  return GuardStatus([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(Shape s, builder->builder.GetShape(op.id));
    *out_shape = Wrap(s).release();
    return Status::Ok();
  });
}

jitd_status_t* jitd_builder_parameter(jitd_builder_t* builder, int64_t index,
                                      const jitd_shape_t* shape, const char* name,
                                      jitd_op_t* out_op) {
  if (shape == nullptr) return Invalid("Parameter: shape is NULL");
  return AddOp(builder, out_op, "Parameter", [&](Builder& b) {
    return b.Parameter(index, shape->shape, name == nullptr ? "" : name);
  });
}

jitd_status_t* jitd_builder_constant_scalar(jitd_builder_t* builder, jitd_dtype_t dtype,
                                            const void* value, jitd_op_t* out_op) {
  if (value == nullptr) return Invalid("Constant: value is NULL");
  return AddOp(builder, out_op, "Constant", [&](Builder& b) {
    return b.ConstantScalar(DType(dtype), value);
  });
}

jitd_status_t* jitd_builder_constant_f32(jitd_builder_t* builder, float value, jitd_op_t* out_op) {
  return jitd_builder_constant_scalar(builder, JITD_DTYPE_F32, &value, out_op);
}
jitd_status_t* jitd_builder_constant_f64(jitd_builder_t* builder, double value, jitd_op_t* out_op) {
  return jitd_builder_constant_scalar(builder, JITD_DTYPE_F64, &value, out_op);
}
jitd_status_t* jitd_builder_constant_s32(jitd_builder_t* builder, int32_t value, jitd_op_t* out_op) {
  return jitd_builder_constant_scalar(builder, JITD_DTYPE_S32, &value, out_op);
}
jitd_status_t* jitd_builder_constant_s64(jitd_builder_t* builder, int64_t value, jitd_op_t* out_op) {
  return jitd_builder_constant_scalar(builder, JITD_DTYPE_S64, &value, out_op);
}
jitd_status_t* jitd_builder_constant_pred(jitd_builder_t* builder, int value, jitd_op_t* out_op) {
  const uint8_t byte = value != 0;
  return jitd_builder_constant_scalar(builder, JITD_DTYPE_PRED, &byte, out_op);
}

jitd_status_t* jitd_builder_constant_array(jitd_builder_t* builder, jitd_dtype_t dtype,
                                           const int64_t* dims, size_t rank, const void* data,
                                           size_t size_bytes, jitd_op_t* out_op) {
  if (Missing(dims, rank)) return Invalid("Constant: dims is NULL");
  if (rank > static_cast<size_t>(Shape::kMaxRank)) return Invalid("Constant: rank exceeds 16");
  return AddOp(builder, out_op, "Constant", [&](Builder& b) {
    return b.ConstantArray(DType(dtype), std::vector<int64_t>(dims, dims + rank),
                           data, size_bytes);
  });
}

jitd_status_t* jitd_builder_unary(jitd_builder_t* builder, jitd_unary_op_t kind, jitd_op_t operand,
                                  jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Unary", [&](Builder& b) {
    return b.Unary(static_cast<jitd::client::UnaryOp>(jitd::c_api::RawEnum(kind)), operand.id);
  });
}

jitd_status_t* jitd_builder_binary(jitd_builder_t* builder, jitd_binary_op_t kind, jitd_op_t lhs,
                                   jitd_op_t rhs, const int64_t* broadcast_dimensions,
                                   size_t num_broadcast_dimensions, jitd_op_t* out_op) {
  if (Missing(broadcast_dimensions, num_broadcast_dimensions)) {
    return Invalid("Binary: broadcast_dimensions is NULL");
  }
  return AddOp(builder, out_op, "Binary", [&](Builder& b) {
    return b.Binary(static_cast<jitd::client::BinaryOp>(jitd::c_api::RawEnum(kind)), lhs.id, rhs.id,
                    Span(broadcast_dimensions, num_broadcast_dimensions));
  });
}

jitd_status_t* jitd_builder_convert_element_type(jitd_builder_t* builder, jitd_op_t operand,
                                                 jitd_dtype_t dtype, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "ConvertElementType", [&](Builder& b) {
    return b.ConvertElementType(operand.id, DType(dtype));
  });
}

jitd_status_t* jitd_builder_bitcast_convert_type(jitd_builder_t* builder, jitd_op_t operand,
                                                 jitd_dtype_t dtype, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "BitcastConvertType", [&](Builder& b) {
    return b.BitcastConvertType(operand.id, DType(dtype));
  });
}

jitd_status_t* jitd_builder_broadcast(jitd_builder_t* builder, jitd_op_t operand,
                                      const int64_t* sizes, size_t num_sizes, jitd_op_t* out_op) {
  if (Missing(sizes, num_sizes)) return Invalid("Broadcast: sizes is NULL");
  return AddOp(builder, out_op, "Broadcast",
               [&](Builder& b) { return b.Broadcast(operand.id, Span(sizes, num_sizes)); });
}

jitd_status_t* jitd_builder_broadcast_in_dim(jitd_builder_t* builder, jitd_op_t operand,
                                             const int64_t* out_dims, size_t out_rank,
                                             const int64_t* broadcast_dimensions,
                                             size_t num_broadcast_dimensions, jitd_op_t* out_op) {
  if (Missing(out_dims, out_rank) || Missing(broadcast_dimensions, num_broadcast_dimensions)) {
    return Invalid("BroadcastInDim: an array is NULL");
  }
  return AddOp(builder, out_op, "BroadcastInDim", [&](Builder& b) {
    return b.BroadcastInDim(operand.id, Span(out_dims, out_rank),
                            Span(broadcast_dimensions, num_broadcast_dimensions));
  });
}

jitd_status_t* jitd_builder_reshape(jitd_builder_t* builder, jitd_op_t operand,
                                    const int64_t* dimensions, size_t num_dimensions,
                                    const int64_t* new_sizes, size_t num_new_sizes,
                                    jitd_op_t* out_op) {
  if (Missing(new_sizes, num_new_sizes)) return Invalid("Reshape: new_sizes is NULL");
  return AddOp(builder, out_op, "Reshape", [&](Builder& b) {
    std::optional<std::vector<int64_t>> dims;
    if (dimensions != nullptr) dims.emplace(dimensions, dimensions + num_dimensions);
    return b.Reshape(operand.id, dims, Span(new_sizes, num_new_sizes));
  });
}

jitd_status_t* jitd_builder_transpose(jitd_builder_t* builder, jitd_op_t operand,
                                      const int64_t* permutation, size_t rank, jitd_op_t* out_op) {
  if (Missing(permutation, rank)) return Invalid("Transpose: permutation is NULL");
  return AddOp(builder, out_op, "Transpose",
               [&](Builder& b) { return b.Transpose(operand.id, Span(permutation, rank)); });
}

jitd_status_t* jitd_builder_rev(jitd_builder_t* builder, jitd_op_t operand,
                                const int64_t* dimensions, size_t num_dimensions,
                                jitd_op_t* out_op) {
  if (Missing(dimensions, num_dimensions)) return Invalid("Rev: dimensions is NULL");
  return AddOp(builder, out_op, "Rev",
               [&](Builder& b) { return b.Rev(operand.id, Span(dimensions, num_dimensions)); });
}

jitd_status_t* jitd_builder_slice(jitd_builder_t* builder, jitd_op_t operand,
                                  const int64_t* start_indices, const int64_t* limit_indices,
                                  const int64_t* strides, size_t rank, jitd_op_t* out_op) {
  if (Missing(start_indices, rank) || Missing(limit_indices, rank)) {
    return Invalid("Slice: start or limit indices are NULL");
  }
  return AddOp(builder, out_op, "Slice", [&](Builder& b) {
    return b.Slice(operand.id, Span(start_indices, rank), Span(limit_indices, rank),
                   Span(strides, strides == nullptr ? 0 : rank));
  });
}

jitd_status_t* jitd_builder_slice_in_dim(jitd_builder_t* builder, jitd_op_t operand,
                                         int64_t start_index, int64_t limit_index, int64_t stride,
                                         int64_t dimno, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "SliceInDim", [&](Builder& b) {
    return b.SliceInDim(operand.id, start_index, limit_index, stride, dimno);
  });
}

jitd_status_t* jitd_builder_dynamic_slice(jitd_builder_t* builder, jitd_op_t operand,
                                          const jitd_op_t* start_indices, size_t num_start_indices,
                                          const int64_t* slice_sizes, size_t num_slice_sizes,
                                          jitd_op_t* out_op) {
  if (Missing(start_indices, num_start_indices) || Missing(slice_sizes, num_slice_sizes)) {
    return Invalid("DynamicSlice: an array is NULL");
  }
  return AddOp(builder, out_op, "DynamicSlice", [&](Builder& b) {
    const std::vector<OpId> idx = Ops(start_indices, num_start_indices);
    return b.DynamicSlice(operand.id, idx, Span(slice_sizes, num_slice_sizes));
  });
}

jitd_status_t* jitd_builder_dynamic_update_slice(jitd_builder_t* builder, jitd_op_t operand,
                                                 jitd_op_t update, const jitd_op_t* start_indices,
                                                 size_t num_start_indices, jitd_op_t* out_op) {
  if (Missing(start_indices, num_start_indices)) {
    return Invalid("DynamicUpdateSlice: start_indices is NULL");
  }
  return AddOp(builder, out_op, "DynamicUpdateSlice", [&](Builder& b) {
    const std::vector<OpId> idx = Ops(start_indices, num_start_indices);
    return b.DynamicUpdateSlice(operand.id, update.id, idx);
  });
}

jitd_status_t* jitd_builder_concatenate(jitd_builder_t* builder, const jitd_op_t* operands,
                                        size_t num_operands, int64_t dimension, jitd_op_t* out_op) {
  if (Missing(operands, num_operands)) return Invalid("ConcatInDim: operands is NULL");
  return AddOp(builder, out_op, "ConcatInDim", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(operands, num_operands);
    return b.Concatenate(ops, dimension);
  });
}

jitd_status_t* jitd_builder_pad(jitd_builder_t* builder, jitd_op_t operand, jitd_op_t padding_value,
                                const int64_t* edge_low, const int64_t* edge_high,
                                const int64_t* interior, size_t rank, jitd_op_t* out_op) {
  if (Missing(edge_low, rank) || Missing(edge_high, rank)) return Invalid("Pad: padding is NULL");
  return AddOp(builder, out_op, "Pad", [&](Builder& b) {
    return b.Pad(operand.id, padding_value.id, Span(edge_low, rank), Span(edge_high, rank),
                 Span(interior, interior == nullptr ? 0 : rank));
  });
}

jitd_status_t* jitd_builder_iota(jitd_builder_t* builder, jitd_dtype_t dtype, int64_t size,
                                 jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Iota",
               [&](Builder& b) { return b.Iota(DType(dtype), size); });
}

jitd_status_t* jitd_builder_broadcasted_iota(jitd_builder_t* builder, const jitd_shape_t* shape,
                                             int64_t iota_dimension, jitd_op_t* out_op) {
  if (shape == nullptr) return Invalid("Iota: shape is NULL");
  return AddOp(builder, out_op, "Iota",
               [&](Builder& b) { return b.BroadcastedIota(shape->shape, iota_dimension); });
}

jitd_status_t* jitd_builder_select(jitd_builder_t* builder, jitd_op_t pred, jitd_op_t on_true,
                                   jitd_op_t on_false, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Select",
               [&](Builder& b) { return b.Select(pred.id, on_true.id, on_false.id); });
}

jitd_status_t* jitd_builder_clamp(jitd_builder_t* builder, jitd_op_t min, jitd_op_t operand,
                                  jitd_op_t max, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Clamp",
               [&](Builder& b) { return b.Clamp(min.id, operand.id, max.id); });
}

jitd_status_t* jitd_builder_dot(jitd_builder_t* builder, jitd_op_t lhs, jitd_op_t rhs,
                                jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Dot", [&](Builder& b) { return b.Dot(lhs.id, rhs.id); });
}

jitd_status_t* jitd_builder_dot_general(jitd_builder_t* builder, jitd_op_t lhs, jitd_op_t rhs,
                                        const jitd_dot_dimension_numbers_t* dn, jitd_op_t* out_op) {
  if (dn == nullptr) return Invalid("DotGeneral: dimension_numbers is NULL");
  if (Missing(dn->lhs_contracting_dimensions, dn->num_lhs_contracting_dimensions) ||
      Missing(dn->rhs_contracting_dimensions, dn->num_rhs_contracting_dimensions) ||
      Missing(dn->lhs_batch_dimensions, dn->num_lhs_batch_dimensions) ||
      Missing(dn->rhs_batch_dimensions, dn->num_rhs_batch_dimensions)) {
    return Invalid("DotGeneral: a dimension list is NULL");
  }
  return AddOp(builder, out_op, "DotGeneral", [&](Builder& b) {
    jitd::client::DotDims d;
    auto vec = [](const int64_t* p, size_t n) {
      return p == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(p, p + n);
    };
    d.lhs_contracting = vec(dn->lhs_contracting_dimensions, dn->num_lhs_contracting_dimensions);
    d.rhs_contracting = vec(dn->rhs_contracting_dimensions, dn->num_rhs_contracting_dimensions);
    d.lhs_batch = vec(dn->lhs_batch_dimensions, dn->num_lhs_batch_dimensions);
    d.rhs_batch = vec(dn->rhs_batch_dimensions, dn->num_rhs_batch_dimensions);
    return b.DotGeneral(lhs.id, rhs.id, d);
  });
}

jitd_status_t* jitd_builder_conv_general_dilated(jitd_builder_t* builder, jitd_op_t lhs,
                                                 jitd_op_t rhs, const jitd_conv_options_t* options,
                                                 jitd_op_t* out_op) {
  if (options == nullptr) return Invalid("ConvGeneralDilated: options is NULL");
  if (options->struct_size < JITD_CONV_OPTIONS_STRUCT_SIZE) {
    return Invalid("jitd_conv_options_t.struct_size is " + std::to_string(options->struct_size) +
                   ", at least " + std::to_string(JITD_CONV_OPTIONS_STRUCT_SIZE) + " is needed");
  }
  const size_t n = options->num_spatial_dimensions;
  if (n > 16 || Missing(options->input_spatial_dimensions, n) ||
      Missing(options->kernel_spatial_dimensions, n) ||
      Missing(options->output_spatial_dimensions, n)) {
    return Invalid("ConvGeneralDilated: spatial dimension lists are NULL or too long");
  }
  return AddOp(builder, out_op, "ConvGeneralDilated", [&](Builder& b) {
    auto vec = [n](const int64_t* p) {
      return p == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(p, p + n);
    };
    jitd::client::ConvOptions o;
    o.window_strides = vec(options->window_strides);
    o.padding_low = vec(options->padding_low);
    o.padding_high = vec(options->padding_high);
    o.lhs_dilation = vec(options->lhs_dilation);
    o.rhs_dilation = vec(options->rhs_dilation);
    o.dims.input_batch = options->input_batch_dimension;
    o.dims.input_feature = options->input_feature_dimension;
    o.dims.input_spatial = vec(options->input_spatial_dimensions);
    o.dims.kernel_input_feature = options->kernel_input_feature_dimension;
    o.dims.kernel_output_feature = options->kernel_output_feature_dimension;
    o.dims.kernel_spatial = vec(options->kernel_spatial_dimensions);
    o.dims.output_batch = options->output_batch_dimension;
    o.dims.output_feature = options->output_feature_dimension;
    o.dims.output_spatial = vec(options->output_spatial_dimensions);
    o.feature_group_count = options->feature_group_count == 0 ? 1 : options->feature_group_count;
    o.batch_group_count = options->batch_group_count == 0 ? 1 : options->batch_group_count;
    return b.ConvGeneralDilated(lhs.id, rhs.id, o);
  });
}

jitd_status_t* jitd_padding_for_type(jitd_padding_type_t type, const int64_t* input_dims,
                                     const int64_t* window_dims, const int64_t* strides,
                                     size_t rank, int64_t* out_low, int64_t* out_high) {
  if (Missing(input_dims, rank) || Missing(window_dims, rank) || Missing(strides, rank) ||
      Missing(out_low, rank) || Missing(out_high, rank)) {
    return Invalid("jitd_padding_for_type: an array is NULL");
  }
  if (jitd::c_api::RawEnum(type) != JITD_PADDING_VALID && jitd::c_api::RawEnum(type) != JITD_PADDING_SAME) {
    return Invalid("jitd_padding_for_type: unknown padding type");
  }
  return GuardStatus([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(auto pads, jitd::client::MakePadding(
                                         PaddingOf(jitd::c_api::RawEnum(type)),
                                         Span(input_dims, rank), Span(window_dims, rank),
                                         Span(strides, rank)));
    for (size_t i = 0; i < rank; ++i) {
      out_low[i] = pads[i].first;
      out_high[i] = pads[i].second;
    }
    return Status::Ok();
  });
}

jitd_status_t* jitd_builder_conv(jitd_builder_t* builder, jitd_op_t lhs, jitd_op_t rhs,
                                 const int64_t* window_strides, size_t num_spatial_dimensions,
                                 jitd_padding_type_t padding, jitd_op_t* out_op) {
  if (Missing(window_strides, num_spatial_dimensions)) return Invalid("Conv: strides is NULL");
  if (jitd::c_api::RawEnum(padding) != JITD_PADDING_VALID && jitd::c_api::RawEnum(padding) != JITD_PADDING_SAME) {
    return Invalid("Conv: unknown padding type");
  }
  return AddOp(builder, out_op, "Conv", [&](Builder& b) {
    return b.Conv(lhs.id, rhs.id, Span(window_strides, num_spatial_dimensions),
                  PaddingOf(jitd::c_api::RawEnum(padding)));
  });
}

// ---- Computations -------------------------------------------------------------------

jitd_status_t* jitd_builder_build(jitd_builder_t* builder, jitd_op_t root,
                                  jitd_computation_t** out_computation) {
  if (builder == nullptr) return Invalid("jitd_builder_build: builder is NULL");
  if (out_computation == nullptr) return Invalid("jitd_builder_build: out_computation is NULL");
  return GuardStatus([&]() -> Status {
    JITD_ASSIGN_OR_RETURN(std::shared_ptr<const Computation> c, builder->builder.Build(root.id));
    auto out = std::make_unique<jitd_computation>();
    for (const Shape& p : c->parameters()) out->parameters.push_back(Wrap(p));
    out->result = Wrap(c->result_shape());
    out->computation = std::move(c);
    *out_computation = out.release();
    return Status::Ok();
  });
}

void jitd_computation_destroy(jitd_computation_t* computation) { delete computation; }

const char* jitd_computation_name(const jitd_computation_t* computation) {
  return computation == nullptr ? nullptr : computation->computation->name().c_str();
}

jitd_status_t* jitd_computation_module(const jitd_computation_t* computation,
                                       const uint8_t** out_data, size_t* out_size) {
  if (computation == nullptr) return Invalid("jitd_computation_module: computation is NULL");
  if (out_data == nullptr || out_size == nullptr) {
    return Invalid("jitd_computation_module: an out pointer is NULL");
  }
  *out_data = computation->computation->module_bytes().data();
  *out_size = computation->computation->module_bytes().size();
  return nullptr;
}

size_t jitd_computation_num_parameters(const jitd_computation_t* computation) {
  return computation == nullptr ? 0 : computation->parameters.size();
}

const jitd_shape_t* jitd_computation_parameter_shape(const jitd_computation_t* computation,
                                                     size_t index) {
  return computation == nullptr || index >= computation->parameters.size()
             ? nullptr
             : computation->parameters[index].get();
}

const jitd_shape_t* jitd_computation_result_shape(const jitd_computation_t* computation) {
  return computation == nullptr ? nullptr : computation->result.get();
}

jitd_status_t* jitd_computation_to_text(const jitd_computation_t* computation, char** out_text) {
  if (computation == nullptr) return Invalid("jitd_computation_to_text: computation is NULL");
  if (out_text == nullptr) return Invalid("jitd_computation_to_text: out_text is NULL");
  return GuardStatus([&]() -> Status {
    const std::string text = computation->computation->ToText();
    char* out = static_cast<char*>(std::malloc(text.size() + 1));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, text.c_str(), text.size() + 1);
    *out_text = out;
    return Status::Ok();
  });
}

// ---- Ops with embedded computations -------------------------------------------------

jitd_status_t* jitd_builder_reduce(jitd_builder_t* builder, const jitd_op_t* operands,
                                   const jitd_op_t* init_values, size_t num_operands,
                                   const jitd_computation_t* computation,
                                   const int64_t* dimensions, size_t num_dimensions,
                                   jitd_op_t* out_op) {
  if (computation == nullptr) return Invalid("Reduce: computation is NULL");
  if (Missing(operands, num_operands) || Missing(init_values, num_operands) ||
      Missing(dimensions, num_dimensions)) {
    return Invalid("Reduce: an array is NULL");
  }
  return AddOp(builder, out_op, "Reduce", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(operands, num_operands);
    const std::vector<OpId> inits = Ops(init_values, num_operands);
    return b.Reduce(ops, inits, *computation->computation, Span(dimensions, num_dimensions));
  });
}

jitd_status_t* jitd_builder_reduce_window(
    jitd_builder_t* builder, const jitd_op_t* operands, const jitd_op_t* init_values,
    size_t num_operands, const jitd_computation_t* computation, const int64_t* window_dimensions,
    const int64_t* window_strides, const int64_t* base_dilations, const int64_t* window_dilations,
    const int64_t* padding_low, const int64_t* padding_high, size_t rank, jitd_op_t* out_op) {
  if (computation == nullptr) return Invalid("ReduceWindow: computation is NULL");
  if (Missing(operands, num_operands) || Missing(init_values, num_operands) ||
      Missing(window_dimensions, rank)) {
    return Invalid("ReduceWindow: an array is NULL");
  }
  return AddOp(builder, out_op, "ReduceWindow", [&](Builder& b) {
    auto vec = [rank](const int64_t* p) {
      return p == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(p, p + rank);
    };
    jitd::client::WindowOptions w;
    w.dimensions = vec(window_dimensions);
    w.strides = vec(window_strides);
    w.base_dilations = vec(base_dilations);
    w.window_dilations = vec(window_dilations);
    w.padding_low = vec(padding_low);
    w.padding_high = vec(padding_high);
    const std::vector<OpId> ops = Ops(operands, num_operands);
    const std::vector<OpId> inits = Ops(init_values, num_operands);
    return b.ReduceWindow(ops, inits, *computation->computation, w);
  });
}

jitd_status_t* jitd_builder_map(jitd_builder_t* builder, const jitd_op_t* operands,
                                size_t num_operands, const jitd_computation_t* computation,
                                const int64_t* dimensions, size_t num_dimensions,
                                jitd_op_t* out_op) {
  if (computation == nullptr) return Invalid("Map: computation is NULL");
  if (Missing(operands, num_operands) || Missing(dimensions, num_dimensions)) {
    return Invalid("Map: an array is NULL");
  }
  return AddOp(builder, out_op, "Map", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(operands, num_operands);
    return b.Map(ops, *computation->computation, Span(dimensions, num_dimensions));
  });
}

jitd_status_t* jitd_builder_sort(jitd_builder_t* builder, const jitd_op_t* operands,
                                 size_t num_operands, int64_t dimension,
                                 const jitd_computation_t* comparator, int is_stable,
                                 jitd_op_t* out_op) {
  if (Missing(operands, num_operands)) return Invalid("Sort: operands is NULL");
  return AddOp(builder, out_op, "Sort", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(operands, num_operands);
    return b.Sort(ops, dimension, comparator == nullptr ? nullptr : comparator->computation.get(),
                  is_stable != 0);
  });
}

jitd_status_t* jitd_builder_while(jitd_builder_t* builder, const jitd_computation_t* condition,
                                  const jitd_computation_t* body, jitd_op_t init,
                                  jitd_op_t* out_op) {
  if (condition == nullptr || body == nullptr) return Invalid("While: a computation is NULL");
  return AddOp(builder, out_op, "While", [&](Builder& b) {
    return b.While(*condition->computation, *body->computation, init.id);
  });
}

jitd_status_t* jitd_builder_conditional(jitd_builder_t* builder, jitd_op_t pred,
                                        jitd_op_t true_operand,
                                        const jitd_computation_t* true_computation,
                                        jitd_op_t false_operand,
                                        const jitd_computation_t* false_computation,
                                        jitd_op_t* out_op) {
  if (true_computation == nullptr || false_computation == nullptr) {
    return Invalid("Conditional: a computation is NULL");
  }
  return AddOp(builder, out_op, "Conditional", [&](Builder& b) {
    return b.Conditional(pred.id, true_operand.id, *true_computation->computation,
                         false_operand.id, *false_computation->computation);
  });
}

jitd_status_t* jitd_builder_conditional_indexed(
    jitd_builder_t* builder, jitd_op_t branch_index,
    const jitd_computation_t* const* branch_computations, const jitd_op_t* branch_operands,
    size_t num_branches, jitd_op_t* out_op) {
  if (Missing(branch_computations, num_branches) || Missing(branch_operands, num_branches)) {
    return Invalid("Conditional: an array is NULL");
  }
  for (size_t i = 0; i < num_branches; ++i) {
    if (branch_computations[i] == nullptr) {
      return Invalid("Conditional: branch computation " + std::to_string(i) + " is NULL");
    }
  }
  return AddOp(builder, out_op, "Conditional", [&](Builder& b) {
    std::vector<const Computation*> branches;
    for (size_t i = 0; i < num_branches; ++i) {
      branches.push_back(branch_computations[i]->computation.get());
    }
    const std::vector<OpId> ops = Ops(branch_operands, num_branches);
    return b.ConditionalIndexed(branch_index.id, branches, ops);
  });
}

// ---- Tuples, gather / scatter, tokens, infeed / outfeed ----------------------------

jitd_status_t* jitd_builder_tuple(jitd_builder_t* builder, const jitd_op_t* elements,
                                  size_t num_elements, jitd_op_t* out_op) {
  if (Missing(elements, num_elements)) return Invalid("Tuple: elements is NULL");
  return AddOp(builder, out_op, "Tuple", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(elements, num_elements);
    return b.Tuple(ops);
  });
}

jitd_status_t* jitd_builder_get_tuple_element(jitd_builder_t* builder, jitd_op_t tuple,
                                              int64_t index, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "GetTupleElement",
               [&](Builder& b) { return b.GetTupleElement(tuple.id, index); });
}

jitd_status_t* jitd_builder_gather(jitd_builder_t* builder, jitd_op_t operand,
                                   jitd_op_t start_indices,
                                   const jitd_gather_dimension_numbers_t* dn,
                                   const int64_t* slice_sizes, size_t num_slice_sizes,
                                   int indices_are_sorted, jitd_op_t* out_op) {
  if (dn == nullptr) return Invalid("Gather: dimension_numbers is NULL");
  if (Missing(dn->offset_dims, dn->num_offset_dims) ||
      Missing(dn->collapsed_slice_dims, dn->num_collapsed_slice_dims) ||
      Missing(dn->start_index_map, dn->num_start_index_map) ||
      Missing(slice_sizes, num_slice_sizes)) {
    return Invalid("Gather: an array is NULL");
  }
  return AddOp(builder, out_op, "Gather", [&](Builder& b) {
    jitd::client::GatherDims d;
    auto vec = [](const int64_t* p, size_t n) {
      return p == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(p, p + n);
    };
    d.offset_dims = vec(dn->offset_dims, dn->num_offset_dims);
    d.collapsed_slice_dims = vec(dn->collapsed_slice_dims, dn->num_collapsed_slice_dims);
    d.start_index_map = vec(dn->start_index_map, dn->num_start_index_map);
    d.index_vector_dim = dn->index_vector_dim;
    return b.Gather(operand.id, start_indices.id, d, Span(slice_sizes, num_slice_sizes),
                    indices_are_sorted != 0);
  });
}

jitd_status_t* jitd_builder_scatter(jitd_builder_t* builder, jitd_op_t operand,
                                    jitd_op_t scatter_indices, jitd_op_t updates,
                                    const jitd_computation_t* update_computation,
                                    const jitd_scatter_dimension_numbers_t* dn,
                                    int indices_are_sorted, int unique_indices,
                                    jitd_op_t* out_op) {
  if (dn == nullptr) return Invalid("Scatter: dimension_numbers is NULL");
  if (update_computation == nullptr) return Invalid("Scatter: update_computation is NULL");
  if (Missing(dn->update_window_dims, dn->num_update_window_dims) ||
      Missing(dn->inserted_window_dims, dn->num_inserted_window_dims) ||
      Missing(dn->scatter_dims_to_operand_dims, dn->num_scatter_dims_to_operand_dims)) {
    return Invalid("Scatter: an array is NULL");
  }
  return AddOp(builder, out_op, "Scatter", [&](Builder& b) {
    jitd::client::ScatterDims d;
    auto vec = [](const int64_t* p, size_t n) {
      return p == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(p, p + n);
    };
    d.update_window_dims = vec(dn->update_window_dims, dn->num_update_window_dims);
    d.inserted_window_dims = vec(dn->inserted_window_dims, dn->num_inserted_window_dims);
    d.scatter_dims_to_operand_dims =
        vec(dn->scatter_dims_to_operand_dims, dn->num_scatter_dims_to_operand_dims);
    d.index_vector_dim = dn->index_vector_dim;
    return b.Scatter(operand.id, scatter_indices.id, updates.id, *update_computation->computation,
                     d, indices_are_sorted != 0, unique_indices != 0);
  });
}

jitd_status_t* jitd_builder_create_token(jitd_builder_t* builder, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "CreateToken", [&](Builder& b) { return b.CreateToken(); });
}

jitd_status_t* jitd_builder_after_all(jitd_builder_t* builder, const jitd_op_t* tokens,
                                      size_t num_tokens, jitd_op_t* out_op) {
  if (Missing(tokens, num_tokens)) return Invalid("AfterAll: tokens is NULL");
  return AddOp(builder, out_op, "AfterAll", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(tokens, num_tokens);
    return b.AfterAll(ops);
  });
}

jitd_status_t* jitd_builder_infeed_with_token(jitd_builder_t* builder, jitd_op_t token,
                                              const jitd_shape_t* shape, const char* config,
                                              jitd_op_t* out_op) {
  if (shape == nullptr) return Invalid("Infeed: shape is NULL");
  return AddOp(builder, out_op, "Infeed", [&](Builder& b) {
    return b.InfeedWithToken(token.id, shape->shape, config == nullptr ? "" : config);
  });
}

jitd_status_t* jitd_builder_outfeed_with_token(jitd_builder_t* builder, jitd_op_t operand,
                                               jitd_op_t token, const char* config,
                                               jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Outfeed", [&](Builder& b) {
    return b.OutfeedWithToken(operand.id, token.id, config == nullptr ? "" : config);
  });
}

jitd_status_t* jitd_builder_infeed(jitd_builder_t* builder, const jitd_shape_t* shape,
                                   const char* config, jitd_op_t* out_op) {
  if (shape == nullptr) return Invalid("Infeed: shape is NULL");
  return AddOp(builder, out_op, "Infeed", [&](Builder& b) {
    return b.Infeed(shape->shape, config == nullptr ? "" : config);
  });
}

jitd_status_t* jitd_builder_outfeed(jitd_builder_t* builder, jitd_op_t operand,
                                    const char* config, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Outfeed", [&](Builder& b) {
    return b.Outfeed(operand.id, config == nullptr ? "" : config);
  });
}

// ---- More xla_client ops ----------------------------------------------------------------

jitd_status_t* jitd_builder_call(jitd_builder_t* builder, const jitd_computation_t* computation,
                                 const jitd_op_t* operands, size_t num_operands,
                                 jitd_op_t* out_op) {
  if (computation == nullptr) return Invalid("Call: computation is NULL");
  if (Missing(operands, num_operands)) return Invalid("Call: operands is NULL");
  return AddOp(builder, out_op, "Call", [&](Builder& b) {
    const std::vector<OpId> ops = Ops(operands, num_operands);
    return b.Call(*computation->computation, ops);
  });
}

jitd_status_t* jitd_builder_reduce_precision(jitd_builder_t* builder, jitd_op_t operand,
                                             int32_t exponent_bits, int32_t mantissa_bits,
                                             jitd_op_t* out_op) {
  return AddOp(builder, out_op, "ReducePrecision", [&](Builder& b) {
    return b.ReducePrecision(operand.id, exponent_bits, mantissa_bits);
  });
}

jitd_status_t* jitd_builder_replica_id(jitd_builder_t* builder, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "ReplicaId", [&](Builder& b) { return b.ReplicaId(); });
}

jitd_status_t* jitd_builder_cholesky(jitd_builder_t* builder, jitd_op_t a, int lower,
                                     jitd_op_t* out_op) {
  return AddOp(builder, out_op, "Cholesky",
               [&](Builder& b) { return b.Cholesky(a.id, lower != 0); });
}

jitd_status_t* jitd_builder_triangular_solve(jitd_builder_t* builder, jitd_op_t a, jitd_op_t b,
                                             int left_side, int lower, int unit_diagonal,
                                             jitd_transpose_t transpose_a, jitd_op_t* out_op) {
  return AddOp(builder, out_op, "TriangularSolve", [&](Builder& bl) {
    return bl.TriangularSolve(a.id, b.id, left_side != 0, lower != 0, unit_diagonal != 0,
                              jitd::c_api::RawEnum(transpose_a));
  });
}

jitd_status_t* jitd_builder_fft(jitd_builder_t* builder, jitd_op_t operand,
                                jitd_fft_type_t fft_type, const int64_t* fft_length,
                                size_t num_fft_length, jitd_op_t* out_op) {
  if (Missing(fft_length, num_fft_length)) return Invalid("Fft: fft_length is NULL");
  return AddOp(builder, out_op, "Fft", [&](Builder& b) {
    return b.Fft(operand.id, jitd::c_api::RawEnum(fft_type), Span(fft_length, num_fft_length));
  });
}

jitd_status_t* jitd_builder_rng_uniform(jitd_builder_t* builder, jitd_op_t a, jitd_op_t b,
                                        const jitd_shape_t* shape, jitd_op_t* out_op) {
  if (shape == nullptr) return Invalid("RngUniform: shape is NULL");
  return AddOp(builder, out_op, "RngUniform",
               [&](Builder& bl) { return bl.Rng(a.id, b.id, shape->shape, false); });
}

jitd_status_t* jitd_builder_rng_normal(jitd_builder_t* builder, jitd_op_t mu, jitd_op_t sigma,
                                       const jitd_shape_t* shape, jitd_op_t* out_op) {
  if (shape == nullptr) return Invalid("RngNormal: shape is NULL");
  return AddOp(builder, out_op, "RngNormal",
               [&](Builder& b) { return b.Rng(mu.id, sigma.id, shape->shape, true); });
}

jitd_status_t* jitd_builder_select_and_scatter(
    jitd_builder_t* builder, jitd_op_t operand, const jitd_computation_t* select,
    const int64_t* window_dimensions, const int64_t* window_strides, const int64_t* padding_low,
    const int64_t* padding_high, size_t rank, jitd_op_t source, jitd_op_t init_value,
    const jitd_computation_t* scatter, jitd_op_t* out_op) {
  if (select == nullptr || scatter == nullptr) {
    return Invalid("SelectAndScatter: a computation is NULL");
  }
  if (Missing(window_dimensions, rank)) return Invalid("SelectAndScatter: window is NULL");
  return AddOp(builder, out_op, "SelectAndScatter", [&](Builder& b) {
    auto vec = [rank](const int64_t* p) {
      return p == nullptr ? std::vector<int64_t>() : std::vector<int64_t>(p, p + rank);
    };
    jitd::client::WindowOptions w;
    w.dimensions = vec(window_dimensions);
    w.strides = vec(window_strides);
    w.padding_low = vec(padding_low);
    w.padding_high = vec(padding_high);
    return b.SelectAndScatter(operand.id, *select->computation, w, source.id, init_value.id,
                              *scatter->computation);
  });
}
