// The daemon (build/bin/jitd serve) and clients as real processes.
//
// Every case starts its own daemon on a socket in a fresh temp directory
// (tests/integration/daemon_process.h), stopped (SIGTERM, then SIGKILL after
// a deadline) when the case ends; client processes are forked and always
// reaped with a deadline. No wait in this file is unbounded.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/process.h"
#include "daemon/test_programs.h"
#include "devices/device.h"
#include "jit/frontend/parser.h"
#include "libclient/client.h"
#include "tests/integration/daemon_process.h"

namespace jitd {
namespace {

using namespace std::chrono_literals;
using client::Client;
using daemon::testing::kSoftmax;
using daemon::testing::kSoftmaxInput;
using testing::DaemonProcess;
using testing::ExitCode;
using testing::Spawn;
using testing::StatNumber;

class IntegrationTest : public ::testing::Test {
 protected:
  // Starts `jitd serve` (with `extra` flags and 8 MiB segments) and waits
  // (up to 10 s) until it accepts clients. After StopDaemon it starts again
  // on the same socket and cache directory.
  void StartDaemon(bool disk_cache = true, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> flags = {"--segment-bytes", "8388608"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    ASSERT_TRUE(daemon_.Start(flags, disk_cache)) << "jitd serve did not come up on " << socket();
  }
  // SIGTERM, and the daemon's wait status (-1 when it had to be killed).
  int StopDaemon() { return daemon_.Stop(); }
  void KillDaemon() { daemon_.Kill(); }

  const std::string& dir() const { return daemon_.dir(); }
  const std::string& socket() const { return daemon_.socket(); }

  std::unique_ptr<Client> Connect() {
    client::ClientOptions options;
    options.timeout = 30s;
    auto c = Client::Connect(socket(), options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Stopped and its directory removed when the test ends.
  DaemonProcess daemon_{JITD_BIN};
};

// Forks a client process that runs `body` as `uid` (and gid), like Spawn.
pid_t SpawnAs(uid_t uid, const std::function<int()>& body) {
  return Spawn([&] {
    if (::setgroups(0, nullptr) != 0 || ::setgid(uid) != 0 || ::setuid(uid) != 0) return 99;
    return body();
  });
}

// Runs softmax through `c` and returns the 8 result floats.
std::vector<float> RunSoftmax(Client& c) {
  auto exe = c.Compile(kSoftmax);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return {};
  auto arg = c.AllocateBuffer(exe->arguments.at(0));
  auto out = c.AllocateBuffer(exe->results.at(0));
  EXPECT_TRUE(arg.ok() && out.ok());
  if (!arg.ok() || !out.ok()) return {};
  std::memcpy(arg->data.data(), kSoftmaxInput, sizeof(kSoftmaxInput));
  const uint64_t args[] = {arg->handle};
  const uint64_t outs[] = {out->handle};
  auto timing = c.Execute(exe->handle, args, outs);
  EXPECT_TRUE(timing.ok()) << timing.status().ToString();
  if (!timing.ok()) return {};
  std::vector<float> result(8);
  std::memcpy(result.data(), out->data.data(), 32);
  return result;
}

TEST_F(IntegrationTest, ExecuteMatchesInProcessInterpreter) {
  StartDaemon();
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  std::vector<float> got = RunSoftmax(*c);
  ASSERT_EQ(got.size(), 8u);

  auto module = frontend::ParseModule(kSoftmax);
  ASSERT_TRUE(module.ok());
  auto device = devices::CreateDevice("interpreter");
  ASSERT_TRUE(device.ok());
  auto exe = (*device)->Compile(std::shared_ptr<const ir::Module>(std::move(module).value()));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<uint8_t> bytes(32);
  std::memcpy(bytes.data(), kSoftmaxInput, 32);
  auto literal = ir::Literal::FromBytes(ir::Type::Tensor(ir::DType::kF32, {2, 4}), bytes);
  ASSERT_TRUE(literal.ok());
  std::vector<eval::RuntimeValue> args;
  args.emplace_back(std::move(literal).value());
  auto want = (*exe)->Execute(args, {});
  ASSERT_TRUE(want.ok()) << want.status().ToString();
  ASSERT_EQ(want->at(0).literal().bytes().size(), 32u);
  EXPECT_EQ(std::memcmp(want->at(0).literal().bytes().data(), got.data(), 32), 0)
      << "the daemon's result differs from the in-process interpreter's";
  EXPECT_EQ(ExitCode(StopDaemon()), 0);
  EXPECT_FALSE(std::filesystem::exists(socket())) << "socket file left behind";
}

TEST_F(IntegrationTest, AnotherClientsHandleIsNotFound) {
  StartDaemon();
  int to_parent[2], to_child[2];
  ASSERT_EQ(::pipe(to_parent), 0);
  ASSERT_EQ(::pipe(to_child), 0);
  pid_t a = Spawn([&] {
    auto c = Client::Connect(socket());
    if (!c.ok()) return 1;
    auto exe = (*c)->Compile(kSoftmax);
    if (!exe.ok()) return 2;
    uint64_t handle = exe->handle;
    if (::write(to_parent[1], &handle, 8) != 8) return 3;
    char byte;
    (void)::read(to_child[0], &byte, 1);  // stay connected until told
    return 0;
  });
  uint64_t handle = 0;
  pollfd p{to_parent[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  ASSERT_EQ(::read(to_parent[0], &handle, 8), 8);
  auto b = Connect();
  ASSERT_NE(b, nullptr);
  auto r = b->Execute(handle, {}, {});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_EQ(b->Release(handle).code(), StatusCode::kNotFound);
  ASSERT_EQ(::write(to_child[1], "x", 1), 1);
  EXPECT_EQ(ExitCode(WaitForExit(a, 10s)), 0);
  for (int fd : {to_parent[0], to_parent[1], to_child[0], to_child[1]}) ::close(fd);
}

TEST_F(IntegrationTest, KilledClientDoesNotHurtOthers) {
  StartDaemon();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t victim = Spawn([&] {
    auto c = Client::Connect(socket());
    if (!c.ok()) return 1;
    if (RunSoftmax(**c).size() != 8) return 2;
    (void)(*c)->AllocateBuffer({wire::ElementType_F32, {1024}});
    (void)::write(ready[1], "r", 1);
    for (;;) (void)(*c)->Stats();  // busy with requests until killed
  });
  pollfd p{ready[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  std::this_thread::sleep_for(20ms);
  ::kill(victim, SIGKILL);
  WaitForExit(victim, 10s);
  ::close(ready[0]);
  ::close(ready[1]);

  auto c = Connect();
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(RunSoftmax(*c).size(), 8u);
  // The victim's session is torn down (only ours is left).
  long active = -1;
  for (int i = 0; i < 100; ++i) {
    auto stats = c->Stats();
    ASSERT_TRUE(stats.ok());
    active = StatNumber(*stats, "sessions_active");
    if (active == 1) break;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(active, 1);
}

TEST_F(IntegrationTest, DeadDaemonIsUnavailable) {
  StartDaemon();
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->Stats().ok());
  KillDaemon();
  const auto start = std::chrono::steady_clock::now();
  auto r = c->Stats();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  EXPECT_EQ(c->Compile(kSoftmax).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(Client::Connect(socket()).status().code(), StatusCode::kUnavailable);
}

TEST_F(IntegrationTest, RestartWithSameCacheDirHitsDisk) {
  StartDaemon();
  client::Fingerprint fingerprint{};
  {
    auto c = Connect();
    ASSERT_NE(c, nullptr);
    auto exe = c->Compile(kSoftmax);
    ASSERT_TRUE(exe.ok());
    EXPECT_FALSE(exe->cache_hit);
    fingerprint = exe->fingerprint;
  }
  EXPECT_EQ(ExitCode(StopDaemon()), 0);
  StartDaemon();  // a fresh process: empty memory cache
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto by_fp = c->CompileByFingerprint(fingerprint);
  ASSERT_TRUE(by_fp.ok()) << by_fp.status().ToString();
  EXPECT_TRUE(by_fp->cache_hit);
  auto stats = c->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(StatNumber(*stats, "compiles"), 0) << *stats;
  EXPECT_EQ(StatNumber(*stats, "disk_loads"), 1) << *stats;
  // Executing the disk-loaded program works like the original.
  std::vector<float> got = RunSoftmax(*c);
  ASSERT_EQ(got.size(), 8u);
  EXPECT_NEAR(got[3], 0.6439143f, 1e-5);
}

TEST_F(IntegrationTest, EightProcessesCompileOnce) {
  StartDaemon(/*disk_cache=*/false);
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    children.push_back(Spawn([&] {
      auto c = Client::Connect(socket());
      if (!c.ok()) return 1;
      char byte;
      if (::read(go[0], &byte, 1) != 1) return 2;  // all start together
      return (*c)->Compile(kSoftmax).ok() ? 0 : 3;
    }));
  }
  std::this_thread::sleep_for(100ms);  // let them connect
  ASSERT_EQ(::write(go[1], "xxxxxxxx", 8), 8);
  for (pid_t pid : children) EXPECT_EQ(ExitCode(WaitForExit(pid, 20s)), 0);
  ::close(go[0]);
  ::close(go[1]);
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  auto stats = c->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(StatNumber(*stats, "compiles"), 1) << *stats;
}

TEST_F(IntegrationTest, MalformedMessageGetsInvalidArgument) {
  StartDaemon();
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  std::vector<uint8_t> garbage = {'J', 'T', 'D', '1', 0xFF, 0xFF, 0xFF, 0x7F, 1, 2, 3, 4};
  Status s = c->SendRawForTesting(garbage);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.ToString();
  std::vector<uint8_t> empty = {};
  EXPECT_EQ(c->SendRawForTesting(empty).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(RunSoftmax(*c).size(), 8u);  // the session keeps working
}

TEST_F(IntegrationTest, SecondDaemonOnSameSocketRefuses) {
  StartDaemon();
  pid_t second = ::fork();
  if (second == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDERR_FILENO);
    ::execl(JITD_BIN, JITD_BIN, "serve", "--socket", socket().c_str(), "--no-disk-cache",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  EXPECT_EQ(ExitCode(WaitForExit(second, 10s)), 2);
  auto c = Connect();  // the first daemon still serves
  ASSERT_NE(c, nullptr);
}

// Issue 13, item 6, across users (needs root to run clients as uids 65534
// and 4242): one uid cannot compile another's program by its fingerprint
// (before or after a restart), its compile of the same text is a miss, and
// its stats show neither the other's session nor its program; the daemon's
// own uid (root here) sees and finds everything.
constexpr char kSecretProgram[] = R"(func.func public @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense<[3.0, 1.0, 4.0, 1.5]> : tensor<4xf32>
  %0 = stablehlo.multiply %x, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
})";
constexpr uid_t kAlice = 65534, kBob = 4242;

TEST_F(IntegrationTest, AnotherUsersProgramsAndSessionsStayHidden) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other users";
  ::chmod(dir().c_str(), 0711);
  const std::vector<std::string> allow = {"--allow-uid", "65534,4242"};
  StartDaemon(true, allow);
  const std::string run_dir = std::filesystem::path(socket()).parent_path().string();
  ASSERT_EQ(::chmod(run_dir.c_str(), 0711), 0);
  ASSERT_EQ(::chmod(socket().c_str(), 0666), 0);

  // Alice compiles her program and stays connected until told.
  int fingerprint_pipe[2], release_pipe[2];
  ASSERT_EQ(::pipe(fingerprint_pipe), 0);
  ASSERT_EQ(::pipe(release_pipe), 0);
  pid_t alice = SpawnAs(kAlice, [&] {
    client::ClientOptions options;
    options.client_name = "alice-secret";
    auto c = Client::Connect(socket(), options);
    if (!c.ok()) return 1;
    auto exe = (*c)->Compile(kSecretProgram);
    if (!exe.ok() || exe->cache_hit) return 2;
    if (::write(fingerprint_pipe[1], exe->fingerprint.data(), 16) != 16) return 3;
    char byte;
    (void)!::read(release_pipe[0], &byte, 1);
    return 0;
  });
  client::Fingerprint fingerprint{};
  pollfd p{fingerprint_pipe[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 10000), 1);
  ASSERT_EQ(::read(fingerprint_pipe[0], fingerprint.data(), 16), 16);
  const std::string hex = client::FingerprintHex(fingerprint);

  // Bob: exit 0 when everything of Alice's stays hidden; the first failed
  // check's number otherwise.
  auto bob_checks = [&](bool after_restart) {
    return SpawnAs(kBob, [&, after_restart] {
      auto c = Client::Connect(socket());
      if (!c.ok()) return 1;
      auto by_fingerprint = (*c)->CompileByFingerprint(fingerprint);
      if (by_fingerprint.ok() || by_fingerprint.status().code() != StatusCode::kNotFound) return 2;
      if (!after_restart) {
        auto stats = (*c)->Stats(true);
        if (!stats.ok()) return 3;
        if (stats->find("\"view\":\"uid\"") == std::string::npos) return 4;
        if (stats->find("alice-secret") != std::string::npos) return 5;
        if (stats->find("\"pid\":" + std::to_string(alice)) != std::string::npos) return 6;
        if (stats->find(hex) != std::string::npos) return 7;
      }
      auto by_text = (*c)->Compile(kSecretProgram);
      if (!by_text.ok()) return 8;
      // A hit would say someone sent it (after the restart Bob's own entry
      // from before may hit).
      if (by_text->cache_hit && !after_restart) return 9;
      if (by_text->fingerprint == fingerprint) return 10;
      return 0;
    });
  };
  EXPECT_EQ(ExitCode(WaitForExit(bob_checks(false), 20s)), 0);

  // The daemon's own uid sees Alice's session and program, and finds it.
  auto root = Connect();
  ASSERT_NE(root, nullptr);
  auto stats = root->Stats(true);
  ASSERT_TRUE(stats.ok());
  EXPECT_NE(stats->find("\"view\":\"all\""), std::string::npos) << *stats;
  EXPECT_NE(stats->find("alice-secret"), std::string::npos) << *stats;
  EXPECT_NE(stats->find(hex), std::string::npos) << *stats;
  EXPECT_TRUE(root->CompileByFingerprint(fingerprint).ok());
  root.reset();
  ASSERT_EQ(::write(release_pipe[1], "x", 1), 1);
  EXPECT_EQ(ExitCode(WaitForExit(alice, 10s)), 0);

  // After a restart the disk cache still knows the entry is Alice's.
  EXPECT_EQ(ExitCode(StopDaemon()), 0);
  StartDaemon(true, allow);
  ASSERT_EQ(::chmod(run_dir.c_str(), 0711), 0);
  ASSERT_EQ(::chmod(socket().c_str(), 0666), 0);
  EXPECT_EQ(ExitCode(WaitForExit(bob_checks(true), 20s)), 0);
  pid_t alice_again = SpawnAs(kAlice, [&] {
    auto c = Client::Connect(socket());
    if (!c.ok()) return 1;
    auto exe = (*c)->CompileByFingerprint(fingerprint);
    return exe.ok() ? 0 : 2;
  });
  EXPECT_EQ(ExitCode(WaitForExit(alice_again, 20s)), 0);
  for (int fd : {fingerprint_pipe[0], fingerprint_pipe[1], release_pipe[0], release_pipe[1]}) {
    ::close(fd);
  }
  EXPECT_EQ(ExitCode(StopDaemon()), 0);
}

// Infeed and outfeed (daemon/feed_queues.h): a client's queues are its
// process's, shared by its connections and by no other process.
constexpr char kFeedProgram[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  %t2 = "stablehlo.outfeed"(%s, %v#1) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
})";
const client::TensorShape kF32x2{wire::ElementType_F32, {2}};

// In a client process: compiles kFeedProgram, signals `ready_fd` just before
// executing on x = {1, 2} with `deadline`; exit 0 when the result is
// {11, 22}, 10 on DEADLINE_EXCEEDED naming the infeed, other codes otherwise.
// With `feed_itself`, a second connection of the process feeds {10, 20}
// while the execute waits, and the process reads the sum back from its
// outfeed (7 or 8 when that fails).
int RunFeedProgram(const std::string& socket, int ready_fd, std::chrono::microseconds deadline,
                   bool feed_itself = false) {
  client::ClientOptions options;
  options.timeout = 30s;
  auto c = Client::Connect(socket, options);
  if (!c.ok()) return 1;
  client::CompileOptions compile_options;
  compile_options.device = "interpreter";  // the feeds below name it
  auto exe = (*c)->Compile(kFeedProgram, compile_options);
  if (!exe.ok()) return 2;
  auto x = (*c)->AllocateBuffer(kF32x2);
  auto y = (*c)->AllocateBuffer(kF32x2);
  if (!x.ok() || !y.ok()) return 3;
  const float xs[2] = {1, 2};
  std::memcpy(x->data.data(), xs, 8);
  const uint64_t args[] = {x->handle};
  const uint64_t outs[] = {y->handle};
  if (::write(ready_fd, "r", 1) != 1) return 4;
  std::thread feeder;
  std::atomic<int> fed{-1};
  if (feed_itself) {
    feeder = std::thread([&] {
      auto f = Client::Connect(socket);
      std::this_thread::sleep_for(300ms);  // the execute waits on the infeed
      const float values[2] = {10, 20};
      fed = f.ok() && (*f)->TransferToInfeed(
                          "interpreter", kF32x2,
                          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values), 8))
                          .ok();
    });
  }
  auto timing = (*c)->Execute(exe->handle, args, outs, deadline);
  if (feeder.joinable()) feeder.join();
  if (feed_itself && fed != 1) return 7;
  if (!timing.ok()) {
    const std::string& m = timing.status().message();
    if (timing.status().code() == StatusCode::kDeadlineExceeded &&
        m.find("'stablehlo.infeed'") != std::string::npos &&
        m.find("infeed of device 'interpreter' replica 0") != std::string::npos &&
        m.find("deadline") != std::string::npos) {
      return 10;
    }
    std::fprintf(stderr, "execute: %s\n", timing.status().ToString().c_str());
    return 5;
  }
  float ys[2];
  std::memcpy(ys, y->data.data(), 8);
  if (ys[0] != 11 || ys[1] != 22) return 6;
  if (feed_itself) {
    std::vector<uint8_t> out(8);
    if (!(*c)->TransferFromOutfeed("interpreter", kF32x2, out, 5000ms).ok()) return 8;
    std::memcpy(ys, out.data(), 8);
    if (ys[0] != 11 || ys[1] != 22) return 8;
  }
  return 0;
}

// Waits (up to 10 s) for one byte on `fd`.
bool WaitReady(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 10'000) != 1) return false;
  char c;
  return ::read(fd, &c, 1) == 1;
}

// Issue 13, item 6: another process (here the test itself) neither feeds a
// client's executions nor reads its outfeed; the client's own second
// connection does both.
TEST_F(IntegrationTest, FeedsBelongToTheClientProcess) {
  StartDaemon(false);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t executor = Spawn([&] { return RunFeedProgram(socket(), ready[1], 20s, true); });
  ASSERT_TRUE(WaitReady(ready[0]));
  // A stranger's value: before the fix the executor would have taken it
  // (and computed {101, 202}).
  auto c = Connect();
  ASSERT_NE(c, nullptr);
  const float stranger[2] = {100, 200};
  ASSERT_TRUE(c->TransferToInfeed(
                   "interpreter", kF32x2,
                   std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(stranger), 8))
                  .ok());
  ASSERT_TRUE(c->Stats().ok());  // the daemon keeps serving others meanwhile
  EXPECT_EQ(ExitCode(WaitForExit(executor, 30s)), 0);
  // The executor's outfeed was its own: nothing here for the stranger.
  std::vector<uint8_t> out(8);
  Status read = c->TransferFromOutfeed("interpreter", kF32x2, out, 300ms);
  EXPECT_EQ(read.code(), StatusCode::kDeadlineExceeded) << read.ToString();
  ::close(ready[0]);
  ::close(ready[1]);
  EXPECT_EQ(ExitCode(StopDaemon()), 0);
}

TEST_F(IntegrationTest, AnUnfedInfeedEndsAtItsDeadline) {
  StartDaemon(false);
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const auto start = std::chrono::steady_clock::now();
  pid_t executor = Spawn([&] { return RunFeedProgram(socket(), ready[1], 300ms); });
  EXPECT_EQ(ExitCode(WaitForExit(executor, 30s)), 10);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  // A client killed while its execute waits on the infeed: the daemon drops
  // the session without waiting for the deadline, and stops promptly.
  pid_t stuck = Spawn([&] { return RunFeedProgram(socket(), ready[1], 60s); });
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);  // the first executor's byte
  ASSERT_TRUE(WaitReady(ready[0]));
  std::this_thread::sleep_for(100ms);
  ::kill(stuck, SIGKILL);
  WaitForExit(stuck, 10s);
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  EXPECT_TRUE(other->Stats().ok());
  const auto stop_start = std::chrono::steady_clock::now();
  EXPECT_EQ(ExitCode(StopDaemon()), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - stop_start, 5s);
  ::close(ready[0]);
  ::close(ready[1]);
}

}  // namespace
}  // namespace jitd
