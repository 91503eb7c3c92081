#include "devices/cuda/cuda_compiler.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "jit/codegen/fusion.h"
#include "jit/codegen/kernel_spec.h"
#include "jit/codegen/nvptx/grid_kernel_emitter.h"
#include "jit/codegen/nvptx/nvptx_backend.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/codegen/nvptx/scatter_kernel.h"
#include "jit/codegen/nvptx/window_kernel.h"
#include "jit/codegen/nvptx/gather_kernel.h"
#include "jit/codegen/nvptx/fft_kernel.h"
#include "jit/codegen/nvptx/rng_kernel.h"
#include "jit/codegen/nvptx/triangular_solve_kernel.h"
#include "jit/codegen/nvptx/sort_kernel.h"
#include "jit/codegen/nvptx/dot_kernel.h"
#include "devices/cuda/cholesky_kernel.h"
#include "devices/cuda/cublaslt_plan.h"
#include "devices/cuda/cudnn_filter_kernel.h"
#include "devices/cuda/cudnn_plan.h"
#include "devices/cuda/im2col_kernel.h"
#include "devices/cuda/im2col_plan.h"
#include "devices/cuda/cufft_normalize_kernel.h"
#include "devices/cuda/cufft_plan.h"
#include "jit/eval/eval.h"
#include "jit/ir/verifier.h"
#include "jit/passes/buffer_assignment.h"
#include "jit/passes/fusion.h"
#include "jit/passes/pass_manager.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

namespace jitd::devices::cuda {

namespace {

using ir::Op;
using ir::OpCode;

constexpr int64_t kArenaAlignment = 256;  // cudaMalloc's alignment

std::string PtxVersionText(int v) { return std::to_string(v / 10) + "." + std::to_string(v % 10); }

// Why the cuda device cannot run `op` (UNIMPLEMENTED, naming it).
Status Refuse(const Op& op, const std::string& why) {
  return Unimplemented("cuda: '" + std::string(op.name()) + "' at " + op.loc().ToString() +
                       " is not lowered for the cuda device yet (" + why + ")");
}

std::string WhyNotLowered(const Op& op) {
  switch (op.code()) {
    case OpCode::kDotGeneral:
    case OpCode::kDot:
      return "this matmul has no exact kernel and cuBLASLt is not built yet";
    case OpCode::kConvolution:
      return "convolutions go to cuDNN, not built yet";
    case OpCode::kFuncCall:
      return "calls have no cuda steps yet (the pipeline inlines them)";
    default:
      break;
  }
  if (op.num_regions() > 0) return "ops with regions other than fusible reductions have no kernels yet";
  return "no NVPTX kernel computes it";
}

// The first op of a jitd.fusion op the NVPTX kernels cannot compute: the
// one to name when the fusion is refused.
const Op* FirstUnloweredMember(const Op& fusion) {
  if (fusion.num_regions() != 1 || fusion.region(0).num_blocks() != 1) return &fusion;
  for (const auto& member : fusion.region(0).block(0).ops()) {
    if (member->code() == OpCode::kReturn) continue;
    if (member->code() == OpCode::kReduce ? !codegen::IsNvptxEmittableReduce(*member)
                                          : !codegen::IsNvptxFusibleOp(*member)) {
      return member.get();
    }
  }
  return &fusion;
}

// The bytes of a dense constant, splats expanded.
StatusOr<std::string> ConstantBytes(const Op& op) {
  const ir::Attribute* value = op.attr("value");
  const auto* dense = value ? value->get_if<ir::DenseElementsAttr>() : nullptr;
  if (!dense || !dense->data) {
    return Refuse(op, "only dense constants with their bytes in the program (no elided or resource constants)");
  }
  const ir::Type& type = op.result(0)->type();
  const int64_t bytes = type.byte_size();
  const std::vector<uint8_t>& data = *dense->data;
  std::string out(static_cast<size_t>(bytes), '\0');
  if (static_cast<int64_t>(data.size()) == bytes) {
    if (bytes > 0) std::memcpy(out.data(), data.data(), data.size());
    return out;
  }
  const int64_t element = ir::StorageBytes(type.dtype());
  if (static_cast<int64_t>(data.size()) != element) {
    return Internal("constant at " + op.loc().ToString() + " holds " + std::to_string(data.size()) +
                    " bytes for " + std::to_string(bytes));
  }
  for (int64_t at = 0; at < bytes; at += element) std::memcpy(out.data() + at, data.data(), data.size());
  return out;
}

// Multiply-adds of a dot_general or convolution: its result elements
// times the products each one sums (0 when the op's attributes do not say).
int64_t MultiplyAdds(const Op& op) {
  const int64_t results = op.result(0)->type().num_elements();
  int64_t per_result = 1;
  if (op.code() == OpCode::kConvolution) {
    const ir::Attribute* a = op.attr("dimension_numbers");
    const auto* dn = a ? a->get_if<ir::ConvDimensionNumbers>() : nullptr;
    if (!dn) return 0;
    const std::vector<int64_t>& kernel = op.operand(1)->type().dims();
    for (size_t d = 0; d < kernel.size(); ++d) {
      if (static_cast<int64_t>(d) != dn->kernel_output_feature_dimension) per_result *= kernel[d];
    }
  } else {
    StatusOr<MatmulProblem> problem = MatmulProblemOf(op);
    if (!problem.ok()) return 0;
    for (int64_t d : problem->lhs_contracting) per_result *= problem->lhs_dims[static_cast<size_t>(d)];
  }
  return results * per_result;
}

std::string DescribeSpec(const codegen::KernelSpec& spec, const codegen::GridPlan& plan) {
  std::string ops;
  for (const Op* op : spec.fused) {
    if (op->code() == OpCode::kConstant) continue;
    std::string name(op->name());
    if (const size_t dot = name.find('.'); dot != std::string::npos) name = name.substr(dot + 1);
    ops += (ops.empty() ? "" : " ") + name;
  }
  return std::string(codegen::GridKindName(plan.kind)) + " " + std::to_string(plan.work_items) +
         (plan.kind == codegen::GridKind::kFlat ? " elements" : " outputs x " + std::to_string(plan.extent)) +
         (plan.vector_width > 1 ? ", " + std::to_string(plan.vector_width) + " per thread" : "") +
         (plan.split > 1 ? ", split " + std::to_string(plan.split) + " ways" : "") + ": " + ops;
}

class Compiler {
 public:
  Compiler(const CudaCompileOptions& options, const ir::Module& module, CudaProgram& program,
           llvm::Module& llvm_module)
      : options_(options), module_(module), p_(program), llvm_module_(llvm_module) {}

  Status Plan(const ir::Function& entry) {
    const ir::Block* block = entry.entry();
    if (!block) return InvalidArgument("entry function @" + entry.name() + " has no body");
    for (size_t i = 0; i < block->num_args(); ++i) {
      const ir::Value* v = block->arg(i);
      if (!v->type().is_tensor()) {
        return Unimplemented("cuda: argument " + std::to_string(i) + " of @" + entry.name() +
                             " is not a tensor (tokens and tuples are not lowered for the cuda device)");
      }
      p_.argument_types.push_back(v->type());
      NewBuffer(v, CudaBuffer::Kind::kArgument, static_cast<int64_t>(i));
    }
    JITD_RETURN_IF_ERROR(PlanOps(*block, /*entry=*/true));
    position_ = next_position_;
    // Results stay live to the end.
    for (int32_t b : p_.results) {
      if (auto it = interval_of_.find(b); it != interval_of_.end()) {
        intervals_[it->second].last_use = position_;
      }
    }
    const passes::BufferAssignment assignment = passes::AssignBuffers(intervals_, kArenaAlignment);
    for (const auto& [buffer, interval] : interval_of_) {
      p_.buffers[static_cast<size_t>(buffer)].offset = assignment.offsets[interval];
    }
    p_.arena_bytes = assignment.arena_bytes;
    return Status::Ok();
  }

 private:
  // The ops of `block` in order, each at the next position (a region's
  // ops after the op owning it, so buffer intervals follow execution).
  Status PlanOps(const ir::Block& block, bool entry) {
    for (const auto& owned : block.ops()) {
      const Op& op = *owned;
      position_ = next_position_++;
      // A bitcast_convert (or a fusion of one) reinterprets quantized storage
      // bits, as lower-quantized leaves them at function boundaries; a
      // return passes them on.
      if (ir::HasQuantizedTypes(op) && op.code() != OpCode::kBitcastConvert && op.code() != OpCode::kFusion &&
          op.code() != OpCode::kFuncReturn) {
        // What lower-quantized leaves: quantized values around or inside
        // ops with regions, or a compile without a pipeline.
        return Refuse(op, "quantized types are lowered by the pipeline's lower-quantized pass, which leaves "
                          "them inside or around ops with regions");
      }
      switch (op.code()) {
        case OpCode::kConstant: {
          if (const auto* resource = op.attr("value")->get_if<ir::DenseResourceAttr>()) {
            JITD_RETURN_IF_ERROR(PlanResourceConstant(op, *resource));
            break;
          }
          JITD_ASSIGN_OR_RETURN(std::string bytes, ConstantBytes(op));
          p_.constants.push_back(std::move(bytes));
          NewBuffer(op.result(0), CudaBuffer::Kind::kConstant, static_cast<int64_t>(p_.constants.size() - 1));
          break;
        }
        case OpCode::kFusion:
          JITD_RETURN_IF_ERROR(PlanFusion(op));
          break;
        case OpCode::kScatter:
          JITD_RETURN_IF_ERROR(PlanScatter(op));
          break;
        case OpCode::kReduceWindow:
          JITD_RETURN_IF_ERROR(PlanReduceWindow(op));
          break;
        case OpCode::kGather:
          JITD_RETURN_IF_ERROR(PlanGather(op));
          break;
        case OpCode::kSort:
          JITD_RETURN_IF_ERROR(PlanSort(op));
          break;
        case OpCode::kSelectAndScatter:
          JITD_RETURN_IF_ERROR(PlanSelectAndScatter(op));
          break;
        case OpCode::kDotGeneral:
        case OpCode::kDot:
          JITD_RETURN_IF_ERROR(PlanDot(op));
          break;
        case OpCode::kConvolution:
          JITD_RETURN_IF_ERROR(PlanConvolution(op));
          break;
        case OpCode::kWhile:
          JITD_RETURN_IF_ERROR(PlanWhile(op));
          break;
        case OpCode::kIf:
        case OpCode::kCase:
          JITD_RETURN_IF_ERROR(PlanBranches(op));
          break;
        case OpCode::kFft:
          JITD_RETURN_IF_ERROR(PlanFft(op));
          break;
        case OpCode::kCholesky:
          JITD_RETURN_IF_ERROR(PlanCholesky(op));
          break;
        case OpCode::kTriangularSolve:
          JITD_RETURN_IF_ERROR(PlanTriangularSolve(op));
          break;
        case OpCode::kRngBitGenerator:
          JITD_RETURN_IF_ERROR(PlanRngBitGenerator(op));
          break;
        case OpCode::kReturn:
        case OpCode::kFuncReturn:
          if (!entry) break;  // a region's terminator: its owner reads it
          for (const ir::Value* v : op.operands()) {
            JITD_ASSIGN_OR_RETURN(int32_t b, Use(v, &op));
            p_.results.push_back(b);
            p_.result_types.push_back(v->type());
          }
          break;
        default:
          return Refuse(op, WhyNotLowered(op));
      }
    }
    return Status::Ok();
  }

  // stablehlo.while as host control flow (cuda_program.h's jumps):
  //   copies of the operands into the loop's buffers (its results);
  //   cond: its kernels, then kJumpUnless on its 1-byte pred to the end;
  //   body: its kernels, copies of its results into the loop's buffers
  //   (through snapshots where it returns one loop buffer in another's
  //   place), kJump back to cond.
  // Every value from before the loop that the loop reads stays live to the
  // loop's end (the loop reads it again on every iteration).
  Status PlanWhile(const Op& op) {
    if (op.num_regions() != 2 || op.region(0).num_blocks() != 1 || op.region(1).num_blocks() != 1) {
      return Refuse(op, "a while without one-block cond and body regions");
    }
    const ir::Block& cond = op.region(0).block(0);
    const ir::Block& body = op.region(1).block(0);
    const size_t n = op.num_operands();
    if (cond.num_args() != n || body.num_args() != n || op.num_results() != n) {
      return Refuse(op, "its regions' arguments differ from its operands in number");
    }
    for (size_t i = 0; i < n; ++i) {
      if (!op.operand(i)->type().is_tensor()) return Refuse(op, "a loop value that is not a tensor (tokens and tuples)");
    }
    std::vector<int32_t> carried;
    for (size_t i = 0; i < n; ++i) {
      JITD_ASSIGN_OR_RETURN(int32_t b, CopyIntoResult(op, i, "while"));
      carried.push_back(b);
      buffer_of_[cond.arg(i)] = b;
      buffer_of_[body.arg(i)] = b;
    }
    const int64_t loop_start = next_position_;
    const auto cond_step = static_cast<int32_t>(p_.steps.size());
    JITD_RETURN_IF_ERROR(PlanOps(cond, /*entry=*/false));
    const Op* cond_return = cond.terminator();
    if (!cond_return || cond_return->num_operands() != 1) return Refuse(op, "its cond does not return one value");
    position_ = next_position_++;
    JITD_ASSIGN_OR_RETURN(int32_t predicate, Use(cond_return->operand(0), &op));
    if (p_.buffers[static_cast<size_t>(predicate)].bytes != 1) {
      return Refuse(op, "its cond returns something other than one pred");
    }
    CudaStep test;
    test.kind = CudaStep::Kind::kJumpUnless;
    test.predicate = predicate;
    test.description = "while at " + op.loc().ToString() + ": exit unless cond";
    const size_t test_step = p_.steps.size();
    p_.steps.push_back(std::move(test));
    JITD_RETURN_IF_ERROR(PlanOps(body, /*entry=*/false));
    const Op* body_return = body.terminator();
    if (!body_return || body_return->num_operands() != n) return Refuse(op, "its body does not return every loop value");
    position_ = next_position_++;
    std::vector<int32_t> next(n);
    for (size_t i = 0; i < n; ++i) {
      JITD_ASSIGN_OR_RETURN(next[i], Use(body_return->operand(i), &op));
    }
    // A loop buffer returned in another's place is read after that place
    // is written: snapshot it first.
    for (size_t i = 0; i < n; ++i) {
      if (next[i] == carried[i] || std::find(carried.begin(), carried.end(), next[i]) == carried.end()) continue;
      const int32_t snapshot = NewTemporary(p_.buffers[static_cast<size_t>(next[i])].bytes);
      JITD_RETURN_IF_ERROR(CopyBuffer(next[i], snapshot, "while snapshot of loop value " + std::to_string(i)));
      next[i] = snapshot;
    }
    position_ = next_position_++;
    for (size_t i = 0; i < n; ++i) {
      if (next[i] == carried[i]) continue;
      UseBuffer(next[i]);
      JITD_RETURN_IF_ERROR(CopyBuffer(next[i], carried[i], "while body result " + std::to_string(i)));
    }
    CudaStep back;
    back.kind = CudaStep::Kind::kJump;
    back.target = cond_step;
    back.description = "while at " + op.loc().ToString() + ": back to cond";
    p_.steps.push_back(std::move(back));
    p_.steps[test_step].target = static_cast<int32_t>(p_.steps.size());
    position_ = next_position_++;
    const int64_t loop_end = position_;
    for (passes::BufferInterval& interval : intervals_) {
      if (interval.def < loop_start && interval.last_use >= loop_start) {
        interval.last_use = std::max(interval.last_use, loop_end);
      }
    }
    return Status::Ok();
  }

  // stablehlo.if / stablehlo.case as host control flow, like while: per
  // branch but the last, kJumpUnless on its 1-byte predicate to the next
  // branch; each branch's kernels, copies of its results into the op's
  // result buffers, kJump to the end (the last branch falls through).
  // if: the predicate is its operand (branch 0 when true). case: one
  // jitd_case kernel first writes, for branch k < N-1, whether the index
  // clamped to [0, N) (out of range: the last branch, as the spec says)
  // is k. Costs a device->host copy and a synchronization per branch
  // tested.
  Status PlanBranches(const Op& op) {
    const bool is_if = op.code() == OpCode::kIf;
    const std::string what = is_if ? "if" : "case";
    const size_t branches = op.num_regions();
    if (branches == 0 || (is_if && branches != 2) || op.num_operands() != 1) {
      return Refuse(op, "an " + what + " without its selector operand and branches");
    }
    for (size_t k = 0; k < branches; ++k) {
      if (op.region(k).num_blocks() != 1 || op.region(k).block(0).num_args() != 0) {
        return Refuse(op, "a branch that is not one block without arguments");
      }
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      if (!op.result(i)->type().is_tensor()) return Refuse(op, "a result that is not a tensor (tokens and tuples)");
    }
    JITD_ASSIGN_OR_RETURN(int32_t selector, Use(op.operand(0), &op));
    const int64_t selector_bytes = p_.buffers[static_cast<size_t>(selector)].bytes;
    if (selector_bytes != (is_if ? 1 : 4)) {
      return Refuse(op, is_if ? "its predicate is not one pred" : "its index is not one 32-bit integer");
    }
    std::vector<int32_t> results;
    for (size_t i = 0; i < op.num_results(); ++i) {
      results.push_back(NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0));
    }
    // One 1-byte predicate per branch but the last.
    std::vector<int32_t> predicates;
    if (is_if) {
      predicates.push_back(selector);
    } else if (branches > 1) {
      std::string description;
      CudaStep select;
      JITD_RETURN_IF_ERROR(CaseKernel(static_cast<int64_t>(branches), &select.launch.function, &description));
      select.launch.buffers.push_back(selector);
      for (size_t k = 0; k + 1 < branches; ++k) {
        predicates.push_back(NewTemporary(1));
        select.launch.buffers.push_back(predicates.back());
      }
      select.description = select.launch.function + " " + description + " (case at " + op.loc().ToString() + ")";
      p_.steps.push_back(std::move(select));
      ++p_.launches;
    }
    std::vector<size_t> exits;  // each branch's jump to the end
    for (size_t k = 0; k < branches; ++k) {
      const std::string branch = what + " at " + op.loc().ToString() + " branch " + std::to_string(k);
      size_t test_step = SIZE_MAX;
      if (k + 1 < branches) {
        position_ = next_position_++;
        UseBuffer(predicates[k]);
        CudaStep test;
        test.kind = CudaStep::Kind::kJumpUnless;
        test.predicate = predicates[k];
        test.description = branch + ": skip unless " + (is_if ? "pred" : "index == " + std::to_string(k));
        test_step = p_.steps.size();
        p_.steps.push_back(std::move(test));
      }
      const ir::Block& block = op.region(k).block(0);
      JITD_RETURN_IF_ERROR(PlanOps(block, /*entry=*/false));
      const Op* ret = block.terminator();
      if (!ret || ret->num_operands() != results.size()) return Refuse(op, "a branch does not return every result");
      position_ = next_position_++;
      for (size_t i = 0; i < results.size(); ++i) {
        JITD_ASSIGN_OR_RETURN(int32_t value, Use(ret->operand(i), &op));
        if (p_.buffers[static_cast<size_t>(value)].bytes != p_.buffers[static_cast<size_t>(results[i])].bytes) {
          return Refuse(op, "a branch returns result " + std::to_string(i) + " of another size");
        }
        UseBuffer(results[i]);
        JITD_RETURN_IF_ERROR(CopyBuffer(value, results[i], branch + " result " + std::to_string(i)));
      }
      if (k + 1 < branches) {
        CudaStep exit;
        exit.kind = CudaStep::Kind::kJump;
        exit.description = branch + ": to the end";
        exits.push_back(p_.steps.size());
        p_.steps.push_back(std::move(exit));
        p_.steps[test_step].target = static_cast<int32_t>(p_.steps.size());
      }
    }
    for (size_t e : exits) p_.steps[e].target = static_cast<int32_t>(p_.steps.size());
    return Status::Ok();
  }

  // The kernel of a case of `branches` branches (made once per count): one
  // thread reads the i32 index, clamps it to [0, branches) (out of range:
  // the last) and writes 1 to predicate k when it equals k, else 0, for k <
  // branches - 1. Parameters: the index, then the predicates.
  Status CaseKernel(int64_t branches, std::string* name_out, std::string* description_out) {
    const std::string key = "case " + std::to_string(branches);
    auto [it, is_new] = kernels_.try_emplace(key);
    if (!is_new) {
      *name_out = it->second.name;
      *description_out = it->second.description;
      return Status::Ok();
    }
    const std::string name = "jitd_case" + std::to_string(branches);
    llvm::LLVMContext& ctx = llvm_module_.getContext();
    llvm::IRBuilder<> b(ctx);
    llvm::Type* global = llvm::PointerType::get(ctx, 1);
    std::vector<llvm::Type*> params(static_cast<size_t>(branches), global);
    llvm::Function* fn = llvm::Function::Create(llvm::FunctionType::get(b.getVoidTy(), params, false),
                                                llvm::Function::ExternalLinkage, name, llvm_module_);
    fn->setCallingConv(llvm::CallingConv::PTX_Kernel);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    for (unsigned a = 0; a < params.size(); ++a) fn->addParamAttr(a, llvm::Attribute::NoAlias);
    fn->addParamAttr(0, llvm::Attribute::ReadOnly);
    llvm_module_.getOrInsertNamedMetadata("nvvm.annotations")
        ->addOperand(llvm::MDNode::get(ctx, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx, "kernel"),
                                             llvm::ValueAsMetadata::get(b.getInt32(1))}));
    b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
    llvm::Value* index = b.CreateAlignedLoad(b.getInt32Ty(), fn->getArg(0), llvm::Align(4));
    llvm::Value* last = b.getInt32(static_cast<uint32_t>(branches - 1));
    llvm::Value* outside = b.CreateOr(b.CreateICmpSLT(index, b.getInt32(0)), b.CreateICmpSGT(index, last));
    llvm::Value* chosen = b.CreateSelect(outside, last, index);
    for (int64_t k = 0; k + 1 < branches; ++k) {
      llvm::Value* is_k = b.CreateZExt(b.CreateICmpEQ(chosen, b.getInt32(static_cast<uint32_t>(k))), b.getInt8Ty());
      b.CreateAlignedStore(is_k, fn->getArg(static_cast<unsigned>(k + 1)), llvm::Align(1));
    }
    b.CreateRetVoid();
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*fn, &os)) {
      fn->eraseFromParent();
      kernels_.erase(key);
      return Internal("cuda: the case kernel is invalid: " + os.str());
    }
    codegen::GridPlan plan;
    plan.kind = codegen::GridKind::kFlat;
    plan.work_items = 1;
    plan.grid = 1;
    plan.block = 1;
    it->second = {name, plan, "case of " + std::to_string(branches) + " branches: index -> predicates"};
    ++p_.unique_kernels;
    *name_out = it->second.name;
    *description_out = it->second.description;
    return Status::Ok();
  }

  // A temporary with no IR value (a snapshot), live from here.
  int32_t NewTemporary(int64_t bytes) {
    CudaBuffer b;
    b.bytes = bytes;
    p_.buffers.push_back(b);
    const auto id = static_cast<int32_t>(p_.buffers.size() - 1);
    interval_of_[id] = intervals_.size();
    intervals_.push_back({b.bytes, position_, position_});
    return id;
  }

  void UseBuffer(int32_t buffer) {
    if (auto in = interval_of_.find(buffer); in != interval_of_.end()) {
      intervals_[in->second].last_use = std::max(intervals_[in->second].last_use, position_);
    }
  }

  // A copy kernel launch (one kernel per size) from buffer `from` to `to`.
  Status CopyBuffer(int32_t from, int32_t to, const std::string& why) {
    const int64_t bytes = p_.buffers[static_cast<size_t>(to)].bytes;
    if (bytes == 0) return Status::Ok();
    const std::string key = "copy " + std::to_string(bytes);
    auto [it, is_new] = kernels_.try_emplace(key);
    if (is_new) {
      const std::string copy_name = "jitd_copy" + std::to_string(copies_++);
      auto plan = codegen::EmitCopyKernel(llvm_module_, copy_name, bytes, options_.limits);
      if (!plan.ok()) {
        kernels_.erase(key);
        return plan.status();
      }
      it->second = {copy_name, *plan, "copy of " + std::to_string(bytes) + " bytes"};
      ++p_.unique_kernels;
    }
    CudaStep copy;
    copy.launch.function = it->second.name;
    copy.launch.grid = {static_cast<uint32_t>(it->second.plan.grid), 1, 1};
    copy.launch.block = {static_cast<uint32_t>(it->second.plan.block), 1, 1};
    copy.launch.buffers = {from, to};
    copy.description = it->second.name + " " + it->second.description + " (" + why + ")";
    p_.steps.push_back(std::move(copy));
    ++p_.launches;
    return Status::Ok();
  }

  int32_t NewBuffer(const ir::Value* v, CudaBuffer::Kind kind, int64_t index) {
    CudaBuffer b;
    b.kind = kind;
    b.index = index;
    b.bytes = v->type().byte_size();
    p_.buffers.push_back(b);
    const auto id = static_cast<int32_t>(p_.buffers.size() - 1);
    buffer_of_[v] = id;
    if (kind == CudaBuffer::Kind::kTemporary) {
      interval_of_[id] = intervals_.size();
      intervals_.push_back({b.bytes, position_, position_});
    }
    return id;
  }

  StatusOr<int32_t> Use(const ir::Value* v, const Op* user) {
    auto it = buffer_of_.find(v);
    if (it == buffer_of_.end()) {
      return Internal("cuda: a value used by '" + std::string(user->name()) + "' at " + user->loc().ToString() +
                      " has no buffer");
    }
    if (auto in = interval_of_.find(it->second); in != interval_of_.end()) {
      intervals_[in->second].last_use = std::max(intervals_[in->second].last_use, position_);
    }
    return it->second;
  }

  Status PlanFusion(const Op& op) {
    std::optional<codegen::KernelSpec> spec = codegen::KernelSpecOfFusion(op, codegen::NvptxMath());
    if (!spec) {
      const Op* culprit = FirstUnloweredMember(op);
      if (culprit == &op) return Refuse(op, "its block is not one kernel the NVPTX backend emits");
      return Refuse(*culprit, "in a fused kernel; " + WhyNotLowered(*culprit) +
                                  " (host-only math or element types are not on the GPU)");
    }
    const std::string key = codegen::KernelKey(*spec);
    auto [it, is_new] = kernels_.try_emplace(key);
    if (is_new) {
      spec->name = "jitd_k" + std::to_string(kernels_.size() - 1);
      JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, codegen::PlanGridKernel(*spec, options_.limits));
      Status emitted = codegen::EmitGridKernel(llvm_module_, *spec, plan, options_.limits);
      if (!emitted.ok()) {
        kernels_.erase(key);
        if (emitted.code() == StatusCode::kResourceExhausted || emitted.code() == StatusCode::kInvalidArgument) {
          return Refuse(*spec->root, emitted.message());
        }
        return emitted;
      }
      it->second = {spec->name, plan, DescribeSpec(*spec, plan)};
      ++p_.unique_kernels;
    }
    const KernelEntry& kernel = it->second;
    CudaStep step;
    step.kind = CudaStep::Kind::kLaunch;
    step.launch.function = kernel.name;
    step.launch.grid = {static_cast<uint32_t>(kernel.plan.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(kernel.plan.block), 1, 1};
    step.launch.shared_bytes = static_cast<uint32_t>(kernel.plan.shared_bytes);
    for (const ir::Value* v : op.operands()) {
      JITD_ASSIGN_OR_RETURN(int32_t b, Use(v, &op));
      step.launch.buffers.push_back(b);
    }
    step.description = kernel.name + " " + kernel.description;
    if (kernel.plan.split > 1) {
      // A split reduction (kernel_plan.h): the partials kernel writes a
      // scratch of work_items x split elements, the combine kernel reads
      // it (with the same inputs: the init may be one) and writes the
      // results.
      const int32_t scratch = NewTemporary(codegen::SplitPartials(kernel.plan) *
                                           ir::StorageBytes(op.result(0)->type().dtype()));
      CudaStep combine = step;
      step.launch.buffers.push_back(scratch);
      step.description += " (partials)";
      p_.steps.push_back(std::move(step));
      combine.launch.function = kernel.name + "_combine";
      combine.launch.grid = {static_cast<uint32_t>(kernel.plan.combine_grid), 1, 1};
      combine.launch.buffers.push_back(scratch);
      for (size_t i = 0; i < op.num_results(); ++i) {
        combine.launch.buffers.push_back(NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0));
      }
      combine.description = kernel.name + "_combine " + kernel.description;
      p_.steps.push_back(std::move(combine));
      p_.launches += 2;
      return Status::Ok();
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      step.launch.buffers.push_back(NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0));
    }
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  // Copy kernels of the operands into the results, then one thread
  // applying the updates in order (scatter_kernel.h).
  Status PlanScatter(const Op& op) {
    if (!codegen::IsNvptxEmittableScatter(op)) {
      return Refuse(op, "only scatters of plain element types whose update computation NVPTX kernels compute");
    }
    const size_t n = (op.num_operands() - 1) / 2;
    const std::string name = "jitd_scatter" + std::to_string(scatters_++);
    JITD_RETURN_IF_ERROR(codegen::EmitSerialScatterKernel(llvm_module_, op, name));
    ++p_.unique_kernels;
    CudaStep launch;
    launch.launch.function = name;
    for (size_t i = 0; i < n; ++i) {
      JITD_ASSIGN_OR_RETURN(int32_t to, CopyIntoResult(op, i, "scatter"));
      launch.launch.buffers.push_back(to);
    }
    for (size_t i = n; i < op.num_operands(); ++i) {
      JITD_ASSIGN_OR_RETURN(int32_t b, Use(op.operand(i), &op));
      launch.launch.buffers.push_back(b);
    }
    launch.description = name + " serial scatter of " + std::to_string(op.operand(n + 1)->type().num_elements()) +
                         " update elements";
    p_.steps.push_back(std::move(launch));
    ++p_.launches;
    return Status::Ok();
  }

  // Result `i` of `op` as a new temporary holding a copy of operand `i` (a
  // copy kernel launch, one kernel per size); returns its buffer.
  StatusOr<int32_t> CopyIntoResult(const Op& op, size_t i, const std::string& why) {
    JITD_ASSIGN_OR_RETURN(int32_t from, Use(op.operand(i), &op));
    const int32_t to = NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0);
    const int64_t bytes = p_.buffers[static_cast<size_t>(to)].bytes;
    const std::string key = "copy " + std::to_string(bytes);
    auto [it, is_new] = kernels_.try_emplace(key);
    if (is_new) {
      const std::string copy_name = "jitd_copy" + std::to_string(copies_++);
      auto plan = codegen::EmitCopyKernel(llvm_module_, copy_name, bytes, options_.limits);
      if (!plan.ok()) {
        kernels_.erase(key);
        return plan.status();
      }
      it->second = {copy_name, *plan, "copy of " + std::to_string(bytes) + " bytes"};
      ++p_.unique_kernels;
    }
    CudaStep copy;
    copy.launch.function = it->second.name;
    copy.launch.grid = {static_cast<uint32_t>(it->second.plan.grid), 1, 1};
    copy.launch.block = {static_cast<uint32_t>(it->second.plan.block), 1, 1};
    copy.launch.buffers = {from, to};
    copy.description = it->second.name + " " + it->second.description + " (" + why + " operand " + std::to_string(i) + ")";
    p_.steps.push_back(std::move(copy));
    ++p_.launches;
    return to;
  }

  // Copies of the operands, then a thread per row sorting in place
  // (sort_kernel.h).
  Status PlanSort(const Op& op) {
    if (!codegen::IsNvptxEmittableSort(op)) {
      return Refuse(op, "only sorts of plain element types whose comparator NVPTX kernels compute");
    }
    const std::string name = "jitd_sort" + std::to_string(sorts_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, codegen::EmitSortKernel(llvm_module_, op, name, options_.limits));
    ++p_.unique_kernels;
    CudaStep step;
    step.launch.function = name;
    step.launch.grid = {static_cast<uint32_t>(plan.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(plan.block), 1, 1};
    for (size_t i = 0; i < op.num_operands(); ++i) {
      JITD_ASSIGN_OR_RETURN(int32_t to, CopyIntoResult(op, i, "sort"));
      step.launch.buffers.push_back(to);
    }
    step.description = name + " insertion sort of " + std::to_string(plan.work_items) + " rows x " +
                       std::to_string(plan.extent);
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  // One thread: fill with the init, then select and scatter in order
  // (window_kernel.h).
  Status PlanSelectAndScatter(const Op& op) {
    if (!codegen::IsNvptxEmittableSelectAndScatter(op)) {
      return Refuse(op, "only select_and_scatters of one plain element type whose regions NVPTX kernels compute");
    }
    const std::string name = "jitd_select_scatter" + std::to_string(select_scatters_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, codegen::EmitSelectAndScatterKernel(llvm_module_, op, name));
    return AddLaunch(op, name, plan, name + " serial select_and_scatter of " + std::to_string(plan.work_items) +
                                         " source elements x " + std::to_string(plan.extent));
  }

  // A dense_resource constant: its blob's bytes when the module has them,
  // else (elided weights) a kSeeded buffer filled per execute's seed as the
  // evaluator fills it (eval::ResourceFillLiteral, at the op's place).
  Status PlanResourceConstant(const Op& op, const ir::DenseResourceAttr& resource) {
    const ir::Type& type = op.result(0)->type();
    if (std::optional<std::vector<uint8_t>> blob = module_.FindResourceBlob(resource.handle)) {
      if (static_cast<int64_t>(blob->size()) != type.byte_size()) {
        return InvalidArgument("constant at " + op.loc().ToString() + ": resource '" + resource.handle + "' holds " +
                               std::to_string(blob->size()) + " bytes for " + type.ToString());
      }
      p_.constants.emplace_back(blob->begin(), blob->end());
      NewBuffer(op.result(0), CudaBuffer::Kind::kConstant, static_cast<int64_t>(p_.constants.size() - 1));
      return Status::Ok();
    }
    if (!places_) places_ = eval::ComputeOpPlaces(module_);
    auto place = places_->find(&op);
    p_.seeded.push_back({type, resource.handle, place == places_->end() ? 0 : place->second});
    NewBuffer(op.result(0), CudaBuffer::Kind::kSeeded, static_cast<int64_t>(p_.seeded.size() - 1));
    return Status::Ok();
  }

  // cuBLASLt where it is on and takes the layout (cublaslt_plan.h), else a
  // thread per result element, the interpreter's exact dot (dot_kernel.h).
  Status PlanDot(const Op& op) {
    std::string library_why = "cuBLASLt is off (not loaded)";
    const bool small = codegen::IsNvptxEmittableDot(op) && MultiplyAdds(op) < options_.library_min_multiply_adds;
    if (options_.use_cublaslt && !small) {
      JITD_ASSIGN_OR_RETURN(MatmulProblem problem, MatmulProblemOf(op));
      StatusOr<CublasLtMatmulPlan> plan = PlanCublasLtMatmul(problem, options_.exact_f32);
      if (plan.ok()) {
        return AddLibraryCall(op, CudaLibraryCall::Library::kCublasLt, EncodeMatmulPlan(*plan), {},
                              "cublaslt " + DescribeMatmulPlan(*plan));
      }
      if (plan.status().code() != StatusCode::kNotFound) return Refuse(op, plan.status().message());
      library_why = plan.status().message();
      // A layout cuBLASLt does not read in place: permute the operands first.
      const CanonicalMatmul canonical = CanonicalizeMatmul(problem);
      if (StatusOr<CublasLtMatmulPlan> permuted = PlanCublasLtMatmul(canonical.problem, options_.exact_f32);
          permuted.ok()) {
        std::vector<int32_t> operands;
        for (int side = 0; side < 2; ++side) {
          JITD_ASSIGN_OR_RETURN(int32_t b, Use(op.operand(static_cast<size_t>(side)), &op));
          const std::vector<int64_t>& perm = side == 0 ? canonical.lhs_permutation : canonical.rhs_permutation;
          if (!perm.empty()) {
            const ir::Type& t = op.operand(static_cast<size_t>(side))->type();
            JITD_ASSIGN_OR_RETURN(b, PermuteIntoScratch(b, t, perm, side == 0 ? "dot lhs" : "dot rhs"));
          }
          operands.push_back(b);
        }
        position_ = next_position_++;  // the permutes' reads end before the call's writes
        for (int32_t b : operands) UseBuffer(b);
        return AddLibraryCall(op, CudaLibraryCall::Library::kCublasLt, EncodeMatmulPlan(*permuted), operands,
                              "cublaslt " + DescribeMatmulPlan(*permuted) + " (operands permuted first)");
      }
    }
    if (!codegen::IsNvptxEmittableDot(op)) {
      return Refuse(op, "only integer, real float or same-complex dots have the exact kernel; " + library_why);
    }
    const std::string name = "jitd_dot" + std::to_string(dots_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, codegen::EmitDotKernel(llvm_module_, op, name, options_.limits));
    return AddLaunch(op, name, plan, name + " exact dot " + std::to_string(plan.work_items) + " outputs x " +
                                         std::to_string(plan.extent));
  }

  // A thread per result element, the interpreter's exact convolution
  // (dot_kernel.h).
  Status PlanConvolution(const Op& op) {
    std::string library_why = "cuDNN is off (not loaded)";
    const bool small =
        codegen::IsNvptxEmittableConvolution(op) && MultiplyAdds(op) < options_.library_min_multiply_adds;
    if (options_.use_cudnn && !small) {
      StatusOr<CudnnConvPlan> plan = PlanCudnnConvolution(op, options_.exact_f32);
      if (plan.ok()) return PlanCudnnCall(op, *plan);
      if (plan.status().code() != StatusCode::kNotFound) return Refuse(op, plan.status().message());
      library_why = plan.status().message();
    }
    // cuDNN absent or refusing: im2col + a cuBLASLt matmul (im2col_plan.h).
    if (options_.use_cublaslt && !small) {
      StatusOr<Im2colConvPlan> plan = PlanIm2colConvolution(op, options_.exact_f32);
      if (plan.ok()) return PlanIm2colCall(op, *plan);
      if (plan.status().code() != StatusCode::kNotFound) return Refuse(op, plan.status().message());
      library_why += "; " + plan.status().message();
    }
    if (!codegen::IsNvptxEmittableConvolution(op)) {
      return Refuse(op, "only integer or real float convolutions with well-formed groups have the exact kernel; " +
                            library_why);
    }
    const std::string name = "jitd_conv" + std::to_string(convs_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan,
                          codegen::EmitConvolutionKernel(llvm_module_, op, name, options_.limits));
    return AddLaunch(op, name, plan, name + " exact convolution " + std::to_string(plan.work_items) + " outputs x " +
                                         std::to_string(plan.extent));
  }

  // A thread per result element copying its operand element (gather_kernel.h).
  // A thread per result element summing its line directly (fft_kernel.h).
  // cuFFT where it is on (cufft_plan.h): a copy of the input first when
  // cuFFT would overwrite it, the call, the division of an inverse
  // transform's result after (cufft_normalize_kernel.h).
  Status PlanFft(const Op& op) {
    std::string library_why = "cuFFT is off (not loaded)";
    if (options_.use_cufft) {
      StatusOr<CufftPlan> plan = PlanCufft(op);
      if (plan.ok()) return PlanCufftCall(op, *plan);
      if (plan.status().code() != StatusCode::kNotFound) return Refuse(op, plan.status().message());
      library_why = plan.status().message();
    }
    if (!codegen::IsNvptxEmittableFft(op)) {
      return Refuse(op, "only ffts over one axis (one fft_length) of f32 / f64 / complex elements have a kernel; " +
                            library_why);
    }
    const std::string name = "jitd_fft" + std::to_string(ffts_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, codegen::EmitFftKernel(llvm_module_, op, name, options_.limits));
    return AddLaunch(op, name, plan, name + " fft " + std::to_string(plan.work_items) + " elements (direct sum)");
  }

  // A thread per right-hand side, the interpreter's substitution
  // (triangular_solve_kernel.h).
  Status PlanTriangularSolve(const Op& op) {
    if (!codegen::IsNvptxEmittableTriangularSolve(op)) {
      return Refuse(op, "only real element types and a of at most 32 x 32 have a kernel");
    }
    const std::string name = "jitd_trsm" + std::to_string(solves_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan,
                          codegen::EmitTriangularSolveKernel(llvm_module_, op, name, options_.limits));
    return AddLaunch(op, name, plan, name + " triangular_solve " + std::to_string(plan.work_items) + " right-hand sides");
  }

  // A thread per output element, thread 0 also the new state (rng_kernel.h).
  Status PlanRngBitGenerator(const Op& op) {
    if (!codegen::IsNvptxEmittableRngBitGenerator(op)) {
      return Refuse(op, "only THREE_FRY with a 2 x u64 state and 64-bit outputs has a kernel");
    }
    const std::string name = "jitd_rng" + std::to_string(rngs_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan,
                          codegen::EmitRngBitGeneratorKernel(llvm_module_, op, name, options_.limits));
    return AddLaunch(op, name, plan, name + " threefry " + std::to_string(plan.work_items) + " elements");
  }

  Status PlanGather(const Op& op) {
    if (!codegen::IsNvptxEmittableGather(op)) {
      return Refuse(op, "only gathers of plain element types with integer indices and nonzero slice sizes");
    }
    const std::string name = "jitd_gather" + std::to_string(gathers_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, codegen::EmitGatherKernel(llvm_module_, op, name, options_.limits));
    return AddLaunch(op, name, plan, name + " gather " + std::to_string(plan.work_items) + " elements");
  }

  // A thread per matrix, jit/eval's order in double in a scratch buffer
  // (cholesky_kernel.h).
  Status PlanCholesky(const Op& op) {
    if (!IsNvptxEmittableCholesky(op)) {
      return Refuse(op, "only f32 / f64 choleskys of nonempty square matrices have a kernel");
    }
    const std::string name = "jitd_cholesky" + std::to_string(choleskys_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan, EmitCholeskyKernel(llvm_module_, op, name, options_.limits));
    ++p_.unique_kernels;
    CudaStep step;
    step.launch.function = name;
    step.launch.grid = {static_cast<uint32_t>(plan.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(plan.block), 1, 1};
    JITD_ASSIGN_OR_RETURN(int32_t operand, Use(op.operand(0), &op));
    const int32_t result = NewBuffer(op.result(0), CudaBuffer::Kind::kTemporary, 0);
    const int32_t scratch = NewTemporary(CholeskyScratchBytes(op));
    step.launch.buffers = {operand, result, scratch};
    step.description = name + " cholesky " + std::to_string(plan.work_items) + " matrices of " +
                       std::to_string(plan.extent) + " x " + std::to_string(plan.extent);
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  // A permute kernel launch from `buffer` (of type `t`) into a new scratch
  // temporary, whose dimension k is t's dimension perm[k].
  StatusOr<int32_t> PermuteIntoScratch(int32_t buffer, const ir::Type& t, const std::vector<int64_t>& perm,
                                       const std::string& what) {
    const int32_t scratch = NewTemporary(p_.buffers[static_cast<size_t>(buffer)].bytes);
    const std::string name = "jitd_permute" + std::to_string(permutes_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan grid, EmitPermuteKernel(llvm_module_, name, ir::StorageBytes(t.dtype()),
                                                                    t.dims(), perm, options_.limits));
    ++p_.unique_kernels;
    CudaStep step;
    step.launch.function = name;
    step.launch.grid = {static_cast<uint32_t>(grid.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(grid.block), 1, 1};
    step.launch.buffers = {buffer, scratch};
    step.description = name + " " + what + " permuted for a library call";
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return scratch;
  }

  // cuDNN's forward convolution (cudnn_plan.h), the filter permuted to
  // KCRS by a kernel first when it is laid out otherwise.
  Status PlanCudnnCall(const Op& op, const CudnnConvPlan& plan) {
    JITD_ASSIGN_OR_RETURN(int32_t input, Use(op.operand(0), &op));
    JITD_ASSIGN_OR_RETURN(int32_t filter, Use(op.operand(1), &op));
    if (!plan.filter_permutation.empty()) {
      const ir::Type& kernel = op.operand(1)->type();
      const int32_t scratch = NewTemporary(p_.buffers[static_cast<size_t>(filter)].bytes);
      const std::string name = "jitd_permute" + std::to_string(permutes_++);
      JITD_ASSIGN_OR_RETURN(codegen::GridPlan grid,
                            EmitPermuteKernel(llvm_module_, name, ir::StorageBytes(kernel.dtype()), kernel.dims(),
                                              plan.filter_permutation, options_.limits));
      ++p_.unique_kernels;
      CudaStep step;
      step.launch.function = name;
      step.launch.grid = {static_cast<uint32_t>(grid.grid), 1, 1};
      step.launch.block = {static_cast<uint32_t>(grid.block), 1, 1};
      step.launch.buffers = {filter, scratch};
      step.description = name + " convolution filter to KCRS";
      p_.steps.push_back(std::move(step));
      ++p_.launches;
      position_ = next_position_++;  // the permute's reads end before the call's writes
      UseBuffer(scratch);
      UseBuffer(input);
      filter = scratch;
    }
    return AddLibraryCall(op, CudaLibraryCall::Library::kCudnn, EncodeConvPlan(plan), {input, filter},
                          DescribeConvPlan(plan));
  }

  // The im2col fallback (im2col_plan.h): the patch matrix, the filter
  // permuted to [O, Cg, taps...] when it is not so, one batched cuBLASLt
  // matmul, the product permuted into the result's layout when it is not so.
  Status PlanIm2colCall(const Op& op, const Im2colConvPlan& plan) {
    JITD_ASSIGN_OR_RETURN(int32_t input, Use(op.operand(0), &op));
    JITD_ASSIGN_OR_RETURN(int32_t filter, Use(op.operand(1), &op));
    const int32_t patches = NewTemporary(plan.patch_elements * plan.element_bytes);
    const std::string name = "jitd_im2col" + std::to_string(im2cols_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan grid, EmitIm2colKernel(llvm_module_, name, plan, options_.limits));
    ++p_.unique_kernels;
    CudaStep im2col;
    im2col.launch.function = name;
    im2col.launch.grid = {static_cast<uint32_t>(grid.grid), 1, 1};
    im2col.launch.block = {static_cast<uint32_t>(grid.block), 1, 1};
    im2col.launch.buffers = {input, patches};
    im2col.description = name + " " + std::to_string(plan.patch_elements) + " patch elements";
    p_.steps.push_back(std::move(im2col));
    ++p_.launches;
    if (!plan.filter_permutation.empty()) {
      const ir::Type& kernel = op.operand(1)->type();
      JITD_ASSIGN_OR_RETURN(filter, PermuteIntoScratch(filter, kernel, plan.filter_permutation,
                                                       "convolution filter to [O, I, taps]"));
    }
    position_ = next_position_++;  // the kernels' reads end before the matmul's writes
    UseBuffer(patches);
    UseBuffer(filter);
    const bool permute_after = !plan.output_permutation.empty();
    const int32_t product = permute_after ? NewTemporary(op.result(0)->type().byte_size())
                                          : NewBuffer(op.result(0), CudaBuffer::Kind::kTemporary, 0);
    CudaStep call;
    call.kind = CudaStep::Kind::kLibraryCall;
    call.library.library = CudaLibraryCall::Library::kCublasLt;
    call.library.plan = EncodeMatmulPlan(plan.matmul);
    call.library.buffers = {patches, filter, product};
    call.description = "convolution as " + DescribeIm2colPlan(plan);
    p_.steps.push_back(std::move(call));
    ++p_.library_calls;
    if (!permute_after) return Status::Ok();
    position_ = next_position_++;
    UseBuffer(product);
    const int32_t result = NewBuffer(op.result(0), CudaBuffer::Kind::kTemporary, 0);
    const std::string permute = "jitd_permute" + std::to_string(permutes_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan pgrid,
                          EmitPermuteKernel(llvm_module_, permute, plan.element_bytes, plan.gemm_dims,
                                            plan.output_permutation, options_.limits));
    ++p_.unique_kernels;
    CudaStep step;
    step.launch.function = permute;
    step.launch.grid = {static_cast<uint32_t>(pgrid.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(pgrid.block), 1, 1};
    step.launch.buffers = {product, result};
    step.description = permute + " convolution product into the result's layout";
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  Status PlanCufftCall(const Op& op, const CufftPlan& plan) {
    JITD_ASSIGN_OR_RETURN(int32_t input, Use(op.operand(0), &op));
    std::vector<int32_t> operands = {input};
    if (plan.copy_input) {
      const int32_t scratch = NewTemporary(p_.buffers[static_cast<size_t>(input)].bytes);
      JITD_RETURN_IF_ERROR(CopyBuffer(input, scratch, "cuFFT overwrites its input: a scratch copy"));
      operands = {scratch};
      position_ = next_position_++;  // the copy's reads end before the call's writes
      UseBuffer(scratch);
    }
    JITD_RETURN_IF_ERROR(AddLibraryCall(op, CudaLibraryCall::Library::kCufft, EncodeFftPlan(plan), operands,
                                        DescribeFftPlan(plan)));
    if (!plan.normalize) return Status::Ok();
    const ir::Type& out = op.result(0)->type();
    const bool f64 = out.dtype() == ir::DType::kF64 || out.dtype() == ir::DType::kC128;
    const int64_t values = out.num_elements() * (ir::IsComplex(out.dtype()) ? 2 : 1);
    int64_t divisor = 1;
    for (int64_t v : plan.n) divisor *= v;
    const std::string key = std::string("fft normalize ") + (f64 ? "f64 " : "f32 ") + std::to_string(values) + " / " +
                            std::to_string(divisor);
    auto [it, is_new] = kernels_.try_emplace(key);
    if (is_new) {
      const std::string name = "jitd_fft_normalize" + std::to_string(ffts_++);
      auto grid = EmitFftNormalizeKernel(llvm_module_, name, f64, values, divisor, options_.limits);
      if (!grid.ok()) {
        kernels_.erase(key);
        return grid.status();
      }
      it->second = {name, *grid, key};
      ++p_.unique_kernels;
    }
    CudaStep step;
    step.launch.function = it->second.name;
    step.launch.grid = {static_cast<uint32_t>(it->second.plan.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(it->second.plan.block), 1, 1};
    step.launch.buffers = {p_.steps.back().library.buffers.back()};
    step.description = it->second.name + " " + key;
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  // One library call reading `operands` (empty: `op`'s operands) and
  // writing `op`'s results (new temporaries), in that order.
  Status AddLibraryCall(const Op& op, CudaLibraryCall::Library library, std::vector<int64_t> plan,
                        std::vector<int32_t> operands, std::string description) {
    CudaStep step;
    step.kind = CudaStep::Kind::kLibraryCall;
    step.library.library = library;
    step.library.plan = std::move(plan);
    if (operands.empty()) {
      for (const ir::Value* v : op.operands()) {
        JITD_ASSIGN_OR_RETURN(int32_t b, Use(v, &op));
        operands.push_back(b);
      }
    }
    step.library.buffers = std::move(operands);
    for (size_t i = 0; i < op.num_results(); ++i) {
      step.library.buffers.push_back(NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0));
    }
    step.description = std::move(description);
    p_.steps.push_back(std::move(step));
    ++p_.library_calls;
    return Status::Ok();
  }

  // One launch of kernel `name` reading `op`'s operands and writing its
  // results (new temporaries), in that parameter order.
  Status AddLaunch(const Op& op, const std::string& name, const codegen::GridPlan& plan, std::string description) {
    ++p_.unique_kernels;
    CudaStep step;
    step.launch.function = name;
    step.launch.grid = {static_cast<uint32_t>(plan.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(plan.block), 1, 1};
    step.launch.shared_bytes = static_cast<uint32_t>(plan.shared_bytes);
    for (const ir::Value* v : op.operands()) {
      JITD_ASSIGN_OR_RETURN(int32_t b, Use(v, &op));
      step.launch.buffers.push_back(b);
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      step.launch.buffers.push_back(NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0));
    }
    step.description = std::move(description);
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  // A thread per result element folding its window (window_kernel.h).
  Status PlanReduceWindow(const Op& op) {
    if (!codegen::IsNvptxEmittableReduceWindow(op)) {
      return Refuse(op, "only reduce_windows of plain element types without promotion whose body NVPTX kernels "
                        "compute");
    }
    const std::string name = "jitd_window" + std::to_string(windows_++);
    JITD_ASSIGN_OR_RETURN(codegen::GridPlan plan,
                          codegen::EmitReduceWindowKernel(llvm_module_, op, name, options_.limits));
    ++p_.unique_kernels;
    CudaStep step;
    step.launch.function = name;
    step.launch.grid = {static_cast<uint32_t>(plan.grid), 1, 1};
    step.launch.block = {static_cast<uint32_t>(plan.block), 1, 1};
    for (const ir::Value* v : op.operands()) {
      JITD_ASSIGN_OR_RETURN(int32_t b, Use(v, &op));
      step.launch.buffers.push_back(b);
    }
    for (size_t i = 0; i < op.num_results(); ++i) {
      step.launch.buffers.push_back(NewBuffer(op.result(i), CudaBuffer::Kind::kTemporary, 0));
    }
    step.description = name + " reduce_window " + std::to_string(plan.work_items) + " outputs x " +
                       std::to_string(plan.extent) + " window elements";
    p_.steps.push_back(std::move(step));
    ++p_.launches;
    return Status::Ok();
  }

  struct KernelEntry {
    std::string name;
    codegen::GridPlan plan;
    std::string description;
  };

  const CudaCompileOptions& options_;
  const ir::Module& module_;
  std::optional<eval::OpPlaces> places_;  // computed at the first elided constant
  CudaProgram& p_;
  llvm::Module& llvm_module_;
  int64_t position_ = 0;
  int64_t next_position_ = 0;
  std::unordered_map<const ir::Value*, int32_t> buffer_of_;
  std::unordered_map<int32_t, size_t> interval_of_;  // temporaries: their interval
  std::vector<passes::BufferInterval> intervals_;
  std::map<std::string, KernelEntry> kernels_;
  int scatters_ = 0;
  int copies_ = 0;
  int windows_ = 0;
  int gathers_ = 0;
  int ffts_ = 0;
  int solves_ = 0;
  int rngs_ = 0;
  int sorts_ = 0;
  int dots_ = 0;
  int select_scatters_ = 0;
  int convs_ = 0;
  int im2cols_ = 0;
  int choleskys_ = 0;
  int permutes_ = 0;
};

}  // namespace

StatusOr<int> ChoosePtxVersion(const std::string& sm, int assembler_max) {
  const int llvm_max = codegen::NvptxInfo().max_ptx_version;
  const int version = assembler_max > 0 ? std::min(llvm_max, assembler_max) : llvm_max;
  const int need = codegen::MinPtxVersionForSm(sm);
  if (need == 0) return InvalidArgument("cuda arch '" + sm + "' is unknown (expected sm_NN, e.g. sm_90)");
  if (version < need) {
    return InvalidArgument("cuda arch '" + sm + "' needs PTX ISA " + PtxVersionText(need) + "; LLVM " +
                           LLVM_VERSION_STRING + " writes up to " + PtxVersionText(llvm_max) +
                           (assembler_max > 0 ? " and the assembler reads up to " + PtxVersionText(assembler_max)
                                              : std::string()));
  }
  return version;
}

StatusOr<CudaProgram> CompileCuda(const ir::Module& input, const CudaCompileOptions& options) {
  if (options.assemble && !options.assembler) {
    return InvalidArgument("cuda compile: assembling a cubin needs a PTX assembler (CudaCompileOptions::assembler)");
  }
  const int assembler_max = options.assembler ? options.assembler->toolchain().max_ptx_version : 0;
  JITD_ASSIGN_OR_RETURN(const int ptx_version, ChoosePtxVersion(options.sm, assembler_max));

  std::unique_ptr<ir::Module> module = ir::CloneModule(input);
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*module));
  if (!options.pipeline.empty()) {
    passes::PassManager manager;
    // Quantized ops become integer / float ops (lower_quantized.h).
    passes::PipelineOptions pipeline_options;
    pipeline_options.lower_quantized = true;
    JITD_RETURN_IF_ERROR(passes::AddPipeline(manager, options.pipeline, pipeline_options));
    if (Status s = manager.Run(*module); !s.ok()) {
      return Status(s.code(), "compiler pipeline '" + options.pipeline + "': " + s.message());
    }
  }
  if (!passes::HasFusionOps(*module)) JITD_RETURN_IF_ERROR(passes::FuseModule(*module, codegen::NvptxFusionPolicy()));
  const ir::Function* entry = module->EntryFunction();
  if (!entry) return InvalidArgument("module has no entry function (@main, or exactly one public function)");

  CudaProgram program;
  program.sm = options.sm;
  program.ptx_version = ptx_version;
  program.toolchain = std::string("LLVM ") + LLVM_VERSION_STRING + " PTX " + PtxVersionText(ptx_version) +
                      (options.assembler ? ", " + options.assembler->toolchain().Describe() : std::string());

  codegen::NvptxOptions nvptx;
  nvptx.sm = options.sm;
  nvptx.ptx_version = ptx_version;
  nvptx.libdevice_path = options.libdevice_path;
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<llvm::TargetMachine> machine, codegen::CreateNvptxTargetMachine(nvptx));
  llvm::LLVMContext context;
  llvm::Module llvm_module("jitd_cuda", context);
  codegen::PrepareNvptxModule(llvm_module, *machine);

  Compiler compiler(options, *module, program, llvm_module);
  JITD_RETURN_IF_ERROR(compiler.Plan(*entry));
  if (program.unique_kernels == 0) {  // nothing to run on the GPU (arguments or constants returned)
    if (Status valid = ValidateCudaProgram(program); !valid.ok()) return Internal(valid.message());
    return program;
  }

  JITD_ASSIGN_OR_RETURN(program.ptx, codegen::CompileNvptxModule(llvm_module, *machine, nvptx));
  if (options.assemble) {
    JITD_ASSIGN_OR_RETURN(PtxAssembly assembly,
                          options.assembler->Assemble(program.ptx, options.sm, options.verbose_assembly));
    program.cubin = std::move(assembly.cubin);
    program.assembler_log = std::move(assembly.log);
  }
  // The compiler's own output checked as a loaded one is (an Internal error
  // here is a compiler bug).
  if (Status valid = ValidateCudaProgram(program); !valid.ok()) return Internal(valid.message());
  return program;
}

std::string CudaCompileFingerprint(const CudaCompileOptions& options) {
  const int assembler_max = options.assembler ? options.assembler->toolchain().max_ptx_version : 0;
  StatusOr<int> ptx = ChoosePtxVersion(options.sm, assembler_max);
  const codegen::GridLimits& l = options.limits;
  return options.sm + " ptx" + (ptx.ok() ? std::to_string(*ptx) : std::string("?")) + " LLVM " + LLVM_VERSION_STRING +
         " " + (options.assembler ? options.assembler->toolchain().Describe() : std::string("no-assembler")) +
         (options.assemble ? "" : " ptx-only") + " pipeline=" + options.pipeline +
         " block=" + std::to_string(l.block_threads) + " warp=" + std::to_string(l.warp_size) +
         " max_blocks=" + std::to_string(l.max_blocks) + " shared=" + std::to_string(l.max_shared_bytes) +
         " block_reduce_min=" + std::to_string(l.block_reduce_min_extent) +
         " split=" + std::to_string(l.split_target_blocks) + "/" + std::to_string(l.split_min_chunk) +
         " align=" + std::to_string(l.buffer_alignment) + " vector=" + std::to_string(l.max_vector_width) + "/" +
         std::to_string(l.vector_min_items) + "/" + std::to_string(l.vector_max_ops) + " O3" +
         (options.use_cublaslt ? " cublaslt" : "") + (options.use_cufft ? " cufft" : "") +
         (options.use_cudnn ? " cudnn" : "") +
         (options.exact_f32 ? " exact-f32" : "") +
         " library_min=" + std::to_string(options.library_min_multiply_adds);
}

std::string DescribeCudaProgram(const CudaProgram& program) {
  std::string out;
  for (size_t s = 0; s < program.steps.size(); ++s) {
    const CudaStep& step = program.steps[s];
    if (step.kind == CudaStep::Kind::kLibraryCall) {
      out += "  " + std::to_string(s) + ": library " + step.description + "\n";
      continue;
    }
    if (step.kind != CudaStep::Kind::kLaunch) {
      out += "  " + std::to_string(s) + ": " +
             (step.kind == CudaStep::Kind::kJump ? "jump" : "jump unless buffer " + std::to_string(step.predicate)) +
             " to " + std::to_string(step.target) + " (" + step.description + ")\n";
      continue;
    }
    const CudaKernelLaunch& l = step.launch;
    out += "  " + std::to_string(s) + ": launch " + step.description + " [grid " + std::to_string(l.grid[0]) + ", block " +
           std::to_string(l.block[0]) + (l.shared_bytes ? ", shared " + std::to_string(l.shared_bytes) : "") + "]\n";
  }
  out += "  " + std::to_string(program.launches) + " kernel launches (" + std::to_string(program.unique_kernels) +
         " unique), " + std::to_string(program.library_calls) + " library calls, arena " + std::to_string(program.arena_bytes) + " bytes, " +
         std::to_string(program.constants.size()) + " constants" +
         (program.seeded.empty() ? std::string() : " (+" + std::to_string(program.seeded.size()) + " seeded)") + ", cubin " + std::to_string(program.cubin.size()) +
         " bytes (" + program.sm + ", PTX " + PtxVersionText(program.ptx_version) + ")\n";
  return out;
}

}  // namespace jitd::devices::cuda
