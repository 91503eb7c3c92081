#include "jit/codegen/cpu/cpu_region_emitter.h"

#include <functional>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/internal/element_types.h"
#include "jit/codegen/target_math.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

using internal::IsSupportedDType;
using ir::DType;
using ir::Op;
using ir::OpCode;

namespace {

// Comparators and window bodies: splat constants from outside the region,
// no bitcast_convert (f16 / bf16 NaN payloads would change).
constexpr ScalarBlockRules kRegionRules = {.outer_constants = true, .bitcasts = false};

// Builds `fn`'s body through `fill`, which gets the emitter; UNIMPLEMENTED
// naming `what` when `emittable` is false; a function that fails half-way
// is removed again.
Status EmitRegionFunction(llvm::Module& module, const Op& op, const std::string& name, bool emittable,
                          const char* what, llvm::FunctionType* type, bool reads_only,
                          const std::function<void(ElementalEmitter&, llvm::Function*)>& fill) {
  if (!emittable) {
    return Unimplemented(op.loc().ToString() + ": '" + std::string(op.name()) + "' op " + what +
                         " cannot be compiled");
  }
  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  ElementalEmitter element(module, spec, HostTargetMath());
  llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  fn->addFnAttr(llvm::Attribute::NoUnwind);
  fn->addFnAttr(llvm::Attribute::WillReturn);
  if (reads_only) fn->setOnlyReadsMemory();
  element.builder().SetInsertPoint(llvm::BasicBlock::Create(module.getContext(), "entry", fn));
  fill(element, fn);
  Status status = element.status();
  if (status.ok()) {
    std::string message;
    llvm::raw_string_ostream os(message);
    if (llvm::verifyFunction(*fn, &os)) {
      status = Internal("codegen produced an invalid " + std::string(what) + " for '" + std::string(op.name()) +
                        "' at " + op.loc().ToString() + ": " + os.str());
    }
  }
  if (!status.ok()) fn->eraseFromParent();  // no half-built code
  return status;
}

// The element `slot` of the pointer array `array` points at, of type `t`.
llvm::Value* LoadThrough(ElementalEmitter& element, llvm::Value* array, size_t slot, DType t,
                         std::vector<llvm::Value*>* pointers = nullptr) {
  Builder& b = element.builder();
  llvm::Value* p = b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), array, slot));
  if (pointers) pointers->push_back(p);
  return element.LoadAt(p, t, b.getInt64(0));
}

}  // namespace

bool IsEmittableComparator(const Op& sort) {
  if (sort.code() != OpCode::kSort || sort.num_regions() != 1 || sort.num_operands() == 0) return false;
  const ir::Region& region = sort.region(0);
  if (region.num_blocks() != 1) return false;
  std::vector<DType> args;
  for (size_t i = 0; i < 2 * sort.num_operands(); ++i) {
    const ir::Type& operand = sort.operand(i / 2)->type();
    if (!operand.is_tensor() || !IsSupportedDType(operand.dtype())) return false;
    args.push_back(operand.dtype());
  }
  return IsScalarBlock(region.block(0), args, {DType::kPred}, HostTargetMath(), kRegionRules);
}

bool IsEmittableReduceWindowBody(const Op& op) {
  if (op.code() != OpCode::kReduceWindow || op.num_regions() != 1) return false;
  const size_t n = op.num_results();
  if (n == 0 || op.num_operands() != 2 * n) return false;
  std::vector<DType> results;
  for (size_t i = 0; i < n; ++i) {
    const ir::Type& r = op.result(i)->type();
    const ir::Type& in = op.operand(i)->type();
    const ir::Type& init = op.operand(n + i)->type();
    if (!r.is_tensor() || !in.is_tensor() || !init.is_tensor() || !IsSupportedDType(r.dtype()) ||
        in.dtype() != r.dtype() || init.dtype() != r.dtype() || init.rank() != 0) {
      return false;
    }
    results.push_back(r.dtype());
  }
  const ir::Region& region = op.region(0);
  if (region.num_blocks() != 1) return false;
  std::vector<DType> args = results;
  args.insert(args.end(), results.begin(), results.end());
  return IsScalarBlock(region.block(0), args, results, HostTargetMath(), kRegionRules);
}

Status EmitComparator(llvm::Module& module, const Op& sort, const std::string& name) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getInt8Ty(ctx), {ptr, ptr}, false);
  return EmitRegionFunction(
      module, sort, name, IsEmittableComparator(sort), "comparator", type, /*reads_only=*/true,
      [&](ElementalEmitter& element, llvm::Function* fn) {
        Builder& b = element.builder();
        std::vector<llvm::Value*> args;  // lhs[0], rhs[0], lhs[1], ...
        for (size_t i = 0; i < sort.num_operands(); ++i) {
          for (unsigned side = 0; side < 2; ++side) {
            args.push_back(LoadThrough(element, fn->getArg(side), i, sort.operand(i)->type().dtype()));
          }
        }
        const std::vector<llvm::Value*> less = element.EmitScalarBlock(sort.region(0).block(0), args);
        b.CreateRet(b.CreateZExt(less.empty() ? b.getFalse() : less[0], b.getInt8Ty()));
      });
}

Status EmitReduceWindowBody(llvm::Module& module, const Op& op, const std::string& name) {
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Type* ptr = llvm::PointerType::getUnqual(ctx);
  auto* type = llvm::FunctionType::get(llvm::Type::getVoidTy(ctx), {ptr, ptr}, false);
  return EmitRegionFunction(
      module, op, name, IsEmittableReduceWindowBody(op), "body", type, /*reads_only=*/false,
      [&](ElementalEmitter& element, llvm::Function* fn) {
        const size_t n = op.num_results();
        const ir::Block& block = op.region(0).block(0);
        std::vector<llvm::Value*> args, acc_ptrs;  // acc[0..n), x[0..n)
        for (size_t i = 0; i < 2 * n; ++i) {
          args.push_back(LoadThrough(element, fn->getArg(i < n ? 0 : 1), i % n, block.arg(i)->type().dtype(),
                                     i < n ? &acc_ptrs : nullptr));
        }
        // All results computed before any accumulator is overwritten.
        const std::vector<llvm::Value*> results = element.EmitScalarBlock(block, args);
        Builder& b = element.builder();
        for (size_t i = 0; i < n && i < results.size(); ++i) {
          element.StoreAt(results[i], op.result(i)->type().dtype(), acc_ptrs[i], b.getInt64(0));
        }
        b.CreateRetVoid();
      });
}

}  // namespace jitd::codegen
