// NVPTX kernels: see grid_kernel_emitter.h and kernel_plan.h for the
// schedules. Indices are i64 throughout (results past 2^31 elements).
#include "jit/codegen/nvptx/grid_kernel_emitter.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/kernel_function.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/GlobalVariable.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Operator.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

bool IsNvptxFusibleOp(const ir::Op& op) { return IsFusibleOp(op, NvptxMath()); }
bool IsNvptxEmittableReduce(const ir::Op& op) { return IsEmittableReduce(op, NvptxMath()); }

namespace {

constexpr unsigned kShared = 3;  // the NVPTX shared-memory address space

// Which kernel of a plan: the one kernel, or for a split kBlockReduce the
// partials kernel (inputs..., scratch) or the combine kernel (inputs...,
// scratch, outputs...).
enum class Pass { kWhole, kPartials, kCombine };

class GridEmitter {
 public:
  GridEmitter(llvm::Module& module, const KernelSpec& spec, const GridPlan& plan, const GridLimits& limits,
              Pass pass = Pass::kWhole)
      : module_(module),
        spec_(spec),
        plan_(plan),
        limits_(limits),
        pass_(pass),
        element_(module, spec, NvptxMath()),
        b_(element_.builder()) {}

  Status Emit() {
    llvm::LLVMContext& ctx = module_.getContext();
    const size_t num_inputs = spec_.inputs.size();
    const size_t num_outputs = spec_.root->num_results() + spec_.extra_outputs.size();
    size_t num_params = num_inputs + num_outputs;
    size_t read_only = num_inputs;
    std::string name = spec_.name;
    if (pass_ == Pass::kPartials) {
      num_params = num_inputs + 1;  // the scratch is its output
    } else if (pass_ == Pass::kCombine) {
      num_params = num_inputs + 1 + num_outputs;
      read_only = num_inputs + 1;
      name += "_combine";
    }
    fn_ = DeclareKernel(module_, name, num_params, {0, read_only}, limits_.buffer_alignment);
    // The block size too, so that ptxas may size registers for it.
    module_.getOrInsertNamedMetadata("nvvm.annotations")->addOperand(llvm::MDNode::get(
        ctx, {llvm::ValueAsMetadata::get(fn_), llvm::MDString::get(ctx, "maxntidx"),
              llvm::ValueAsMetadata::get(b_.getInt32(static_cast<uint32_t>(plan_.block)))}));

    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", fn_));
    // The element emitter reads generic pointers; InferAddressSpaces turns
    // its loads and stores back into ld.global / st.global.
    std::vector<llvm::Value*> inputs, outputs;
    for (unsigned i = 0; i < num_params; ++i) {
      llvm::Value* p = b_.CreateAddrSpaceCast(fn_->getArg(i), b_.getPtrTy());
      if (i < num_inputs) {
        inputs.push_back(p);
      } else if (pass_ != Pass::kWhole && i == num_inputs) {
        scratch_ = p;
        if (pass_ == Pass::kPartials) outputs.push_back(p);  // bound, never stored through
      } else {
        outputs.push_back(p);
      }
    }
    element_.Bind(fn_, inputs, outputs);
    tid_ = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_tid_x), b_.getInt64Ty());
    ctaid_ = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_ctaid_x), b_.getInt64Ty());
    llvm::Value* nctaid = b_.CreateZExt(Sreg(llvm::Intrinsic::nvvm_read_ptx_sreg_nctaid_x), b_.getInt64Ty());
    llvm::Value* block = b_.getInt64(plan_.block);
    global_id_ = b_.CreateAdd(b_.CreateMul(ctaid_, block), tid_);
    global_threads_ = b_.CreateMul(nctaid, block);
    grid_ = nctaid;

    switch (plan_.kind) {
      case GridKind::kFlat:
        EmitFlat();
        break;
      case GridKind::kThreadReduce:
        Loop(global_id_, b_.getInt64(plan_.work_items), global_threads_, {},
             [&](llvm::Value* o, const std::vector<llvm::Value*>&) {
               std::vector<llvm::Value*> acc = element_.ReduceInits();
               acc = Loop(b_.getInt64(0), b_.getInt64(plan_.extent), b_.getInt64(1), acc,
                          [&](llvm::Value* r, const std::vector<llvm::Value*>& a) {
                            return element_.ReduceCombine(a, element_.ReduceInputs(o, r));
                          });
               element_.StoreReduceResults(o, acc);
               return std::vector<llvm::Value*>{};
             });
        break;
      case GridKind::kBlockReduce:
        JITD_RETURN_IF_ERROR(EmitBlockReduce(name));
        break;
    }
    JITD_RETURN_IF_ERROR(element_.status());
    b_.CreateRetVoid();
    VectorizeGroup();
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*fn_, &os)) {
      return Internal("codegen produced invalid NVPTX IR for '" + std::string(spec_.root->name()) + "' at " +
                      spec_.root->loc().ToString() + ": " + os.str());
    }
    return Status::Ok();
  }

  void Erase() {
    if (fn_) {
      EraseKernel(module_, fn_);
      fn_ = nullptr;
    }
    if (shared_) shared_->eraseFromParent();
    shared_ = nullptr;
  }

 private:
  llvm::Value* Sreg(llvm::Intrinsic::ID id) { return b_.CreateIntrinsic(id, {}, {}); }

  // for (i = from; i < to; i += step) with loop-carried values; `body`
  // returns the next values. Returns the values after the loop.
  std::vector<llvm::Value*> Loop(
      llvm::Value* from, llvm::Value* to, llvm::Value* step, const std::vector<llvm::Value*>& init,
      const std::function<std::vector<llvm::Value*>(llvm::Value*, const std::vector<llvm::Value*>&)>& body) {
    llvm::LLVMContext& ctx = module_.getContext();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn_);
    llvm::BasicBlock* inside = llvm::BasicBlock::Create(ctx, "body", fn_);
    llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", fn_);
    b_.CreateBr(header);
    b_.SetInsertPoint(header);
    llvm::PHINode* i = b_.CreatePHI(b_.getInt64Ty(), 2);
    i->addIncoming(from, pre);
    std::vector<llvm::PHINode*> phis;
    std::vector<llvm::Value*> carried;
    for (llvm::Value* v : init) {
      llvm::PHINode* phi = b_.CreatePHI(v->getType(), 2);
      phi->addIncoming(v, pre);
      phis.push_back(phi);
      carried.push_back(phi);
    }
    b_.CreateCondBr(b_.CreateICmpSLT(i, to), inside, exit);
    b_.SetInsertPoint(inside);
    std::vector<llvm::Value*> next = body(i, carried);
    llvm::Value* i_next = b_.CreateAdd(i, step, "", /*HasNUW=*/true, /*HasNSW=*/true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateBr(header);
    i->addIncoming(i_next, latch);
    for (size_t k = 0; k < phis.size() && k < next.size(); ++k) phis[k]->addIncoming(next[k], latch);
    b_.SetInsertPoint(exit);
    return carried;
  }

  // `v` as 64 bits and back (shuffles move 32-bit halves, shared memory
  // holds one i64 slot per warp).
  llvm::Value* ToBits(llvm::Value* v) {
    llvm::Type* t = v->getType();
    const unsigned bits = static_cast<unsigned>(t->getPrimitiveSizeInBits().getFixedValue());
    llvm::Value* x = t->isIntegerTy() ? v : b_.CreateBitCast(v, b_.getIntNTy(bits));
    return b_.CreateZExt(x, b_.getInt64Ty());
  }
  llvm::Value* FromBits(llvm::Value* bits, llvm::Type* t) {
    const unsigned width = static_cast<unsigned>(t->getPrimitiveSizeInBits().getFixedValue());
    llvm::Value* x = b_.CreateTrunc(bits, b_.getIntNTy(width));
    return t->isIntegerTy() ? x : b_.CreateBitCast(x, t);
  }

  // Lane i gets lane i + delta's `v` (its own past the warp's end): one
  // 32-bit shuffle, two for 64-bit values.
  llvm::Value* ShuffleDown(llvm::Value* v, unsigned delta) {
    llvm::Value* bits = ToBits(v);
    auto shfl = [&](llvm::Value* half) {
      return b_.CreateIntrinsic(llvm::Intrinsic::nvvm_shfl_sync_down_i32, {},
                                {b_.getInt32(0xffffffffu), half, b_.getInt32(delta), b_.getInt32(0x1f)});
    };
    if (v->getType()->getPrimitiveSizeInBits().getFixedValue() <= 32) {
      return FromBits(b_.CreateZExt(shfl(b_.CreateTrunc(bits, b_.getInt32Ty())), b_.getInt64Ty()), v->getType());
    }
    llvm::Value* lo = shfl(b_.CreateTrunc(bits, b_.getInt32Ty()));
    llvm::Value* hi = shfl(b_.CreateTrunc(b_.CreateLShr(bits, 32), b_.getInt32Ty()));
    llvm::Value* joined =
        b_.CreateOr(b_.CreateZExt(lo, b_.getInt64Ty()), b_.CreateShl(b_.CreateZExt(hi, b_.getInt64Ty()), 32));
    return FromBits(joined, v->getType());
  }

  // Lane 0 ends with the fold of the warp's 32 values in a fixed tree:
  // ((v0 . v16) . (v8 . v24)) ... by offsets 16, 8, 4, 2, 1.
  llvm::Value* WarpFold(llvm::Value* v) {
    for (unsigned delta = static_cast<unsigned>(limits_.warp_size) / 2; delta >= 1; delta /= 2) {
      v = element_.ReduceCombine({v}, {ShuffleDown(v, delta)})[0];
    }
    return v;
  }

  void IfThen(llvm::Value* cond, const std::function<void()>& then) {
    llvm::LLVMContext& ctx = module_.getContext();
    llvm::BasicBlock* yes = llvm::BasicBlock::Create(ctx, "then", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(ctx, "endif", fn_);
    b_.CreateCondBr(cond, yes, done);
    b_.SetInsertPoint(yes);
    then();
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
  }

  // kFlat (kernel_plan.h): V consecutive elements per thread and
  // iteration, the element math unrolled V times, then the scalar tail.
  // The first index of each group is a multiple of V, so with aligned
  // buffers the V accesses of an identity-indexed buffer are one aligned
  // vector; VectorizeGroup makes them one once the function is complete.
  void EmitFlat() {
    const int64_t v = plan_.vector_width;
    auto scalar = [&](llvm::Value* i, const std::vector<llvm::Value*>&) {
      element_.StoreElement(i);
      return std::vector<llvm::Value*>{};
    };
    if (v <= 1) {
      Loop(global_id_, b_.getInt64(plan_.work_items), global_threads_, {}, scalar);
      return;
    }
    const int64_t vector_end = FlatVectorEnd(plan_);
    llvm::Value* first = b_.CreateMul(global_id_, b_.getInt64(v), "", /*HasNUW=*/true, /*HasNSW=*/true);
    llvm::Value* step = b_.CreateMul(global_threads_, b_.getInt64(v), "", /*HasNUW=*/true, /*HasNSW=*/true);
    Loop(first, b_.getInt64(vector_end), step, {}, [&](llvm::Value* i, const std::vector<llvm::Value*>&) {
      group_.entry = b_.GetInsertBlock();
      for (int64_t k = 0; k < v; ++k) {
        group_.index.push_back(k == 0 ? i : b_.CreateAdd(i, b_.getInt64(k), "", /*HasNUW=*/true, /*HasNSW=*/true));
        element_.StoreElement(group_.index.back());
      }
      group_.exit = b_.GetInsertBlock();
      return std::vector<llvm::Value*>{};
    });
    if (vector_end < plan_.work_items) {
      Loop(b_.CreateAdd(b_.getInt64(vector_end), global_id_, "", /*HasNUW=*/true, /*HasNSW=*/true),
           b_.getInt64(plan_.work_items), global_threads_, {}, scalar);
    }
  }

  // The accesses of one buffer at group index + k, k = 0 .. V - 1.
  struct GroupAccesses {
    llvm::Argument* buffer = nullptr;
    llvm::Type* element = nullptr;  // a scalar integer or float type
    llvm::Value* address = nullptr;  // the buffer as the accesses' GEPs use it
    std::vector<std::vector<llvm::LoadInst*>> loads;
    std::vector<std::vector<llvm::StoreInst*>> stores;
  };

  static void RaiseFirstLaneAlignment(const GroupAccesses& g, llvm::Align align) {
    for (llvm::LoadInst* load : g.loads[0]) load->setAlignment(std::max(load->getAlign(), align));
    for (llvm::StoreInst* store : g.stores[0]) store->setAlignment(std::max(store->getAlign(), align));
  }

  // After the function is complete: the element emitter's accesses of the
  // vector loop become vector accesses where that is sound, so that long
  // element bodies (whose V neighbours' accesses lie far apart or in other
  // blocks, out of the backend's LoadStoreVectorizer's reach) get them too.
  //   - Input loads at buffer[index + k] for every k: one aligned vector
  //     load at the top of the group, each scalar load replaced by its
  //     lane. Sound: inputs are read-only and alias nothing the kernel
  //     writes, and the whole vector lies inside the buffer (checked from
  //     its type), so an element load that ran only on some paths may run
  //     on all of them.
  //   - Output stores at buffer[index + k], one per k, each on every path
  //     through the group (its block dominates the group's end) to a
  //     buffer the kernel never reads: one aligned vector store at the end.
  // Other accesses at index (complex elements, groups with a lane
  // missing) only get their alignment (V elements, up to the buffers'),
  // which LoadStoreVectorizer needs to merge them itself.
  void VectorizeGroup() {
    if (group_.index.empty() || limits_.buffer_alignment <= 1) return;
    const size_t v = group_.index.size();
    const llvm::DataLayout& layout = module_.getDataLayout();
    const uint64_t max_align = static_cast<uint64_t>(limits_.buffer_alignment);
    // The lane an address is at (GEP of a kernel parameter by index + k).
    auto lane = [&](llvm::Value* address, llvm::Argument** buffer, llvm::GetElementPtrInst** gep_out) -> int64_t {
      auto* gep = llvm::dyn_cast<llvm::GetElementPtrInst>(address);
      if (!gep || gep->getNumIndices() != 1) return -1;
      auto* base = llvm::dyn_cast<llvm::Argument>(gep->getPointerOperand()->stripPointerCasts());
      if (!base || base->getParent() != fn_) return -1;
      for (size_t k = 0; k < v; ++k) {
        if (gep->idx_begin()->get() == group_.index[k]) {
          *buffer = base;
          *gep_out = gep;
          return static_cast<int64_t>(k);
        }
      }
      return -1;
    };
    auto group_align = [&](llvm::Type* t) -> std::optional<llvm::Align> {
      const uint64_t bytes = layout.getTypeAllocSize(t).getFixedValue();
      if (bytes == 0 || !llvm::isPowerOf2_64(bytes)) return std::nullopt;
      return llvm::Align(std::min<uint64_t>(max_align, bytes * v));
    };
    llvm::DominatorTree dominators(*fn_);
    auto in_group = [&](const llvm::BasicBlock* block) { return dominators.dominates(group_.entry, block); };
    std::vector<GroupAccesses> groups;  // in order of first access: the same IR every time
    // What the group's other instructions read or write through pointers:
    // the buffer when it is one, else nullptr (anything).
    std::vector<llvm::Value*> read, written;
    auto object = [&](llvm::Value* pointer) -> llvm::Value* {
      llvm::Value* o = llvm::getUnderlyingObject(pointer, /*MaxLookup=*/0);
      return llvm::isa<llvm::Argument, llvm::AllocaInst, llvm::GlobalVariable>(o) ? o : nullptr;
    };
    for (llvm::BasicBlock& block : *fn_) {
      if (!in_group(&block)) continue;
      for (llvm::Instruction& inst : block) {
        if (auto* call = llvm::dyn_cast<llvm::CallBase>(&inst)) {
          for (llvm::Value* arg : call->args()) {
            if (arg->getType()->isPointerTy()) read.push_back(object(arg)), written.push_back(object(arg));
          }
          continue;
        }
        auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst);
        auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst);
        if (!load && !store) continue;
        llvm::Value* address = load ? load->getPointerOperand() : store->getPointerOperand();
        llvm::Argument* buffer = nullptr;
        llvm::GetElementPtrInst* gep = nullptr;
        const int64_t k = lane(address, &buffer, &gep);
        llvm::Type* t = k < 0 ? nullptr : gep->getSourceElementType();
        const bool simple = k >= 0 && (load ? load->isSimple() && load->getType() == t
                                            : store->isSimple() && store->getValueOperand()->getType() == t);
        if (!simple || !(t->isIntegerTy() || t->isFloatingPointTy())) {
          (load ? read : written).push_back(object(address));
          // The alignment, for the backend's vectorizer, on the first lane.
          std::optional<llvm::Align> a = k == 0 ? group_align(t) : std::nullopt;
          if (a && load && *a > load->getAlign()) load->setAlignment(*a);
          if (a && store && *a > store->getAlign()) store->setAlignment(*a);
          continue;
        }
        auto it = std::find_if(groups.begin(), groups.end(),
                               [&](const GroupAccesses& g) { return g.buffer == buffer && g.element == t; });
        if (it == groups.end()) {
          groups.push_back({buffer, t, gep->getPointerOperand(), std::vector<std::vector<llvm::LoadInst*>>(v),
                            std::vector<std::vector<llvm::StoreInst*>>(v)});
          it = groups.end() - 1;
        }
        if (it->address != gep->getPointerOperand()) it->address = nullptr;  // mixed bases: leave it
        if (load) it->loads[static_cast<size_t>(k)].push_back(load);
        if (store) it->stores[static_cast<size_t>(k)].push_back(store);
      }
    }
    auto touched = [](const std::vector<llvm::Value*>& objects, llvm::Value* buffer) {
      return std::any_of(objects.begin(), objects.end(), [&](llvm::Value* o) { return !o || o == buffer; });
    };
    // Replaced accesses are erased at the end (`top` may be one of them).
    llvm::Instruction* top = &*group_.entry->getFirstInsertionPt();
    llvm::Instruction* end = group_.exit->getTerminator();
    std::vector<llvm::Instruction*> replaced;
    Builder b(module_.getContext());
    for (GroupAccesses& g : groups) {
      const uint64_t bytes = layout.getTypeAllocSize(g.element).getFixedValue();
      std::optional<llvm::Align> align = group_align(g.element);
      auto* base = llvm::dyn_cast_or_null<llvm::Instruction>(g.address);
      if (!align || align->value() < bytes * v || !g.address || (base && !dominators.dominates(base, top))) {
        // No vector: the first lane's alignment at least.
        if (align) RaiseFirstLaneAlignment(g, *align);
        continue;
      }
      auto* vector_type = llvm::FixedVectorType::get(g.element, static_cast<unsigned>(v));
      const size_t param = g.buffer->getArgNo();
      const bool every_lane_read =
          std::all_of(g.loads.begin(), g.loads.end(), [](const auto& l) { return !l.empty(); });
      const bool every_lane_written_once =
          std::all_of(g.stores.begin(), g.stores.end(), [](const auto& s) { return s.size() == 1; });
      if (param < spec_.inputs.size() && every_lane_read && spec_.inputs[param]->type().is_tensor() &&
          spec_.inputs[param]->type().byte_size() >= FlatVectorEnd(plan_) * static_cast<int64_t>(bytes)) {
        b.SetInsertPoint(top);
        llvm::Value* vector =
            b.CreateAlignedLoad(vector_type, b.CreateInBoundsGEP(g.element, g.address, group_.index[0]), *align);
        for (size_t k = 0; k < v; ++k) {
          llvm::Value* x = b.CreateExtractElement(vector, b.getInt64(k));
          for (llvm::LoadInst* load : g.loads[k]) {
            load->replaceAllUsesWith(x);
            replaced.push_back(load);
          }
        }
        continue;
      }
      bool on_every_path = every_lane_written_once && param >= spec_.inputs.size();
      for (size_t k = 0; on_every_path && k < v; ++k) {
        on_every_path = g.loads[k].empty() && dominators.dominates(g.stores[k][0]->getParent(), group_.exit);
      }
      if (!on_every_path || touched(read, g.buffer) || touched(written, g.buffer)) {
        RaiseFirstLaneAlignment(g, *align);
        continue;
      }
      b.SetInsertPoint(end);
      llvm::Value* vector = llvm::PoisonValue::get(vector_type);
      for (size_t k = 0; k < v; ++k) {
        vector = b.CreateInsertElement(vector, g.stores[k][0]->getValueOperand(), b.getInt64(k));
      }
      b.CreateAlignedStore(vector, b.CreateInBoundsGEP(g.element, g.address, group_.index[0]), *align);
      for (const auto& stores : g.stores) replaced.push_back(stores[0]);
    }
    for (llvm::Instruction* inst : replaced) inst->eraseFromParent();
  }

  void Barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // kBlockReduce (kernel_plan.h): the whole reduce, or one pass of a split.
  Status EmitBlockReduce(const std::string& name) {
    std::optional<llvm::Value*> identity = element_.FoldIdentity();
    if (!identity) {
      return Internal("kernel plan chose a block reduction for '" + std::string(spec_.root->name()) + "' at " +
                      spec_.root->loc().ToString() + ", whose body is not a known fold");
    }
    if (pass_ != Pass::kWhole && (plan_.split < 2 || plan_.chunk < 1)) {
      return Internal("kernel '" + name + "': a split pass of a plan that is not split");
    }
    const int64_t warps = plan_.block / limits_.warp_size;
    auto* slots_type = llvm::ArrayType::get(b_.getInt64Ty(), static_cast<uint64_t>(warps));
    shared_ = new llvm::GlobalVariable(module_, slots_type, false, llvm::GlobalValue::InternalLinkage,
                                       llvm::UndefValue::get(slots_type), name + ".partials", nullptr,
                                       llvm::GlobalValue::NotThreadLocal, kShared);
    shared_->setAlignment(llvm::Align(8));
    llvm::Value* lane = b_.CreateURem(tid_, b_.getInt64(limits_.warp_size));
    llvm::Value* warp = b_.CreateUDiv(tid_, b_.getInt64(limits_.warp_size));
    llvm::Value* is_lane0 = b_.CreateICmpEQ(lane, b_.getInt64(0));
    auto slot = [&](llvm::Value* k) { return b_.CreateInBoundsGEP(slots_type, shared_, {b_.getInt64(0), k}); };
    llvm::Type* element_type = (*identity)->getType();
    // The block's fold of input(r) for r = first + tid, first + tid +
    // block, ... below end, from the identity, by the fixed tree; `use`
    // gets the total on thread 0.
    auto block_fold = [&](llvm::Value* first, llvm::Value* end,
                          const std::function<std::vector<llvm::Value*>(llvm::Value*)>& input,
                          const std::function<void(llvm::Value*)>& use) {
      std::vector<llvm::Value*> acc =
          Loop(b_.CreateAdd(first, tid_), end, b_.getInt64(plan_.block), {*identity},
               [&](llvm::Value* r, const std::vector<llvm::Value*>& a) { return element_.ReduceCombine(a, input(r)); });
      llvm::Value* folded = WarpFold(acc[0]);
      IfThen(is_lane0, [&] { b_.CreateStore(ToBits(folded), slot(warp)); });
      Barrier();
      IfThen(b_.CreateICmpEQ(warp, b_.getInt64(0)), [&] {
        llvm::Value* in_range = b_.CreateICmpULT(lane, b_.getInt64(warps));
        llvm::Value* k = b_.CreateSelect(in_range, lane, b_.getInt64(0));
        llvm::Value* partial = FromBits(b_.CreateLoad(b_.getInt64Ty(), slot(k)), element_type);
        llvm::Value* total = WarpFold(b_.CreateSelect(in_range, partial, *identity));
        IfThen(is_lane0, [&] { use(total); });
      });
      // The slots are reused by the block's next output.
      Barrier();
    };
    // The init folded in last, the result stored.
    auto finish = [&](llvm::Value* o, llvm::Value* total) {
      std::vector<llvm::Value*> result = element_.ReduceCombine(element_.ReduceInits(), {total});
      element_.StoreReduceResults(o, result);
    };
    auto reduced = [&](llvm::Value* o) {
      return [this, o](llvm::Value* r) { return element_.ReduceInputs(o, r); };
    };
    switch (pass_) {
      case Pass::kWhole:
        Loop(ctaid_, b_.getInt64(plan_.work_items), grid_, {}, [&](llvm::Value* o, const std::vector<llvm::Value*>&) {
          block_fold(b_.getInt64(0), b_.getInt64(plan_.extent), reduced(o), [&](llvm::Value* t) { finish(o, t); });
          return std::vector<llvm::Value*>{};
        });
        break;
      case Pass::kPartials: {
        // Block-stride over (output, chunk) pairs; pair p's partial goes to
        // scratch[p] = scratch[output * split + chunk].
        llvm::Value* split = b_.getInt64(plan_.split);
        Loop(ctaid_, b_.getInt64(plan_.work_items * plan_.split), grid_, {},
             [&](llvm::Value* p, const std::vector<llvm::Value*>&) {
               llvm::Value* o = b_.CreateUDiv(p, split);
               llvm::Value* first = b_.CreateMul(b_.CreateURem(p, split), b_.getInt64(plan_.chunk));
               llvm::Value* end = b_.CreateAdd(first, b_.getInt64(plan_.chunk));
               llvm::Value* extent = b_.getInt64(plan_.extent);
               end = b_.CreateSelect(b_.CreateICmpULT(end, extent), end, extent);
               block_fold(first, end, reduced(o), [&](llvm::Value* t) {
                 b_.CreateStore(t, b_.CreateInBoundsGEP(element_type, scratch_, p));
               });
               return std::vector<llvm::Value*>{};
             });
        break;
      }
      case Pass::kCombine: {
        llvm::Value* split = b_.getInt64(plan_.split);
        Loop(ctaid_, b_.getInt64(plan_.work_items), grid_, {}, [&](llvm::Value* o, const std::vector<llvm::Value*>&) {
          llvm::Value* row = b_.CreateMul(o, split);
          block_fold(
              b_.getInt64(0), split,
              [&](llvm::Value* r) {
                return std::vector<llvm::Value*>{
                    b_.CreateLoad(element_type, b_.CreateInBoundsGEP(element_type, scratch_, b_.CreateAdd(row, r)))};
              },
              [&](llvm::Value* t) { finish(o, t); });
          return std::vector<llvm::Value*>{};
        });
        break;
      }
    }
    return Status::Ok();
  }

  llvm::Module& module_;
  const KernelSpec& spec_;
  const GridPlan& plan_;
  const GridLimits& limits_;
  const Pass pass_;
  ElementalEmitter element_;
  Builder& b_;
  llvm::Function* fn_ = nullptr;
  llvm::GlobalVariable* shared_ = nullptr;
  llvm::Value* scratch_ = nullptr;  // a split pass's partials
  llvm::Value* tid_ = nullptr;
  llvm::Value* ctaid_ = nullptr;
  llvm::Value* grid_ = nullptr;
  llvm::Value* global_id_ = nullptr;
  llvm::Value* global_threads_ = nullptr;
  // kFlat with V > 1: the vector loop's body (first and last block) and
  // its V element indices.
  struct {
    llvm::BasicBlock* entry = nullptr;
    llvm::BasicBlock* exit = nullptr;
    std::vector<llvm::Value*> index;
  } group_;
};

}  // namespace

Status EmitGridKernel(llvm::Module& module, const KernelSpec& spec, const GridPlan& plan,
                      const GridLimits& limits) {
  if (const size_t n = KernelOps(spec); n > kMaxKernelOps) {
    return InvalidArgument(spec.root->loc().ToString() + ": '" + std::string(spec.root->name()) +
                           "' op roots a kernel of " + std::to_string(n) + " ops, above the limit of " +
                           std::to_string(kMaxKernelOps) + " ops per kernel");
  }
  const int64_t v = plan.vector_width;
  if (v < 1 || (v & (v - 1)) != 0 || (v > 1 && plan.kind != GridKind::kFlat)) {
    return InvalidArgument("kernel '" + spec.name + "': a " + std::string(GridKindName(plan.kind)) +
                           " plan with vector width " + std::to_string(v) +
                           " (a power of two, above 1 only for flat plans)");
  }
  if (plan.split > 1) {
    if (plan.kind != GridKind::kBlockReduce || plan.chunk < 1 || plan.combine_grid < 1) {
      return InvalidArgument("kernel '" + spec.name + "': a split " + std::string(GridKindName(plan.kind)) +
                             " plan (only block reductions split, with a chunk and a combine grid)");
    }
    GridEmitter partials(module, spec, plan, limits, Pass::kPartials);
    if (Status status = partials.Emit(); !status.ok()) {
      partials.Erase();
      return status;
    }
    // The combine kernel launches over combine_grid blocks: its block-stride
    // loop reads the grid size at run time, so the plan serves both.
    GridEmitter combine(module, spec, plan, limits, Pass::kCombine);
    Status status = combine.Emit();
    if (!status.ok()) {
      combine.Erase();
      partials.Erase();
    }
    return status;
  }
  GridEmitter emitter(module, spec, plan, limits);
  Status status = emitter.Emit();
  if (!status.ok()) emitter.Erase();
  return status;
}

}  // namespace jitd::codegen
