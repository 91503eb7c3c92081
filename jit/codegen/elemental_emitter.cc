// ElementalEmitter (elemental_emitter.h): indices, the walk from a value at
// an index back to the kernel's inputs, the schedule-facing element and
// reduce methods, and the support predicates. The index maps' rules are in
// elemental_index_maps.cc, the scalar ops' in scalar_ops.cc.
#include "jit/codegen/elemental_emitter.h"

#include <string>
#include <utility>

#include "jit/codegen/internal/element_types.h"
#include "jit/eval/fold.h"
#include "llvm/IR/Constants.h"

namespace jitd::codegen {

using internal::IsCplx;
using internal::IsHalf;
using internal::IsHalf16;
using ir::DType;
using ir::Op;
using ir::OpCode;

// ---- Support --------------------------------------------------------------------

bool IsFusibleOp(const Op& op) { return IsFusibleOp(op, HostTargetMath()); }

bool IsFusibleOp(const Op& op, const TargetMath& target) {
  if (op.num_regions() != 0) return false;
  if (const ElementalEmitter::MapRule* rule = ElementalEmitter::FindMapRule(op.code())) {
    return rule->supported(op, target);
  }
  return ScalarEmitter::Supports(op, target);
}

bool IsIndexMap(OpCode code) {
  const ElementalEmitter::MapRule* rule = ElementalEmitter::FindMapRule(code);
  return rule && rule->kind == ElementalEmitter::MapRule::kIndexMap;
}

bool IsCheapToDuplicate(const Op& op) {
  if (op.code() == OpCode::kConstant || op.code() == OpCode::kIota) return true;
  if (op.code() == OpCode::kBroadcastInDim || op.code() == OpCode::kReshape) {
    return op.operand(0)->type().num_elements() == 1;
  }
  return false;
}

bool IsEmittableReduce(const Op& op) { return IsEmittableReduce(op, HostTargetMath()); }

bool IsEmittableReduce(const Op& op, const TargetMath& target) {
  if (op.code() != OpCode::kReduce || op.num_regions() != 1) return false;
  // Complex accumulators too: the body's ops are the interpreter's (add in
  // the component type, multiply in long double), step by step.
  if (!internal::TensorTypesSupported(op, target.HasNarrowFloats())) return false;
  const size_t n = op.num_results();
  if (n == 0 || op.num_operands() != 2 * n) return false;
  const ir::Region& r = op.region(0);
  if (r.num_blocks() != 1) return false;
  // Bodies in a wider type than the operands (promotion) go to the fallback.
  std::vector<DType> results;
  for (size_t i = 0; i < n; ++i) results.push_back(op.result(i)->type().dtype());
  std::vector<DType> args = results;
  args.insert(args.end(), results.begin(), results.end());
  return IsScalarBlock(r.block(0), args, results, target, {.outer_constants = true, .bitcasts = true});
}

// ---- The emitter -------------------------------------------------------------------

ElementalEmitter::ElementalEmitter(llvm::Module& module, const KernelSpec& spec, const TargetMath& target)
    : scalar_(module, target, *spec.root), b_(scalar_.builder()), spec_(spec), target_(target) {
  for (const Op* op : spec.fused) fused_.insert(op);
}

void ElementalEmitter::Bind(llvm::Function* fn, const std::vector<llvm::Value*>& inputs,
                            const std::vector<llvm::Value*>& outputs) {
  params_.clear();
  ResetIndices();
  preloaded_.clear();
  function_ = fn;
  for (size_t i = 0; i < spec_.inputs.size() && i < inputs.size(); ++i) params_[spec_.inputs[i]] = inputs[i];
  // 0-d inputs (scalars, start indices, padding values) are read once here,
  // before any loop.
  for (const ir::Value* v : spec_.inputs) {
    if (v->type().rank() == 0) preloaded_[v] = Load(v, ScalarIndex());
  }
  outputs_ = outputs;
}

std::vector<llvm::Value*> ElementalEmitter::Delinearize(llvm::Value* linear, const std::vector<int64_t>& dims) {
  ResetIndices();
  Index* idx = NewIndex(dims);
  idx->linear = linear;
  return Multi(*idx);
}

void ElementalEmitter::StoreElement(llvm::Value* linear) {
  const ir::Type& type = spec_.root->result(0)->type();
  ResetIndices();
  Index* idx = NewIndex(type.dims());
  idx->linear = linear;
  if (type.rank() == 1) idx->multi = {linear};
  scalar_.Store(Value(spec_.root->result(0), idx), type.dtype(), outputs_[0], linear);
  StoreExtraOutputs(idx, linear);
}

void ElementalEmitter::StoreElement(const std::vector<llvm::Value*>& multi, llvm::Value* linear) {
  const ir::Type& type = spec_.root->result(0)->type();
  ResetIndices();
  Index* idx = NewIndex(type.dims());
  idx->multi = multi;
  idx->linear = linear;
  scalar_.Store(Value(spec_.root->result(0), idx), type.dtype(), outputs_[0], linear);
  StoreExtraOutputs(idx, linear);
}

// Multi-output fusion: writes every extra output's element at `idx` (the
// kernel's own iteration index, linear offset `offset`).
void ElementalEmitter::StoreExtraOutputs(Index* idx, llvm::Value* offset) {
  const size_t first = spec_.root->num_results();
  for (size_t j = 0; j < spec_.extra_outputs.size(); ++j) {
    const ir::Value* v = spec_.extra_outputs[j];
    scalar_.Store(Value(v, idx), v->type().dtype(), outputs_[first + j], offset);
  }
}

int64_t ElementalEmitter::ReducedExtent() const {
  const Op& root = *spec_.root;
  const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
  int64_t extent = 1;
  for (int64_t d : root.GetI64Array("dimensions").value_or(std::vector<int64_t>{})) {
    extent *= in_dims[static_cast<size_t>(d)];
  }
  return extent;
}

std::vector<llvm::Value*> ElementalEmitter::ReduceInits() {
  const Op& root = *spec_.root;
  const size_t n = root.num_results();
  ResetIndices();
  std::vector<llvm::Value*> init;
  for (size_t k = 0; k < n; ++k) init.push_back(Value(root.operand(n + k), ScalarIndex()));
  return init;
}

std::vector<llvm::Value*> ElementalEmitter::ReduceInputs(llvm::Value* out_linear, llvm::Value* reduced) {
  const Op& root = *spec_.root;
  const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
  std::vector<bool> is_reduced(in_dims.size(), false);
  for (int64_t d : root.GetI64Array("dimensions").value_or(std::vector<int64_t>{})) {
    is_reduced[static_cast<size_t>(d)] = true;
  }
  const std::vector<llvm::Value*> out_multi = Delinearize(out_linear, root.result(0)->type().dims());
  std::vector<llvm::Value*> in_multi(in_dims.size(), nullptr);
  size_t kept = 0;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (!is_reduced[d]) in_multi[d] = out_multi[kept++];
  }
  // The reduced dimensions' digits of `reduced`, minor first.
  llvm::Value* rest = reduced;
  std::vector<size_t> reduced_dims;
  for (size_t d = 0; d < in_dims.size(); ++d) {
    if (is_reduced[d]) reduced_dims.push_back(d);
  }
  for (size_t k = reduced_dims.size(); k-- > 0;) {
    const size_t d = reduced_dims[k];
    if (k == 0) {
      in_multi[d] = rest;
    } else {
      in_multi[d] = b_.CreateURem(rest, b_.getInt64(in_dims[d]));
      rest = b_.CreateUDiv(rest, b_.getInt64(in_dims[d]));
    }
  }
  return ReduceInputsAt(in_multi);
}

std::vector<llvm::Value*> ElementalEmitter::ReduceInputsAt(const std::vector<llvm::Value*>& input_multi) {
  const Op& root = *spec_.root;
  ResetIndices();
  Index* idx = NewIndex(root.operand(0)->type().dims());
  idx->multi = input_multi;
  std::vector<llvm::Value*> x;
  for (size_t k = 0; k < root.num_results(); ++k) x.push_back(Value(root.operand(k), idx));
  if (!spec_.extra_outputs.empty()) StoreExtraOutputs(idx, Linear(*idx));
  return x;
}

std::vector<llvm::Value*> ElementalEmitter::ReduceCombine(const std::vector<llvm::Value*>& acc,
                                                          const std::vector<llvm::Value*>& x) {
  std::vector<llvm::Value*> args = acc;
  args.insert(args.end(), x.begin(), x.end());
  std::vector<llvm::Value*> next = scalar_.EmitBlock(spec_.root->region(0).block(0), args);
  if (next.size() < acc.size()) return acc;  // failed (status)
  next.resize(acc.size());
  return next;
}

void ElementalEmitter::StoreReduceResults(llvm::Value* out_linear, const std::vector<llvm::Value*>& acc) {
  const Op& root = *spec_.root;
  for (size_t k = 0; k < root.num_results() && k < acc.size(); ++k) {
    scalar_.Store(acc[k], root.result(k)->type().dtype(), outputs_[k], out_linear);
  }
}

std::optional<llvm::Value*> ElementalEmitter::FoldIdentity() {
  const Op& root = *spec_.root;
  if (root.code() != OpCode::kReduce || root.num_results() != 1) return std::nullopt;
  const DType t = root.result(0)->type().dtype();
  const std::optional<eval::FoldOp> fold = eval::RecognizeFold(root, 0, t);
  if (!fold || IsCplx(t)) return std::nullopt;
  const bool sum_or_product = *fold == eval::FoldOp::kAdd || *fold == eval::FoldOp::kMultiply;
  if (IsHalf(t) && sum_or_product) return std::nullopt;
  return scalar_.FoldIdentity(*fold, t);
}

// ---- Indices -----------------------------------------------------------------------

ElementalEmitter::Index* ElementalEmitter::NewIndex(std::vector<int64_t> dims) {
  indices_.emplace_back();
  indices_.back().dims = std::move(dims);
  return &indices_.back();
}

// The index of rank-0 values: one object (constants only), so their values
// are cached once.
ElementalEmitter::Index* ElementalEmitter::ScalarIndex() {
  if (!scalar_index_) {
    scalar_index_ = NewIndex({});
    scalar_index_->linear = b_.getInt64(0);
  }
  return scalar_index_;
}

// Forgets the values computed so far (they need not dominate what is
// emitted next).
void ElementalEmitter::ClearValues() {
  cache_.clear();
  derived_.clear();
}

// ClearValues, and frees the indices.
void ElementalEmitter::ResetIndices() {
  ClearValues();
  indices_.clear();
  scalar_index_ = nullptr;
}

llvm::Value* ElementalEmitter::Linear(Index& idx) {
  if (idx.linear) return idx.linear;
  if (idx.dims.empty()) return idx.linear = b_.getInt64(0);
  llvm::Value* offset = b_.getInt64(0);
  int64_t stride = 1;
  for (size_t d = idx.dims.size(); d-- > 0;) {
    offset = b_.CreateAdd(offset, b_.CreateMul(idx.multi[d], b_.getInt64(stride), "", true, true), "", true, true);
    stride *= idx.dims[d];
  }
  return idx.linear = offset;
}

const std::vector<llvm::Value*>& ElementalEmitter::Multi(Index& idx) {
  if (!idx.multi.empty() || idx.dims.empty()) return idx.multi;
  idx.multi.resize(idx.dims.size());
  llvm::Value* rest = idx.linear;
  for (size_t d = idx.dims.size(); d-- > 0;) {
    if (d == 0) {
      idx.multi[d] = rest;
    } else {
      idx.multi[d] = b_.CreateURem(rest, b_.getInt64(idx.dims[d]));
      rest = b_.CreateUDiv(rest, b_.getInt64(idx.dims[d]));
    }
  }
  return idx.multi;
}

// The index of operand `i` of elementwise `op` at result index `idx`
// (rank-0 operands of select / clamp broadcast implicitly).
ElementalEmitter::Index* ElementalEmitter::ElementwiseOperandIndex(const Op& op, size_t i, Index* idx) {
  if (op.operand(i)->type().rank() == 0 && !idx->dims.empty()) return ScalarIndex();
  return idx;
}

// The index at which fused `op`, computed at `idx`, reads operand `k`
// unconditionally (EmitOp reads it there through Value), or null when it
// reads it otherwise: inside a guarded block (pad's and
// dynamic_update_slice's data), after a join (dynamic_update_slice's
// operand), as bits or pieces (bitcast_convert between widths or from f16 /
// bf16), or not at all (an empty concatenate operand). Memoized per (op, k,
// idx): the Index object is the cache key, so Prepare and EmitOp must get
// the same one. dynamic_slice's operand index needs its start values
// computed first (MapRule::starts_first).
ElementalEmitter::Index* ElementalEmitter::OperandIndex(const Op& op, size_t k, Index* idx) {
  const auto key = std::make_tuple(&op, k, static_cast<const Index*>(idx));
  if (auto it = derived_.find(key); it != derived_.end()) return it->second;
  const MapRule* rule = FindMapRule(op.code());
  Index* o = rule ? (this->*rule->operand)(op, k, idx) : ElementwiseOperandIndex(op, k, idx);
  derived_[key] = o;
  return o;
}

// ---- Values ------------------------------------------------------------------------

llvm::Value* ElementalEmitter::Load(const ir::Value* v, Index* idx) {
  if (auto it = preloaded_.find(v); it != preloaded_.end()) return it->second;
  llvm::Value* offset = v->type().rank() == 0 ? b_.getInt64(0) : Linear(*idx);
  return scalar_.Load(params_.at(v), v->type().dtype(), offset);
}

llvm::Value* ElementalEmitter::Value(const ir::Value* v, Index* idx) {
  if (raw_half_) {
    // Inside HalfBits' walk: f16 / bf16 values as their bits, every other
    // value (start indices, select predicates) as usual.
    if (IsHalf16(v->type().dtype())) return HalfBits(v, idx);
    raw_half_ = false;
    llvm::Value* x = Value(v, idx);
    raw_half_ = true;
    return x;
  }
  auto key = std::make_pair(v, static_cast<const Index*>(idx));
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  Prepare(v, idx);
  auto it = cache_.find(key);  // missing only when emission stopped (status)
  return it != cache_.end() ? it->second : llvm::UndefValue::get(ComputeType(v->type().dtype()));
}

// Computes `v` at `idx` into the cache, after the values it reads at
// indices OperandIndex knows, bottom-up, with an explicit stack: a chain of
// N fused ops costs no native stack. Reads OperandIndex leaves out (pad /
// dynamic_update_slice data, bitcasts between widths, f16 / bf16 bits)
// recurse through EmitOp, one level per such op on a path; kMaxKernelOps
// bounds that.
void ElementalEmitter::Prepare(const ir::Value* v, Index* idx) {
  struct Item {
    const ir::Value* v;
    Index* idx;
    int phase;  // 0: push reads; 1: push starts_first reads; 2: compute
  };
  std::vector<Item> stack = {{v, idx, 0}};
  while (!stack.empty() && status().ok()) {
    Item& item = stack.back();
    const auto key = std::make_pair(item.v, static_cast<const Index*>(item.idx));
    if (cache_.count(key)) {
      stack.pop_back();
      continue;
    }
    const Op* op = item.v->defining_op();
    const bool computed_here = !params_.count(item.v) && op && fused_.count(op);
    if (!computed_here || item.phase == 2) {
      const Item done = item;
      stack.pop_back();
      cache_[key] = Compute(done.v, done.idx);
      continue;
    }
    const int phase = item.phase++;
    Index* at = item.idx;  // `item` dangles once the stack grows
    const MapRule* rule = FindMapRule(op->code());
    // Pushed last to first: read (and emitted) first to last, as EmitOp would.
    for (size_t k = op->num_operands(); k-- > 0;) {
      const bool starts_first = rule && rule->starts_first && k == 0;
      if (starts_first != (phase == 1)) continue;
      if (Index* o = OperandIndex(*op, k, at)) stack.push_back({op->operand(k), o, 0});
    }
  }
}

// `v` at `idx`, its reads through Value (cached when Prepare ran).
llvm::Value* ElementalEmitter::Compute(const ir::Value* v, Index* idx) {
  if (params_.count(v)) return Load(v, idx);
  if (const Op* op = v->defining_op(); op && fused_.count(op)) {
    if (!CountComputation()) return llvm::UndefValue::get(ComputeType(v->type().dtype()));
    return EmitOp(*op, idx);
  }
  scalar_.Fail("a value that is neither a kernel input nor fused");
  return llvm::UndefValue::get(ComputeType(v->type().dtype()));
}

// Counts one op computed for an element (kMaxKernelComputations); false
// (and the kernel failed) past the limit, or once anything failed: the
// caller then returns an undefined value instead of emitting more.
bool ElementalEmitter::CountComputation() {
  if (!status().ok()) return false;
  if (++computations_ <= kMaxKernelComputations) return true;
  scalar_.SetError(ResourceExhausted(spec_.root->loc().ToString() + ": '" + std::string(spec_.root->name()) +
                                     "' op roots a kernel that computes more than " +
                                     std::to_string(kMaxKernelComputations) +
                                     " ops per element (operands read at many indices recompute)"));
  return false;
}

llvm::Value* ElementalEmitter::EmitOp(const Op& op, Index* idx) {
  if (const MapRule* rule = FindMapRule(op.code())) return (this->*rule->value)(op, idx);
  std::vector<llvm::Value*> operands;
  for (size_t i = 0; i < op.num_operands(); ++i) operands.push_back(Value(op.operand(i), OperandIndex(op, i, idx)));
  return scalar_.Scalar(op, operands);
}

}  // namespace jitd::codegen
