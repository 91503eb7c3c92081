#include "tools/random_inputs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "jit/ir/attribute.h"
#include "jit/ir/dtype.h"
#include "jit/ir/literal.h"

namespace jitd::tools {

namespace {

using ir::OpCode;

// How deep a value is followed (ops and calls): far enough for the models'
// `take` helpers (compare, add, select through a call, reshape, gather).
constexpr int kMaxDepth = 64;

// Every use of every value in the module, the calls of each function and the
// function of each top-level return.
struct UseMap {
  std::unordered_map<const ir::Value*, std::vector<std::pair<const ir::Op*, size_t>>> uses;
  std::unordered_map<std::string, std::vector<const ir::Op*>> calls;
  std::unordered_map<const ir::Op*, const ir::Function*> return_of;
  bool contracts = false;  // the module has a dot or convolution
};

const ir::Function* Callee(const ir::Module& module, const ir::Op& call) {
  const ir::Attribute* callee = call.attr("callee");
  const auto* symbol = callee ? callee->get_if<ir::SymbolRefAttr>() : nullptr;
  return symbol ? module.FindFunction(symbol->name) : nullptr;
}

UseMap BuildUseMap(const ir::Module& module) {
  UseMap map;
  for (const auto& fn : module.functions()) {
    const ir::Function* f = fn.get();
    ir::WalkOps(f->body(), [&](const ir::Op& op) {
      for (size_t i = 0; i < op.num_operands(); ++i) map.uses[op.operand(i)].push_back({&op, i});
      switch (op.code()) {
        case OpCode::kFuncCall:
          if (const ir::Function* callee = Callee(module, op)) map.calls[callee->name()].push_back(&op);
          break;
        case OpCode::kFuncReturn:
          map.return_of[&op] = f;
          break;
        case OpCode::kDotGeneral:
        case OpCode::kDot:
        case OpCode::kConvolution:
          map.contracts = true;
          break;
        default:
          break;
      }
    });
  }
  return map;
}

int64_t Product(const ir::Type& type, const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) {
    if (d >= 0 && d < type.rank()) p *= std::max<int64_t>(type.dim(d), 1);
  }
  return p;
}

std::vector<int64_t> StructField(const ir::Op& op, std::string_view attr, std::string_view field) {
  const ir::StructAttr* s = op.GetStruct(attr);
  if (s == nullptr) return {};
  for (const ir::StructField& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

// What the uses of one argument say, gathered while following it.
struct Findings {
  int64_t fan_in = 0;        // largest contraction found (0: none)
  int64_t index_extent = 0;  // smallest extent found (0: none)
  bool data_use = false;     // a convolution's input, a gathered or sliced table
  std::string weight_why, index_why;

  void Weight(int64_t n, std::string why) {
    if (n > fan_in) {
      fan_in = n;
      weight_why = std::move(why);
    }
  }
  void Index(int64_t n, std::string why) {
    n = std::max<int64_t>(n, 1);
    if (index_extent == 0 || n < index_extent) {
      index_extent = n;
      index_why = std::move(why);
    }
  }
};

class Tracer {
 public:
  Tracer(const ir::Module& module, const UseMap& map) : module_(module), map_(map) {}

  void Follow(const ir::Value* value, int depth, Findings& out) {
    if (depth > kMaxDepth || !visited_.insert(value).second) return;
    auto it = map_.uses.find(value);
    if (it == map_.uses.end()) return;
    const bool integer = value->type().is_tensor() && ir::IsInteger(value->type().dtype());
    for (const auto& [op, i] : it->second) Use(*op, i, integer, depth, out);
  }

 private:
  void Use(const ir::Op& op, size_t i, bool integer, int depth, Findings& out) {
    const ir::Type& operand = op.operand(i)->type();
    switch (op.code()) {
      case OpCode::kDotGeneral: {
        if (i > 1) return;
        const int64_t n = Product(operand, StructField(op, "dot_dimension_numbers",
                                                       i == 0 ? "lhs_contracting_dimensions"
                                                              : "rhs_contracting_dimensions"));
        out.Weight(n, "dot_general contracting " + std::to_string(n));
        return;
      }
      case OpCode::kDot: {
        if (i > 1 || operand.rank() == 0) return;
        const int64_t n = operand.dim(i == 0 ? operand.rank() - 1 : 0);
        out.Weight(n, "dot contracting " + std::to_string(n));
        return;
      }
      case OpCode::kConvolution: {
        if (i == 0) out.data_use = true;
        if (i != 1) return;
        const ir::Attribute* a = op.attr("dimension_numbers");
        const auto* dn = a ? a->get_if<ir::ConvDimensionNumbers>() : nullptr;
        const int64_t out_dim = dn ? dn->kernel_output_feature_dimension : operand.rank() - 1;
        int64_t n = 1;
        for (int64_t d = 0; d < operand.rank(); ++d) {
          if (d != out_dim) n *= std::max<int64_t>(operand.dim(d), 1);
        }
        out.Weight(n, "convolution kernel, fan-in " + std::to_string(n));
        return;
      }
      case OpCode::kGather: {
        if (i == 0) out.data_use = true;  // a table: data (an embedding, unit scale)
        if (i != 1) return;
        const ir::Type& table = op.operand(0)->type();
        const std::vector<int64_t> map = StructField(op, "dimension_numbers", "start_index_map");
        const std::vector<int64_t> sizes = op.GetI64Array("slice_sizes").value_or(std::vector<int64_t>{});
        for (int64_t d : map) {
          if (d < 0 || d >= table.rank()) continue;
          const int64_t size = static_cast<size_t>(d) < sizes.size() ? sizes[static_cast<size_t>(d)] : 1;
          out.Index(table.dim(d) - size + 1, "gather from " + std::to_string(table.dim(d)));
        }
        return;
      }
      case OpCode::kDynamicSlice: {
        if (i == 0) out.data_use = true;
        if (i == 0) return;
        const ir::Type& table = op.operand(0)->type();
        const int64_t d = static_cast<int64_t>(i) - 1;
        const std::vector<int64_t> sizes = op.GetI64Array("slice_sizes").value_or(std::vector<int64_t>{});
        if (d >= table.rank() || static_cast<size_t>(d) >= sizes.size()) return;
        out.Index(table.dim(d) - sizes[static_cast<size_t>(d)] + 1,
                  "dynamic_slice start in " + std::to_string(table.dim(d)));
        return;
      }
      case OpCode::kDynamicUpdateSlice: {
        if (i < 2) return;
        const ir::Type& table = op.operand(0)->type();
        const ir::Type& update = op.operand(1)->type();
        const int64_t d = static_cast<int64_t>(i) - 2;
        if (d >= table.rank() || d >= update.rank()) return;
        out.Index(table.dim(d) - update.dim(d) + 1,
                  "dynamic_update_slice start in " + std::to_string(table.dim(d)));
        return;
      }
      case OpCode::kFuncCall: {
        const ir::Function* callee = Callee(module_, op);
        if (callee != nullptr && callee->entry() != nullptr && i < callee->entry()->num_args()) {
          Follow(callee->entry()->arg(i), depth + 1, out);
        }
        return;
      }
      case OpCode::kFuncReturn: {
        auto fn = map_.return_of.find(&op);
        if (fn == map_.return_of.end()) return;
        auto calls = map_.calls.find(fn->second->name());
        if (calls == map_.calls.end()) return;
        for (const ir::Op* call : calls->second) {
          if (i < call->num_results()) Follow(call->result(i), depth + 1, out);
        }
        return;
      }
      // Shape-only ops carry the value on unchanged.
      case OpCode::kConvert:
      case OpCode::kReshape:
      case OpCode::kTranspose:
      case OpCode::kBroadcastInDim:
      case OpCode::kBroadcast:
      case OpCode::kSlice:
      case OpCode::kConcatenate:
        if (op.num_results() == 1) Follow(op.result(0), depth + 1, out);
        return;
      // Index arithmetic (jnp.take wraps negative indices: compare, add,
      // select), integers only: a float weight plus something is not a weight.
      case OpCode::kAdd:
      case OpCode::kSubtract:
      case OpCode::kSelect:
      case OpCode::kClamp:
        if (integer && op.num_results() == 1 && !(op.code() == OpCode::kSelect && i == 0)) {
          Follow(op.result(0), depth + 1, out);
        }
        return;
      default:
        return;
    }
  }

  const ir::Module& module_;
  const UseMap& map_;
  std::unordered_set<const ir::Value*> visited_;
};

// SplitMix64.
uint64_t Next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::vector<ArgumentRole> InferArgumentRoles(const ir::Module& module, const ir::Function& entry) {
  std::vector<ArgumentRole> roles(entry.arg_types().size());
  if (entry.entry() == nullptr) return roles;
  const UseMap map = BuildUseMap(module);
  for (size_t a = 0; a < roles.size() && a < entry.entry()->num_args(); ++a) {
    const ir::Type& type = entry.arg_types()[a];
    if (!type.is_tensor()) continue;
    Findings found;
    Tracer(module, map).Follow(entry.entry()->arg(a), 0, found);
    ArgumentRole& role = roles[a];
    if (ir::IsFloat(type.dtype())) {
      if (found.fan_in > 0) {
        role = {ArgumentRole::Kind::kWeight, found.fan_in, 0, found.weight_why};
      } else if (map.contracts && !found.data_use && found.index_extent == 0 && type.rank() >= 2) {
        int64_t fan_in = 1;
        for (int64_t d = 0; d + 1 < type.rank(); ++d) fan_in *= std::max<int64_t>(type.dim(d), 1);
        role = {ArgumentRole::Kind::kWeight, fan_in, 0, "shape, fan-in " + std::to_string(fan_in)};
      }
    } else if (ir::IsInteger(type.dtype()) && found.index_extent > 0) {
      role = {ArgumentRole::Kind::kIndex, 0, found.index_extent, found.index_why};
    }
  }
  return roles;
}

StatusOr<eval::RuntimeValue> RandomArgument(const ir::Type& type, const ArgumentRole& role,
                                            uint64_t seed) {
  if (!type.is_tensor()) {
    if (type.is_token()) return eval::RuntimeValue::Token();
    if (type.is_tuple()) {
      std::vector<eval::RuntimeValue> elements;
      uint64_t state = seed;
      for (const ir::Type& element : type.elements()) {
        JITD_ASSIGN_OR_RETURN(eval::RuntimeValue v, RandomArgument(element, {}, Next(state)));
        elements.push_back(std::move(v));
      }
      return eval::RuntimeValue::Tuple(std::move(elements));
    }
  }
  const ir::DType dtype = type.dtype();
  if (ir::IsInteger(dtype)) {
    // Indices in [0, extent); other integers (masks, flags) 0 or 1.
    const uint64_t extent =
        role.kind == ArgumentRole::Kind::kIndex ? static_cast<uint64_t>(role.index_extent) : 2;
    JITD_ASSIGN_OR_RETURN(ir::Literal literal, ir::Literal::Create(type));
    uint64_t state = seed;
    for (int64_t i = 0; i < literal.num_elements(); ++i) {
      literal.SetInt(i, static_cast<int64_t>(Next(state) % std::max<uint64_t>(extent, 1)));
    }
    return eval::RuntimeValue(std::move(literal));
  }
  // Floats uniform in [-1, 1) (eval::RandomLiteral), weights scaled to
  // +-sqrt(3 / fan_in): variance 1 / fan_in, a layer's output keeps its
  // input's scale.
  JITD_ASSIGN_OR_RETURN(ir::Literal literal, eval::RandomLiteral(type, seed));
  if (role.kind == ArgumentRole::Kind::kWeight && ir::IsFloat(dtype)) {
    const double bound = std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(role.fan_in, 1)));
    const int64_t n = literal.num_elements();
    if (dtype == ir::DType::kF32) {
      uint8_t* bytes = literal.mutable_bytes().data();
      const float scale = static_cast<float>(bound);
      for (int64_t i = 0; i < n; ++i) {
        float f;
        std::memcpy(&f, bytes + 4 * i, 4);
        f *= scale;
        std::memcpy(bytes + 4 * i, &f, 4);
      }
    } else {
      for (int64_t i = 0; i < n; ++i) literal.SetDouble(i, literal.GetDouble(i) * bound);
    }
  }
  return eval::RuntimeValue(std::move(literal));
}

bool AllFloatResultsNonFinite(const std::vector<eval::RuntimeValue>& results) {
  bool any_float = false;
  for (const eval::RuntimeValue& value : results) {
    if (!value.is_tensor()) continue;
    const ir::Literal& literal = value.literal();
    if (!ir::IsFloat(literal.dtype())) continue;
    for (int64_t i = 0; i < literal.num_elements(); ++i) {
      any_float = true;
      if (std::isfinite(literal.GetDouble(i))) return false;
    }
  }
  return any_float;
}

std::string NonFiniteHint(bool random_inputs) {
  std::string hint =
      "warning: every floating-point result is NaN or Inf: the computation overflowed "
      "or divided by zero.";
  if (random_inputs) {
    hint += " With --random-inputs, try other data: --seed=N, real inputs with "
            "--input NAME=FILE.npy, or --resource-fill=uniform|weights for elided weights.";
  } else {
    hint += " Check the inputs' scale (weights too large?) and ranges (indices, masks).";
  }
  return hint;
}

}  // namespace jitd::tools
