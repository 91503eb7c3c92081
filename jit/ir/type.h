// Types of IR values: ranked static tensors (of plain or quantized
// elements), tokens, tuples, and futures (`!stablehlo.future<T...>`, what
// async_start produces and async_done waits for).
//
// Type is a small immutable value: dimensions are shared between copies, so
// copying costs a reference count, and scalars allocate nothing. A tensor
// dimension may be dynamic (`?`, kDynamic) with an optional upper bound
// (`#stablehlo.bounds<...>`, dynamism.md); such types exist between parsing
// and shape refinement (jit/passes/refine_shapes.h) only: nothing that
// computes (evaluator, devices) ever sees one.
// Thread-compatible (copies may be used from different threads).
#ifndef JITD_JIT_IR_TYPE_H_
#define JITD_JIT_IR_TYPE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/dtype.h"

namespace jitd::ir {

// The parameters of a `!quant.uniform` element type (quantization.md):
// integer storage (with an optional narrower range), the float type the
// values express, and one (per-tensor) or several (per-axis, one per index
// of `quantized_dimension`) scale:zero_point pairs.
//   real_value = scale * (storage_value - zero_point)
struct QuantParams {
  DType storage = DType::kS8;
  int64_t storage_min = 0;  // the storage type's range unless narrowed
  int64_t storage_max = 0;
  DType expressed = DType::kF32;
  int64_t quantized_dimension = -1;  // -1: per-tensor
  std::vector<double> scales;
  std::vector<int64_t> zero_points;

  bool per_axis() const { return quantized_dimension >= 0; }
  bool operator==(const QuantParams& other) const = default;
  // "!quant.uniform<i8<-127:127>:f32:1, {0.1:-30,0.5:-20}>"
  void AppendTo(std::string& out) const;
};

// The full range of an integer storage type (i8: -128..127).
int64_t StorageTypeMin(DType storage);
int64_t StorageTypeMax(DType storage);

// Limits on declared shapes: a program may declare any shape within them,
// and nothing is allocated for a declaration. Larger ones are refused when
// parsed or built, so no later stage has to worry about overflow.
inline constexpr int kMaxRank = 64;
inline constexpr int64_t kMaxElements = int64_t{1} << 40;

class Type {
 public:
  enum class Kind : uint8_t { kTensor, kToken, kTuple, kFuture };

  // A dynamic dimension (`?`) in dims(), or an absent bound in bounds().
  static constexpr int64_t kDynamic = INT64_MIN;

  // A scalar tensor (rank 0) of f32; useful as a placeholder.
  Type() = default;

  static Type Tensor(DType dtype, std::vector<int64_t> dims);
  static Type Scalar(DType dtype) { return Tensor(dtype, {}); }
  // A tensor of quantized elements: dtype() is the storage type (a Literal
  // of it holds storage values), quant() the parameters.
  static Type Quantized(QuantParams params, std::vector<int64_t> dims);
  static Type Token();
  static Type Tuple(std::vector<Type> elements);
  // `!stablehlo.future<T...>`: the values of an asynchronous op, each a
  // tensor (spec.md FutureType); elements() lists them.
  static Type Future(std::vector<Type> elements);

  // Checks the shape limits above; an error names the broken rule.
  static StatusOr<Type> CheckedTensor(DType dtype, std::vector<int64_t> dims);
  // A tensor whose dims may hold kDynamic. `bounds` is empty (no encoding)
  // or one entry per dimension: an upper bound for a dynamic dimension,
  // kDynamic for none (`?`); a static dimension's entry must be kDynamic.
  // Checks those rules and the shape limits (static dimensions and bounds).
  static StatusOr<Type> CheckedDynamicTensor(DType dtype, std::vector<int64_t> dims,
                                             std::vector<int64_t> bounds = {});

  Kind kind() const { return kind_; }
  bool is_tensor() const { return kind_ == Kind::kTensor; }
  bool is_token() const { return kind_ == Kind::kToken; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_future() const { return kind_ == Kind::kFuture; }

  // Tensor accessors (only meaningful when is_tensor()).
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_ ? *dims_ : EmptyDims(); }
  int64_t rank() const { return static_cast<int64_t>(dims().size()); }
  int64_t dim(int64_t i) const { return dims()[static_cast<size_t>(i)]; }
  // Whether some dimension is dynamic (for a tuple: of some element).
  bool is_dynamic() const;
  bool is_dynamic_dim(int64_t i) const { return dim(i) == kDynamic; }
  // The `#stablehlo.bounds` encoding: empty when the type has none.
  const std::vector<int64_t>& bounds() const { return bounds_ ? *bounds_ : EmptyDims(); }
  // The same element type (quantization kept) with other dimensions and no
  // bounds.
  Type WithDims(std::vector<int64_t> dims) const;
  // The product of the dimensions; -1 for a dynamic type.
  int64_t num_elements() const;
  int64_t byte_size() const { return num_elements() * StorageBytes(dtype_); }
  // Replaces the element type; drops quantization parameters.
  Type WithDType(DType dtype) const {
    Type t = *this;
    t.dtype_ = dtype;
    t.quant_.reset();
    return t;
  }
  // Quantized element type (only for tensors): null when not quantized.
  bool is_quantized() const { return quant_ != nullptr; }
  const QuantParams* quant() const { return quant_.get(); }
  // The same shape with quantized elements.
  Type WithQuant(QuantParams params) const;

  // Tuple / future accessor (only meaningful when is_tuple() or is_future()).
  const std::vector<Type>& elements() const;

  bool operator==(const Type& other) const;
  bool operator!=(const Type& other) const { return !(*this == other); }

  // MLIR spelling: "tensor<2x3xf32>", "tensor<?x3xf32, #stablehlo.bounds<8, ?>>",
  // "!stablehlo.token", "tuple<...>", "!stablehlo.future<tensor<f32>>".
  std::string ToString() const;
  void AppendTo(std::string& out) const;

 private:
  Kind kind_ = Kind::kTensor;
  DType dtype_ = DType::kF32;
  static const std::vector<int64_t>& EmptyDims();

  std::shared_ptr<const std::vector<int64_t>> dims_;  // null for rank 0
  std::shared_ptr<const std::vector<Type>> tuple_;
  std::shared_ptr<const QuantParams> quant_;  // null unless quantized
  std::shared_ptr<const std::vector<int64_t>> bounds_;  // null: no encoding
};

// "(tensor<f32>, tensor<2xi32>) -> tensor<f32>"
std::string FunctionTypeToString(std::span<const Type> inputs,
                                 std::span<const Type> results);

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_TYPE_H_
