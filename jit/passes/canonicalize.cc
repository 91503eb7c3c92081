// canonicalize: algebraic simplifications in the spirit of XLA's
// AlgebraicSimplifier, restricted to rewrites that are exact: the rewritten
// program computes the same bits as the original under the StableHLO spec
// and under jit/eval, for every input (NaN payloads and signed zeros
// included). Each rule says why it is exact.
//
// Deliberately NOT done, because they are not exact:
//  - float x + 0.0 -> x: (-0.0) + (+0.0) is +0.0, not -0.0.
//  - float x + (-0.0), x - 0.0, x * 1.0, x / 1.0 -> x: exact for every number,
//    but an arithmetic op quiets a signaling NaN (IEEE 754 6.2), so the bits
//    differ for sNaN inputs; and jit/eval computes through double, which
//    is free to canonicalize NaN payloads.
//  - float negate(negate(x)), max(x, x), min(x, x): same NaN concern.
//  - x - x -> 0, x * 0 -> 0: wrong for NaN/inf (floats), and the integer
//    forms are left to constant folding when x is constant.
#include <algorithm>
#include <numeric>

#include "jit/passes/internal/rewrite_util.h"
#include "jit/passes/passes.h"

namespace jitd::passes {
namespace {

using internal::I64Array;
using internal::RewriteWalker;
using internal::SplatValue;
using ir::Op;
using ir::OpCode;
using ir::Value;

bool IsIota(const std::vector<int64_t>& v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

// Integer and boolean element types, where +, -, *, /, and, or, xor,
// shifts are exact two's-complement (or boolean) operations.
bool IsIntegral(const Value* v) {
  if (!v->type().is_tensor()) return false;
  const ir::DType t = v->type().dtype();
  return t == ir::DType::kPred || ir::IsInteger(t);
}

enum class Splat { kZero, kOne, kAllOnes };

// True when `v` is a constant whose every element is 0, 1, or has every bit
// of its width set (-1 for signed types, the maximum for unsigned ones,
// true for i1).
bool IsSplatOf(const Value* v, Splat which) {
  if (!IsIntegral(v)) return false;
  std::optional<ir::Literal> s = SplatValue(v);
  if (!s) return false;
  const ir::DType t = s->dtype();
  switch (which) {
    case Splat::kZero: return s->GetUInt(0) == 0;
    case Splat::kOne: return s->GetUInt(0) == 1;
    case Splat::kAllOnes: {
      if (t == ir::DType::kPred) return s->GetPred(0);
      if (ir::IsSignedInt(t)) return s->GetInt(0) == -1;
      const int width = ir::BitWidth(t);
      const uint64_t mask = width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
      return s->GetUInt(0) == mask;
    }
  }
  return false;
}

std::vector<Value*> Use(Value* v) { return {v}; }

// A new op of `code` before `op` with `op`'s result type and location.
Value* Emit(RewriteWalker& w, const Op& op, OpCode code, std::vector<Value*> operands,
            ir::AttributeList attrs) {
  const ir::Type t = op.result(0)->type();
  const std::string name = op.result_groups().empty() ? "" : op.result_groups()[0].name;
  return w.Insert(ir::CreateOp(code, op.loc(), operands, std::span<const ir::Type>(&t, 1),
                               std::move(attrs), name))
      ->result(0);
}

// A constant of `op`'s result type repeating the splat element of `v`.
// Exact: every element of the result is a copy of that one element.
std::vector<Value*> SplatOfResult(RewriteWalker& w, const Op& op, const Value* v) {
  std::optional<ir::Literal> s = SplatValue(v);
  if (!s) return {};
  return Use(w.Insert(internal::MakeConstant(internal::SplatAttr(op.result(0)->type(), *s),
                                             op.loc()))
                 ->result(0));
}

std::vector<Value*> Simplify(Op& op, RewriteWalker& w) {
  if (op.code() == OpCode::kGetTupleElement) {
    // get_tuple_element(tuple(a0, a1, ...), i) is a_i.
    const Op* def = op.operand(0)->defining_op();
    const std::optional<int64_t> index = op.GetInt("index");
    if (def && def->code() == OpCode::kTuple && index && *index >= 0 &&
        static_cast<size_t>(*index) < def->num_operands() &&
        def->operand(static_cast<size_t>(*index))->type() == op.result(0)->type()) {
      return Use(def->operand(static_cast<size_t>(*index)));
    }
    return {};
  }
  if (op.num_results() != 1 || op.num_regions() != 0) return {};
  Value* result = op.result(0);
  const ir::Type& type = result->type();
  switch (op.code()) {
    // ---- Data movement: identities and compositions. These only copy
    // elements, so removing or composing them changes no bits.
    case OpCode::kReshape: {
      Value* x = op.operand(0);
      if (x->type() == type) return Use(x);  // same shape: the identity
      if (const Op* def = x->defining_op(); def && def->code() == OpCode::kReshape) {
        // Row-major reshapes compose: reshape(reshape(y)) = reshape(y).
        Value* y = def->operand(0);
        if (y->type() == type) return Use(y);
        return Use(Emit(w, op, OpCode::kReshape, {y}, {}));
      }
      if (const ir::DenseElementsAttr* c = internal::ConstantAttr(x)) {
        // A constant's bytes in row-major order are its reshape's bytes.
        ir::DenseElementsAttr attr = *c;
        attr.type = type;
        return Use(w.Insert(internal::MakeConstant(std::move(attr), op.loc()))->result(0));
      }
      return {};
    }
    case OpCode::kTranspose: {
      auto perm = op.GetI64Array("permutation");
      if (!perm) return {};
      Value* x = op.operand(0);
      if (IsIota(*perm)) return Use(x);
      if (const Op* def = x->defining_op(); def && def->code() == OpCode::kTranspose) {
        // result dim i = inner dim perm[i] = y dim inner[perm[i]].
        auto inner = def->GetI64Array("permutation");
        if (!inner || inner->size() != perm->size()) return {};
        std::vector<int64_t> composed(perm->size());
        for (size_t i = 0; i < perm->size(); ++i) {
          composed[i] = (*inner)[static_cast<size_t>((*perm)[i])];
        }
        Value* y = def->operand(0);
        if (IsIota(composed)) return Use(y);
        ir::AttributeList attrs = op.attrs();
        attrs.Set("permutation", I64Array(std::move(composed)));
        return Use(Emit(w, op, OpCode::kTranspose, {y}, std::move(attrs)));
      }
      return SplatOfResult(w, op, x);
    }
    case OpCode::kDotGeneral: {
      // dot_general(transpose(y), z) -> dot_general(y, z) with the operand's
      // batching and contracting dimensions mapped through the permutation
      // (likewise for the rhs): the transposed operand is never
      // materialized, which for weights stored [out, in] (PyTorch exports)
      // saves a full copy of every weight matrix per run. Exact: every
      // product is the same pair of elements and each sum runs over the
      // contracting dimensions in the same listed order; only done when
      // the operand's free dimensions keep their relative order, which
      // fixes the result's dimension order.
      const ir::StructAttr* dn = op.GetStruct("dot_dimension_numbers");
      if (!dn || op.num_operands() != 2) return {};
      ir::StructAttr mapped = *dn;
      std::vector<Value*> operands = {op.operand(0), op.operand(1)};
      bool changed = false;
      for (size_t side = 0; side < 2; ++side) {  // both sides in one rewrite
        const Op* def = op.operand(side)->defining_op();
        if (!def || def->code() != OpCode::kTranspose) continue;
        auto perm = def->GetI64Array("permutation");
        const int64_t rank = op.operand(side)->type().rank();
        if (!perm || static_cast<int64_t>(perm->size()) != rank) continue;
        const std::string prefix = side == 0 ? "lhs_" : "rhs_";
        ir::StructAttr trial = mapped;
        std::vector<bool> used(static_cast<size_t>(rank), false);
        bool valid = true;
        for (ir::StructField& f : trial.fields) {
          if (f.name != prefix + "batching_dimensions" && f.name != prefix + "contracting_dimensions") {
            continue;
          }
          for (int64_t& d : f.values) {
            if (d < 0 || d >= rank || used[static_cast<size_t>(d)]) {
              valid = false;
              break;
            }
            used[static_cast<size_t>(d)] = true;
            d = (*perm)[static_cast<size_t>(d)];
          }
        }
        int64_t last = -1;
        for (int64_t d = 0; d < rank && valid; ++d) {
          if (used[static_cast<size_t>(d)]) continue;
          valid = (*perm)[static_cast<size_t>(d)] > last;  // free dimensions stay in order
          last = (*perm)[static_cast<size_t>(d)];
        }
        if (!valid) continue;
        mapped = std::move(trial);
        operands[side] = def->operand(0);
        changed = true;
      }
      if (!changed) return {};
      ir::AttributeList attrs = op.attrs();
      attrs.Set("dot_dimension_numbers", ir::Attribute(std::move(mapped)));
      return Use(Emit(w, op, OpCode::kDotGeneral, std::move(operands), std::move(attrs)));
    }
    case OpCode::kBroadcastInDim: {
      auto dims = op.GetI64Array("broadcast_dimensions");
      if (!dims) return {};
      Value* x = op.operand(0);
      if (x->type() == type && IsIota(*dims)) return Use(x);
      if (const Op* def = x->defining_op(); def && def->code() == OpCode::kBroadcastInDim) {
        // y dim i -> middle dim inner[i] -> result dim dims[inner[i]]. A
        // size-1 y dim broadcasts either way; any other size matches.
        auto inner = def->GetI64Array("broadcast_dimensions");
        if (!inner) return {};
        std::vector<int64_t> composed(inner->size());
        for (size_t i = 0; i < inner->size(); ++i) {
          composed[i] = (*dims)[static_cast<size_t>((*inner)[i])];
        }
        ir::AttributeList attrs = op.attrs();
        attrs.Set("broadcast_dimensions", I64Array(std::move(composed)));
        return Use(Emit(w, op, OpCode::kBroadcastInDim, {def->operand(0)}, std::move(attrs)));
      }
      return SplatOfResult(w, op, x);
    }
    case OpCode::kBroadcast: {
      auto sizes = op.GetI64Array("broadcast_sizes");
      if (sizes && sizes->empty() && op.operand(0)->type() == type) return Use(op.operand(0));
      return SplatOfResult(w, op, op.operand(0));
    }
    case OpCode::kConvert:
      // Converting to the element type a value already has is the identity.
      if (op.operand(0)->type() == type) return Use(op.operand(0));
      return {};
    case OpCode::kSlice: {
      auto start = op.GetI64Array("start_indices");
      auto limit = op.GetI64Array("limit_indices");
      auto strides = op.GetI64Array("strides");
      if (!start || !limit || !strides) return {};
      // A slice of everything with stride 1 is the operand itself.
      bool identity = op.operand(0)->type() == type;
      for (int64_t s : *start) identity &= s == 0;
      for (int64_t s : *strides) identity &= s == 1;
      if (identity) return Use(op.operand(0));
      // slice(slice(y)): element i of a dimension is y[s1 + (s2 + i*t2)*t1],
      // so one slice with start s1 + s2*t1 and stride t1*t2 takes the same
      // elements; its limit is one past the last one taken.
      const Op* def = op.operand(0)->defining_op();
      if (!def || def->code() != OpCode::kSlice) return {};
      auto s1 = def->GetI64Array("start_indices");
      auto t1 = def->GetI64Array("strides");
      if (!s1 || !t1 || s1->size() != start->size() || t1->size() != start->size()) return {};
      std::vector<int64_t> cs(start->size()), cl(start->size()), ct(start->size());
      for (size_t d = 0; d < start->size(); ++d) {
        const int64_t count = type.dim(static_cast<int64_t>(d));
        ct[d] = (*t1)[d] * (*strides)[d];
        cs[d] = (*s1)[d] + (*start)[d] * (*t1)[d];
        cl[d] = count == 0 ? cs[d] : cs[d] + (count - 1) * ct[d] + 1;
      }
      ir::AttributeList attrs = op.attrs();
      attrs.Set("start_indices", I64Array(std::move(cs)));
      attrs.Set("limit_indices", I64Array(std::move(cl)));
      attrs.Set("strides", I64Array(std::move(ct)));
      return Use(Emit(w, op, OpCode::kSlice, {def->operand(0)}, std::move(attrs)));
    }
    case OpCode::kDynamicSlice: {
      // Constant start indices: the evaluator clamps each into
      // [0, dim - size] and copies that window, which is what a static
      // slice of the clamped window copies.
      auto sizes = op.GetI64Array("slice_sizes");
      Value* x = op.operand(0);
      if (!sizes || !x->type().is_tensor() ||
          static_cast<int64_t>(sizes->size()) != x->type().rank() ||
          op.num_operands() != sizes->size() + 1) {
        return {};
      }
      std::vector<int64_t> start(sizes->size()), limit(sizes->size()), strides(sizes->size(), 1);
      for (size_t d = 0; d < sizes->size(); ++d) {
        std::optional<ir::Literal> idx = SplatValue(op.operand(d + 1));
        if (!idx || !ir::IsInteger(idx->dtype())) return {};
        const int64_t hi = x->type().dim(static_cast<int64_t>(d)) - (*sizes)[d];
        if (ir::IsUnsignedInt(idx->dtype())) {
          const uint64_t v = idx->GetUInt(0);
          start[d] = v > static_cast<uint64_t>(hi) ? hi : static_cast<int64_t>(v);
        } else {
          start[d] = std::clamp<int64_t>(idx->GetInt(0), 0, hi);
        }
        limit[d] = start[d] + (*sizes)[d];
      }
      ir::AttributeList attrs;
      attrs.Set("start_indices", I64Array(std::move(start)));
      attrs.Set("limit_indices", I64Array(std::move(limit)));
      attrs.Set("strides", I64Array(std::move(strides)));
      return Use(Emit(w, op, OpCode::kSlice, {x}, std::move(attrs)));
    }
    case OpCode::kReverse: {
      // Reversing only dimensions of size <= 1 moves nothing.
      auto dims = op.GetI64Array("dimensions");
      if (!dims) return {};
      for (int64_t d : *dims) {
        if (d < 0 || d >= type.rank() || type.dim(d) > 1) return {};
      }
      return Use(op.operand(0));
    }
    case OpCode::kPad: {
      // Zero padding everywhere adds no element.
      for (const char* name : {"edge_padding_low", "edge_padding_high", "interior_padding"}) {
        auto v = op.GetI64Array(name);
        if (!v) return {};
        for (int64_t p : *v) if (p != 0) return {};
      }
      if (op.operand(0)->type() != type) return {};
      return Use(op.operand(0));
    }
    case OpCode::kConcatenate:
      // Concatenating one tensor is that tensor.
      if (op.num_operands() == 1 && op.operand(0)->type() == type) return Use(op.operand(0));
      return {};

    // ---- Integer and boolean identities: two's-complement arithmetic and
    // bitwise logic are exact, so x+0, x-0, x*1, x/1, x&~0, x|0, x^0 and
    // shifts by 0 equal x bit for bit (i1: add is or, multiply is and).
    case OpCode::kAdd:
    case OpCode::kOr:
    case OpCode::kXor: {
      Value* a = op.operand(0);
      Value* b = op.operand(1);
      if (!IsIntegral(a) || a->type() != type) return {};
      if (IsSplatOf(b, Splat::kZero)) return Use(a);
      if (IsSplatOf(a, Splat::kZero)) return Use(b);
      if (op.code() == OpCode::kOr && a == b) return Use(a);  // x | x = x
      return {};
    }
    case OpCode::kSubtract:
    case OpCode::kShiftLeft:
    case OpCode::kShiftRightLogical:
    case OpCode::kShiftRightArithmetic:
      if (IsIntegral(op.operand(0)) && op.operand(0)->type() == type &&
          IsSplatOf(op.operand(1), Splat::kZero)) {
        return Use(op.operand(0));
      }
      return {};
    case OpCode::kMultiply: {
      Value* a = op.operand(0);
      Value* b = op.operand(1);
      if (!IsIntegral(a) || a->type() != type) return {};
      if (IsSplatOf(b, Splat::kOne)) return Use(a);
      if (IsSplatOf(a, Splat::kOne)) return Use(b);
      return {};
    }
    case OpCode::kDivide:
      if (IsIntegral(op.operand(0)) && op.operand(0)->type() == type &&
          IsSplatOf(op.operand(1), Splat::kOne)) {
        return Use(op.operand(0));
      }
      return {};
    case OpCode::kAnd: {
      Value* a = op.operand(0);
      Value* b = op.operand(1);
      if (!IsIntegral(a) || a->type() != type) return {};
      if (IsSplatOf(b, Splat::kAllOnes)) return Use(a);
      if (IsSplatOf(a, Splat::kAllOnes)) return Use(b);
      if (a == b) return Use(a);  // x & x = x
      return {};
    }
    case OpCode::kMaximum:
    case OpCode::kMinimum:
      // max(x, x) = min(x, x) = x for integers (floats: see the top).
      if (IsIntegral(op.operand(0)) && op.operand(0) == op.operand(1)) return Use(op.operand(0));
      return {};
    case OpCode::kNegate:
    case OpCode::kNot: {
      // -(-x) = x in two's complement (wrapping at the minimum too);
      // ~~x = x for integers and booleans.
      const Op* def = op.operand(0)->defining_op();
      if (def && def->code() == op.code() && IsIntegral(op.operand(0))) {
        return Use(def->operand(0));
      }
      return {};
    }

    // ---- select: a constant predicate picks one side wholesale; equal
    // sides make the predicate irrelevant. Both copy elements only.
    case OpCode::kSelect: {
      Value* on_true = op.operand(1);
      Value* on_false = op.operand(2);
      if (on_true == on_false) return Use(on_true);
      if (std::optional<ir::Literal> p = SplatValue(op.operand(0))) {
        return Use(p->GetPred(0) ? on_true : on_false);
      }
      return {};
    }
    default:
      return {};
  }
}

class CanonicalizePass : public Pass {
 public:
  std::string_view name() const override { return "canonicalize"; }

  Status Run(ir::Module& module) override {
    RewriteWalker walker(Simplify);
    for (const auto& fn : module.functions()) walker.Run(*fn);
    return Status::Ok();
  }
};

}  // namespace

std::unique_ptr<Pass> CreateCanonicalizePass() { return std::make_unique<CanonicalizePass>(); }

}  // namespace jitd::passes
