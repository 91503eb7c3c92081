#include "daemon/instance.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "daemon/test_dirs.h"
#include "daemon/test_programs.h"
#include "jit/cache/disk_cache.h"
#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"

namespace jitd::daemon {
namespace {

using testing::FreshTempDir;

TEST(InstanceTest, CompilesThenHitsMemory) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok()) << instance.status().ToString();
  auto first = (*instance)->Compile(testing::kSoftmax, {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->cache_hit);
  EXPECT_EQ(first->source, "compiled");
  ASSERT_EQ(first->program->argument_types.size(), 1u);
  EXPECT_EQ(first->program->argument_types[0].ToString(), "tensor<2x4xf32>");
  auto second = (*instance)->Compile(testing::kSoftmax, {});
  ASSERT_TRUE(second.ok());
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->source, "memory");
  EXPECT_EQ(second->program, first->program);
  EXPECT_EQ((*instance)->stats().compiles, 1u);
}

TEST(InstanceTest, BadProgramIsInvalidArgumentAndNotCached) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto r = (*instance)->Compile("func.func @main( garbage", {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*instance)->stats().compile_errors, 1u);
}

TEST(InstanceTest, UnknownDeviceIsNotFound) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  CompileSpec spec;
  spec.device = "tpu";
  auto r = (*instance)->Compile(testing::kSoftmax, spec);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("tpu"), std::string::npos) << r.status().message();
  // A probe for a platform the daemon lacks is no failed compile and no
  // cache miss; it has a counter of its own.
  EXPECT_EQ((*instance)->stats().compile_errors, 0u);
  EXPECT_EQ((*instance)->stats().unknown_device_compiles, 1u);
  EXPECT_EQ((*instance)->stats().compiles, 0u);
  const std::string json = (*instance)->StatsJson(false, {});
  EXPECT_NE(json.find("\"compile_errors\":0,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"unknown_device_compiles\":1,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"misses\":0,"), std::string::npos) << json;
}

// What `jitd ps` names a held program by: the module's name, from the
// parsed module and from the text of a disk-cache load alike.
TEST(InstanceTest, ProgramsKnowTheirModuleName) {
  const std::string dir = FreshTempDir("instance_test_module_name");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  const std::string text = std::string("module @my_model {\n") + testing::kSoftmax + "}\n";
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    auto compiled = (*instance)->Compile(text, {});
    ASSERT_TRUE(compiled.ok()) << compiled.status().ToString();
    EXPECT_EQ(compiled->program->module_name, "my_model");
    auto unnamed = (*instance)->Compile(
        "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
        "  %0 = stablehlo.negate %a : tensor<2xf32>\n"
        "  return %0 : tensor<2xf32>\n"
        "}\n",
        {});
    ASSERT_TRUE(unnamed.ok()) << unnamed.status().ToString();
    EXPECT_EQ(unnamed->program->module_name, "");
  }
  auto restarted = Instance::Create(options);
  ASSERT_TRUE(restarted.ok());
  auto loaded = (*restarted)->Compile(text, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->source, "disk");
  EXPECT_EQ(loaded->program->module_name, "my_model");
  std::filesystem::remove_all(dir);
}

TEST(InstanceTest, SingleFlightAcrossThreads) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if ((*instance)->Compile(testing::kSoftmax, {}).ok()) ++ok;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 8);
  EXPECT_EQ((*instance)->stats().compiles, 1u);
}

TEST(InstanceTest, RestartedInstanceLoadsFromDisk) {
  const std::string dir = FreshTempDir("instance_test_disk");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  cache::Fingerprint fingerprint;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    auto r = (*instance)->Compile(testing::kSoftmax, {});
    ASSERT_TRUE(r.ok());
    EXPECT_FALSE(r->cache_hit);
    fingerprint = r->program->fingerprint;
  }
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto by_fp = (*instance)->CompileByFingerprint(fingerprint);
    ASSERT_TRUE(by_fp.ok()) << by_fp.status().ToString();
    EXPECT_TRUE(by_fp->cache_hit);
    EXPECT_EQ(by_fp->source, "disk");
    EXPECT_EQ((*instance)->stats().compiles, 0u);
    EXPECT_EQ((*instance)->stats().disk_loads, 1u);
  }
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto r = (*instance)->Compile(testing::kSoftmax, {});
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->cache_hit);
    EXPECT_EQ(r->source, "disk");
  }
  std::filesystem::remove_all(dir);
}

// The cpu device's disk entries hold its object code: a restarted daemon
// loads the executable without code generation and it computes the same.
TEST(InstanceTest, CpuExecutableComesBackFromDisk) {
  const std::string dir = FreshTempDir("instance_test_cpu_disk");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  CompileSpec spec;
  spec.device = "cpu";
  std::vector<eval::RuntimeValue> args;
  std::vector<eval::RuntimeValue> first_results;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    auto r = (*instance)->Compile(testing::kSoftmax, spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->source, "compiled");
    auto lit = eval::RandomLiteral(r->program->argument_types[0], 5);
    ASSERT_TRUE(lit.ok());
    args.emplace_back(std::move(*lit));
    auto out = r->program->executable->Execute(args, {});
    ASSERT_TRUE(out.ok());
    first_results = std::move(*out);
  }
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto r = (*instance)->Compile(testing::kSoftmax, spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->source, "disk");
    EXPECT_EQ((*instance)->stats().compiles, 0u);
    auto out = r->program->executable->Execute(args, {});
    ASSERT_TRUE(out.ok());
    ASSERT_EQ(out->size(), first_results.size());
    EXPECT_EQ((*out)[0].literal(), first_results[0].literal());
  }
  std::filesystem::remove_all(dir);
}

// A disk entry whose executable this daemon cannot load (another CPU's, an
// older format's) is compiled again and replaced: the next start loads it
// instead of compiling it on every start.
TEST(InstanceTest, ADiskEntryThatCannotBeLoadedIsReplaced) {
  const std::string dir = FreshTempDir("instance_test_stale_disk");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  CompileSpec spec;
  spec.device = "cpu";
  cache::Fingerprint fingerprint;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    auto r = (*instance)->Compile(testing::kSoftmax, spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    fingerprint = r->program->fingerprint;
  }
  {
    // Keep the entry's program text, make its executable bytes garbage.
    // The payload: "JITDEXE1", the text's length (u64), the text, the
    // device's bytes.
    cache::DiskCacheOptions disk;
    disk.dir = dir;
    disk.fsync = false;
    auto cache = cache::DiskCache::Open(disk);
    ASSERT_TRUE(cache.ok()) << cache.status().ToString();
    auto entry = (*cache)->Get(fingerprint);
    ASSERT_TRUE(entry.ok() && entry->has_value());
    std::string payload = (*entry)->payload;
    ASSERT_EQ(payload.substr(0, 8), "JITDEXE1");
    uint64_t text_bytes = 0;
    std::memcpy(&text_bytes, payload.data() + 8, sizeof(text_bytes));
    ASSERT_LT(16 + text_bytes, payload.size()) << "the entry has no executable bytes";
    payload.resize(16 + text_bytes);
    payload += "not an executable";
    ASSERT_TRUE((*cache)->Put((*entry)->parts, payload).ok());
  }
  for (const char* expected : {"compiled", "disk"}) {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto r = (*instance)->Compile(testing::kSoftmax, spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->source, expected);
    EXPECT_EQ((*instance)->stats().compiles, std::string(expected) == "compiled" ? 1u : 0u);
    EXPECT_EQ((*instance)->stats().disk_loads, std::string(expected) == "disk" ? 1u : 0u);
  }
  std::filesystem::remove_all(dir);
}

// The FlatBuffers form of kSoftmax, as a client would send it.
std::string SoftmaxFlatBuffer() {
  auto module = frontend::ParseModule(testing::kSoftmax);
  EXPECT_TRUE(module.ok());
  auto bytes = frontend::ModuleToFlatBuffer(**module);
  EXPECT_TRUE(bytes.ok());
  return std::string(bytes->begin(), bytes->end());
}

TEST(InstanceTest, FlatBufferModulesCompileAndCacheLikeText) {
  const std::string dir = FreshTempDir("instance_test_fb");
  InstanceOptions options;
  options.disk_cache_dir = dir;
  options.disk_cache_fsync = false;
  const std::string fb = SoftmaxFlatBuffer();
  CompileSpec spec;
  spec.flatbuffer_module = true;
  cache::Fingerprint fingerprint;
  {
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    auto r = (*instance)->Compile(fb, spec);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_FALSE(r->cache_hit);
    EXPECT_EQ(r->program->argument_types[0].ToString(), "tensor<2x4xf32>");
    fingerprint = r->program->fingerprint;
    auto again = (*instance)->Compile(fb, spec);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->source, "memory");
    // The same program as text is the same cache entry (both key on the
    // canonical form), and the bytes read as text are refused.
    auto text = (*instance)->Compile(testing::kSoftmax, {});
    ASSERT_TRUE(text.ok());
    EXPECT_TRUE(text->program->fingerprint == fingerprint);
    EXPECT_EQ(text->source, "memory");
    EXPECT_FALSE((*instance)->Compile(fb, {}).ok());
    auto bad = (*instance)->Compile(std::string(testing::kSoftmax), spec);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("flatbuffer module"), std::string::npos);
  }
  {
    // A restarted daemon rebuilds it from disk by fingerprint alone.
    auto instance = Instance::Create(options);
    ASSERT_TRUE(instance.ok());
    auto by_fp = (*instance)->CompileByFingerprint(fingerprint);
    ASSERT_TRUE(by_fp.ok()) << by_fp.status().ToString();
    EXPECT_EQ(by_fp->source, "disk");
  }
  std::filesystem::remove_all(dir);
}

TEST(InstanceTest, FingerprintMissIsNotFound) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  auto r = (*instance)->CompileByFingerprint(cache::Fingerprint(1, 2));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

TEST(InstanceTest, StatsJsonHasCounters) {
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  ASSERT_TRUE((*instance)->Compile(testing::kSoftmax, {}).ok());
  const std::string json = (*instance)->StatsJson(true);
  EXPECT_NE(json.find("\"compiles\":1"), std::string::npos) << json;
  EXPECT_NE(json.find("\"keys\":[{\"fingerprint\":"), std::string::npos) << json;
}

}  // namespace
}  // namespace jitd::daemon
