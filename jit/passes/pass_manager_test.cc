#include "jit/passes/pass_manager.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kProgram = R"(module {
  func.func @main(%a: tensor<4xi32>) -> tensor<4xi32> {
    %0 = call @helper(%a) : (tensor<4xi32>) -> tensor<4xi32>
    %c = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
    %d = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
    %1 = stablehlo.add %c, %d : tensor<4xi32>
    %2 = stablehlo.add %0, %1 : tensor<4xi32>
    %3 = stablehlo.multiply %2, %2 : tensor<4xi32>
    return %2 : tensor<4xi32>
  }
  func.func private @helper(%x: tensor<4xi32>) -> tensor<4xi32> {
    %z = stablehlo.constant dense<0> : tensor<4xi32>
    %0 = stablehlo.add %x, %z : tensor<4xi32>
    return %0 : tensor<4xi32>
  }
}
)";

std::string ReadAll(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(PassManagerTest, DefaultPipelineNamesAndResult) {
  PassManager manager;
  AddDefaultPipeline(manager);
  const std::vector<std::string> want = {"inline", "decompose-chlo", "canonicalize",
                                         "fold-constants", "cse", "canonicalize", "dce"};
  EXPECT_EQ(manager.PassNames(), want);
  PassManager no_chlo;
  PipelineOptions options;
  options.decompose_chlo = false;
  AddDefaultPipeline(no_chlo, options);
  EXPECT_EQ(no_chlo.PassNames().size(), want.size() - 1);

  auto m = testing::RunAndCompare(kProgram, "default",
                                  {testing::Tensor(ir::Type::Tensor(ir::DType::kS32, {4}),
                                                   {5, 6, 7, 8})});
  ASSERT_TRUE(m);
  // add(x, 0) gone, the constants folded, the dead multiply removed.
  EXPECT_EQ(CountOps(*m), 3) << ir::PrintModule(*m);
}

TEST(PassManagerTest, DirectoryDumpHookWritesReparsableFiles) {
  const fs::path dir = fs::path(::testing::TempDir()) / "jitd_pass_dumps";
  fs::remove_all(dir);
  auto m = testing::ParseVerifiedOrFail(kProgram);
  ASSERT_TRUE(m);
  PassManager manager;
  manager.set_verify_each(true);
  AddDefaultPipeline(manager);
  manager.SetDumpHook(DirectoryDumpHook(dir.string()));
  ASSERT_TRUE(manager.Run(*m).ok());
  const std::vector<std::string> names = {"000-input.mlir",        "001-inline.mlir",
                                          "002-decompose-chlo.mlir", "003-canonicalize.mlir",
                                          "004-fold-constants.mlir", "005-cse.mlir",
                                          "006-canonicalize.mlir",   "007-dce.mlir"};
  for (const std::string& name : names) {
    const fs::path path = dir / name;
    ASSERT_TRUE(fs::exists(path)) << path;
    auto parsed = frontend::ParseModule(ReadAll(path));
    ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status().ToString();
    EXPECT_TRUE(ir::VerifyModule(**parsed).ok()) << name;
  }
  EXPECT_NE(ReadAll(dir / "000-input.mlir").find("@helper"), std::string::npos);
  EXPECT_EQ(ReadAll(dir / "001-inline.mlir").find("@helper"), std::string::npos);
  EXPECT_EQ(ReadAll(dir / "007-dce.mlir"), ir::PrintModule(*m));
  fs::remove_all(dir);
}

// A deliberately broken pass: makes @main return a value of the wrong type.
class BreakingPass : public Pass {
 public:
  std::string_view name() const override { return "breaker"; }
  Status Run(ir::Module& module) override {
    ir::Block& block = *module.EntryFunction()->entry();
    const ir::Type t = ir::Type::Scalar(ir::DType::kF32);
    ir::AttributeList attrs;
    ir::Literal zero = *ir::Literal::Create(t);
    attrs.Set("value", ir::MakeDenseElements(zero));
    ir::Op* c = block.InsertOp(0, ir::CreateOp(ir::OpCode::kConstant, {}, {},
                                               std::span<const ir::Type>(&t, 1), attrs));
    block.terminator()->set_operand(0, c->result(0));
    return Status::Ok();
  }
};

TEST(PassManagerTest, VerifyEachNamesTheBrokenPass) {
  auto m = testing::ParseVerifiedOrFail(kProgram);
  ASSERT_TRUE(m);
  PassManager manager;
  manager.Add(CreateInlinePass());
  manager.Add(std::make_unique<BreakingPass>());
  manager.Add(CreateDcePass());
  int dumps = 0;
  manager.SetDumpHook([&](int, std::string_view, const ir::Module&) {
    ++dumps;
    return Status::Ok();
  });
  manager.set_verify_each(true);
  Status s = manager.Run(*m);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("after pass 'breaker' (#2)"), std::string::npos) << s.ToString();
  EXPECT_EQ(dumps, 2);  // input and inline; the run stops at the broken pass
}

TEST(PassManagerTest, PipelineSpecs) {
  PassManager manager;
  ASSERT_TRUE(AddPipeline(manager, "inline, cse,dce").ok());
  EXPECT_EQ(manager.PassNames(), (std::vector<std::string>{"inline", "cse", "dce"}));
  PassManager bad;
  Status s = AddPipeline(bad, "inline,frobnicate");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("frobnicate"), std::string::npos);
  EXPECT_FALSE(AddPipeline(bad, "inline,,dce").ok());
  for (const std::string& name : PassRegistryNames()) {
    auto p = CreatePass(name);
    ASSERT_TRUE(p.ok()) << name;
    EXPECT_EQ((*p)->name(), name);
  }
}

// The models of ../shared/models through the default pipeline, verified
// after every pass; each must shrink and still print and re-parse.
TEST(PassManagerTest, ModelsThroughTheDefaultPipeline) {
  const fs::path dir = fs::path(JITD_SHARED_DIR) / "models";
  int seen = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".mlir") continue;
    ++seen;
    auto m = testing::ParseVerifiedOrFail(ReadAll(entry.path()));
    ASSERT_TRUE(m) << entry.path();
    const int64_t before = CountOps(*m);
    testing::RunPipeline(*m, "default");
    const int64_t after = CountOps(*m);
    EXPECT_LT(after, before) << entry.path();
    auto reparsed = frontend::ParseModule(ir::PrintModule(*m));
    ASSERT_TRUE(reparsed.ok()) << entry.path() << ": " << reparsed.status().ToString();
    EXPECT_TRUE(ir::VerifyModule(**reparsed).ok()) << entry.path();
  }
  EXPECT_EQ(seen, 3);
}

}  // namespace
}  // namespace jitd::passes
