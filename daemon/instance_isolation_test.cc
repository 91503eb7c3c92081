// What one uid can learn of another through the Instance (issue 13, item 6):
// the compile cache is scoped by uid unless shared, a fingerprint finds only
// programs its sender's uid sent, and stats show a uid its own.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "daemon/instance.h"
#include "daemon/test_dirs.h"
#include "daemon/test_programs.h"

namespace jitd::daemon {
namespace {

using testing::FreshTempDir;

constexpr int64_t kAlice = 1001;
constexpr int64_t kBob = 1002;
constexpr int64_t kCarol = 1003;

// A program with a "secret" constant (the weights a client must not read).
constexpr char kSecret[] = R"(func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense<[3.0, 1.0, 4.0, 1.5]> : tensor<4xf32>
  %0 = stablehlo.multiply %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

CompileSpec As(int64_t uid) {
  CompileSpec spec;
  spec.uid = uid;
  return spec;
}

std::unique_ptr<Instance> Make(bool share, const std::string& disk_dir = "") {
  InstanceOptions options;
  options.share_cache_across_uids = share;
  options.disk_cache_dir = disk_dir;
  options.disk_cache_fsync = false;
  auto instance = Instance::Create(options);
  EXPECT_TRUE(instance.ok()) << instance.status().ToString();
  return instance.ok() ? std::move(instance).value() : nullptr;
}

// A fingerprint-only compile that must fail exactly like an unknown one.
void ExpectHidden(Instance& instance, const cache::Fingerprint& fingerprint, int64_t uid) {
  auto hidden = instance.CompileByFingerprint(fingerprint, uid);
  ASSERT_FALSE(hidden.ok());
  EXPECT_EQ(hidden.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(instance.CompileByFingerprintFromMemory(fingerprint, uid).has_value());
  const cache::Fingerprint unknown(fingerprint.high() ^ 1, fingerprint.low());
  auto missing = instance.CompileByFingerprint(unknown, uid);
  ASSERT_FALSE(missing.ok());
  // The same text but for the fingerprint itself.
  std::string a = hidden.status().message(), b = missing.status().message();
  a.replace(a.find(fingerprint.ToHex()), 32, "F");
  b.replace(b.find(unknown.ToHex()), 32, "F");
  EXPECT_EQ(a, b);
}

TEST(InstanceIsolationTest, UnsharedCacheKeepsEachUidsProgramsItsOwn) {
  auto instance = Make(/*share=*/false);
  auto alice = instance->Compile(kSecret, As(kAlice));
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  const cache::Fingerprint fingerprint = alice->program->fingerprint;

  // Bob cannot compile by Alice's fingerprint, in memory or otherwise.
  ExpectHidden(*instance, fingerprint, kBob);

  // Bob sending the same text compiles his own copy: the miss tells him
  // nothing about Alice.
  auto bob = instance->Compile(kSecret, As(kBob));
  ASSERT_TRUE(bob.ok());
  EXPECT_FALSE(bob->cache_hit);
  EXPECT_EQ(bob->source, "compiled");
  EXPECT_NE(bob->program->fingerprint, fingerprint);
  EXPECT_FALSE(instance->CompileFromMemory(kSecret, As(kCarol)).has_value());
  // ...and still not Alice's entry by its fingerprint.
  ExpectHidden(*instance, fingerprint, kBob);

  // Alice herself, the daemon's own uid, root and in-process callers may.
  for (int64_t uid : {kAlice, static_cast<int64_t>(::geteuid()), int64_t{0}, int64_t{-1}}) {
    auto again = instance->CompileByFingerprint(fingerprint, uid);
    ASSERT_TRUE(again.ok()) << uid << ": " << again.status().ToString();
    EXPECT_EQ(again->program, alice->program);
  }
  EXPECT_TRUE(instance->CompileFromMemory(kSecret, As(kAlice)).has_value());
}

TEST(InstanceIsolationTest, UnsharedDiskEntriesRememberTheirUid) {
  const std::string dir = FreshTempDir("isolation_test_disk");
  cache::Fingerprint fingerprint;
  {
    auto instance = Make(false, dir);
    auto alice = instance->Compile(kSecret, As(kAlice));
    ASSERT_TRUE(alice.ok());
    fingerprint = alice->program->fingerprint;
  }
  auto restarted = Make(false, dir);
  ExpectHidden(*restarted, fingerprint, kBob);
  auto alice = restarted->CompileByFingerprint(fingerprint, kAlice);
  ASSERT_TRUE(alice.ok()) << alice.status().ToString();
  EXPECT_EQ(alice->source, "disk");
  // Loaded from disk, the entry is Alice's and still not Bob's.
  ExpectHidden(*restarted, fingerprint, kBob);
  // Bob's miss on the same text is not explained against Alice's entry.
  auto bob = restarted->Compile(kSecret, As(kBob));
  ASSERT_TRUE(bob.ok());
  EXPECT_FALSE(bob->cache_hit);
  EXPECT_TRUE(bob->explain.empty()) << bob->explain;
  std::filesystem::remove_all(dir);
}

TEST(InstanceIsolationTest, SharedCacheSharesHitsButNotFingerprints) {
  const std::string dir = FreshTempDir("isolation_test_shared");
  cache::Fingerprint fingerprint;
  {
    auto instance = Make(/*share=*/true, dir);
    auto alice = instance->Compile(kSecret, As(kAlice));
    ASSERT_TRUE(alice.ok());
    fingerprint = alice->program->fingerprint;
    // The operator shares compiled programs: Bob's text hits Alice's entry.
    auto bob = instance->Compile(kSecret, As(kBob));
    ASSERT_TRUE(bob.ok());
    EXPECT_TRUE(bob->cache_hit);
    EXPECT_EQ(bob->program, alice->program);
    // A fingerprint still finds only programs the uid sent the text of.
    EXPECT_TRUE(instance->CompileByFingerprint(fingerprint, kBob).ok());
    ExpectHidden(*instance, fingerprint, kCarol);
  }
  // After a restart nobody knows who sent a shared entry's text: only the
  // daemon's uid (and root) find it by fingerprint; others send the text
  // again, which loads it from disk.
  auto restarted = Make(true, dir);
  ExpectHidden(*restarted, fingerprint, kAlice);
  EXPECT_TRUE(restarted->CompileByFingerprint(fingerprint, ::geteuid()).ok());
  auto alice = restarted->Compile(kSecret, As(kAlice));
  ASSERT_TRUE(alice.ok());
  EXPECT_TRUE(alice->cache_hit);
  EXPECT_TRUE(restarted->CompileByFingerprint(fingerprint, kAlice).ok());
  std::filesystem::remove_all(dir);
}

TEST(InstanceIsolationTest, StatsShowAUidItsOwn) {
  auto instance = Make(false);
  auto a = instance->RegisterClient(1);
  a->uid = kAlice;
  a->pid = 111;
  a->SetName("alice-client");
  auto b = instance->RegisterClient(2);
  b->uid = kBob;
  b->pid = 222;
  b->SetName("bob-client");
  auto alice = instance->Compile(kSecret, As(kAlice));
  auto bob = instance->Compile(testing::kSoftmax, As(kBob));
  ASSERT_TRUE(alice.ok() && bob.ok());

  StatsViewer viewer;
  viewer.uid = kAlice;
  viewer.own_keys = {alice->program->fingerprint};
  const std::string mine = instance->StatsJson(true, viewer);
  EXPECT_NE(mine.find("\"view\":\"uid\""), std::string::npos) << mine;
  EXPECT_NE(mine.find("alice-client"), std::string::npos) << mine;
  EXPECT_NE(mine.find(alice->program->fingerprint.ToHex()), std::string::npos) << mine;
  for (const std::string& hidden :
       {std::string("bob-client"), std::string("\"pid\":222"), std::string("\"compiles\":2"),
        bob->program->fingerprint.ToHex(), std::string("memory_cache")}) {
    EXPECT_EQ(mine.find(hidden), std::string::npos) << hidden << " in " << mine;
  }
  // The daemon's uid and root see everything.
  for (int64_t uid : {static_cast<int64_t>(::geteuid()), int64_t{0}}) {
    StatsViewer admin;
    admin.uid = uid;
    const std::string all = instance->StatsJson(true, admin);
    EXPECT_NE(all.find("\"view\":\"all\""), std::string::npos);
    EXPECT_NE(all.find("bob-client"), std::string::npos);
    EXPECT_NE(all.find("alice-client"), std::string::npos);
    EXPECT_NE(all.find(bob->program->fingerprint.ToHex()), std::string::npos);
  }
  instance->UnregisterClient(1);
  instance->UnregisterClient(2);
}

}  // namespace
}  // namespace jitd::daemon
