// InstanceOptions::log: what `jitd serve --log-level debug` shows of the
// cache — compiles with the reason for the miss, evictions and disk loads,
// one line each.
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/instance.h"
#include "daemon/test_dirs.h"

namespace jitd::daemon {
namespace {

constexpr char kAdd[] =
    "func.func @add(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.add %a, %a : tensor<4xf32>\n"
    "  return %0 : tensor<4xf32>\n}\n";
constexpr char kMul[] =
    "func.func @add(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
    "  %0 = stablehlo.multiply %a, %a : tensor<4xf32>\n"
    "  return %0 : tensor<4xf32>\n}\n";

// The lines an Instance logs, collected.
struct Lines {
  std::mutex mu;
  std::vector<std::string> lines;
  std::function<void(int, const std::string&)> Sink() {
    return [this](int level, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(std::to_string(level) + " " + line);
    };
  }
  std::string All() {
    std::string all;
    for (const std::string& line : lines) all += line + "\n";
    return all;
  }
};

TEST(InstanceLog, CompilesMissesEvictionsAndDiskLoads) {
  const std::string dir = testing::FreshTempDir("instance_log_test");
  Lines first;
  {
    InstanceOptions options;
    options.disk_cache_dir = dir;
    options.disk_cache_fsync = false;
    options.log = first.Sink();
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    ASSERT_TRUE((*instance)->Compile(kAdd, {}).ok());
    ASSERT_TRUE((*instance)->Compile(kAdd, {}).ok());  // a memory hit: nothing to say
    ASSERT_TRUE((*instance)->Compile(kMul, {}).ok());
  }
  ASSERT_GE(first.lines.size(), 2u) << first.All();
  EXPECT_EQ(first.lines[0].rfind("2 compiled @add on interpreter in ", 0), 0u) << first.All();
  EXPECT_NE(first.lines[0].find("; miss: a new program"), std::string::npos) << first.All();
  EXPECT_EQ(first.lines[1].rfind("2 compiled @add on interpreter in ", 0), 0u) << first.All();
  EXPECT_NE(first.lines[1].find("; miss: differs in program_hash"), std::string::npos)
      << first.All();

  // A second daemon on the same disk cache, with room for one program.
  Lines second;
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  options.memory_cache_bytes = 0;
  options.log = second.Sink();
  {
    // Measure one entry, then allow one and a half.
    auto probe = Instance::Create(options);
    ASSERT_TRUE(probe.ok());
    ASSERT_TRUE((*probe)->Compile(kAdd, {}).ok());
    ASSERT_EQ(second.lines.size(), 1u) << second.All();
    const std::string& line = second.lines[0];
    const size_t open = line.rfind('(');
    options.memory_cache_bytes = std::stoull(line.substr(open + 1)) * 3 / 2;
    second.lines.clear();
  }
  auto instance = Instance::Create(options);
  ASSERT_TRUE(instance.ok());
  ASSERT_TRUE((*instance)->Compile(kAdd, {}).ok());
  ASSERT_TRUE((*instance)->Compile(kMul, {}).ok());
  const std::string all = second.All();
  EXPECT_NE(all.find("2 loaded @add on interpreter from the disk cache in "), std::string::npos)
      << all;
  EXPECT_NE(all.find("2 evicted 1 program(s) from the memory cache (--memory-cache-bytes)"),
            std::string::npos)
      << all;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace jitd::daemon
