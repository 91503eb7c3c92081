#include "jit/codegen/nvptx/fft_kernel.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "jit/codegen/elemental_emitter.h"
#include "jit/codegen/nvptx/kernel_function.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {

namespace {

using ir::DType;

enum class FftType { kFft, kIfft, kRfft, kIrfft };

std::optional<FftType> TypeOf(const ir::Op& op) {
  const ir::EnumAttr* e = op.GetEnum("fft_type");
  const std::string_view v = e ? std::string_view(e->value) : std::string_view("FFT");
  if (v == "FFT") return FftType::kFft;
  if (v == "IFFT") return FftType::kIfft;
  if (v == "RFFT") return FftType::kRfft;
  if (v == "IRFFT") return FftType::kIrfft;
  return std::nullopt;
}

}  // namespace

bool IsNvptxEmittableFft(const ir::Op& op) {
  if (op.code() != ir::OpCode::kFft || op.num_operands() != 1 || op.num_results() != 1) return false;
  const std::optional<FftType> type = TypeOf(op);
  const std::optional<std::vector<int64_t>> length = op.GetI64Array("fft_length");
  if (!type || !length || length->size() != 1 || (*length)[0] < 1) return false;
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& out = op.result(0)->type();
  if (!in.is_tensor() || !out.is_tensor() || in.rank() < 1 || in.rank() != out.rank()) return false;
  const int64_t n = (*length)[0];
  const int64_t last = in.rank() - 1;
  for (int64_t d = 0; d < last; ++d) {
    if (in.dim(d) != out.dim(d)) return false;
  }
  const bool real_in = *type == FftType::kRfft, real_out = *type == FftType::kIrfft;
  const bool f32_in = in.dtype() == DType::kF32 || in.dtype() == DType::kC64;
  if (real_in ? !(in.dtype() == DType::kF32 || in.dtype() == DType::kF64)
              : !(in.dtype() == DType::kC64 || in.dtype() == DType::kC128)) {
    return false;
  }
  const DType want_out = real_out ? (f32_in ? DType::kF32 : DType::kF64) : (f32_in ? DType::kC64 : DType::kC128);
  if (out.dtype() != want_out) return false;
  const int64_t complex_last = real_in ? out.dim(last) : in.dim(last);
  const int64_t real_last = real_in ? in.dim(last) : out.dim(last);
  if (real_in || real_out) return real_last == n && complex_last == n / 2 + 1;
  return in.dim(last) == n && out.dim(last) == n;
}

StatusOr<GridPlan> EmitFftKernel(llvm::Module& module, const ir::Op& op, const std::string& name,
                                 const GridLimits& limits) {
  if (!IsNvptxEmittableFft(op)) {
    return InvalidArgument(op.loc().ToString() + ": this 'stablehlo.fft' has no NVPTX kernel");
  }
  const FftType type = *TypeOf(op);
  const int64_t n = (*op.GetI64Array("fft_length"))[0];
  const ir::Type& in_type = op.operand(0)->type();
  const ir::Type& out_type = op.result(0)->type();
  const int64_t in_last = in_type.dims().back();
  const int64_t out_last = out_type.dims().back();
  const bool inverse = type == FftType::kIfft || type == FftType::kIrfft;

  GridPlan plan;
  plan.kind = GridKind::kFlat;
  plan.work_items = out_type.num_elements();
  plan.block = limits.block_threads;
  plan.grid = std::clamp<int64_t>((plan.work_items + plan.block - 1) / plan.block, 1, limits.max_blocks);

  KernelSpec spec;
  spec.name = name;
  spec.root = &op;
  spec.fused = {&op};
  ElementalEmitter element(module, spec, NvptxMath());
  Builder& b = element.builder();
  llvm::LLVMContext& ctx = module.getContext();
  llvm::Function* fn = DeclareKernel(module, name, 2, {0, 1});

  llvm::Type* d = b.getDoubleTy();
  auto libdevice = [&](const char* fname, llvm::Value* x) {
    llvm::FunctionCallee callee = module.getOrInsertFunction(fname, llvm::FunctionType::get(d, {d}, false));
    if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) {
      f->setDoesNotThrow();
      f->setDoesNotAccessMemory();
      f->addFnAttr(llvm::Attribute::WillReturn);
    }
    llvm::CallInst* call = b.CreateCall(callee, {x});
    call->setDoesNotAccessMemory();
    return call;
  };

  llvm::BasicBlock* entry = llvm::BasicBlock::Create(ctx, "entry", fn);
  b.SetInsertPoint(entry);
  llvm::Value* in = b.CreateAddrSpaceCast(fn->getArg(0), b.getPtrTy());
  llvm::Value* out = b.CreateAddrSpaceCast(fn->getArg(1), b.getPtrTy());
  const GridStrideLoop loop = BeginGridStrideLoop(b, fn, plan.block, plan.work_items, "element");
  llvm::PHINode* o = loop.index;
  llvm::BasicBlock* sum_header = llvm::BasicBlock::Create(ctx, "sum", fn);
  llvm::BasicBlock* sum_body = llvm::BasicBlock::Create(ctx, "term", fn);
  llvm::BasicBlock* store = llvm::BasicBlock::Create(ctx, "store", fn);
  llvm::BasicBlock* body = b.GetInsertBlock();

  b.SetInsertPoint(body);
  llvm::Value* line = b.CreateUDiv(o, b.getInt64(out_last));
  llvm::Value* k = b.CreateURem(o, b.getInt64(out_last));
  llvm::Value* base = b.CreateMul(line, b.getInt64(in_last));
  b.CreateBr(sum_header);

  b.SetInsertPoint(sum_header);
  llvm::PHINode* j = b.CreatePHI(b.getInt64Ty(), 2);
  llvm::PHINode* re = b.CreatePHI(d, 2);
  llvm::PHINode* im = b.CreatePHI(d, 2);
  j->addIncoming(b.getInt64(0), body);
  re->addIncoming(llvm::ConstantFP::get(d, 0.0), body);
  im->addIncoming(llvm::ConstantFP::get(d, 0.0), body);
  b.CreateCondBr(b.CreateICmpSLT(j, b.getInt64(n)), sum_body, store);

  b.SetInsertPoint(sum_body);
  // The line's element j as double parts.
  const DType t_in = in_type.dtype();
  llvm::Value* xr;
  llvm::Value* xi;
  auto widen = [&](llvm::Value* v) { return v->getType()->isDoubleTy() ? v : b.CreateFPExt(v, d); };
  if (type == FftType::kRfft) {
    xr = widen(element.LoadAt(in, t_in, b.CreateAdd(base, j)));
    xi = llvm::ConstantFP::get(d, 0.0);
  } else if (type == FftType::kIrfft) {
    // j < half: data[j]; else conj(data[n - j]).
    llvm::Value* mirrored = b.CreateICmpSGE(j, b.getInt64(in_last));
    llvm::Value* at = b.CreateSelect(mirrored, b.CreateSub(b.getInt64(n), j), j);
    llvm::Value* z = element.LoadAt(in, t_in, b.CreateAdd(base, at));
    xr = widen(b.CreateExtractElement(z, uint64_t{0}));
    llvm::Value* zi = widen(b.CreateExtractElement(z, uint64_t{1}));
    xi = b.CreateSelect(mirrored, b.CreateFNeg(zi), zi);
  } else {
    llvm::Value* z = element.LoadAt(in, t_in, b.CreateAdd(base, j));
    xr = widen(b.CreateExtractElement(z, uint64_t{0}));
    xi = widen(b.CreateExtractElement(z, uint64_t{1}));
  }
  // w = exp(sign 2 pi i m / n), m = j k mod n.
  llvm::Value* m = b.CreateURem(b.CreateMul(j, k), b.getInt64(n));
  llvm::Value* turns = b.CreateFDiv(b.CreateFMul(llvm::ConstantFP::get(d, 2.0), b.CreateSIToFP(m, d)),
                                    llvm::ConstantFP::get(d, static_cast<double>(n)));
  llvm::Value* wr = libdevice("__nv_cospi", turns);
  llvm::Value* ws = libdevice("__nv_sinpi", turns);
  llvm::Value* wi = inverse ? ws : b.CreateFNeg(ws);
  llvm::Value* next_re = b.CreateFAdd(re, b.CreateFSub(b.CreateFMul(xr, wr), b.CreateFMul(xi, wi)));
  llvm::Value* next_im = b.CreateFAdd(im, b.CreateFAdd(b.CreateFMul(xr, wi), b.CreateFMul(xi, wr)));
  j->addIncoming(b.CreateAdd(j, b.getInt64(1)), sum_body);
  re->addIncoming(next_re, sum_body);
  im->addIncoming(next_im, sum_body);
  b.CreateBr(sum_header);

  b.SetInsertPoint(store);
  llvm::Value* rr = re;
  llvm::Value* ri = im;
  if (inverse) {
    llvm::Value* scale = llvm::ConstantFP::get(d, 1.0 / static_cast<double>(n));
    rr = b.CreateFMul(rr, scale);
    ri = b.CreateFMul(ri, scale);
  }
  const DType t_out = out_type.dtype();
  const bool f32 = t_out == DType::kF32 || t_out == DType::kC64;
  auto narrow = [&](llvm::Value* v) { return f32 ? b.CreateFPTrunc(v, b.getFloatTy()) : v; };
  if (type == FftType::kIrfft) {
    element.StoreAt(narrow(rr), t_out, out, o);
  } else {
    llvm::Value* z = llvm::UndefValue::get(element.ComputeType(t_out));
    z = b.CreateInsertElement(z, narrow(rr), uint64_t{0});
    z = b.CreateInsertElement(z, narrow(ri), uint64_t{1});
    element.StoreAt(z, t_out, out, o);
  }
  EndGridStrideLoop(b, loop);
  b.CreateRetVoid();

  JITD_RETURN_IF_ERROR(FinishKernel(module, fn, element.status(), op));
  return plan;
}

}  // namespace jitd::codegen
