#include "jit/cache/disk_cache.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

namespace jitd::cache {
namespace {

namespace fs = std::filesystem;

CacheKeyParts Parts(std::string program, std::string device = "interpreter") {
  return MakeKeyParts(program, "tensor<4xf32>", "", std::move(device), "build-1",
                      HostCpuFeatures());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Sleeps past the file system's timestamp granularity (coarse clocks tick
// every few milliseconds).
void Tick() { std::this_thread::sleep_for(std::chrono::milliseconds(30)); }

class DiskCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "jitd_cache_test_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/a/b/jitd";
  }
  void TearDown() override { fs::remove_all(root_); }

  std::unique_ptr<DiskCache> OpenCache(uint64_t max_bytes = 1 << 20, bool fsync = false) {
    auto c = DiskCache::Open({dir_, max_bytes, fsync});
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Puts an entry, corrupts its file with `mutate`, and checks the read is a
  // miss that deletes the file and counts it.
  template <typename Mutate>
  void ExpectCorruptionDetected(Mutate mutate) {
    auto cache = OpenCache();
    CacheKeyParts parts = Parts("prog");
    auto fp = cache->Put(parts, std::string(1000, 'p'));
    ASSERT_TRUE(fp.ok()) << fp.status().ToString();
    const std::string path = cache->PathFor(*fp);
    std::string bytes = ReadFile(path);
    mutate(bytes);
    WriteFile(path, bytes);
    auto got = cache->Get(*fp);
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_FALSE(got->has_value());
    EXPECT_FALSE(fs::exists(path));
    EXPECT_EQ(cache->stats().corrupt_dropped, 1u);
    EXPECT_EQ(cache->stats().misses, 1u);
  }

  std::string root_;
  std::string dir_;
};

TEST_F(DiskCacheTest, OpenCreatesPrivateDirectory) {
  auto cache = OpenCache();
  ASSERT_NE(cache, nullptr);
  struct stat st;
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(DiskCache::Open({""}).status().code(), StatusCode::kInvalidArgument);
  WriteFile(root_ + "/file", "x");
  EXPECT_FALSE(DiskCache::Open({root_ + "/file"}).ok());
}

TEST_F(DiskCacheTest, DefaultDirFollowsXdg) {
  const char* old_xdg = std::getenv("XDG_CACHE_HOME");
  std::string saved = old_xdg ? old_xdg : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(*DefaultDiskCacheDir(), "/x/cache/jitd");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // ignored, as XDG says
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(*DefaultDiskCacheDir(), "/home/u/.cache/jitd");
  if (old_xdg) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1); else ::unsetenv("XDG_CACHE_HOME");
}

TEST_F(DiskCacheTest, RoundTrip) {
  auto cache = OpenCache(1 << 20, /*fsync=*/true);
  CacheKeyParts parts = Parts("module {}");
  std::string payload("bin\0ary\xff", 8);
  auto fp = cache->Put(parts, payload);
  ASSERT_TRUE(fp.ok()) << fp.status().ToString();
  EXPECT_EQ(*fp, Fingerprint::Of(parts));
  EXPECT_TRUE(fs::exists(dir_ + "/" + fp->ToHex()));

  auto by_key = cache->Get(*fp);
  ASSERT_TRUE(by_key.ok());
  ASSERT_TRUE(by_key->has_value());
  EXPECT_EQ((*by_key)->payload, payload);
  EXPECT_EQ((*by_key)->parts, parts);

  auto by_parts = cache->Get(parts);
  ASSERT_TRUE(by_parts.ok());
  ASSERT_TRUE(by_parts->has_value());
  EXPECT_EQ((*by_parts)->payload, payload);

  // Empty payloads work; a second cache object on the dir sees the entries.
  ASSERT_TRUE(cache->Put(Parts("empty"), "").ok());
  auto other = OpenCache();
  auto empty = other->Get(Parts("empty"));
  ASSERT_TRUE(empty.ok() && empty->has_value());
  EXPECT_EQ((*empty)->payload, "");

  auto miss = cache->Get(Parts("absent"));
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());
  EXPECT_EQ(cache->stats().hits, 2u);
  EXPECT_EQ(cache->stats().misses, 1u);
  EXPECT_EQ(cache->stats().writes, 2u);
  EXPECT_TRUE(cache->Erase(*fp).ok());
  EXPECT_TRUE(cache->Erase(*fp).ok());
  EXPECT_FALSE(cache->Get(*fp)->has_value());
}

TEST_F(DiskCacheTest, FlippedPayloadByteIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b[b.size() - 10] ^= 0x01; });
}
TEST_F(DiskCacheTest, FlippedKeyByteIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b[48] ^= 0x20; });
}
TEST_F(DiskCacheTest, FlippedLengthIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b[16] ^= 0x01; });
}
TEST_F(DiskCacheTest, HugeClaimedLengthIsAMiss) {
  // Claims an enormous key section and payload: rejected without allocating.
  ExpectCorruptionDetected([](std::string& b) {
    for (int i = 12; i < 24; ++i) b[i] = '\xff';
  });
}
TEST_F(DiskCacheTest, TruncatedFileIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b.resize(b.size() - 1); });
}
TEST_F(DiskCacheTest, TruncatedToHeaderIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b.resize(20); });
}
TEST_F(DiskCacheTest, ExtraBytesAreAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b += "tail"; });
}
TEST_F(DiskCacheTest, WrongVersionIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b[8] = 2; });
}
TEST_F(DiskCacheTest, GarbageFileIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b = std::string(5000, 'g'); });
}
TEST_F(DiskCacheTest, EmptyFileIsAMiss) {
  ExpectCorruptionDetected([](std::string& b) { b.clear(); });
}

TEST_F(DiskCacheTest, MisplacedEntryIsAMiss) {
  auto cache = OpenCache();
  auto a = cache->Put(Parts("a"), "payload a");
  auto b = cache->Put(Parts("b"), "payload b");
  ASSERT_TRUE(a.ok() && b.ok());
  // b's valid file under a's name must not be served for a.
  fs::copy_file(cache->PathFor(*b), cache->PathFor(*a), fs::copy_options::overwrite_existing);
  auto got = cache->Get(*a);
  ASSERT_TRUE(got.ok());
  EXPECT_FALSE(got->has_value());
  EXPECT_EQ(cache->stats().corrupt_dropped, 1u);
  EXPECT_TRUE(cache->Get(*b)->has_value());
}

TEST_F(DiskCacheTest, ListShowsEntriesAndDropsBadHeaders) {
  auto cache = OpenCache();
  auto a = cache->Put(Parts("a"), std::string(100, 'a'));
  Tick();
  auto b = cache->Put(Parts("b"), std::string(200, 'b'));
  ASSERT_TRUE(a.ok() && b.ok());
  WriteFile(dir_ + "/" + std::string(32, 'c'), "garbage");  // bad entry
  WriteFile(dir_ + "/README", "not an entry");               // ignored
  auto list = cache->List();
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].fingerprint, *a);  // least recently used first
  EXPECT_EQ((*list)[1].fingerprint, *b);
  EXPECT_EQ((*list)[0].parts, Parts("a"));
  EXPECT_EQ((*list)[1].payload_bytes, 200u);
  EXPECT_GT((*list)[1].file_bytes, 200u);
  EXPECT_EQ(cache->stats().corrupt_dropped, 1u);
  EXPECT_FALSE(fs::exists(dir_ + "/" + std::string(32, 'c')));
  EXPECT_TRUE(fs::exists(dir_ + "/README"));
}

TEST_F(DiskCacheTest, EvictsLeastRecentlyUsed) {
  // Each entry is a bit over 1000 bytes; room for three.
  auto probe = OpenCache();
  auto p = probe->Put(Parts("probe"), std::string(1000, 'x'));
  ASSERT_TRUE(p.ok());
  const uint64_t entry_bytes = fs::file_size(probe->PathFor(*p));
  ASSERT_TRUE(probe->Erase(*p).ok());

  auto cache = OpenCache(3 * entry_bytes + 10);
  auto a = cache->Put(Parts("aaaaa"), std::string(1000, 'a'));
  Tick();
  auto b = cache->Put(Parts("bbbbb"), std::string(1000, 'b'));
  Tick();
  auto c = cache->Put(Parts("ccccc"), std::string(1000, 'c'));
  Tick();
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_TRUE(cache->Get(*a)->has_value());  // a becomes the most recent
  Tick();
  auto d = cache->Put(Parts("ddddd"), std::string(1000, 'd'));  // evicts b
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(fs::exists(cache->PathFor(*b)));
  EXPECT_TRUE(fs::exists(cache->PathFor(*a)));
  EXPECT_TRUE(fs::exists(cache->PathFor(*c)));
  EXPECT_TRUE(fs::exists(cache->PathFor(*d)));
  EXPECT_EQ(cache->stats().evictions, 1u);
  Tick();
  auto e = cache->Put(Parts("eeeee"), std::string(1000, 'e'));  // evicts c
  ASSERT_TRUE(e.ok());
  EXPECT_FALSE(fs::exists(cache->PathFor(*c)));
  EXPECT_TRUE(fs::exists(cache->PathFor(*a)));
}

TEST_F(DiskCacheTest, OversizeEntryIsRejected) {
  auto cache = OpenCache(500);
  auto r = cache->Put(Parts("big"), std::string(1000, 'x'));
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(cache->stats().rejected, 1u);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(DiskCacheTest, NearestEntryExplainsTheMiss) {
  auto cache = OpenCache();
  ASSERT_TRUE(cache->Put(Parts("other program", "cpu"), "x").ok());
  ASSERT_TRUE(cache->Put(Parts("my program", "interpreter"), "y").ok());
  CacheKeyParts want = Parts("my program", "cpu");
  auto nearest = cache->FindNearest(want);
  ASSERT_TRUE(nearest.ok());
  ASSERT_TRUE(nearest->has_value());
  // Same program hash wins over more equal components elsewhere.
  EXPECT_EQ((*nearest)->parts, Parts("my program", "interpreter"));
  std::string why = Explain(want, (*nearest)->parts);
  EXPECT_EQ(why, "differs in device ('cpu' vs cached 'interpreter')");

  auto none = OpenCache();
  ASSERT_TRUE(none->Erase(Fingerprint::Of(Parts("other program", "cpu"))).ok());
  ASSERT_TRUE(none->Erase(Fingerprint::Of(Parts("my program", "interpreter"))).ok());
  auto empty = none->FindNearest(want);
  ASSERT_TRUE(empty.ok());
  EXPECT_FALSE(empty->has_value());
}

// Payload of writer `w`: `w`'s letter, a writer-specific length. A torn file
// would mix writers and fail the checksum (counted as corrupt).
std::string WriterPayload(int w) { return std::string(20000 + 7919 * w, static_cast<char>('A' + w)); }
bool IsWriterPayload(const std::string& p) {
  if (p.empty()) return false;
  int w = p[0] - 'A';
  return w >= 0 && w < 26 && p == WriterPayload(w);
}

TEST_F(DiskCacheTest, ConcurrentThreadWritersNeverTear) {
  auto cache = OpenCache(64 << 20);
  const CacheKeyParts parts = Parts("contended");
  std::atomic<bool> done{false};
  std::atomic<int> bad_reads{0}, good_reads{0};
  std::thread reader([&] {
    while (!done.load()) {
      auto r = cache->Get(parts);
      if (!r.ok()) { ++bad_reads; continue; }
      if (r->has_value()) (IsWriterPayload((*r)->payload) ? good_reads : bad_reads)++;
    }
  });
  std::vector<std::thread> writers;
  for (int w = 0; w < 4; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < 30; ++i) ASSERT_TRUE(cache->Put(parts, WriterPayload(w)).ok());
    });
  }
  for (auto& t : writers) t.join();
  done = true;
  reader.join();
  EXPECT_EQ(bad_reads.load(), 0);
  EXPECT_EQ(cache->stats().corrupt_dropped, 0u);
  auto last = cache->Get(parts);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_TRUE(IsWriterPayload((*last)->payload));
  // No temp files left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    ++files;
    EXPECT_NE(e.path().filename().string()[0], '.') << e.path();
  }
  EXPECT_EQ(files, 1);
}

TEST_F(DiskCacheTest, ConcurrentProcessWritersNeverTear) {
  ASSERT_NE(OpenCache(), nullptr);  // creates the directory
  const CacheKeyParts parts = Parts("contended across processes");
  constexpr int kProcesses = 4;
  std::vector<pid_t> children;
  for (int w = 0; w < kProcesses; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      auto c = DiskCache::Open({dir_, 64 << 20, false});
      int rc = c.ok() ? 0 : 2;
      for (int i = 0; i < 40 && rc == 0; ++i) {
        if (!(*c)->Put(parts, WriterPayload(w)).ok()) rc = 3;
        auto r = (*c)->Get(parts);
        if (!r.ok() || !r->has_value() || !IsWriterPayload((*r)->payload)) rc = 4;
      }
      if (rc == 0 && (*c)->stats().corrupt_dropped != 0) rc = 5;
      ::_exit(rc);
    }
    children.push_back(pid);
  }
  // The parent reads while the children write.
  auto cache = OpenCache(64 << 20);
  int bad_reads = 0, good_reads = 0;
  int running = kProcesses;
  std::vector<int> statuses;
  while (running > 0) {
    auto r = cache->Get(parts);
    if (!r.ok()) ++bad_reads;
    else if (r->has_value()) (IsWriterPayload((*r)->payload) ? good_reads : bad_reads)++;
    int status = 0;
    pid_t done = ::waitpid(-1, &status, WNOHANG);
    if (done > 0) {
      --running;
      statuses.push_back(status);
    }
  }
  for (int status : statuses) {
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(bad_reads, 0);
  EXPECT_EQ(cache->stats().corrupt_dropped, 0u);
  auto last = cache->Get(parts);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_TRUE(IsWriterPayload((*last)->payload));
}

}  // namespace
}  // namespace jitd::cache
