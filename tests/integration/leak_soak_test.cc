// Issue 13, item 4 through a real daemon: `jitd serve` with a 1 MiB memory
// cache, a client compiling 3,000 distinct small cpu programs and releasing
// each; the daemon's resident memory (VmRSS) after all of them stays within
// a small slack of what it was after the first 1,000 (it grew ~36 KB per
// compile when evicted executables kept their JIT code).
//
// Bounded: a fixed count, every wait with a deadline; the daemon is stopped
// (SIGTERM, then SIGKILL) at the end.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "libclient/client.h"

namespace jitd {
namespace {

using namespace std::chrono_literals;
using client::Client;

// VmRSS of `pid` in bytes, or -1.
int64_t ResidentBytes(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return -1;
}

// A tiny program, distinct for each `i`: one fused cpu kernel.
std::string Program(int i) {
  const std::string c = std::to_string(i) + ".0";
  return "func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
         "  %c = stablehlo.constant dense<" + c + "> : tensor<4xf32>\n"
         "  %0 = stablehlo.multiply %a, %c : tensor<4xf32>\n"
         "  %1 = stablehlo.add %0, %c : tensor<4xf32>\n"
         "  return %1 : tensor<4xf32>\n"
         "}\n";
}

class LeakSoakTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/jitd_leak_soak_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    socket_ = dir_ + "/run/jitd.sock";
  }
  void TearDown() override {
    if (daemon_ > 0) {
      ::kill(daemon_, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + 10s;
      int status;
      while (::waitpid(daemon_, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
          ::kill(daemon_, SIGKILL);
          ::waitpid(daemon_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(10ms);
      }
    }
    std::filesystem::remove_all(dir_);
  }

  void StartDaemon(const std::vector<std::string>& extra) {
    daemon_ = ::fork();
    ASSERT_GE(daemon_, 0);
    if (daemon_ == 0) {
      // JITD_SOAK_DAEMON_BIN: another build's jitd, to check this test
      // against it (e.g. one from before the fix: the test must fail).
      const char* env = std::getenv("JITD_SOAK_DAEMON_BIN");
      std::string binary = env ? env : JITD_BIN;
      std::vector<std::string> args = {binary, "serve", "--socket", socket_, "--log-level", "error"};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      ::_exit(127);
    }
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
      if (Client::Connect(socket_).ok()) return;
      int status;
      ASSERT_EQ(::waitpid(daemon_, &status, WNOHANG), 0) << "jitd serve exited at start";
      std::this_thread::sleep_for(20ms);
    }
    FAIL() << "jitd serve did not come up on " << socket_;
  }

  std::string dir_, socket_;
  pid_t daemon_ = -1;
};

TEST_F(LeakSoakTest, DaemonMemoryPlateausUnderDistinctCpuCompiles) {
  StartDaemon({"--no-disk-cache", "--memory-cache-bytes", "1048576", "--default-device", "cpu"});
  client::ClientOptions options;
  options.timeout = 30s;
  auto client = Client::Connect(socket_, options);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  constexpr int kWarmup = 1000, kTotal = 3000;
  constexpr int64_t kSlackBytes = int64_t{8} << 20;
  const auto start = std::chrono::steady_clock::now();
  int64_t rss_warm = 0;
  for (int i = 0; i < kTotal; ++i) {
    auto exe = (*client)->Compile(Program(i));
    ASSERT_TRUE(exe.ok()) << "program " << i << ": " << exe.status().ToString();
    ASSERT_FALSE(exe->cache_hit);
    ASSERT_TRUE((*client)->Release(exe->handle).ok());
    if (i + 1 == kWarmup) rss_warm = ResidentBytes(daemon_);
  }
  const int64_t rss_end = ResidentBytes(daemon_);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("daemon: %d cpu compiles in %.1f s; VmRSS %.1f MB after %d, %.1f MB after all (%+.1f KB per "
              "compile)\n",
              kTotal, seconds, rss_warm / 1e6, kWarmup, rss_end / 1e6,
              (rss_end - rss_warm) / 1e3 / (kTotal - kWarmup));
  ASSERT_GT(rss_warm, 0);
  EXPECT_LT(rss_end - rss_warm, kSlackBytes) << "the daemon's memory grew with compiles of evicted programs";
}

}  // namespace
}  // namespace jitd
