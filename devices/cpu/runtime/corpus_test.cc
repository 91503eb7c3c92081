// Corpus- and model-driven differential tests: for every conformance file that uses an
// op the runtime library implements, every such op at the top level of
// @main is run through jit/eval (inputs and outputs captured by cutting the
// function after the op, see differential_testing.h) and through its
// LibraryOp on the same bytes, and the results compared. The models' heavy
// ops are checked one distinct signature at a time on random operands.
//
// Tolerances: integer and boolean results, and those of sort, reduce_window,
// gather, scatter and select_and_scatter, bitwise; float results
// within (relative to the tensor's largest magnitude) 1e-2 for f16/bf16,
// 1e-5 for f32/complex<f32> and 1e-12 for f64/complex<f64> — the reordered
// sums of BLAS and the double-precision LAPACK/FFT paths, see
// library_op_test.cc. The test also counts how many results were bitwise
// identical and prints it.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "devices/cpu/runtime/differential_testing.h"
#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd::cpu {
namespace {

bool IsLibraryCandidate(ir::OpCode code) {
  switch (code) {
    case ir::OpCode::kDotGeneral:
    case ir::OpCode::kDot:
    case ir::OpCode::kConvolution:
    case ir::OpCode::kFft:
    case ir::OpCode::kTriangularSolve:
    case ir::OpCode::kCholesky:
    case ir::OpCode::kSort:
    case ir::OpCode::kReduceWindow:
    case ir::OpCode::kGather:
    case ir::OpCode::kScatter:
    case ir::OpCode::kSelectAndScatter:
      return true;
    default:
      return false;
  }
}

testing::Tolerance ToleranceFor(const ir::Op& op) {
  switch (op.code()) {
    case ir::OpCode::kSort:
    case ir::OpCode::kReduceWindow:
    case ir::OpCode::kGather:
    case ir::OpCode::kScatter:
    case ir::OpCode::kSelectAndScatter:
      return {0};
    default:
      break;
  }
  double worst = 0;
  for (size_t i = 0; i < op.num_results(); ++i) {
    const ir::DType t = ir::ComplexComponent(op.result(i)->type().dtype());
    double tol = 0;
    if (t == ir::DType::kF64) {
      tol = 1e-12;
    } else if (t == ir::DType::kF32) {
      tol = 1e-5;
    } else if (ir::IsFloat(t)) {
      tol = 1e-2;
    }
    worst = std::max(worst, tol);
  }
  return {worst};
}

TEST(CorpusDifferentialTest, EveryLibraryOpOfTheCorpusMatchesTheInterpreter) {
  const std::filesystem::path dir = std::filesystem::path(JITD_SHARED_DIR) / "conformance/stablehlo";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no corpus at " << dir;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".mlir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  int compared = 0, identical = 0, declined = 0, files_used = 0;
  std::map<std::string, int> per_op;
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream buffer;
    buffer << in.rdbuf();
    const std::string text = buffer.str();
    bool mentions = false;
    for (const char* name : {"stablehlo.dot", "stablehlo.convolution", "stablehlo.fft",
                             "stablehlo.triangular_solve", "stablehlo.cholesky",
                             "stablehlo.sort", "stablehlo.reduce_window", "stablehlo.gather",
                             "stablehlo.scatter", "stablehlo.select_and_scatter"}) {
      mentions = mentions || text.find(name) != std::string::npos;
    }
    if (!mentions) continue;
    ++files_used;
    const std::string file = path.filename().string();
    auto pieces = frontend::SplitModules(text);
    for (size_t m = 0; m < pieces.size(); ++m) {
      // Which top-level ops of the entry function to try.
      std::vector<size_t> indices;
      {
        auto module = frontend::ParseModule(pieces[m].text, pieces[m].first_line);
        ASSERT_TRUE(module.ok()) << file << ": " << module.status().ToString();
        ASSERT_TRUE(ir::VerifyModule(**module).ok()) << file;
        const ir::Function* fn = (*module)->EntryFunction();
        ASSERT_NE(fn, nullptr) << file;
        for (size_t i = 0; i < fn->entry()->ops().size(); ++i) {
          if (IsLibraryCandidate(fn->entry()->ops()[i]->code())) indices.push_back(i);
        }
      }
      for (size_t index : indices) {
        auto module = frontend::ParseModule(pieces[m].text, pieces[m].first_line);
        ASSERT_TRUE(module.ok());
        ir::Function& fn = *(*module)->EntryFunction();
        if (!fn.arg_types().empty()) continue;  // the corpus' @main takes none
        const ir::Op& op = *fn.entry()->ops()[index];
        const std::string where = file + ":" + op.loc().ToString() + " " + std::string(op.name());
        const testing::Tolerance tolerance = ToleranceFor(op);
        auto d = testing::RunDifferential(**module, fn, index, {}, tolerance);
        if (!d.ok() && d.status().code() == StatusCode::kNotFound) {
          ++declined;
          std::printf("declined: %s\n", where.c_str());
          continue;
        }
        ASSERT_TRUE(d.ok()) << where << ": " << d.status().ToString();
        ++compared;
        ++per_op[d->op_name];
        EXPECT_EQ(d->mismatch, "") << where;
        bool same = true;
        for (size_t i = 0; i < d->expected.size(); ++i) {
          same = same && testing::CompareLiterals(d->expected[i], d->actual[i], {0}).empty();
        }
        identical += same;
        if (!same) std::printf("within tolerance, not bitwise identical: %s\n", where.c_str());
      }
    }
  }
  std::printf("corpus: %d files, %d ops compared (%d bitwise identical), %d declined\n",
              files_used, compared, identical, declined);
  for (const auto& [name, count] : per_op) std::printf("  %s: %d\n", name.c_str(), count);
  EXPECT_GT(compared, 100);
}

// A module whose @main is `op` alone, on arguments of its operand types
// (regionless ops only: the op's attributes are copied, not its regions).
std::unique_ptr<ir::Module> OneOpModule(const ir::Op& op) {
  auto module = std::make_unique<ir::Module>();
  auto fn = std::make_unique<ir::Function>("main", op.loc());
  ir::Block& block = fn->body().add_block();
  auto clone = std::make_unique<ir::Op>(op.code(), op.loc());
  for (const ir::Value* v : op.operands()) {
    fn->arg_types().push_back(v->type());
    clone->add_operand(block.add_arg(v->type()));
  }
  for (size_t i = 0; i < op.num_results(); ++i) clone->add_result(op.result(i)->type());
  fn->result_types() = op.result_types();
  clone->attrs() = op.attrs();
  clone->set_result_groups(op.result_groups());
  const ir::Op* added = block.add_op(std::move(clone));
  auto ret = std::make_unique<ir::Op>(ir::OpCode::kFuncReturn, op.loc());
  for (size_t i = 0; i < added->num_results(); ++i) ret->add_operand(added->result(i));
  block.add_op(std::move(ret));
  (void)module->AddFunction(std::move(fn));
  return module;
}

void CollectOps(const ir::Region& region, std::vector<const ir::Op*>& out) {
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    for (const auto& op : region.block(b).ops()) {
      out.push_back(op.get());
      for (size_t r = 0; r < op->num_regions(); ++r) CollectOps(op->region(r), out);
    }
  }
}

// The models' heavy ops: every one is accepted by the library, and one op
// of each distinct signature (op, types, attributes) matches the
// interpreter on seeded random operands. f32 products here contract up to
// K = 4,608 (ResNet's 3x3x512), so BLAS's reordered sums are held to 1e-4
// of the largest magnitude (K * f32 epsilon would be 2.7e-4; random signs
// make the real error far smaller).
TEST(ModelDifferentialTest, EveryHeavyOpOfTheModelsIsAcceptedAndMatches) {
  const std::filesystem::path dir = std::filesystem::path(JITD_SHARED_DIR) / "models";
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no models at " << dir;
  int accepted = 0, compared = 0;
  for (const char* name : {"jax_resnet_50.mlir", "pt_bert.mlir", "searchless_chess_9m.mlir"}) {
    std::ifstream in(dir / name);
    std::stringstream buffer;
    buffer << in.rdbuf();
    auto module = frontend::ParseModule(buffer.str());
    ASSERT_TRUE(module.ok()) << name << ": " << module.status().ToString();
    std::vector<const ir::Op*> ops;
    for (const auto& fn : (*module)->functions()) CollectOps(fn->body(), ops);
    std::vector<std::string> seen;
    for (const ir::Op* op : ops) {
      if (!IsLibraryCandidate(op->code())) continue;
      const std::string where = std::string(name) + ":" + op->loc().ToString() + " " +
                                std::string(op->name());
      auto library = CreateLibraryOp(*op);
      ASSERT_TRUE(library.ok()) << where << ": " << library.status().ToString();
      EXPECT_NE(*library, nullptr) << where << " was declined";
      ++accepted;
      if (op->num_regions() != 0) continue;
      std::string signature(op->name());
      for (const ir::Value* v : op->operands()) signature += " " + v->type().ToString();
      op->attrs().AppendDictTo(signature);
      if (std::find(seen.begin(), seen.end(), signature) != seen.end()) continue;
      seen.push_back(signature);
      std::unique_ptr<ir::Module> one = OneOpModule(*op);
      ir::Function& fn = *one->functions()[0];
      std::vector<eval::RuntimeValue> args;
      for (size_t i = 0; i < fn.arg_types().size(); ++i) {
        args.emplace_back(*eval::RandomLiteral(fn.arg_types()[i], 11 + i));
      }
      testing::Tolerance tolerance = ToleranceFor(*op);
      if (tolerance.relative > 0) tolerance.relative = std::max(tolerance.relative, 1e-4);
      auto d = testing::RunDifferential(*one, fn, 0, std::move(args), tolerance);
      ASSERT_TRUE(d.ok()) << where << ": " << d.status().ToString();
      EXPECT_EQ(d->mismatch, "") << where;
      ++compared;
    }
  }
  std::printf("models: %d heavy ops accepted, %d distinct ones compared\n", accepted, compared);
}

}  // namespace
}  // namespace jitd::cpu
