// The cpu schedule (cpu_kernel_emitter.h): loop nests over the plan's work
// items whose bodies ask the elemental emitter for one element (or one
// reduction step) at a time.
#include "jit/codegen/cpu/cpu_kernel_emitter.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/target_math.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Triple.h"

namespace jitd::codegen {

using ir::DType;
using ir::Op;

namespace {

using Values = std::vector<llvm::Value*>;

class CpuKernelEmitter {
 public:
  CpuKernelEmitter(llvm::Module& module, const KernelSpec& spec, const CpuKernelPlan& plan)
      : module_(module), spec_(spec), plan_(plan), element_(module, spec, HostTargetMath()), b_(element_.builder()) {}

  Status Emit() {
    const size_t num_params = spec_.inputs.size() + spec_.root->num_results() + spec_.extra_outputs.size();
    switch (plan_.kind) {
      case CpuKernelKind::kSplitReduce:
        // Phase 1 and 2 share the buffers, the partials appended last.
        JITD_RETURN_IF_ERROR(
            EmitFunction(spec_.name, num_params + 1, [&](llvm::Value* b, llvm::Value* e) { EmitPartials(b, e); }));
        return EmitFunction(CombineSymbol(spec_.name), num_params + 1,
                            [&](llvm::Value* b, llvm::Value* e) { EmitCombine(b, e); });
      case CpuKernelKind::kReduce:
        return EmitFunction(spec_.name, num_params, [&](llvm::Value* b, llvm::Value* e) { EmitReduce(b, e); });
      case CpuKernelKind::kFlat:
        return EmitFunction(spec_.name, num_params, [&](llvm::Value* b, llvm::Value* e) { EmitFlat(b, e); });
      case CpuKernelKind::kRows:
        return EmitFunction(spec_.name, num_params, [&](llvm::Value* b, llvm::Value* e) { EmitRows(b, e); });
      case CpuKernelKind::kTiledTranspose:
        return EmitFunction(spec_.name, num_params, [&](llvm::Value* b, llvm::Value* e) { EmitTiled(b, e); });
    }
    return Internal("unknown cpu kernel kind");
  }

 private:
  // void NAME.body(ptr noalias p0, ..., i64 begin, i64 end), always inlined
  // into void NAME(ptr buffers, i64 begin, i64 end). Parameters: the spec's
  // inputs, the root's outputs, then (num_params beyond those) the partials
  // of a split reduction. `fill` emits the body's loops.
  Status EmitFunction(const std::string& name, size_t num_params,
                      const std::function<void(llvm::Value*, llvm::Value*)>& fill) {
    llvm::LLVMContext& ctx = module_.getContext();
    const std::string vector_width = std::to_string(plan_.vector_bits);
    std::vector<llvm::Type*> body_params(num_params, b_.getPtrTy());
    body_params.push_back(b_.getInt64Ty());
    body_params.push_back(b_.getInt64Ty());
    auto* body_type = llvm::FunctionType::get(b_.getVoidTy(), body_params, false);
    llvm::Function* body =
        llvm::Function::Create(body_type, llvm::Function::InternalLinkage, name + ".body", module_);
    body->addFnAttr(llvm::Attribute::AlwaysInline);
    body->addFnAttr(llvm::Attribute::NoUnwind);
    body->addFnAttr("prefer-vector-width", vector_width);
    for (size_t i = 0; i < num_params; ++i) {
      body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::NoAlias);
      if (i < spec_.inputs.size()) body->addParamAttr(static_cast<unsigned>(i), llvm::Attribute::ReadOnly);
    }
    function_ = body;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", body));
    Values inputs, outputs;
    for (size_t i = 0; i < spec_.inputs.size(); ++i) inputs.push_back(body->getArg(static_cast<unsigned>(i)));
    const size_t num_outputs = spec_.root->num_results() + spec_.extra_outputs.size();
    for (size_t i = 0; i < num_outputs; ++i) {
      outputs.push_back(body->getArg(static_cast<unsigned>(spec_.inputs.size() + i)));
    }
    const size_t fixed = spec_.inputs.size() + num_outputs;
    partial_ = num_params > fixed ? body->getArg(static_cast<unsigned>(fixed)) : nullptr;
    output0_ = outputs.empty() ? nullptr : outputs[0];
    element_.Bind(body, inputs, outputs);
    fill(body->getArg(static_cast<unsigned>(num_params)), body->getArg(static_cast<unsigned>(num_params + 1)));
    JITD_RETURN_IF_ERROR(element_.status());
    b_.CreateRetVoid();

    // The entry point.
    auto* type = llvm::FunctionType::get(b_.getVoidTy(), {b_.getPtrTy(), b_.getInt64Ty(), b_.getInt64Ty()}, false);
    llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module_);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
    fn->addFnAttr("prefer-vector-width", vector_width);
    if (plan_.stream_stores) fn->addFnAttr(kStreamStoresAttr);
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn));
    Values args;
    for (size_t i = 0; i < num_params; ++i) {
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), fn->getArg(0), i);
      args.push_back(b_.CreateLoad(b_.getPtrTy(), slot));
    }
    args.push_back(fn->getArg(1));
    args.push_back(fn->getArg(2));
    b_.CreateCall(body, args);
    b_.CreateRetVoid();

    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*body, &os) || llvm::verifyFunction(*fn, &os)) {
      return Internal("codegen produced invalid LLVM IR for '" + std::string(spec_.root->name()) + "' at " +
                      spec_.root->loc().ToString() + ": " + os.str());
    }
    return Status::Ok();
  }

  using LoopBody = std::function<Values(llvm::Value* i, const Values& carried)>;

  // for (i = lo; i < hi; ++i) carried = body(i, carried); returns the final
  // carried values.
  Values Loop(llvm::Value* lo, llvm::Value* hi, const Values& init, const LoopBody& body) {
    llvm::LLVMContext& ctx = module_.getContext();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", function_);
    llvm::BasicBlock* loop_body = llvm::BasicBlock::Create(ctx, "body", function_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", function_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
    i->addIncoming(lo, pre);
    std::vector<llvm::PHINode*> phis;
    Values carried;
    for (llvm::Value* v : init) {
      llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, pre);
      phis.push_back(phi);
      carried.push_back(phi);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(i, hi), loop_body, exit);
    b_.SetInsertPoint(loop_body);
    Values next = body(i, carried);
    llvm::Value* i_next = b_.CreateAdd(i, b_.getInt64(1), "", /*HasNUW=*/true, /*HasNSW=*/true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateBr(header);
    i->addIncoming(i_next, latch);
    for (size_t k = 0; k < phis.size(); ++k) phis[k]->addIncoming(next[k], latch);
    b_.SetInsertPoint(exit);
    return carried;
  }

  llvm::Value* Min(llvm::Value* a, int64_t b) {
    return b_.CreateSelect(b_.CreateICmpSLT(a, b_.getInt64(b)), a, b_.getInt64(b));
  }

  // ---- Elementwise -------------------------------------------------------------

  void EmitFlat(llvm::Value* begin, llvm::Value* end) {
    auto emit_range = [&](llvm::Value* lo, llvm::Value* hi) {
      Loop(lo, hi, {}, [&](llvm::Value* i, const Values&) {
        element_.StoreElement(i);  // ordinary stores (only output 0 streams)
        return Values{};
      });
    };
    if (!plan_.stream_stores) {
      emit_range(begin, end);
      return;
    }
    // Head [begin, aligned) up to the first 64-byte-aligned output element
    // (buffers are element-aligned, as every load here assumes), then the
    // aligned rest.
    const DType t = spec_.root->result(0)->type().dtype();
    llvm::Type* storage = element_.StorageType(t);
    const int64_t elem = ir::StorageBytes(t);
    llvm::Value* first = b_.CreatePtrToInt(b_.CreateInBoundsGEP(storage, output0_, begin), b_.getInt64Ty());
    llvm::Value* pad = b_.CreateUDiv(b_.CreateAnd(b_.CreateNeg(first), b_.getInt64(63)), b_.getInt64(elem));
    llvm::Value* head_end = b_.CreateAdd(begin, pad, "", true, true);
    llvm::Value* aligned = b_.CreateSelect(b_.CreateICmpSLT(head_end, end), head_end, end);
    emit_range(begin, aligned);
    llvm::LLVMContext& ctx = module_.getContext();
    llvm::BasicBlock* rest = llvm::BasicBlock::Create(ctx, "aligned", function_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "done", function_);
    b_.CreateCondBr(b_.CreateICmpSLT(aligned, end), rest, done);
    b_.SetInsertPoint(rest);
    b_.CreateAlignmentAssumption(module_.getDataLayout(), b_.CreateInBoundsGEP(storage, output0_, aligned), 64);
    emit_range(aligned, end);
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    if (llvm::Triple(module_.getTargetTriple()).isX86()) {
      b_.CreateCall(llvm::Intrinsic::getDeclaration(&module_, llvm::Intrinsic::x86_sse_sfence));
    }
  }

  // Row `row` of the result at index (row, j) for j in [j0, j1).
  void EmitRow(llvm::Value* row, llvm::Value* j0, llvm::Value* j1) {
    const std::vector<int64_t>& dims = spec_.root->result(0)->type().dims();
    const Values outer = element_.Delinearize(row, std::vector<int64_t>(dims.begin(), dims.end() - 1));
    llvm::Value* row_base = b_.CreateMul(row, b_.getInt64(plan_.row_length), "", true, true);
    Loop(j0, j1, {}, [&](llvm::Value* j, const Values&) {
      Values multi = outer;
      multi.push_back(j);
      element_.StoreElement(multi, b_.CreateAdd(row_base, j, "", true, true));
      return Values{};
    });
  }

  // The outer dimensions per work item, the last one in an inner loop.
  void EmitRows(llvm::Value* begin, llvm::Value* end) {
    Loop(begin, end, {}, [&](llvm::Value* row, const Values&) {
      EmitRow(row, b_.getInt64(0), b_.getInt64(plan_.row_length));
      return Values{};
    });
  }

  // Tiles of tile x tile: reading along the result's rows walks a column of
  // the operand; within a tile those lines stay in cache.
  void EmitTiled(llvm::Value* begin, llvm::Value* end) {
    const int64_t tile = plan_.tile;
    const int64_t col_blocks = (plan_.row_length + tile - 1) / tile;
    Loop(begin, end, {}, [&](llvm::Value* block, const Values&) {
      llvm::Value* r0 = b_.CreateMul(block, b_.getInt64(tile));
      llvm::Value* r1 = Min(b_.CreateAdd(r0, b_.getInt64(tile)), plan_.rows);
      Loop(b_.getInt64(0), b_.getInt64(col_blocks), {}, [&](llvm::Value* jb, const Values&) {
        llvm::Value* j0 = b_.CreateMul(jb, b_.getInt64(tile));
        llvm::Value* j1 = Min(b_.CreateAdd(j0, b_.getInt64(tile)), plan_.row_length);
        Loop(r0, r1, {}, [&](llvm::Value* row, const Values&) {
          EmitRow(row, j0, j1);
          return Values{};
        });
        return Values{};
      });
      return Values{};
    });
  }

  // ---- Reductions --------------------------------------------------------------

  // The body on (acc, x), its float ops reassociable when `reassociate`
  // (vectorized partial sums; see kReassociateMinExtent).
  Values Step(const Values& acc, const Values& x, bool reassociate) {
    const llvm::FastMathFlags saved = b_.getFastMathFlags();
    if (reassociate) {
      llvm::FastMathFlags fmf;
      fmf.setAllowReassoc();
      b_.setFastMathFlags(fmf);
    }
    Values next = element_.ReduceCombine(acc, x);
    b_.setFastMathFlags(saved);
    return next;
  }

  // The input's multi-index with output `o`'s kept dimensions filled in
  // (the reduced ones are null, for the loops to fill).
  Values KeptDims(llvm::Value* o) {
    const Op& root = *spec_.root;
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    const Values out_multi = element_.Delinearize(o, root.result(0)->type().dims());
    Values in_multi(in_dims.size(), nullptr);
    size_t kept = 0, r = 0;
    for (size_t d = 0; d < in_dims.size(); ++d) {
      if (r < plan_.reduced_dims.size() && plan_.reduced_dims[r] == static_cast<int64_t>(d)) {
        ++r;
      } else {
        in_multi[d] = out_multi[kept++];
      }
    }
    return in_multi;
  }

  // Nested loops over reduced_dims[level..] (ascending), folding into
  // `carried`; `bounds(level)` gives each loop's [lo, hi).
  Values Nest(size_t level, Values& in_multi, const Values& carried,
              const std::function<std::pair<llvm::Value*, llvm::Value*>(size_t)>& bounds) {
    const size_t d = static_cast<size_t>(plan_.reduced_dims[level]);
    const auto [lo, hi] = bounds(level);
    return Loop(lo, hi, carried, [&](llvm::Value* i, const Values& c) {
      in_multi[d] = i;
      if (level + 1 < plan_.reduced_dims.size()) return Nest(level + 1, in_multi, c, bounds);
      return Step(c, element_.ReduceInputsAt(in_multi), plan_.reassociates);
    });
  }

  // Output elements per work item, the reduced dimensions in nested loops.
  void EmitReduce(llvm::Value* begin, llvm::Value* end) {
    const std::vector<int64_t>& in_dims = spec_.root->operand(0)->type().dims();
    Loop(begin, end, {}, [&](llvm::Value* o, const Values&) {
      Values in_multi = KeptDims(o);
      Values acc = element_.ReduceInits();
      if (!plan_.reduced_dims.empty()) {
        acc = Nest(0, in_multi, acc, [&](size_t level) -> std::pair<llvm::Value*, llvm::Value*> {
          return {b_.getInt64(0), b_.getInt64(in_dims[static_cast<size_t>(plan_.reduced_dims[level])])};
        });
      }
      element_.StoreReduceResults(o, acc);
      return Values{};
    });
  }

  // Split phase 1: work item c * outputs + o folds chunk c of output o.
  void EmitPartials(llvm::Value* begin, llvm::Value* end) {
    const Op& root = *spec_.root;
    const DType t = root.result(0)->type().dtype();
    const std::vector<int64_t>& in_dims = root.operand(0)->type().dims();
    const std::vector<int64_t>& red = plan_.reduced_dims;
    const size_t level = plan_.split_level;
    const int64_t level_size = in_dims[static_cast<size_t>(red[level])];
    Loop(begin, end, {}, [&](llvm::Value* item, const Values&) {
      llvm::Value* o = b_.CreateURem(item, b_.getInt64(plan_.combine_items));
      llvm::Value* c = b_.CreateUDiv(item, b_.getInt64(plan_.combine_items));
      llvm::Value* blk = b_.CreateURem(c, b_.getInt64(plan_.split_blocks));
      llvm::Value* outer = b_.CreateUDiv(c, b_.getInt64(plan_.split_blocks));
      Values in_multi = KeptDims(o);
      // Reduced dimensions before `level`: row-major digits of `outer`.
      for (size_t l = level; l-- > 0;) {
        const size_t d = static_cast<size_t>(red[l]);
        in_multi[d] = l == 0 ? outer : b_.CreateURem(outer, b_.getInt64(in_dims[d]));
        if (l > 0) outer = b_.CreateUDiv(outer, b_.getInt64(in_dims[d]));
      }
      llvm::Value* lo = b_.CreateMul(blk, b_.getInt64(plan_.split_block));
      llvm::Value* hi = b_.CreateAdd(lo, b_.getInt64(plan_.split_block));
      hi = b_.CreateSelect(b_.CreateICmpSLT(hi, b_.getInt64(level_size)), hi, b_.getInt64(level_size));
      std::optional<llvm::Value*> identity = element_.FoldIdentity();
      if (!identity) return Values{};  // the plan's fold has one (PlanCpuKernel)
      const Values acc = Nest(level, in_multi, {*identity}, [&](size_t l) -> std::pair<llvm::Value*, llvm::Value*> {
        if (l == level) return {lo, hi};
        return {b_.getInt64(0), b_.getInt64(in_dims[static_cast<size_t>(red[l])])};
      });
      element_.StoreAt(acc[0], t, partial_, item);
      return Values{};
    });
  }

  // Split phase 2: out[o] = init folded with the partials in ascending
  // chunk order.
  void EmitCombine(llvm::Value* begin, llvm::Value* end) {
    const DType t = spec_.root->result(0)->type().dtype();
    Loop(begin, end, {}, [&](llvm::Value* o, const Values&) {
      const Values init = element_.ReduceInits();
      const Values acc =
          Loop(b_.getInt64(0), b_.getInt64(plan_.split_chunks), init, [&](llvm::Value* c, const Values& a) {
            llvm::Value* item = b_.CreateAdd(b_.CreateMul(c, b_.getInt64(plan_.combine_items)), o);
            return element_.ReduceCombine(a, {element_.LoadAt(partial_, t, item)});
          });
      element_.StoreReduceResults(o, acc);
      return Values{};
    });
  }

  llvm::Module& module_;
  const KernelSpec& spec_;
  const CpuKernelPlan& plan_;
  ElementalEmitter element_;
  Builder& b_;  // element_'s
  llvm::Function* function_ = nullptr;
  llvm::Value* output0_ = nullptr;  // the root's first output buffer
  llvm::Value* partial_ = nullptr;  // a split reduction's partials
};

}  // namespace

Status EmitCpuKernel(llvm::Module& module, const KernelSpec& spec, const CpuKernelPlan& plan) {
  if (!spec.root) return InvalidArgument("kernel '" + spec.name + "' has no root op");
  CpuKernelEmitter emitter(module, spec, plan);
  Status status = emitter.Emit();
  if (!status.ok()) {
    // Nothing of a failed kernel stays in the module (a caller may go on).
    for (const std::string& name : {spec.name, CombineSymbol(spec.name)}) {
      for (const std::string& symbol : {name, name + ".body"}) {
        if (llvm::Function* f = module.getFunction(symbol)) f->eraseFromParent();
      }
    }
  }
  return status;
}

StatusOr<CpuKernelPlan> EmitCpuKernel(llvm::Module& module, const KernelSpec& spec) {
  JITD_ASSIGN_OR_RETURN(CpuKernelPlan plan, PlanCpuKernel(spec));
  JITD_RETURN_IF_ERROR(EmitCpuKernel(module, spec, plan));
  return plan;
}

}  // namespace jitd::codegen
