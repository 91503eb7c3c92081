// The evaluator core: runs functions and regions op by op, implements the
// ops that are about structure (constants, calls, control flow, tuples,
// tokens) and dispatches everything else to the kernel table.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "jit/eval/custom_calls.h"
#include "jit/eval/eval.h"
#include "jit/eval/internal/kernels.h"
#include "jit/eval/internal/quantized.h"

namespace jitd::eval {

using ir::Literal;
using ir::Op;
using ir::OpCode;
using ir::Type;

ir::Type RuntimeValue::type() const {
  if (is_tensor()) return literal().type();
  if (is_token()) return Type::Token();
  if (is_future()) {
    std::vector<Type> types;
    for (const auto& e : future_values()) types.push_back(e.type());
    return Type::Future(std::move(types));
  }
  std::vector<Type> types;
  for (const auto& e : elements()) types.push_back(e.type());
  return Type::Tuple(std::move(types));
}

namespace {

// Calls and regions (while / if / case bodies, reducers, comparators)
// entered inside each other at most this deep. Each level recurses on the
// native stack (about 4 KiB), so this keeps a run under ~1 MiB of stack;
// verified modules nest regions at most ir::kMaxRegionNesting deep, so only
// calls (recursion) reach it.
constexpr int kMaxDepth = 256;

}  // namespace

std::string_view RandomFillName(RandomFill fill) {
  switch (fill) {
    case RandomFill::kUniform: return "uniform";
    case RandomFill::kWeights: return "weights";
  }
  return "?";
}

StatusOr<RandomFill> ParseRandomFill(std::string_view name) {
  for (RandomFill fill : {RandomFill::kUniform, RandomFill::kWeights}) {
    if (name == RandomFillName(fill)) return fill;
  }
  return InvalidArgument("unknown random fill '" + std::string(name) +
                         "' (expected 'uniform' or 'weights')");
}

StatusOr<Literal> RandomLiteral(const Type& type, uint64_t seed, int64_t max_bytes,
                                RandomFill fill) {
  JITD_ASSIGN_OR_RETURN(Literal lit, Literal::Create(type, max_bytes));
  uint64_t state = seed;
  const ir::DType dtype = type.dtype();
  const int64_t n = lit.num_elements();
  // Floats are `offset + scale * unit` for unit uniform in [0, 1).
  double offset = -1, scale = 2;
  if (fill == RandomFill::kWeights) {
    const auto& dims = type.dims();
    if (dims.size() >= 2) {
      int64_t fan_in = 1;
      for (size_t d = 0; d + 1 < dims.size(); ++d) fan_in *= dims[d];
      const double bound = std::sqrt(3.0 / static_cast<double>(std::max<int64_t>(fan_in, 1)));
      offset = -bound;
      scale = 2 * bound;
    } else {
      offset = 0.5;
      scale = 1;
    }
  }
  // f32 / f64 (model weights: ~10^8 elements) written directly, with the
  // bits SetDouble would give.
  if (dtype == ir::DType::kF32 || dtype == ir::DType::kF64) {
    uint8_t* out = lit.mutable_bytes().data();
    for (int64_t i = 0; i < n; ++i) {
      const double v = offset + scale * internal::UnitInterval(internal::SplitMix(state));
      if (dtype == ir::DType::kF32) {
        const float f = static_cast<float>(v);
        std::memcpy(out + 4 * i, &f, 4);
      } else {
        std::memcpy(out + 8 * i, &v, 8);
      }
    }
    return lit;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = internal::SplitMix(state);
    const double unit = internal::UnitInterval(r);  // [0, 1)
    if (dtype == ir::DType::kPred) {
      lit.SetInt(i, static_cast<int64_t>(r & 1));
    } else if (ir::IsInteger(dtype)) {
      lit.SetInt(i, ir::IsUnsignedInt(dtype) ? static_cast<int64_t>(r % 8)
                                             : static_cast<int64_t>(r % 9) - 4);
    } else if (ir::IsComplex(dtype)) {
      const double im = internal::UnitInterval(internal::SplitMix(state));
      lit.SetComplex(i, {offset + scale * unit, offset + scale * im});
    } else {
      lit.SetDouble(i, offset + scale * unit);
    }
  }
  return lit;
}

StatusOr<Literal> ResourceFillLiteral(const Type& type, std::string_view handle, uint64_t place, uint64_t seed,
                                      RandomFill fill, int64_t max_bytes) {
  for (char c : handle) seed = seed * 1099511628211ull + static_cast<uint8_t>(c);
  seed += place << 32;
  return RandomLiteral(type, seed, max_bytes, fill);
}

OpPlaces ComputeOpPlaces(const ir::Module& module) {
  OpPlaces places;
  std::unordered_map<std::string, uint64_t> next;
  std::unordered_set<const ir::Function*> reached;
  struct Frame {
    const std::vector<std::unique_ptr<ir::Op>>* ops;
    size_t next = 0;
  };
  std::vector<Frame> stack;
  auto push_region = [&](const ir::Region& region) {
    for (size_t b = region.num_blocks(); b-- > 0;) stack.push_back({&region.block(b).ops()});
  };
  auto walk = [&](const ir::Function* fn) {
    if (fn == nullptr || !reached.insert(fn).second) return;
    push_region(fn->body());
    while (!stack.empty()) {
      Frame& frame = stack.back();
      if (frame.next == frame.ops->size()) {
        stack.pop_back();
        continue;
      }
      const ir::Op& o = *(*frame.ops)[frame.next++];
      if (o.code() == ir::OpCode::kConstant) {
        const ir::Attribute* value = o.attr("value");
        if (const auto* r = value ? value->get_if<ir::DenseResourceAttr>() : nullptr) {
          places[&o] = next["dense_resource<" + r->handle + ">"]++;
        }
      } else if (o.code() == ir::OpCode::kRng) {
        places[&o] = next["stablehlo.rng"]++;
      }
      // Pushed last, walked first: a called function, then the op's regions
      // (where inlining puts them: before the op's successors).
      for (size_t r = o.num_regions(); r-- > 0;) push_region(o.region(r));
      if (o.code() == ir::OpCode::kFuncCall) {
        const ir::Attribute* callee = o.attr("callee");
        const auto* name = callee ? callee->get_if<ir::SymbolRefAttr>() : nullptr;
        const ir::Function* fn = name ? module.FindFunction(name->name) : nullptr;
        if (fn != nullptr && reached.insert(fn).second) push_region(fn->body());
      }
    }
  };
  walk(module.EntryFunction());
  for (const auto& fn : module.functions()) walk(fn.get());
  return places;
}

namespace internal {

std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

RuntimeValue ScalarOf(const Literal& lit, int64_t i) {
  Literal scalar = *Literal::Create(Type::Scalar(lit.dtype()));
  std::memcpy(scalar.mutable_element_ptr(0), lit.element_ptr(i),
              static_cast<size_t>(ir::StorageBytes(lit.dtype())));
  return RuntimeValue(std::move(scalar));
}

void StoreScalar(const RuntimeValue& scalar, Literal& out, int64_t i) {
  std::memcpy(out.mutable_element_ptr(i), scalar.literal().element_ptr(0),
              static_cast<size_t>(ir::StorageBytes(out.dtype())));
}

// Runs a module's functions. One instance per EvaluateFunction call; not
// thread-safe.
class Evaluator {
 public:
  Evaluator(const ir::Module& module, const EvalOptions& options)
      : module_(module), options_(options) {
    kernels_.fill(nullptr);
    RegisterElementwiseKernels(kernels_);
    RegisterShapeKernels(kernels_);
    RegisterIndexingKernels(kernels_);
    RegisterReductionKernels(kernels_);
    RegisterLinalgKernels(kernels_);
    RegisterComposedKernels(kernels_);
    RegisterQuantizedKernels(kernels_);
  }

  const EvalOptions& options() const { return options_; }

  // One op on given operand values, in a frame of its own.
  StatusOr<std::vector<RuntimeValue>> EvalDetached(const Op& op,
                                                   std::vector<RuntimeValue> operands) {
    if (operands.size() != op.num_operands()) {
      return InvalidArgument(op.loc().ToString() + ": '" + std::string(op.name()) + "' takes " +
                             std::to_string(op.num_operands()) + " operands, got " +
                             std::to_string(operands.size()));
    }
    if (op.code() == OpCode::kReturn || op.code() == OpCode::kFuncReturn) {
      return InvalidArgument(op.loc().ToString() + ": a terminator cannot be evaluated alone");
    }
    for (size_t i = 0; i < operands.size(); ++i) {
      if (operands[i].type() != op.operand(i)->type()) {
        return InvalidArgument(op.loc().ToString() + ": operand " + std::to_string(i) +
                               " must be " + op.operand(i)->type().ToString() + ", got " +
                               operands[i].type().ToString());
      }
    }
    Frame frame;
    for (size_t i = 0; i < operands.size(); ++i) {
      frame.values[op.operand(i)] = std::move(operands[i]);
    }
    frames_.push_back(&frame);
    auto result = EvalOp(op);
    frames_.pop_back();
    if (result.ok() && result->size() != op.num_results()) {
      return Internal(op.loc().ToString() + ": '" + std::string(op.name()) + "' produced " +
                      std::to_string(result->size()) + " values for " +
                      std::to_string(op.num_results()) + " results");
    }
    return result;
  }

  // Runs `region`'s entry block in a fresh frame (RegionEvaluator).
  StatusOr<std::vector<RuntimeValue>> RunStandaloneRegion(const ir::Region& region,
                                                          std::vector<RuntimeValue> args) {
    if (region.num_blocks() == 0) return InvalidArgument("the region is empty");
    const ir::Block& block = region.block(0);
    if (args.size() != block.num_args()) {
      return InvalidArgument("the region takes " + std::to_string(block.num_args()) +
                             " arguments, got " + std::to_string(args.size()));
    }
    Frame frame;
    frames_.push_back(&frame);
    auto result = RunBlock(block, std::move(args));
    frames_.pop_back();
    return result;
  }

  StatusOr<std::vector<RuntimeValue>> CallFunction(const ir::Function& fn,
                                                   std::vector<RuntimeValue> args) {
    const ir::Block* entry = fn.entry();
    if (!entry) {
      return Unimplemented("function @" + fn.name() + " has no body (an external declaration)");
    }
    if (args.size() != entry->num_args()) {
      return InvalidArgument("@" + fn.name() + " takes " + std::to_string(entry->num_args()) +
                             " arguments, got " + std::to_string(args.size()));
    }
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i].type() != entry->arg(i)->type()) {
        return InvalidArgument("argument " + std::to_string(i) + " of @" + fn.name() +
                               " must be " + entry->arg(i)->type().ToString() + ", got " +
                               args[i].type().ToString());
      }
    }
    if (++depth_ > kMaxDepth) {
      --depth_;
      return ResourceExhausted("calls nested deeper than " + std::to_string(kMaxDepth) +
                               " levels, the limit (recursion?) at @" + fn.name());
    }
    Frame frame;
    frames_.push_back(&frame);
    auto result = RunBlock(*entry, std::move(args));
    frames_.pop_back();
    --depth_;
    return result;
  }

  // Binds `args` to the block's arguments, runs its ops, and returns the
  // values of its terminator's operands.
  StatusOr<std::vector<RuntimeValue>> RunBlock(const ir::Block& block,
                                               std::vector<RuntimeValue> args) {
    Frame& frame = *frames_.back();
    for (size_t i = 0; i < args.size(); ++i) frame.values[block.arg(i)] = std::move(args[i]);
    for (const auto& op_ptr : block.ops()) {
      const Op& op = *op_ptr;
      if (op.code() == OpCode::kReturn || op.code() == OpCode::kFuncReturn) {
        std::vector<RuntimeValue> out;
        out.reserve(op.num_operands());
        const auto operands = op.operands();
        for (size_t k = 0; k < operands.size(); ++k) {
          const ir::Value* v = operands[k];
          JITD_ASSIGN_OR_RETURN(const RuntimeValue* rv, Get(op, v));
          // A value of this block dies with it (a loop body defines it anew
          // each iteration): move it out instead of copying, unless it is
          // returned twice.
          const bool local = v->owner_block() == &block ||
                             (v->defining_op() && v->defining_op()->parent_block() == &block);
          if (local && std::count(operands.begin(), operands.end(), v) == 1) {
            out.push_back(std::move(*const_cast<RuntimeValue*>(rv)));
          } else {
            out.push_back(*rv);
          }
        }
        return out;
      }
      JITD_RETURN_IF_ERROR(CheckDeadline(op));
      const bool timed = options_.op_profile || options_.op_trace;
      const auto start =
          timed ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
      JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> results, EvalOp(op));
      if (timed) {
        const int64_t nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count();
        if (options_.op_profile) {
          auto& row = (*options_.op_profile)[&op];
          ++row.first;
          row.second += nanos;
        }
        if (EvalOptions::OpTrace* trace = options_.op_trace) {
          if (trace->spans.size() < trace->max_spans) {
            trace->spans.push_back(
                {&op,
                 std::chrono::duration_cast<std::chrono::nanoseconds>(start.time_since_epoch())
                     .count(),
                 nanos});
          } else {
            ++trace->dropped;
          }
        }
      }
      if (results.size() != op.num_results()) {
        return Internal(op.loc().ToString() + ": '" + std::string(op.name()) + "' produced " +
                        std::to_string(results.size()) + " values for " +
                        std::to_string(op.num_results()) + " results");
      }
      for (size_t i = 0; i < results.size(); ++i) {
        frame.values[op.result(i)] = std::move(results[i]);
      }
    }
    return InvalidArgument("block ends without a terminator");
  }

  // Runs the entry block of region `r` of `op` one level deeper (kMaxDepth).
  StatusOr<std::vector<RuntimeValue>> RunRegion(const Op& op, size_t r,
                                                std::vector<RuntimeValue> args) {
    if (depth_ >= kMaxDepth) {
      return OpError(op, StatusCode::kResourceExhausted,
                     "runs calls and regions nested deeper than " + std::to_string(kMaxDepth) +
                         " levels, the limit (recursion?)");
    }
    ++depth_;
    auto result = RunBlock(op.region(r).block(0), std::move(args));
    --depth_;
    return result;
  }

  StatusOr<Literal> NewLiteral(const Type& type) const {
    return Literal::Create(type, options_.max_literal_bytes);
  }

  // Evaluates one op with `values[i]` bound to `bindings[i]` (its operands
  // and any outer values its regions use).
  StatusOr<std::vector<RuntimeValue>> EvaluateOne(const Op& op,
                                                  std::span<const ir::Value* const> values,
                                                  std::span<const RuntimeValue> bindings) {
    if (values.size() != bindings.size()) {
      return InvalidArgument("EvaluateOp: " + std::to_string(values.size()) + " values but " +
                             std::to_string(bindings.size()) + " bindings");
    }
    Frame frame;
    for (size_t i = 0; i < values.size(); ++i) frame.values[values[i]] = bindings[i];
    frames_.push_back(&frame);
    auto result = EvalOp(op);
    frames_.pop_back();
    return result;
  }

 private:
  struct Frame {
    std::unordered_map<const ir::Value*, RuntimeValue> values;
  };

  static Status OpError(const Op& op, StatusCode code, const std::string& message) {
    return Status(code, op.loc().ToString() + ": '" + std::string(op.name()) + "' op " + message);
  }

  StatusOr<const RuntimeValue*> Get(const Op& op, const ir::Value* v) {
    Frame& frame = *frames_.back();
    auto it = frame.values.find(v);
    if (it == frame.values.end()) {
      return OpError(op, StatusCode::kInternal, "uses a value that has not been computed");
    }
    return &it->second;
  }

  Status CheckDeadline(const Op& op) {
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) return CancelledStatus();
    if (!options_.deadline) return Status::Ok();
    if (std::chrono::steady_clock::now() < *options_.deadline) return Status::Ok();
    return OpError(op, StatusCode::kDeadlineExceeded, "evaluation ran past its deadline");
  }

  StatusOr<std::vector<RuntimeValue>> EvalOp(const Op& op) {
    std::vector<const RuntimeValue*> operands;
    operands.reserve(op.num_operands());
    for (const ir::Value* v : op.operands()) {
      JITD_ASSIGN_OR_RETURN(const RuntimeValue* rv, Get(op, v));
      operands.push_back(rv);
    }
    OpContext ctx(*this, op, std::move(operands));
    switch (op.code()) {
      case OpCode::kConstant: return EvalConstant(ctx);
      case OpCode::kFuncCall: {
        const auto* callee = op.attr("callee")->get_if<ir::SymbolRefAttr>();
        const ir::Function* fn = callee ? module_.FindFunction(callee->name) : nullptr;
        if (!fn) return ctx.Error("calls an unknown function");
        std::vector<RuntimeValue> args;
        for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.value(i));
        return CallFunction(*fn, std::move(args));
      }
      case OpCode::kWhile: return EvalWhile(ctx);
      case OpCode::kIf: {
        const bool pred = ctx.operand(0).GetPred(0);
        return ctx.CallRegion(pred ? 0 : 1, {});
      }
      case OpCode::kCase: {
        const int64_t n = static_cast<int64_t>(op.num_regions());
        int64_t index = ctx.operand(0).GetInt(0);
        if (index < 0 || index >= n) index = n - 1;  // out of range: the last branch
        return ctx.CallRegion(static_cast<size_t>(index), {});
      }
      case OpCode::kComposite: {
        // What the op means: its decomposition function on its operands.
        const auto* callee = op.attr("decomposition")->get_if<ir::SymbolRefAttr>();
        const ir::Function* fn = callee ? module_.FindFunction(callee->name) : nullptr;
        if (!fn) return ctx.Error("has an unknown decomposition function");
        std::vector<RuntimeValue> args;
        for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.value(i));
        return CallFunction(*fn, std::move(args));
      }
      case OpCode::kFusion: {
        // A fused kernel computes what its region computes on its operands.
        std::vector<RuntimeValue> args;
        for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.value(i));
        return ctx.CallRegion(0, std::move(args));
      }
      case OpCode::kAsyncStart: {
        // Asynchrony is not guaranteed (spec.md): the body's op runs now,
        // on the values it captures (or on block arguments bound to the
        // operands), and the future holds its results.
        std::vector<RuntimeValue> args;
        if (op.region(0).block(0).num_args() > 0) {
          for (size_t i = 0; i < ctx.num_operands(); ++i) args.push_back(ctx.value(i));
        }
        JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> values, ctx.CallRegion(0, std::move(args)));
        return std::vector<RuntimeValue>{RuntimeValue::Future(std::move(values))};
      }
      case OpCode::kAsyncDone: {
        if (!ctx.value(0).is_future()) return ctx.Error("waits on a value that is not a future");
        return ctx.value(0).future_values();
      }
      case OpCode::kOptimizationBarrier: {
        std::vector<RuntimeValue> out;
        for (size_t i = 0; i < ctx.num_operands(); ++i) out.push_back(ctx.value(i));
        return out;
      }
      case OpCode::kTuple: {
        std::vector<RuntimeValue> elements;
        for (size_t i = 0; i < ctx.num_operands(); ++i) elements.push_back(ctx.value(i));
        std::vector<RuntimeValue> out;
        out.push_back(RuntimeValue::Tuple(std::move(elements)));
        return out;
      }
      case OpCode::kGetTupleElement: {
        const auto& elements = ctx.value(0).elements();
        const int64_t index = ctx.Int("index", 0);
        if (index < 0 || index >= static_cast<int64_t>(elements.size())) {
          return ctx.Error("index out of range");
        }
        return std::vector<RuntimeValue>{elements[static_cast<size_t>(index)]};
      }
      case OpCode::kAfterAll:
      case OpCode::kCreateToken:
        return std::vector<RuntimeValue>{RuntimeValue::Token()};
      case OpCode::kReplicaId:
      case OpCode::kPartitionId: return ReplicaOrPartitionIdKernel(ctx);
      case OpCode::kInterpreterProbe: {
        if (options_.probe && ctx.value(0).is_tensor()) {
          std::string id;
          if (const ir::Attribute* a = op.attr("probe_id")) {
            if (const auto* s = a->get_if<ir::StringAttr>()) id = s->value;
          }
          JITD_RETURN_IF_ERROR(options_.probe(id, ctx.value(0).literal()));
        }
        return std::vector<RuntimeValue>{ctx.value(0)};
      }
      case OpCode::kInterpreterPrint: {
        // The reference interpreter's debugging print, to stdout.
        static std::mutex print_mu;
        const std::string text = ctx.value(0).is_tensor()
                                     ? ir::Attribute(ir::MakeDenseElements(ctx.operand(0))).ToString()
                                     : ctx.value(0).type().ToString();
        std::lock_guard<std::mutex> lock(print_mu);
        std::fprintf(stdout, "%s\n", text.c_str());
        std::fflush(stdout);
        return std::vector<RuntimeValue>{};
      }
      case OpCode::kInterpreterRunParallel: {
        if (!options_.run_parallel) {
          return ctx.Unimplemented("runs only under `jitd conformance` (the reference interpreter's "
                                   "multi-process driver); use num_replicas / num_partitions to run a program "
                                   "as several processes");
        }
        std::vector<RuntimeValue> operands;
        for (size_t i = 0; i < ctx.num_operands(); ++i) operands.push_back(ctx.value(i));
        return options_.run_parallel(op, std::move(operands));
      }
      case OpCode::kInfeed: return EvalInfeed(ctx);
      case OpCode::kOutfeed: return EvalOutfeed(ctx);
      case OpCode::kCustomCall: {
        // jitd's fixed registry (jaxlib's CPU LAPACK targets and jax's own).
        std::vector<const Literal*> args;
        for (size_t i = 0; i < ctx.num_operands(); ++i) {
          if (!ctx.value(i).is_tensor()) return ctx.Unimplemented("custom_call with a token or tuple operand");
          args.push_back(&ctx.operand(i));
        }
        auto results = RunCustomCall(op, args);
        if (!results.ok()) {
          if (results.status().code() == StatusCode::kUnimplemented) {
            return ctx.Unimplemented(results.status().message());
          }
          return ctx.Error(results.status().message());
        }
        std::vector<RuntimeValue> out;
        for (Literal& l : *results) out.emplace_back(std::move(l));
        return out;
      }
      default:
        break;
    }
    const Kernel kernel = kernels_[static_cast<size_t>(op.code())];
    if (!kernel) return ctx.Unimplemented("is not implemented by the interpreter");
    // bitcast_convert reinterprets a quantized value's storage bits (spec.md).
    if (op.code() != OpCode::kUniformQuantize && op.code() != OpCode::kUniformDequantize &&
        op.code() != OpCode::kBitcastConvert && HasQuantizedValues(op)) {
      return EvalDequantizeOpQuantize(ctx);
    }
    return kernel(ctx);
  }

  StatusOr<std::vector<RuntimeValue>> EvalConstant(OpContext& ctx) {
    const ir::Attribute* value = ctx.op().attr("value");
    if (const auto* dense = value->get_if<ir::DenseElementsAttr>()) {
      auto lit = ir::DenseElementsToLiteral(*dense, options_.max_literal_bytes);
      if (!lit.ok()) return ctx.Error(lit.status().message());
      return Single(std::move(lit).value());
    }
    const auto& resource = value->as<ir::DenseResourceAttr>();
    if (auto blob = module_.FindResourceBlob(resource.handle)) {
      auto lit = Literal::FromBytes(resource.type, std::move(*blob));
      if (!lit.ok()) {
        return ctx.Error("resource '" + resource.handle + "': " + lit.status().message());
      }
      return Single(std::move(lit).value());
    }
    if (!options_.resource_fill_seed) {
      return ctx.Error("dense_resource<" + resource.handle +
                       "> has no data in the module (elided weights); supply a fill seed");
    }
    auto lit = ResourceFillLiteral(resource.type, resource.handle, ctx.PlaceInProgram(),
                                   *options_.resource_fill_seed, options_.resource_fill,
                                   options_.max_literal_bytes);
    if (!lit.ok()) return ctx.Error(lit.status().message());
    return Single(std::move(lit).value());
  }

  // stablehlo.infeed: tensor results from the infeed hook, then a token.
  StatusOr<std::vector<RuntimeValue>> EvalInfeed(OpContext& ctx) {
    const Op& op = ctx.op();
    std::vector<Type> types;
    for (size_t i = 0; i < op.num_results(); ++i) {
      const Type& type = op.result(i)->type();
      if (type.is_token()) continue;
      if (!type.is_tensor()) return ctx.Unimplemented("infeed of a " + type.ToString());
      types.push_back(type);
    }
    if (!options_.infeed) {
      return ctx.Unimplemented("has no infeed queue to read from (run it through the daemon)");
    }
    StatusOr<std::vector<Literal>> values = options_.infeed(types, options_.deadline);
    if (!values.ok()) return OpError(op, values.status().code(), values.status().message());
    if (values->size() != types.size()) {
      return OpError(op, StatusCode::kInternal,
                     "the infeed gave " + std::to_string(values->size()) + " values for " +
                         std::to_string(types.size()) + " results");
    }
    std::vector<RuntimeValue> out;
    size_t next = 0;
    for (size_t i = 0; i < op.num_results(); ++i) {
      if (op.result(i)->type().is_token()) {
        out.push_back(RuntimeValue::Token());
        continue;
      }
      Literal& value = (*values)[next];
      if (value.type() != types[next]) {
        return OpError(op, StatusCode::kInvalidArgument,
                       "result " + std::to_string(i) + " is " + types[next].ToString() +
                           ", the infeed gave " + value.type().ToString());
      }
      out.emplace_back(std::move(value));
      ++next;
    }
    return out;
  }

  // stablehlo.outfeed: the tensor operands go to the outfeed hook.
  StatusOr<std::vector<RuntimeValue>> EvalOutfeed(OpContext& ctx) {
    const Op& op = ctx.op();
    std::vector<Literal> values;
    for (size_t i = 0; i < ctx.num_operands(); ++i) {
      const RuntimeValue& v = ctx.value(i);
      if (v.is_token()) continue;
      if (!v.is_tensor()) return ctx.Unimplemented("outfeed of a " + v.type().ToString());
      values.push_back(v.literal());
    }
    if (!options_.outfeed) {
      return ctx.Unimplemented("has no outfeed queue to write to (run it through the daemon)");
    }
    Status sent = options_.outfeed(std::move(values), options_.deadline);
    if (!sent.ok()) return OpError(op, sent.code(), sent.message());
    return std::vector<RuntimeValue>{RuntimeValue::Token()};
  }

  StatusOr<std::vector<RuntimeValue>> EvalWhile(OpContext& ctx) {
    std::vector<RuntimeValue> state;
    for (size_t i = 0; i < ctx.num_operands(); ++i) state.push_back(ctx.value(i));
    while (true) {
      JITD_RETURN_IF_ERROR(CheckDeadline(ctx.op()));
      JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> cond, ctx.CallRegion(0, state));
      if (cond.size() != 1 || !cond[0].is_tensor()) return ctx.Error("cond must return one i1");
      if (!cond[0].literal().GetPred(0)) return state;
      JITD_ASSIGN_OR_RETURN(state, ctx.CallRegion(1, std::move(state)));
    }
  }

 public:
  // Which op of its kind `op` is (OpPlaces; 0 for other ops): the caller's
  // places, else computed once per evaluator.
  uint64_t PlaceInProgram(const Op& op) {
    const OpPlaces* places = options_.op_places;
    if (places == nullptr) {
      if (!places_) places_ = ComputeOpPlaces(module_);
      places = &*places_;
    }
    auto it = places->find(&op);
    return it == places->end() ? 0 : it->second;
  }

 private:

  const ir::Module& module_;
  const EvalOptions& options_;
  KernelTable kernels_;
  std::optional<OpPlaces> places_;
  std::vector<Frame*> frames_;
  int depth_ = 0;
};

StatusOr<Literal> OpContext::NewLiteral(const Type& type) const {
  auto lit = evaluator_.NewLiteral(type);
  if (!lit.ok()) return Status(lit.status().code(), op_.loc().ToString() + ": '" +
                                                        std::string(op_.name()) + "' op " +
                                                        lit.status().message());
  return lit;
}

uint64_t OpContext::PlaceInProgram() const { return evaluator_.PlaceInProgram(op_); }

StatusOr<std::vector<RuntimeValue>> OpContext::EvaluateDetached(const ir::Op& op,
                                                                std::vector<RuntimeValue> operands) {
  return evaluator_.EvalDetached(op, std::move(operands));
}

StatusOr<std::vector<RuntimeValue>> OpContext::CallRegion(size_t r,
                                                          std::vector<RuntimeValue> args) {
  const ir::Region& region = op_.region(r);
  if (region.num_blocks() == 0) return Error("region " + std::to_string(r) + " is empty");
  return evaluator_.RunRegion(op_, r, std::move(args));
}

std::vector<int64_t> OpContext::I64s(std::string_view name) const {
  auto v = op_.GetI64Array(name);
  return v ? *v : std::vector<int64_t>{};
}

int64_t OpContext::Int(std::string_view name, int64_t default_value) const {
  auto v = op_.GetInt(name);
  return v ? *v : default_value;
}

bool OpContext::Bool(std::string_view name, bool default_value) const {
  auto v = op_.GetBool(name);
  return v ? *v : default_value;
}

std::string_view OpContext::Enum(std::string_view name, std::string_view default_value) const {
  const ir::EnumAttr* e = op_.GetEnum(name);
  return e ? std::string_view(e->value) : default_value;
}

std::vector<int64_t> OpContext::StructField(std::string_view attr, std::string_view field) const {
  const ir::StructAttr* s = op_.GetStruct(attr);
  if (!s) return {};
  for (const auto& f : s->fields) {
    if (f.name == field) return f.values;
  }
  return {};
}

std::vector<std::pair<int64_t, int64_t>> OpContext::Padding(std::string_view name,
                                                            int64_t rank) const {
  std::vector<std::pair<int64_t, int64_t>> pads(static_cast<size_t>(rank), {0, 0});
  const ir::Attribute* a = op_.attr(name);
  if (!a || !a->is<ir::DenseElementsAttr>()) return pads;
  auto lit = ir::DenseElementsToLiteral(a->as<ir::DenseElementsAttr>());
  if (!lit.ok()) return pads;
  for (int64_t i = 0; i < rank && 2 * i + 1 < lit->num_elements(); ++i) {
    pads[static_cast<size_t>(i)] = {lit->GetInt(2 * i), lit->GetInt(2 * i + 1)};
  }
  return pads;
}

const EvalOptions& OpContext::options() const { return evaluator_.options(); }

Status OpContext::Error(std::string message) const {
  return InvalidArgument(op_.loc().ToString() + ": '" + std::string(op_.name()) + "' op " +
                         message);
}

Status OpContext::Unimplemented(std::string message) const {
  return ::jitd::Unimplemented(op_.loc().ToString() + ": '" + std::string(op_.name()) + "' op " +
                               message);
}

}  // namespace internal

StatusOr<std::vector<RuntimeValue>> EvaluateOp(const ir::Module& module, const ir::Op& op,
                                               std::span<const ir::Value* const> values,
                                               std::span<const RuntimeValue> bindings,
                                               const EvalOptions& options) {
  internal::Evaluator evaluator(module, options);
  return evaluator.EvaluateOne(op, values, bindings);
}

StatusOr<std::vector<RuntimeValue>> EvaluateFunction(const ir::Module& module,
                                                     const ir::Function& function,
                                                     std::vector<RuntimeValue> args,
                                                     const EvalOptions& options) {
  internal::Evaluator evaluator(module, options);
  return evaluator.CallFunction(function, std::move(args));
}

StatusOr<std::vector<RuntimeValue>> EvaluateDetachedOp(const ir::Module& module,
                                                       const ir::Op& op,
                                                       std::vector<RuntimeValue> operands,
                                                       const EvalOptions& options) {
  internal::Evaluator evaluator(module, options);
  return evaluator.EvalDetached(op, std::move(operands));
}

RegionEvaluator::RegionEvaluator(const ir::Module& module, EvalOptions options)
    : options_(std::move(options)),
      evaluator_(std::make_unique<internal::Evaluator>(module, options_)) {}

RegionEvaluator::~RegionEvaluator() = default;

StatusOr<std::vector<RuntimeValue>> RegionEvaluator::Run(const ir::Region& region,
                                                         std::vector<RuntimeValue> args) {
  return evaluator_->RunStandaloneRegion(region, std::move(args));
}

}  // namespace jitd::eval
