// Process grids of daemon compiles (issue 17, item 1): the client's counts
// against the module's attributes, and the grid in the cache key.
#include "daemon/process_grid.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

#include "daemon/instance.h"
#include "daemon/test_dirs.h"
#include "jit/frontend/parser.h"

namespace jitd::daemon {
namespace {

constexpr char kTwoReplicas[] = R"(
module @sum attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 2 : i32} {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = stablehlo.multiply %x, %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
)";

constexpr char kNoAttributes[] = R"(
module @plain {
  func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %r = stablehlo.add %x, %x : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
)";

DeclaredGrid DeclaredOf(const char* text) {
  auto module = frontend::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString();
  auto grid = DeclaredProcessGrid(**module);
  EXPECT_TRUE(grid.ok()) << grid.status().ToString();
  return grid.ok() ? *grid : DeclaredGrid{};
}

TEST(ProcessGridTest, TheModuleDeclaresItsCountsOrNothing) {
  EXPECT_EQ(DeclaredOf(kTwoReplicas), (DeclaredGrid{2, 1}));
  EXPECT_EQ(DeclaredOf(kNoAttributes), (DeclaredGrid{0, 0}));
}

TEST(ProcessGridTest, AMalformedAttributeIsNamed) {
  std::string text = kTwoReplicas;
  text.replace(text.find("mhlo.num_replicas = 2 : i32"), 27, "mhlo.num_replicas = 0 : i32");
  auto module = frontend::ParseModule(text);
  ASSERT_TRUE(module.ok()) << module.status().ToString();
  auto grid = DeclaredProcessGrid(**module);
  ASSERT_FALSE(grid.ok());
  EXPECT_EQ(grid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(grid.status().message().find("mhlo.num_replicas"), std::string::npos);
}

TEST(ProcessGridTest, UnsetCountsComeFromTheModuleOrAreOne) {
  auto grid = ResolveProcessGrid({}, DeclaredGrid{2, 1});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->num_replicas, 2);
  EXPECT_EQ(grid->num_partitions, 1);
  grid = ResolveProcessGrid({}, DeclaredGrid{});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->num_processes(), 1);
  grid = ResolveProcessGrid(GridRequest{3, 2, {}}, DeclaredGrid{});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->num_replicas, 3);
  EXPECT_EQ(grid->num_partitions, 2);
}

TEST(ProcessGridTest, AContradictionNamesOptionAndAttribute) {
  auto grid = ResolveProcessGrid(GridRequest{4, 0, {}}, DeclaredGrid{2, 1});
  ASSERT_FALSE(grid.ok());
  EXPECT_EQ(grid.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = grid.status().message();
  EXPECT_NE(m.find("num_replicas = 4"), std::string::npos) << m;
  EXPECT_NE(m.find("mhlo.num_replicas = 2"), std::string::npos) << m;
  grid = ResolveProcessGrid(GridRequest{0, 2, {}}, DeclaredGrid{2, 1});
  ASSERT_FALSE(grid.ok());
  EXPECT_NE(grid.status().message().find("mhlo.num_partitions = 1"), std::string::npos);
  // Agreeing is fine.
  EXPECT_TRUE(ResolveProcessGrid(GridRequest{2, 1, {}}, DeclaredGrid{2, 1}).ok());
}

TEST(ProcessGridTest, DeviceAssignmentsAreChecked) {
  auto grid = ResolveProcessGrid(GridRequest{2, 0, {5, 3}}, DeclaredGrid{});
  ASSERT_TRUE(grid.ok());
  EXPECT_EQ(grid->device_ids, (std::vector<int64_t>{5, 3}));
  auto wrong = ResolveProcessGrid(GridRequest{2, 0, {1}}, DeclaredGrid{});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("device_assignment has 1"), std::string::npos);
  wrong = ResolveProcessGrid(GridRequest{2, 0, {1, 1}}, DeclaredGrid{});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("device_assignment[1] = 1 repeats"), std::string::npos);
  wrong = ResolveProcessGrid(GridRequest{2, 0, {0, -1}}, DeclaredGrid{});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("negative"), std::string::npos);
  wrong = ResolveProcessGrid(GridRequest{300, 0, {}}, DeclaredGrid{});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("256 processes"), std::string::npos);
}

TEST(ProcessGridTest, TheKeyOptionRoundTripsAndIsEmptyForOneProcess) {
  EXPECT_EQ(GridKeyOption(eval::ProcessGrid{}), "");
  eval::ProcessGrid grid{2, 3, {}};
  EXPECT_EQ(GridKeyOption(grid), ",replicas=2,partitions=3");
  EXPECT_EQ(GridFromKeyOptions("profile=0,uid=7" + GridKeyOption(grid) + ",target=x"), grid);
  grid = eval::ProcessGrid{2, 1, {4, 9}};
  EXPECT_EQ(GridFromKeyOptions("profile=1" + GridKeyOption(grid)), grid);
  EXPECT_EQ(GridFromKeyOptions("profile=0"), eval::ProcessGrid{});
  auto decoded = DecodeDeclaredGrid(EncodeDeclaredGrid(DeclaredGrid{2, 0}));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, (DeclaredGrid{2, 0}));
  EXPECT_FALSE(DecodeDeclaredGrid("2").ok());
}

CompileSpec SpecOf(uint32_t replicas, uint32_t partitions = 0) {
  CompileSpec spec;
  spec.device = "interpreter";
  spec.grid.num_replicas = replicas;
  spec.grid.num_partitions = partitions;
  return spec;
}

TEST(ProcessGridInstanceTest, TheGridIsPartOfTheKey) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto one = (*instance)->Compile(kNoAttributes, SpecOf(0));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->program->grid.num_processes(), 1);
  // 1 given = 1 taken: the same entry.
  auto explicit_one = (*instance)->Compile(kNoAttributes, SpecOf(1, 1));
  ASSERT_TRUE(explicit_one.ok());
  EXPECT_EQ(explicit_one->program->fingerprint, one->program->fingerprint);
  EXPECT_TRUE(explicit_one->cache_hit);
  auto two = (*instance)->Compile(kNoAttributes, SpecOf(2));
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_NE(two->program->fingerprint, one->program->fingerprint);
  EXPECT_FALSE(two->cache_hit);
  EXPECT_EQ(two->program->grid.num_replicas, 2);
  EXPECT_NE(two->program->key_parts.options.find("replicas=2"), std::string::npos);
  // The second compile of the same bytes finds them in the alias map and
  // memory, with its grid.
  std::optional<CompileOutcome> hit = (*instance)->CompileFromMemory(kNoAttributes, SpecOf(2));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->program->grid.num_replicas, 2);
}

TEST(ProcessGridInstanceTest, AContradictionIsRefusedEvenWhenTheBytesAreKnown) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto declared = (*instance)->Compile(kTwoReplicas, SpecOf(0));
  ASSERT_TRUE(declared.ok()) << declared.status().ToString();
  EXPECT_EQ(declared->program->grid.num_replicas, 2);
  for (int round = 0; round < 2; ++round) {  // the alias map knows the bytes now
    auto contradiction = (*instance)->Compile(kTwoReplicas, SpecOf(3));
    ASSERT_FALSE(contradiction.ok());
    EXPECT_EQ(contradiction.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(contradiction.status().message().find("num_replicas = 3"), std::string::npos);
    EXPECT_NE(contradiction.status().message().find("mhlo.num_replicas = 2"), std::string::npos);
    EXPECT_FALSE((*instance)->CompileFromMemory(kTwoReplicas, SpecOf(3)).has_value());
  }
  auto agreeing = (*instance)->Compile(kTwoReplicas, SpecOf(2, 1));
  ASSERT_TRUE(agreeing.ok());
  EXPECT_EQ(agreeing->program->fingerprint, declared->program->fingerprint);
}

TEST(ProcessGridInstanceTest, AProgramFromDiskKeepsItsGrid) {
  const std::filesystem::path dir = testing::FreshTempDir("process_grid_test");
  InstanceOptions options;
  options.disk_cache_dir = dir.string();
  options.disk_cache_fsync = false;
  cache::Fingerprint fingerprint;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto compiled = (*instance)->Compile(kNoAttributes, SpecOf(2, 2));
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    fingerprint = compiled->program->fingerprint;
  }
  auto restarted = Instance::Create(options);
  ASSERT_TRUE(restarted.ok());
  auto loaded = (*restarted)->CompileByFingerprint(fingerprint);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->program->grid.num_replicas, 2);
  EXPECT_EQ(loaded->program->grid.num_partitions, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jitd::daemon
