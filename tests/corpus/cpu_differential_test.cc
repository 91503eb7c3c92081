// Differential test: every conformance program runs on the cpu device and on
// the interpreter (the golden model), with the programs' own checks hoisted
// out (as `jitd conformance` does), and every result is compared:
//  - bit for bit (any NaN equals any NaN) when the program uses only ops
//    whose results the spec defines exactly;
//  - within the corpus tolerance (3 ULP per float component, integers
//    exact) when it uses transcendental ops;
//  - for dot / convolution / fft / triangular_solve / cholesky (sums of
//    many products), 3 ULP or |x - y| <= 16 eps max|result| (normwise).
// A program the interpreter rejects must be rejected by the cpu device too.
// At the end the share of ops that ran as generated code is printed (the
// CpuProgramStats totals over the files of this shard).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "devices/compile.h"
#include "devices/cpu/cpu_device.h"
#include "devices/interpreter/interpreter_device.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "tools/conformance/checks.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

namespace fs = std::filesystem;

struct CorpusFile {
  std::string path;
  std::string test_name;
};
void PrintTo(const CorpusFile& file, std::ostream* os) { *os << file.path; }

std::vector<CorpusFile> ListCorpus() {
  std::vector<CorpusFile> files;
  std::error_code ec;
  const fs::path dir = fs::path(JITD_SHARED_DIR) / "conformance/stablehlo";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".mlir") continue;
    std::string name = it->path().stem().string();
    for (char& c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    files.push_back({it->path().string(), name});
  }
  std::sort(files.begin(), files.end(),
            [](const CorpusFile& a, const CorpusFile& b) { return a.path < b.path; });
  std::set<std::string> names;
  for (CorpusFile& f : files) {
    std::string unique = f.test_name;
    for (int i = 2; !names.insert(unique).second; ++i) unique = f.test_name + "_" + std::to_string(i);
    f.test_name = unique;
  }
  return files;
}

// Ops whose results the spec leaves within a tolerance (or whose library /
// vector-math implementations round differently).
bool IsInexact(ir::OpCode code) {
  using ir::OpCode;
  switch (code) {
    case OpCode::kCbrt: case OpCode::kCosine: case OpCode::kExponential:
    case OpCode::kExponentialMinusOne: case OpCode::kLog: case OpCode::kLogPlusOne:
    case OpCode::kLogistic: case OpCode::kRsqrt: case OpCode::kSine: case OpCode::kTan:
    case OpCode::kTanh: case OpCode::kPower: case OpCode::kAtan2: case OpCode::kDotGeneral:
    case OpCode::kDot: case OpCode::kConvolution: case OpCode::kFft:
    case OpCode::kTriangularSolve: case OpCode::kCholesky: case OpCode::kChloAcos:
    case OpCode::kChloAcosh: case OpCode::kChloAsin: case OpCode::kChloAsinh:
    case OpCode::kChloAtan: case OpCode::kChloAtanh: case OpCode::kChloErf:
    case OpCode::kChloErfc: case OpCode::kChloTan: case OpCode::kChloCosh:
    case OpCode::kChloSinh: case OpCode::kBatchNormInference: case OpCode::kBatchNormTraining:
    case OpCode::kBatchNormGrad:
      return true;
    default:
      return false;
  }
}

// Ops that sum many products: a result near cancellation can be many ULP
// from the interpreter's (extended-precision) value and still be as
// accurate as the operation allows, so they are compared normwise.
bool IsAccumulating(ir::OpCode code) {
  using ir::OpCode;
  return code == OpCode::kDotGeneral || code == OpCode::kDot || code == OpCode::kConvolution ||
         code == OpCode::kFft || code == OpCode::kTriangularSolve || code == OpCode::kCholesky;
}

enum class Mode { kExact, kUlp, kNormwise };

Mode CompareMode(const ir::Module& module) {
  Mode mode = Mode::kExact;
  auto walk = [&](const ir::Block& block, auto& self) -> void {
    for (const auto& op : block.ops()) {
      if (IsAccumulating(op->code())) {
        mode = Mode::kNormwise;
      } else if (IsInexact(op->code()) && mode == Mode::kExact) {
        mode = Mode::kUlp;
      }
      for (size_t r = 0; r < op->num_regions(); ++r) {
        for (size_t b = 0; b < op->region(r).num_blocks(); ++b) self(op->region(r).block(b), self);
      }
    }
  };
  for (const auto& fn : module.functions()) {
    if (fn->entry()) walk(*fn->entry(), walk);
  }
  return mode;
}

double ElementAsDouble(uint64_t bits, ir::DType t) {
  if (t == ir::DType::kF64) {
    double d;
    std::memcpy(&d, &bits, sizeof(d));
    return d;
  }
  if (t == ir::DType::kF32) {
    float f;
    const uint32_t b = static_cast<uint32_t>(bits);
    std::memcpy(&f, &b, sizeof(f));
    return f;
  }
  return NAN;  // other float types: ULP only
}

// "" when equal under the mode; else the first difference.
std::string Compare(const ir::Literal& cpu, const ir::Literal& ref, Mode mode) {
  const bool exact = mode == Mode::kExact;
  if (cpu.type() != ref.type()) return "types differ";
  const ir::DType t = cpu.dtype();
  const bool is_complex = ir::IsComplex(t);
  const ir::DType part = is_complex ? ir::ComplexComponent(t) : t;
  const int bytes = ir::StorageBytes(part);
  const int64_t n = cpu.num_elements() * (is_complex ? 2 : 1);
  const uint8_t* a = cpu.bytes().data();
  const uint8_t* b = ref.bytes().data();
  // Normwise: |x - y| <= 16 eps max|ref| over the tensor.
  double max_abs = 0;
  if (mode == Mode::kNormwise && ir::IsFloat(part)) {
    for (int64_t i = 0; i < n; ++i) {
      uint64_t y = 0;
      std::memcpy(&y, b + i * bytes, static_cast<size_t>(bytes));
      const double v = std::fabs(ElementAsDouble(y, part));
      if (std::isfinite(v)) max_abs = std::max(max_abs, v);
    }
  }
  const double eps = part == ir::DType::kF64 ? 0x1p-52 : 0x1p-23;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t x = 0, y = 0;
    std::memcpy(&x, a + i * bytes, static_cast<size_t>(bytes));
    std::memcpy(&y, b + i * bytes, static_cast<size_t>(bytes));
    if (x == y) continue;
    if (ir::IsFloat(part)) {
      const uint64_t ulp = conformance::UlpDistance(x, y, part);
      if (ulp == 0) continue;  // both NaN
      if (!exact && ulp <= 3) continue;
      if (mode == Mode::kNormwise &&
          std::fabs(ElementAsDouble(x, part) - ElementAsDouble(y, part)) <= 16 * eps * max_abs) {
        continue;
      }
      return "element " + std::to_string(is_complex ? i / 2 : i) + ": " + std::to_string(ulp) +
             " ULP apart (bits " + std::to_string(x) + " vs " + std::to_string(y) + ")";
    }
    return "element " + std::to_string(i) + ": bits " + std::to_string(x) + " vs " + std::to_string(y);
  }
  return "";
}

std::string CompareValues(const eval::RuntimeValue& cpu, const eval::RuntimeValue& ref, Mode mode) {
  if (cpu.is_tensor() != ref.is_tensor() || cpu.is_tuple() != ref.is_tuple()) return "kinds differ";
  if (cpu.is_tensor()) return Compare(cpu.literal(), ref.literal(), mode);
  if (cpu.is_tuple()) {
    if (cpu.elements().size() != ref.elements().size()) return "tuple sizes differ";
    for (size_t i = 0; i < cpu.elements().size(); ++i) {
      std::string d = CompareValues(cpu.elements()[i], ref.elements()[i], mode);
      if (!d.empty()) return "tuple element " + std::to_string(i) + ": " + d;
    }
  }
  return "";
}

struct Totals {
  std::mutex mu;
  cpu::CpuProgramStats sum;
  int programs = 0;
} totals;

constexpr const char* kNoFoldPipeline = "inline,decompose-chlo,canonicalize,cse,canonicalize,dce";

const cpu::CpuDevice& CpuDevice() {
  static cpu::CpuDevice* device = [] {
    cpu::CpuDeviceOptions options;
    options.num_threads = 1;
    return cpu::CpuDevice::Create(options).value().release();
  }();
  return *device;
}

class CpuDifferentialTest : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(CpuDifferentialTest, MatchesInterpreter) {
  const CorpusFile& file = GetParam();
  std::ifstream in(file.path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto modules = frontend::ParseModules(text);
  ASSERT_TRUE(modules.ok()) << modules.status().message();
  // A second copy for the cpu device, whose compiler passes rewrite it.
  auto cpu_modules = frontend::ParseModules(text);
  ASSERT_TRUE(cpu_modules.ok()) << cpu_modules.status().message();
  devices::InterpreterDevice interpreter;
  for (size_t m = 0; m < modules->size(); ++m) {
    SCOPED_TRACE("module " + std::to_string(m));
    std::unique_ptr<ir::Module>& module = (*modules)[m];
    if (!ir::VerifyModule(*module).ok()) continue;  // the corpus's negative cases
    ir::Function* entry = module->EntryFunction();
    ASSERT_NE(entry, nullptr);
    ASSERT_TRUE(conformance::HoistChecks(*entry).ok());
    const Mode mode = CompareMode(*module);
    std::vector<eval::RuntimeValue> args;
    for (size_t i = 0; i < entry->arg_types().size(); ++i) {
      auto lit = eval::RandomLiteral(entry->arg_types()[i], 1000 + i);
      ASSERT_TRUE(lit.ok());
      args.emplace_back(std::move(*lit));
    }
    std::shared_ptr<const ir::Module> shared(std::move(module));
    devices::ExecuteOptions options;
    options.resource_fill_seed = 7;
    auto ref_exe = interpreter.Compile(shared);
    auto ref = ref_exe.ok() ? (*ref_exe)->Execute(args, options)
                            : StatusOr<std::vector<eval::RuntimeValue>>(ref_exe.status());
    std::shared_ptr<ir::Module> cpu_module(std::move((*cpu_modules)[m]));
    ASSERT_TRUE(conformance::HoistChecks(*cpu_module->EntryFunction()).ok());
    // The cpu device's pipeline without constant folding (which would
    // evaluate these all-constant programs with jit/eval at compile time and
    // leave the code generator nothing to do), then its codegen.
    auto cpu_exe = devices::CompileProgram(CpuDevice(), cpu_module, {.pipeline = kNoFoldPipeline});
    if (!ref.ok()) {
      if (cpu_exe.ok()) {
        EXPECT_FALSE((*cpu_exe)->Execute(args, options).ok())
            << "the interpreter fails (" << ref.status().message() << ") but the cpu device runs";
      }
      continue;
    }
    ASSERT_TRUE(cpu_exe.ok()) << cpu_exe.status().message();
    {
      const auto& s = static_cast<const cpu::CpuExecutable&>(**cpu_exe).stats();
      std::lock_guard<std::mutex> lock(totals.mu);
      ++totals.programs;
      totals.sum.kernel_ops += s.kernel_ops;
      totals.sum.fallback_ops += s.fallback_ops;
      totals.sum.library_ops += s.library_ops;
      totals.sum.control_ops += s.control_ops;
      totals.sum.kernels += s.kernels;
      for (const auto& [name, count] : s.fallback_by_op) totals.sum.fallback_by_op[name] += count;
    }
    auto got = (*cpu_exe)->Execute(args, options);
    ASSERT_TRUE(got.ok()) << got.status().message();
    ASSERT_EQ(got->size(), ref->size());
    for (size_t r = 0; r < got->size(); ++r) {
      const std::string diff = CompareValues((*got)[r], (*ref)[r], mode);
      EXPECT_TRUE(diff.empty()) << "result " << r
                                << (mode == Mode::kExact ? " (exact)"
                                                         : mode == Mode::kUlp ? " (3 ULP)" : " (normwise)")
                                << ": " << diff;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Corpus, CpuDifferentialTest, ::testing::ValuesIn(ListCorpus()),
                         [](const ::testing::TestParamInfo<CorpusFile>& info) {
                           return info.param.test_name;
                         });

class PrintTotals : public ::testing::Environment {
 public:
  void TearDown() override {
    const auto& s = totals.sum;
    const int64_t ops = s.kernel_ops + s.fallback_ops + s.library_ops;
    std::printf("cpu coverage over %d programs: %lld ops in %lld kernels (%.1f%%), %lld library, "
                "%lld fallback (%.1f%%), %lld control\n",
                totals.programs, static_cast<long long>(s.kernel_ops),
                static_cast<long long>(s.kernels), ops ? 100.0 * s.kernel_ops / ops : 0.0,
                static_cast<long long>(s.library_ops), static_cast<long long>(s.fallback_ops),
                ops ? 100.0 * s.fallback_ops / ops : 0.0, static_cast<long long>(s.control_ops));
    std::printf("cpu fallback ops:");
    for (const auto& [name, count] : s.fallback_by_op) {
      std::printf(" %s x%lld", name.c_str(), static_cast<long long>(count));
    }
    std::printf("\n");
  }
};
const auto* const kPrintTotals = ::testing::AddGlobalTestEnvironment(new PrintTotals);

}  // namespace
}  // namespace jitd
