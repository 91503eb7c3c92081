// The conformance corpus on the interpreter, before and after the compiler
// passes, and the models through the passes verified after each, all in a
// build instrumented with AddressSanitizer and UndefinedBehaviorSanitizer:
// the parser, verifier, printer, passes, evaluator and the conformance
// runner are the fuzzers' instrumented objects (tests/CMakeLists.txt), so a
// memory error, a leak or undefined behaviour anywhere in them fails the
// test (ctest sets ASAN_OPTIONS / UBSAN_OPTIONS to halt). Failures the
// interpreter is known to have are listed in
// tests/conformance/interpreter_expected_failures.txt; any other fails.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include "devices/device.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/ir/verifier.h"
#include "jit/passes/pass_manager.h"
#include "tools/conformance/runner.h"

namespace jitd {
namespace {

// Runs the corpus on the interpreter with `pipeline` (unset: the device's
// own) and expects exactly the listed failures.
void ExpectTheCorpusAsListed(const std::optional<std::string>& pipeline) {
  StatusOr<std::vector<std::string>> files =
      conformance::CollectFiles({JITD_SHARED_DIR "/conformance/stablehlo"});
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  StatusOr<std::map<std::string, std::string>> expected = conformance::ReadExpectedFailures(
      JITD_SOURCE_DIR "/tests/conformance/interpreter_expected_failures.txt");
  ASSERT_TRUE(expected.ok()) << expected.status().ToString();
  StatusOr<std::unique_ptr<devices::Device>> device = devices::CreateDevice("interpreter");
  ASSERT_TRUE(device.ok()) << device.status().ToString();

  conformance::RunnerOptions options;
  options.jobs = 2;
  options.timeout_seconds = 600;
  options.pipeline = pipeline;
  const std::vector<conformance::CaseResult> results =
      conformance::RunFiles(*files, **device, options, {});
  size_t passed = 0;
  std::set<std::string> failed;
  for (const conformance::CaseResult& r : results) {
    if (r.passed()) {
      ++passed;
      continue;
    }
    const std::string key = conformance::CaseKey(r);
    failed.insert(key);
    EXPECT_EQ(expected->count(key), 1u)
        << key << ": " << conformance::OutcomeName(r.outcome) << ": " << r.detail;
  }
  for (const auto& [key, cause] : *expected) {
    if (failed.count(key) == 0) std::printf("%s passes now; remove it from the list\n", key.c_str());
  }
  std::printf("%zu passed, %zu failed (%zu listed) of %zu cases\n", passed, failed.size(),
              expected->size(), results.size());
  EXPECT_GE(results.size(), files->size());
}

TEST(SanitizedCorpusTest, TheInterpreterRunsTheCorpus) { ExpectTheCorpusAsListed(std::nullopt); }

TEST(SanitizedCorpusTest, TheInterpreterRunsTheCorpusAfterThePasses) {
  ExpectTheCorpusAsListed("default");
}

TEST(SanitizedCorpusTest, TheModelsGoThroughThePassesVerifiedAfterEach) {
  int models = 0;
  for (const auto& entry : std::filesystem::directory_iterator(JITD_SHARED_DIR "/models")) {
    if (entry.path().extension() != ".mlir") continue;
    ++models;
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    auto modules = frontend::ParsePrograms(text.str());
    ASSERT_TRUE(modules.ok()) << name << ": " << modules.status().ToString();
    for (std::unique_ptr<ir::Module>& module : *modules) {
      ASSERT_TRUE(ir::VerifyModule(*module).ok()) << name;
      passes::PassManager manager;
      ASSERT_TRUE(passes::AddPipeline(manager, "default", passes::PipelineOptions{}).ok());
      manager.set_verify_each(true);
      const Status run = manager.Run(*module);
      EXPECT_TRUE(run.ok()) << name << ": " << run.ToString();
    }
  }
  EXPECT_GE(models, 3);
}

}  // namespace
}  // namespace jitd
