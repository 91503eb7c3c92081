// The evaluator's kernel interface (internal to jit/eval): how one op's
// implementation sees its operands, attributes and regions, plus the index
// helpers kernels share. Each family file (elementwise.cc, shape_ops.cc,
// indexing.cc, reduction.cc, linalg.cc) registers its kernels in a table.
#ifndef JITD_JIT_EVAL_INTERNAL_KERNELS_H_
#define JITD_JIT_EVAL_INTERNAL_KERNELS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "jit/eval/eval.h"

namespace jitd::eval::internal {

class Evaluator;

inline constexpr size_t kNumOpCodes = [] {
  size_t n = 0;
#define X(e, name) ++n;
#include "jit/ir/ops.def"
#undef X
  return n;
}();

// What a kernel sees. Operands are borrowed from the evaluator's value map
// for the duration of the call. Not thread-safe.
class OpContext {
 public:
  OpContext(Evaluator& evaluator, const ir::Op& op, std::vector<const RuntimeValue*> operands)
      : evaluator_(evaluator), op_(op), operands_(std::move(operands)) {}

  const ir::Op& op() const { return op_; }
  size_t num_operands() const { return operands_.size(); }
  const RuntimeValue& value(size_t i) const { return *operands_[i]; }
  // Operand i as a tensor (the verifier guarantees tensors where the spec
  // says so).
  const ir::Literal& operand(size_t i) const { return operands_[i]->literal(); }
  const ir::Type& result_type(size_t i) const { return op_.result(i)->type(); }

  // A zero-filled literal of result i's type, or of `type`; fails with
  // RESOURCE_EXHAUSTED above the evaluator's size limit.
  StatusOr<ir::Literal> NewResult(size_t i) const { return NewLiteral(result_type(i)); }
  StatusOr<ir::Literal> NewLiteral(const ir::Type& type) const;

  // Runs region `r` of the op on `args`; returns what its terminator returns.
  StatusOr<std::vector<RuntimeValue>> CallRegion(size_t r, std::vector<RuntimeValue> args);

  // Attribute accessors with defaults (the verifier checked kinds).
  std::vector<int64_t> I64s(std::string_view name) const;  // empty if absent
  int64_t Int(std::string_view name, int64_t default_value) const;
  bool Bool(std::string_view name, bool default_value) const;
  // Enum value ("EQ", "FFT", ...) or `default_value` if absent.
  std::string_view Enum(std::string_view name, std::string_view default_value) const;
  // A struct attribute's field ("stablehlo.gather" etc.); empty if absent.
  std::vector<int64_t> StructField(std::string_view attr, std::string_view field) const;
  // An Nx2 i64 dense attribute (padding) as pairs; `rank` zero pairs if absent.
  std::vector<std::pair<int64_t, int64_t>> Padding(std::string_view name, int64_t rank) const;

  // Errors that name the op: "line:col: 'stablehlo.x' op message".
  Status Error(std::string message) const;
  Status Unimplemented(std::string message) const;

  Evaluator& evaluator() { return evaluator_; }
  // The options of the evaluation (deadline, cancel flag, process).
  const EvalOptions& options() const;

  // Which op of its kind this is in the program (elided dense_resource
  // constants of one name, stablehlo.rng ops), counting in the order
  // inlining lays the program out: what seeds their data, stable when the
  // module is printed and parsed again (the disk cache), unlike a line.
  uint64_t PlaceInProgram() const;

  // Evaluates another, detached op (built by a kernel that composes its op
  // from others) on `operands`, in this evaluator.
  StatusOr<std::vector<RuntimeValue>> EvaluateDetached(const ir::Op& op,
                                                       std::vector<RuntimeValue> operands);

 private:
  Evaluator& evaluator_;
  const ir::Op& op_;
  std::vector<const RuntimeValue*> operands_;
};

using KernelResult = StatusOr<std::vector<RuntimeValue>>;
using Kernel = KernelResult (*)(OpContext& ctx);
using KernelTable = std::array<Kernel, kNumOpCodes>;

inline void Register(KernelTable& table, ir::OpCode code, Kernel kernel) {
  table[static_cast<size_t>(code)] = kernel;
}

// One result tensor.
inline KernelResult Single(ir::Literal literal) {
  std::vector<RuntimeValue> out;
  out.emplace_back(std::move(literal));
  return out;
}

void RegisterElementwiseKernels(KernelTable& table);  // elementwise.cc
void RegisterShapeKernels(KernelTable& table);        // shape_ops.cc
void RegisterIndexingKernels(KernelTable& table);     // indexing.cc
void RegisterReductionKernels(KernelTable& table);    // reduction.cc
void RegisterLinalgKernels(KernelTable& table);       // linalg.cc
void RegisterComposedKernels(KernelTable& table);     // composed_ops.cc
void RegisterCollectiveKernels(KernelTable& table);   // collectives.cc (composed_ops.cc registers them)
// replica_id / partition_id: this process's ids (0 without a ProcessContext).
StatusOr<std::vector<RuntimeValue>> ReplicaOrPartitionIdKernel(OpContext& ctx);  // collectives.cc

// ---- Index helpers --------------------------------------------------------

// Row-major strides of `dims` (in elements).
std::vector<int64_t> Strides(const std::vector<int64_t>& dims);
// Linear offset of `index` under `strides`.
inline int64_t Offset(const std::vector<int64_t>& index, const std::vector<int64_t>& strides) {
  int64_t off = 0;
  for (size_t i = 0; i < index.size(); ++i) off += index[i] * strides[i];
  return off;
}
// Calls fn(index) for every multi-index of `dims` in row-major order. The
// same vector is reused (updated in place) between calls. Stops early and
// returns the first non-OK status fn returns.
template <typename F>
Status ForEachIndex(const std::vector<int64_t>& dims, F&& fn) {
  for (int64_t d : dims) {
    if (d == 0) return Status::Ok();
  }
  std::vector<int64_t> index(dims.size(), 0);
  while (true) {
    JITD_RETURN_IF_ERROR(fn(index));
    size_t k = dims.size();
    while (k > 0) {
      --k;
      if (++index[k] < dims[k]) break;
      index[k] = 0;
      if (k == 0) return Status::Ok();
    }
    if (dims.empty()) return Status::Ok();
  }
}

// Copies element `from_index` of `from` to element `to_index` of `to`
// (same dtype): raw bytes, no conversion.
inline void CopyElement(const ir::Literal& from, int64_t from_index, ir::Literal& to,
                        int64_t to_index) {
  std::memcpy(to.mutable_element_ptr(to_index), from.element_ptr(from_index),
              static_cast<size_t>(ir::StorageBytes(from.dtype())));
}

// A 0-d tensor holding element i of `lit` (for calling reducer regions).
RuntimeValue ScalarOf(const ir::Literal& lit, int64_t i);
// Stores the single element of the 0-d tensor `scalar` as element i of `out`.
void StoreScalar(const RuntimeValue& scalar, ir::Literal& out, int64_t i);

// ---- Element conversion (kernel_helpers.cc) -------------------------------

// A float as a 64-bit integer: truncated toward zero, NaN -> 0, saturated
// at the ends of the int64 (is_unsigned: uint64) range.
int64_t SaturatingToInt(double v, bool is_unsigned);
// Stores element i of `from` as element j of `to`: a byte copy for equal
// types, exact for is_promotable pairs (reducer bodies' wider types).
void ConvertElement(const ir::Literal& from, int64_t i, ir::Literal& to, int64_t j);

// ---- Pseudo-random numbers -------------------------------------------------

// splitmix64: the next value of a small, well-mixed, seedable generator.
// Inline: model weights are filled with ~10^8 of these.
inline uint64_t SplitMix(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
// The top 53 bits of `r` as a double in [0, 1).
inline double UnitInterval(uint64_t r) { return static_cast<double>(r >> 11) * 0x1p-53; }

}  // namespace jitd::eval::internal

#endif  // JITD_JIT_EVAL_INTERNAL_KERNELS_H_
