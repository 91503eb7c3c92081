// One program is one cache entry however it is spelled (issue 15, item 5):
// daemon/program_key.h and the Instance's keys, explanations and stats.
#include "daemon/program_key.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "daemon/instance.h"
#include "daemon/test_dirs.h"
#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"

namespace jitd::daemon {
namespace {

using testing::FreshTempDir;

constexpr char kProgram[] = R"(
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
    %c = stablehlo.constant dense<2.000000e+00> : tensor<4xf32>
    %m = stablehlo.multiply %x, %c : tensor<4xf32>
    return %m : tensor<4xf32>
  }
  func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
    %s = stablehlo.add %a, %b : tensor<4xf32>
    %r = "stablehlo.reduce_precision"(%s) {exponent_bits = 5 : i32, mantissa_bits = 10 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    %h = func.call @helper(%r) : (tensor<4xf32>) -> tensor<4xf32>
    return %h : tensor<4xf32>
  }
}
)";

// kProgram respelled: comments, other SSA names, another private function
// name, another module name, locations, attributes in another order.
constexpr char kRespelled[] = R"(// exported again, on another day
module @renamed attributes {mhlo.num_replicas = 1 : i32, mhlo.num_partitions = 1 : i32} {
  // the helper, renamed
  func.func private @twice(%arg0: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.constant dense<2.000000e+00> : tensor<4xf32> loc("model.py":12:3)
    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32> loc("model.py":13:3)
    return %1 : tensor<4xf32>
  }


  func.func public @main(%p: tensor<4xf32>, %q: tensor<4xf32>) -> tensor<4xf32> {
    %sum = stablehlo.add %p, %q : tensor<4xf32> loc(#loc7)
    %lowp = "stablehlo.reduce_precision"(%sum) {mantissa_bits = 10 : i32, exponent_bits = 5 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    %out = func.call @twice(%lowp) : (tensor<4xf32>) -> tensor<4xf32> loc("model.py":40:1)
    return %out : tensor<4xf32>
  }
}
#loc7 = loc("model.py":30:9)
)";

std::string Replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

std::string ReplaceAll(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

ProgramKey KeyOf(const std::string& text) {
  auto module = frontend::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  if (!module.ok()) return {};
  return MakeProgramKey(**module);
}

std::string FlatBufferOf(const std::string& text) {
  auto module = frontend::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  auto bytes = frontend::ModuleToFlatBuffer(**module);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return std::string(bytes->begin(), bytes->end());
}

TEST(ProgramKeyTest, SpellingDoesNotChangeTheKey) {
  const ProgramKey key = KeyOf(kProgram);
  EXPECT_EQ(key.entry, "@main(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>");
  EXPECT_EQ(key.canonical_hash.size(), 32u);
  EXPECT_EQ(KeyOf(kRespelled).Part(), key.Part());
  // The builder's form (a FlatBuffers module) of either spelling.
  auto module = ParseProgram(FlatBufferOf(kRespelled), /*flatbuffer=*/true);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  EXPECT_EQ(MakeProgramKey(**module).Part(), key.Part());
}

TEST(ProgramKeyTest, TheCanonicalFormParsesBackToItself) {
  ir::PrintOptions canonical;
  canonical.canonical = true;
  auto module = frontend::ParseModule(kRespelled);
  ASSERT_TRUE(module.ok());
  const std::string text = ir::PrintModule(**module, canonical);
  EXPECT_EQ(text.find("twice"), std::string::npos) << text;
  EXPECT_EQ(text.find("%sum"), std::string::npos) << text;
  EXPECT_EQ(text.find("renamed"), std::string::npos) << text;
  EXPECT_NE(text.find("@main"), std::string::npos) << text;
  auto again = frontend::ParseModule(text);
  ASSERT_TRUE(again.ok()) << again.status().ToString() << "\n" << text;
  EXPECT_EQ(ir::PrintModule(**again, canonical), text);
  EXPECT_EQ(MakeProgramKey(**again).Part(), KeyOf(kProgram).Part());
}

TEST(ProgramKeyTest, MeaningChangesTheKey) {
  const std::string key = KeyOf(kProgram).Part();
  // A constant.
  EXPECT_NE(KeyOf(Replace(kProgram, "dense<2.000000e+00>", "dense<3.000000e+00>")).Part(), key);
  // An attribute value.
  EXPECT_NE(KeyOf(Replace(kProgram, "mantissa_bits = 10", "mantissa_bits = 9")).Part(), key);
  // A module attribute.
  EXPECT_NE(KeyOf(Replace(kProgram, "mhlo.num_replicas = 1", "mhlo.num_replicas = 2")).Part(),
            key);
  // An op.
  EXPECT_NE(KeyOf(Replace(kProgram, "stablehlo.add %a", "stablehlo.subtract %a")).Part(), key);
  // The entry's name (clients call it by name) and shapes.
  const ProgramKey renamed = KeyOf(Replace(kProgram, "@main", "@forward"));
  EXPECT_NE(renamed.Part(), key);
  const ProgramKey reshaped = KeyOf(ReplaceAll(kProgram, "tensor<4xf32>", "tensor<8xf32>"));
  EXPECT_NE(reshaped.Part(), key);
  EXPECT_EQ(reshaped.entry, "@main(tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>");
  // Operand order.
  EXPECT_NE(KeyOf(Replace(kProgram, "stablehlo.multiply %x, %c", "stablehlo.multiply %c, %x"))
                .Part(),
            key);
}

TEST(ProgramKeyTest, RngIsKeyedByItsPlaceNotItsLine) {
  // stablehlo.rng seeds from its place among the rng ops: moving it down a
  // line keeps its values, and its key.
  constexpr char kRng[] = R"(module {
  func.func @main() -> tensor<4xf32> {
    %a = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %b = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %s = stablehlo.constant dense<4> : tensor<1xi64>
    %r = stablehlo.rng %a, %b, %s, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<1xi64>) -> tensor<4xf32>
    return %r : tensor<4xf32>
  }
})";
  const std::string key = KeyOf(kRng).Part();
  EXPECT_EQ(KeyOf(ReplaceAll(kRng, "%a", "%lo")).Part(), key);
  EXPECT_EQ(KeyOf(std::string("// a comment line\n") + kRng).Part(), key);
  EXPECT_NE(KeyOf(ReplaceAll(kRng, "UNIFORM", "NORMAL")).Part(), key);
}

// Elided weights are filled by name and place among them, not by line: a
// model moved down a few lines (a re-export, a comment) is the same key.
TEST(ProgramKeyTest, ElidedWeightsDoNotKeyOnTheirLines) {
  constexpr char kWeights[] = R"(module {
  func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %w = stablehlo.constant dense_resource<__elided__> : tensor<4xf32>
    %y = stablehlo.multiply %x, %w : tensor<4xf32>
    return %y : tensor<4xf32>
  }
})";
  const std::string key = KeyOf(kWeights).Part();
  EXPECT_EQ(KeyOf(std::string("// exported again\n\n") + kWeights).Part(), key);
  EXPECT_NE(KeyOf(ReplaceAll(kWeights, "multiply", "add")).Part(), key);
}

TEST(ProgramKeyTest, FunctionsNamedLikeTheCanonicalNamesStayDistinct) {
  // A program that already uses the canonical prefix keeps all its names
  // (so no renamed function can collide with one): the same text then means
  // the same program, and other names are another key (a miss, never a
  // wrong hit).
  const std::string taken = ReplaceAll(kProgram, "@helper", "@_jitd_f0");
  const std::string other = ReplaceAll(kProgram, "@helper", "@_jitd_f1");
  EXPECT_EQ(KeyOf(taken).Part(), KeyOf(kProgram).Part());
  EXPECT_NE(KeyOf(other).Part(), KeyOf(kProgram).Part());
  // A public function with the prefix is called by that name: kept.
  const std::string public_taken = Replace(taken, "func.func private", "func.func public");
  EXPECT_NE(KeyOf(public_taken).Part(), KeyOf(kProgram).Part());
}

TEST(CanonicalCacheTest, RespelledProgramsHitOneEntry) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto first = (*instance)->Compile(kProgram, {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->source, "compiled");
  // The respelled text: a hit (after a parse), then a memory hit on the
  // session's fast path (the alias of its bytes is known).
  EXPECT_FALSE((*instance)->CompileFromMemory(kRespelled, {}).has_value());
  auto second = (*instance)->Compile(kRespelled, {});
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->source, "memory");
  EXPECT_TRUE(second->program == first->program);
  auto fast = (*instance)->CompileFromMemory(kRespelled, {});
  ASSERT_TRUE(fast.has_value());
  EXPECT_TRUE(fast->program == first->program);
  // The builder's form of the program.
  CompileSpec fb;
  fb.flatbuffer_module = true;
  auto third = (*instance)->Compile(FlatBufferOf(kRespelled), fb);
  ASSERT_TRUE(third.ok()) << third.status().ToString();
  EXPECT_EQ(third->source, "memory");
  EXPECT_TRUE(third->program == first->program);
  EXPECT_EQ((*instance)->stats().compiles, 1u);
  // A changed constant and a changed shape miss.
  auto constant = (*instance)->Compile(
      Replace(kRespelled, "dense<2.000000e+00>", "dense<3.000000e+00>"), {});
  ASSERT_TRUE(constant.ok());
  EXPECT_EQ(constant->source, "compiled");
  auto shape = (*instance)->Compile(ReplaceAll(kProgram, "tensor<4xf32>", "tensor<8xf32>"), {});
  ASSERT_TRUE(shape.ok());
  EXPECT_EQ(shape->source, "compiled");
  EXPECT_EQ((*instance)->stats().compiles, 3u);
}

TEST(CanonicalCacheTest, ParseErrorsAreStillReported) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto bad = (*instance)->Compile("module { func.func @main( }", {});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << bad.status().ToString();
  EXPECT_EQ((*instance)->stats().compile_errors, 1u);
}

TEST(CanonicalCacheTest, AMissIsExplainedAgainstTheNearestEntryOfTheSameProgram) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto original = (*instance)->Compile(kProgram, {});
  ASSERT_TRUE(original.ok());
  EXPECT_EQ(original->explain, "");  // nothing of this program was cached
  // Another program, compiled later: not the one to compare with.
  auto other = (*instance)->Compile(ReplaceAll(kProgram, "tensor<4xf32>", "tensor<8xf32>"), {});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->explain, "");
  auto changed = (*instance)->Compile(
      Replace(kRespelled, "dense<2.000000e+00>", "dense<3.000000e+00>"), {});
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->source, "compiled");
  const std::string original_hash = original->program->key_parts.program_hash.substr(0, 32);
  EXPECT_NE(changed->explain.find("differs in program_hash"), std::string::npos)
      << changed->explain;
  EXPECT_NE(changed->explain.find("same entry '@main(tensor<4xf32>, tensor<4xf32>)"),
            std::string::npos)
      << changed->explain;
  EXPECT_NE(changed->explain.find(original_hash), std::string::npos) << changed->explain;
  EXPECT_EQ(changed->explain.find("argument_shapes"), std::string::npos) << changed->explain;
  // The same program with other options: only the options differ.
  CompileSpec profiled;
  profiled.profile = true;
  auto with_profile = (*instance)->Compile(kRespelled, profiled);
  ASSERT_TRUE(with_profile.ok());
  EXPECT_EQ(with_profile->explain.rfind("differs in options", 0), 0u) << with_profile->explain;
}

TEST(CanonicalCacheTest, DiskEntriesServeEverySpellingAcrossRestarts) {
  const std::string dir = FreshTempDir("program_key_disk");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  cache::Fingerprint fingerprint;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto r = (*instance)->Compile(kProgram, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    fingerprint = r->program->fingerprint;
  }
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto r = (*instance)->Compile(kRespelled, {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->source, "disk");
    EXPECT_TRUE(r->program->fingerprint == fingerprint);
  }
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto by_fp = (*instance)->CompileByFingerprint(fingerprint);
    ASSERT_TRUE(by_fp.ok()) << by_fp.status().ToString();
    EXPECT_EQ(by_fp->source, "disk");
    // The builder's form, after a restart, from disk.
    CompileSpec fb;
    fb.flatbuffer_module = true;
    auto r = (*instance)->Compile(FlatBufferOf(kProgram), fb);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->source, "memory");
    // A changed constant: a miss explained against the disk entry.
    auto changed = (*instance)->Compile(
        Replace(kProgram, "dense<2.000000e+00>", "dense<5.000000e+00>"), {});
    ASSERT_TRUE(changed.ok());
    EXPECT_EQ(changed->source, "compiled");
    EXPECT_NE(changed->explain.find("differs in program_hash (same entry"), std::string::npos)
        << changed->explain;
  }
  std::filesystem::remove_all(dir);
}

TEST(CanonicalCacheTest, FlatBufferProgramsOnDiskReloadByFingerprint) {
  const std::string dir = FreshTempDir("program_key_fbdisk");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  CompileSpec fb;
  fb.flatbuffer_module = true;
  cache::Fingerprint fingerprint;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto r = (*instance)->Compile(FlatBufferOf(kRespelled), fb);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    fingerprint = r->program->fingerprint;
  }
  auto instance = Instance::Create(options);
  ASSERT_TRUE(instance.ok());
  auto by_fp = (*instance)->CompileByFingerprint(fingerprint);
  ASSERT_TRUE(by_fp.ok()) << by_fp.status().ToString();
  EXPECT_EQ(by_fp->source, "disk");
  auto text = (*instance)->Compile(kProgram, {});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(text->source, "memory");
  std::filesystem::remove_all(dir);
}

TEST(CanonicalCacheTest, StatsKeysDescribeEachEntry) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  ASSERT_TRUE((*instance)->Compile(kProgram, {}).ok());
  ASSERT_TRUE((*instance)->Compile(kRespelled, {}).ok());        // a hit
  ASSERT_TRUE((*instance)->CompileFromMemory(kRespelled, {}));  // another
  const std::string json = (*instance)->StatsJson(/*list_keys=*/true);
  EXPECT_NE(json.find("\"program\":\"@main\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"device\":\"interpreter\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"argument_shapes\":\"tensor<4xf32>, tensor<4xf32>\""), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"hits\":2"), std::string::npos) << json;
  EXPECT_NE(json.find("\"compile_micros\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"bytes\":"), std::string::npos) << json;
  EXPECT_NE(json.find("\"last_use_unix_ms\":"), std::string::npos) << json;
}

}  // namespace
}  // namespace jitd::daemon
