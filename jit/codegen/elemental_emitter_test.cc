// The elemental emitter alone, op by op: for every op of its tables
// (ElementalOps) and every element type, small programs of that one op in
// each of its forms (every comparison direction, every convert pair,
// bitcasts between widths, index maps with their attributes, scalar
// operands of select and clamp). Where the emitter claims a program's op on
// the host (IsFusibleOp), a function that calls ElementalEmitter::
// StoreElement in a plain loop — no cpu schedule, no optimizer — is
// compiled by ORC LLJIT and run, and every element must be jit/eval's:
// bit for bit (NaNs of any payload equal where a value is computed), within
// 3 ULP for the functions the kernels take from libm. Reductions too: a
// reduce with each binary op as its body where IsEmittableReduce claims it,
// folded in the interpreter's order through ReduceInits / ReduceInputs /
// ReduceCombine / StoreReduceResults.
#include "jit/codegen/elemental_emitter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "jit/codegen/kernel_runtime.h"
#include "jit/codegen/target_math.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

namespace jitd::codegen {
namespace {

using ir::DType;
using ir::OpCode;

// ---- Programs -----------------------------------------------------------------------

struct Case {
  std::string name;
  std::string text;
  int ulps = 0;  // tolerance in the result type's units in the last place
  // NaNs must keep their bits too (ops that only move elements); otherwise
  // any two NaNs are equal (a computed NaN's payload is the hardware's).
  bool exact_nans = false;
};

std::string Name(DType t) { return std::string(ir::DTypeName(t)); }
std::string Tensor(const std::string& dims, DType t) {
  return "tensor<" + (dims.empty() ? "" : dims + "x") + Name(t) + ">";
}

// @main(%a0: args[0], ...) returning `op` (generic form) applied to every argument.
std::string Program(OpCode code, const std::vector<std::string>& args, const std::string& result,
                    const std::string& attrs = "") {
  std::string params, operands, types;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string sep = i ? ", " : "";
    params += sep + "%a" + std::to_string(i) + ": " + args[i];
    operands += sep + "%a" + std::to_string(i);
    types += sep + args[i];
  }
  return "func.func @main(" + params + ") -> " + result + " {\n  %r = \"" + std::string(ir::OpName(code)) + "\"(" +
         operands + ")" + (attrs.empty() ? "" : " {" + attrs + "}") + " : (" + types + ") -> " + result +
         "\n  return %r : " + result + "\n}\n";
}

std::vector<DType> AllTypes() {
  std::vector<DType> types;
  for (int i = 0; i < ir::kNumDTypes; ++i) types.push_back(static_cast<DType>(i));
  return types;
}

// Ops whose results may differ from jit/eval's in the last bits: the
// functions kernels take from libm (jit/eval computes them in long double)
// and f64 rsqrt (1 / sqrt in double; jit/eval's in long double). The
// corpus allows them 3 ULP.
bool IsLibmOp(OpCode code) {
  switch (code) {
    case OpCode::kRsqrt:
    case OpCode::kExponential:
    case OpCode::kExponentialMinusOne:
    case OpCode::kLog:
    case OpCode::kLogPlusOne:
    case OpCode::kLogistic:
    case OpCode::kTanh:
    case OpCode::kSine:
    case OpCode::kCosine:
    case OpCode::kTan:
    case OpCode::kChloTan:
    case OpCode::kCbrt:
    case OpCode::kChloAsin:
    case OpCode::kChloAcos:
    case OpCode::kChloAtan:
    case OpCode::kChloAsinh:
    case OpCode::kChloAcosh:
    case OpCode::kChloAtanh:
    case OpCode::kChloErf:
    case OpCode::kChloErfc:
    case OpCode::kPower:
    case OpCode::kAtan2:
      return true;
    default:
      return false;
  }
}

// A splat value of `t` in MLIR's dense syntax.
std::string SplatValue(DType t) {
  if (t == DType::kPred) return "true";
  if (ir::IsComplex(t)) return "(1.5, -2.0)";
  if (ir::IsFloat(t)) return "1.5";
  return ir::IsSignedInt(t) && ir::BitWidth(t) > 2 ? "-3" : "1";
}

// The programs of `code` on element type `t` (those the verifier rejects are
// left out by the caller).
std::vector<Case> CasesOf(OpCode code, DType t) {
  const std::string n = Name(t);
  const std::string v = Tensor("16", t);
  const int ulps = IsLibmOp(code) && !ir::IsComplex(t) ? 3 : 0;
  auto one = [&](const std::string& text) { return std::vector<Case>{{n, text, ulps}}; };
  switch (code) {
    case OpCode::kConstant:
      return one("func.func @main() -> " + v + " {\n  %r = stablehlo.constant dense<" + SplatValue(t) + "> : " + v +
                 "\n  return %r : " + v + "\n}\n");
    case OpCode::kIota:
      return one(Program(code, {}, Tensor("4x4", t), "iota_dimension = 1 : i64"));
    case OpCode::kBroadcastInDim:
      return {{n + "_vector", Program(code, {Tensor("4", t)}, Tensor("4x4", t), "broadcast_dimensions = array<i64: 1>")},
              {n + "_size1", Program(code, {Tensor("1x4", t)}, Tensor("3x4", t),
                                     "broadcast_dimensions = array<i64: 0, 1>")},
              {n + "_scalar", Program(code, {Tensor("", t)}, Tensor("2x3", t), "broadcast_dimensions = array<i64>")}};
    case OpCode::kReshape:
      return one(Program(code, {v}, Tensor("4x4", t)));
    case OpCode::kTranspose:
      return one(Program(code, {Tensor("2x8", t)}, Tensor("8x2", t), "permutation = array<i64: 1, 0>"));
    case OpCode::kSlice:
      return one(Program(code, {v}, Tensor("5", t),
                         "start_indices = array<i64: 1>, limit_indices = array<i64: 15>, strides = array<i64: 3>"));
    case OpCode::kReverse:
      return one(Program(code, {Tensor("4x4", t)}, Tensor("4x4", t), "dimensions = array<i64: 0>"));
    case OpCode::kConcatenate:
      return one(Program(code, {Tensor("3x2", t), Tensor("1x2", t), Tensor("4x2", t)}, Tensor("8x2", t),
                         "dimension = 0 : i64"));
    case OpCode::kPad:
      return one(Program(code, {Tensor("6", t), Tensor("", t)}, Tensor("12", t),
                         "edge_padding_low = array<i64: 2>, edge_padding_high = array<i64: -1>, "
                         "interior_padding = array<i64: 1>"));
    case OpCode::kDynamicSlice:
      return {{n + "_i32", Program(code, {v, Tensor("", DType::kS32)}, Tensor("5", t), "slice_sizes = array<i64: 5>")},
              {n + "_ui8", Program(code, {v, Tensor("", DType::kU8)}, Tensor("5", t), "slice_sizes = array<i64: 5>")}};
    case OpCode::kDynamicUpdateSlice:
      return one(Program(code, {v, Tensor("5", t), Tensor("", DType::kS64)}, v));
    case OpCode::kIsFinite:
    case OpCode::kChloIsInf:
    case OpCode::kChloIsPosInf:
    case OpCode::kChloIsNegInf:
      return one(Program(code, {v}, Tensor("16", DType::kPred)));
    case OpCode::kReal:
    case OpCode::kImag:
      return one(Program(code, {v}, Tensor("16", ir::ComplexComponent(t))));
    case OpCode::kAbs:
      return one(Program(code, {v}, Tensor("16", ir::ComplexComponent(t))));
    case OpCode::kComplex: {
      std::optional<DType> c = ir::ComplexOf(t);
      if (!c) return {};
      return one(Program(code, {v, v}, Tensor("16", *c)));
    }
    case OpCode::kAdd:
    case OpCode::kSubtract:
    case OpCode::kMultiply:
    case OpCode::kDivide:
    case OpCode::kRemainder:
    case OpCode::kMaximum:
    case OpCode::kMinimum:
    case OpCode::kAnd:
    case OpCode::kOr:
    case OpCode::kXor:
    case OpCode::kShiftLeft:
    case OpCode::kShiftRightArithmetic:
    case OpCode::kShiftRightLogical:
    case OpCode::kPower:
    case OpCode::kAtan2:
      return one(Program(code, {v, v}, v));
    case OpCode::kSelect:
      return {{n, Program(code, {Tensor("16", DType::kPred), v, v}, v)},
              {n + "_scalar_pred", Program(code, {Tensor("", DType::kPred), v, v}, v)}};
    case OpCode::kClamp:
      return {{n, Program(code, {v, v, v}, v)},
              {n + "_scalar_bounds", Program(code, {Tensor("", t), v, Tensor("", t)}, v)}};
    case OpCode::kCompare: {
      std::vector<Case> cases;
      for (const char* dir : {"EQ", "NE", "LT", "LE", "GT", "GE"}) {
        const std::string attr = std::string("comparison_direction = #stablehlo<comparison_direction ") + dir + ">";
        cases.push_back({n + "_" + dir, Program(code, {v, v}, Tensor("16", DType::kPred), attr)});
        if (ir::IsFloat(t)) {
          cases.push_back({n + "_" + dir + "_totalorder",
                           Program(code, {v, v}, Tensor("16", DType::kPred),
                                   attr + ", compare_type = #stablehlo<comparison_type TOTALORDER>")});
        }
      }
      return cases;
    }
    case OpCode::kConvert: {
      std::vector<Case> cases;
      for (DType to : AllTypes()) cases.push_back({n + "_to_" + Name(to), Program(code, {v}, Tensor("16", to))});
      return cases;
    }
    case OpCode::kBitcastConvert: {
      std::vector<Case> cases;
      const int from = ir::BitWidth(t);
      for (DType to : AllTypes()) {
        const int width = ir::BitWidth(to);
        if (width == from) {
          cases.push_back({n + "_to_" + Name(to), Program(code, {v}, Tensor("16", to))});
        } else if (from > width && from % width == 0) {
          cases.push_back({n + "_to_" + Name(to),
                           Program(code, {Tensor("4", t)}, Tensor("4x" + std::to_string(from / width), to))});
        } else if (width > from && width % from == 0) {
          cases.push_back({n + "_to_" + Name(to),
                           Program(code, {Tensor("4x" + std::to_string(width / from), t)}, Tensor("4", to))});
        }
      }
      return cases;
    }
    case OpCode::kReducePrecision: {
      std::vector<Case> cases;
      for (auto [e, m] : std::vector<std::pair<int, int>>{{5, 10}, {8, 7}, {4, 3}, {2, 1}, {11, 52}, {8, 23}}) {
        cases.push_back({n + "_e" + std::to_string(e) + "m" + std::to_string(m),
                         Program(code, {v}, v,
                                 "exponent_bits = " + std::to_string(e) + " : i32, mantissa_bits = " +
                                     std::to_string(m) + " : i32")});
      }
      return cases;
    }
    default:
      // Unary ops of one type: the rest of the table.
      return one(Program(code, {v}, v));
  }
}

// ---- Values -------------------------------------------------------------------------

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kFloats[] = {0.0,  -0.0,   1.0,   -1.0,  0.5,    -0.5,  2.5,     -3.75, 1e-3, 100.0,  kInf,
                          -kInf, NAN,   0.1,   7.0,   -7.0,   1e30,  -1e-30,  65504, 0.25, 1.0625, -2.0,
                          3.0,  1e-6,   -0.75, 12.5,  -100.5, 0.875, 1.5e-5};
const int64_t kInts[] = {0,  1,  -1, 2,   -2,  3,   5,    7,    8,  -8,  15, 16,  31,
                         32, 63, 64, 127, -128, 255, 1000, -1000, 0x7FFFFFFF, -0x80000000LL,
                         std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 6, 4};

// Deterministic inputs: operand `salt` of a case walks the value lists at
// its own stride, so binary ops meet many pairs; float operands also get a
// signalling NaN with a payload (index 11) when `signalling_nan`. Not for
// libm's functions: glibc's f64 pow(1, sNaN) is NaN, jit/eval's long double
// pow of the (quieted) NaN is 1 — a known difference of f64 kernels.
ir::Literal Input(const ir::Type& type, int salt, bool signalling_nan) {
  ir::Literal l = *ir::Literal::Create(type);
  const DType t = type.dtype();
  const int64_t n = type.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    const size_t k = static_cast<size_t>(i * (2 * salt + 1) + 3 * salt);
    if (t == DType::kPred) {
      l.SetInt(i, (i + salt) % 3 == 0);
    } else if (ir::IsComplex(t)) {
      l.SetComplex(i, {kFloats[k % std::size(kFloats)], kFloats[(k + 5) % std::size(kFloats)]});
    } else if (ir::IsFloat(t)) {
      l.SetDouble(i, kFloats[k % std::size(kFloats)]);
    } else {
      l.SetInt(i, kInts[k % std::size(kInts)]);
    }
  }
  if (signalling_nan && n > 11) {
    if (t == DType::kF32) l.SetBits(11, 0x7F800123);  // sNaN
    if (t == DType::kF64) l.SetBits(11, 0xFFF0000000000042);
    if (t == DType::kF16) l.SetBits(11, 0x7C05);
    if (t == DType::kBF16) l.SetBits(11, 0xFF81);
  }
  return l;
}

bool IsNan(const ir::Literal& l, int64_t i) {
  const DType t = l.dtype();
  return ir::IsFloat(t) && std::isnan(l.GetDouble(i));
}

// Sign-magnitude bits as an ordered integer (adjacent floats differ by 1).
int64_t Ordered(uint64_t bits, int width) {
  const uint64_t sign = uint64_t{1} << (width - 1);
  const int64_t magnitude = static_cast<int64_t>(bits & (sign - 1));
  return bits & sign ? -magnitude : magnitude;
}

// Element `i` of `got` equals `want`'s: the same bits (integers, pred, and
// floats) or both NaN, or within `ulps` for floats.
bool SameElement(const ir::Literal& want, const ir::Literal& got, int64_t i, int ulps, bool exact_nans,
                 std::string* why) {
  const DType t = want.dtype();
  auto describe = [&] {
    *why = "element " + std::to_string(i) + ": interpreter " +
           (ir::IsComplex(t) ? std::to_string(want.GetComplex(i).real()) + "," +
                                   std::to_string(want.GetComplex(i).imag())
                             : std::to_string(want.GetDouble(i))) +
           " kernel " +
           (ir::IsComplex(t) ? std::to_string(got.GetComplex(i).real()) + "," + std::to_string(got.GetComplex(i).imag())
                             : std::to_string(got.GetDouble(i)));
  };
  if (ir::IsComplex(t)) {
    const std::complex<double> a = want.GetComplex(i), b = got.GetComplex(i);
    for (int part = 0; part < 2; ++part) {
      const double x = part ? a.imag() : a.real(), y = part ? b.imag() : b.real();
      if (!exact_nans && std::isnan(x) && std::isnan(y)) continue;
      if (std::memcmp(&x, &y, sizeof(double)) != 0) {
        describe();
        return false;
      }
    }
    return true;
  }
  if (ir::IsFloat(t)) {
    if (!exact_nans && IsNan(want, i) && IsNan(got, i)) return true;
    const int64_t distance = Ordered(want.GetBits(i), ir::BitWidth(t)) - Ordered(got.GetBits(i), ir::BitWidth(t));
    if ((ulps == 0 && want.GetBits(i) == got.GetBits(i)) || (ulps > 0 && std::llabs(distance) <= ulps)) return true;
    describe();
    return false;
  }
  if (want.GetBits(i) == got.GetBits(i)) return true;
  *why = "element " + std::to_string(i) + ": interpreter " + std::to_string(want.GetInt(i)) + " kernel " +
         std::to_string(got.GetInt(i));
  return false;
}

// ---- Kernels ------------------------------------------------------------------------

// One JIT for the whole test: jit/eval's functions and the process's libm.
llvm::orc::LLJIT& Jit() {
  static llvm::orc::LLJIT* jit = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto built = llvm::orc::LLJITBuilder().create();
    if (!built) {
      ADD_FAILURE() << llvm::toString(built.takeError());
      return static_cast<llvm::orc::LLJIT*>(nullptr);
    }
    llvm::orc::LLJIT* j = built->release();
    auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(j->getDataLayout().getGlobalPrefix());
    if (process) j->getMainJITDylib().addGenerator(std::move(*process));
    llvm::orc::SymbolMap runtime;
    for (const auto& [name, address] : KernelRuntimeSymbols()) {
      runtime[j->mangleAndIntern(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                           llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
    }
    llvm::cantFail(j->getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(runtime))));
    return j;
  }();
  return *jit;
}

// for (i = 0; i < n; ++i) carried = body(i, carried), in `fn`.
std::vector<llvm::Value*> Loop(Builder& b, llvm::Function* fn, int64_t n, const std::vector<llvm::Value*>& init,
                               const std::function<std::vector<llvm::Value*>(llvm::Value*,
                                                                             const std::vector<llvm::Value*>&)>& body) {
  llvm::LLVMContext& ctx = fn->getContext();
  llvm::BasicBlock* pre = b.GetInsertBlock();
  llvm::BasicBlock* header = llvm::BasicBlock::Create(ctx, "loop", fn);
  llvm::BasicBlock* inside = llvm::BasicBlock::Create(ctx, "body", fn);
  llvm::BasicBlock* exit = llvm::BasicBlock::Create(ctx, "exit", fn);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  llvm::PHINode* i = b.CreatePHI(b.getInt64Ty(), 2);
  i->addIncoming(b.getInt64(0), pre);
  std::vector<llvm::PHINode*> phis;
  std::vector<llvm::Value*> carried;
  for (llvm::Value* v : init) {
    phis.push_back(b.CreatePHI(v->getType(), 2));
    phis.back()->addIncoming(v, pre);
    carried.push_back(phis.back());
  }
  b.CreateCondBr(b.CreateICmpSLT(i, b.getInt64(n)), inside, exit);
  b.SetInsertPoint(inside);
  std::vector<llvm::Value*> next = body(i, carried);
  llvm::BasicBlock* latch = b.GetInsertBlock();
  i->addIncoming(b.CreateAdd(i, b.getInt64(1)), latch);
  for (size_t k = 0; k < phis.size() && k < next.size(); ++k) phis[k]->addIncoming(next[k], latch);
  b.CreateBr(header);
  b.SetInsertPoint(exit);
  return carried;
}

// `void NAME(void** buffers)`: the spec's inputs, then its outputs; the
// root's every output element through the elemental emitter.
Status EmitTestKernel(llvm::Module& module, const KernelSpec& spec) {
  ElementalEmitter element(module, spec, HostTargetMath());
  Builder& b = element.builder();
  auto* type = llvm::FunctionType::get(b.getVoidTy(), {b.getPtrTy()}, false);
  llvm::Function* fn = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec.name, module);
  b.SetInsertPoint(llvm::BasicBlock::Create(module.getContext(), "entry", fn));
  unsigned slot = 0;
  auto next = [&] {
    return b.CreateLoad(b.getPtrTy(), b.CreateConstInBoundsGEP1_64(b.getPtrTy(), fn->getArg(0), slot++));
  };
  std::vector<llvm::Value*> inputs, outputs;
  for (size_t i = 0; i < spec.inputs.size(); ++i) inputs.push_back(next());
  for (size_t i = 0; i < spec.root->num_results(); ++i) outputs.push_back(next());
  element.Bind(fn, inputs, outputs);
  const ir::Op& root = *spec.root;
  if (root.code() == OpCode::kReduce) {
    const int64_t extent = element.ReducedExtent();
    Loop(b, fn, root.result(0)->type().num_elements(), {}, [&](llvm::Value* o, const std::vector<llvm::Value*>&) {
      std::vector<llvm::Value*> acc = element.ReduceInits();
      acc = Loop(b, fn, extent, acc, [&](llvm::Value* r, const std::vector<llvm::Value*>& a) {
        return element.ReduceCombine(a, element.ReduceInputs(o, r));
      });
      element.StoreReduceResults(o, acc);
      return std::vector<llvm::Value*>{};
    });
  } else {
    Loop(b, fn, root.result(0)->type().num_elements(), {}, [&](llvm::Value* i, const std::vector<llvm::Value*>&) {
      element.StoreElement(i);
      return std::vector<llvm::Value*>{};
    });
  }
  b.CreateRetVoid();
  Status status = element.status();
  std::string message;
  llvm::raw_string_ostream os(message);
  if (status.ok() && llvm::verifyFunction(*fn, &os)) status = Internal("invalid IR: " + os.str());
  if (!status.ok()) fn->eraseFromParent();
  return status;
}

// A case the emitter claims, with its program, inputs and expected result.
struct Claimed {
  Case c;
  std::unique_ptr<ir::Module> module;
  KernelSpec spec;
  std::vector<ir::Literal> inputs;
  ir::Literal expected;
};

// Parses and verifies `c`; when the emitter claims its root (IsFusibleOp /
// IsEmittableReduce on the host), its spec and jit/eval's result. nullopt
// for programs the verifier rejects or the emitter does not claim.
std::optional<Claimed> Claim(const Case& c) {
  auto parsed = frontend::ParseModule(c.text);
  EXPECT_TRUE(parsed.ok()) << c.name << ": " << parsed.status().message() << "\n" << c.text;
  if (!parsed.ok() || !ir::VerifyModule(**parsed).ok()) return std::nullopt;
  Claimed k;
  k.c = c;
  k.module = std::move(parsed).value();
  const ir::Block& entry = *k.module->EntryFunction()->entry();
  const ir::Op& root = *entry.ops().front();
  const bool claimed = root.code() == OpCode::kReduce ? IsEmittableReduce(root) : IsFusibleOp(root);
  if (!claimed) return std::nullopt;
  k.spec.root = &root;
  k.spec.fused = {&root};
  std::vector<eval::RuntimeValue> args;
  for (size_t i = 0; i < entry.num_args(); ++i) {
    k.spec.inputs.push_back(entry.arg(i));
    k.inputs.push_back(Input(entry.arg(i)->type(), static_cast<int>(i), /*signalling_nan=*/c.ulps == 0));
    args.emplace_back(k.inputs.back());
  }
  auto results = eval::EvaluateFunction(*k.module, *k.module->EntryFunction(), std::move(args));
  EXPECT_TRUE(results.ok()) << c.name << ": the emitter claims it, the interpreter fails: "
                            << results.status().message();
  if (!results.ok()) return std::nullopt;
  k.expected = (*results)[0].literal();
  return k;
}

// Emits every claimed case into one module, runs each kernel and compares.
// Returns how many ran.
int RunAndCompare(std::vector<Claimed>& cases, const std::string& prefix) {
  if (cases.empty()) return 0;
  llvm::orc::LLJIT& jit = Jit();
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(prefix, *context);
  module->setDataLayout(jit.getDataLayout());
  module->setTargetTriple(jit.getTargetTriple().str());
  std::vector<Claimed*> emitted;
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].spec.name = prefix + "_" + std::to_string(i);
    Status status = EmitTestKernel(*module, cases[i].spec);
    EXPECT_TRUE(status.ok()) << cases[i].c.name << ": the emitter claims it but fails: " << status.message();
    if (status.ok()) emitted.push_back(&cases[i]);
  }
  llvm::Error added = jit.addIRModule(llvm::orc::ThreadSafeModule(std::move(module), std::move(context)));
  EXPECT_FALSE(static_cast<bool>(added)) << llvm::toString(std::move(added));
  int ran = 0;
  for (Claimed* k : emitted) {
    auto address = jit.lookup(k->spec.name);
    EXPECT_TRUE(static_cast<bool>(address)) << llvm::toString(address.takeError());
    if (!address) continue;
    ir::Literal out = *ir::Literal::Create(k->expected.type());
    std::vector<void*> buffers;
    for (ir::Literal& in : k->inputs) buffers.push_back(in.mutable_bytes().data());
    buffers.push_back(out.mutable_bytes().data());
    address->toPtr<void (*)(void**)>()(buffers.data());
    ++ran;
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      std::string why;
      if (!SameElement(k->expected, out, i, k->c.ulps, k->c.exact_nans, &why)) {
        ADD_FAILURE() << k->c.name << ": " << why << "\n" << k->c.text;
        break;
      }
    }
  }
  return ran;
}

std::string TestName(OpCode code) {
  std::string name(ir::OpName(code));
  for (char& ch : name) {
    if (ch == '.') ch = '_';
  }
  return name;
}

class ElementalOpTest : public testing::TestWithParam<OpCode> {};

TEST_P(ElementalOpTest, EveryClaimedTypeComputesWhatTheInterpreterDoes) {
  const OpCode code = GetParam();
  std::vector<Claimed> cases;
  std::set<DType> claimed_types;
  for (DType t : AllTypes()) {
    for (Case& c : CasesOf(code, t)) {
      c.name = TestName(code) + "_" + c.name;
      c.exact_nans = IsIndexMap(code) || code == OpCode::kSelect;
      if (std::optional<Claimed> k = Claim(c)) {
        claimed_types.insert(t);
        cases.push_back(std::move(*k));
      }
    }
  }
  // Every op of the tables is claimed for some type here: an op whose
  // programs above never verify (or that the tables no longer claim) fails.
  ASSERT_FALSE(cases.empty()) << "no program of " << ir::OpName(code) << " is claimed by the emitter";
  const int ran = RunAndCompare(cases, TestName(code));
  EXPECT_EQ(ran, static_cast<int>(cases.size()));
  std::string types;
  for (DType t : claimed_types) types += " " + Name(t);
  RecordProperty("claimed_types", types);
}

INSTANTIATE_TEST_SUITE_P(Ops, ElementalOpTest, testing::ValuesIn(ElementalOps()),
                         [](const testing::TestParamInfo<OpCode>& info) { return TestName(info.param); });

// A reduce over a 4x5 operand's last dimension with `body` as its body.
Case ReduceCase(OpCode body, DType t) {
  const std::string s = Tensor("", t);
  const std::string text = "func.func @main(%a0: " + Tensor("4x5", t) + ", %a1: " + s + ") -> " + Tensor("4", t) +
                           " {\n  %r = \"stablehlo.reduce\"(%a0, %a1) <{dimensions = array<i64: 1>}> ({\n"
                           "  ^bb0(%x: " + s + ", %y: " + s + "):\n    %s = \"" + std::string(ir::OpName(body)) +
                           "\"(%x, %y) : (" + s + ", " + s + ") -> " + s + "\n    \"stablehlo.return\"(%s) : (" + s +
                           ") -> ()\n  }) : (" + Tensor("4x5", t) + ", " + s + ") -> " + Tensor("4", t) +
                           "\n  return %r : " + Tensor("4", t) + "\n}\n";
  return {"reduce_" + TestName(body) + "_" + Name(t), text, IsLibmOp(body) && !ir::IsComplex(t) ? 3 : 0};
}

TEST(ElementalEmitterTest, ReductionsFoldInTheInterpretersOrder) {
  std::vector<Claimed> cases;
  for (OpCode body : {OpCode::kAdd, OpCode::kMultiply, OpCode::kMaximum, OpCode::kMinimum, OpCode::kAnd, OpCode::kOr,
                      OpCode::kXor, OpCode::kSubtract, OpCode::kDivide, OpCode::kPower}) {
    for (DType t : AllTypes()) {
      if (std::optional<Claimed> k = Claim(ReduceCase(body, t))) cases.push_back(std::move(*k));
    }
  }
  ASSERT_GT(cases.size(), 100u);  // every type of a sum, and more
  EXPECT_EQ(RunAndCompare(cases, "reduce"), static_cast<int>(cases.size()));
}

// The claims are the tables' own: a table op on a type it does not take,
// or with attributes it refuses, is not claimed.
TEST(ElementalEmitterTest, ClaimsFollowTheTables) {
  auto root = [](const std::string& text) -> std::unique_ptr<ir::Module> {
    auto parsed = frontend::ParseModule(text);
    EXPECT_TRUE(parsed.ok()) << parsed.status().message();
    return parsed.ok() ? std::move(parsed).value() : nullptr;
  };
  auto claimed = [&](const std::string& text) {
    std::unique_ptr<ir::Module> m = root(text);
    return m && IsFusibleOp(*m->EntryFunction()->entry()->ops().front());
  };
  const std::string f32 = Tensor("16", DType::kF32), f8 = Tensor("16", DType::kF8E4M3FN);
  EXPECT_TRUE(claimed(Program(OpCode::kAnd, {Tensor("16", DType::kS32), Tensor("16", DType::kS32)},
                              Tensor("16", DType::kS32))));
  EXPECT_FALSE(claimed(Program(OpCode::kFloor, {Tensor("16", DType::kS32)}, Tensor("16", DType::kS32))));
  EXPECT_FALSE(claimed(Program(OpCode::kMaximum, {Tensor("16", DType::kC64), Tensor("16", DType::kC64)},
                               Tensor("16", DType::kC64))));
  const std::string lt = "comparison_direction = #stablehlo<comparison_direction LT>";
  const std::string total = lt + ", compare_type = #stablehlo<comparison_type TOTALORDER>";
  EXPECT_TRUE(claimed(Program(OpCode::kCompare, {f8, f8}, Tensor("16", DType::kPred), lt)));
  EXPECT_FALSE(claimed(Program(OpCode::kCompare, {f8, f8}, Tensor("16", DType::kPred), total)));
  EXPECT_TRUE(claimed(Program(OpCode::kCompare, {f32, f32}, Tensor("16", DType::kPred), total)));
  EXPECT_FALSE(claimed(Program(OpCode::kReducePrecision, {f8}, f8, "exponent_bits = 4 : i32, mantissa_bits = 3 : i32")));
  // Ops outside both tables are never claimed.
  EXPECT_FALSE(claimed(Program(OpCode::kOptimizationBarrier, {f32}, f32)));
}

}  // namespace
}  // namespace jitd::codegen
