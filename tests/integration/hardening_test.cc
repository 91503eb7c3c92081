// Hostile and unlucky clients against a real daemon (issue 13): clients
// killed mid-request, hundreds of idle sessions, session limits, clients
// that loop forever, and a bounded chaos soak. Clients are forked
// processes; every wait has a deadline.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/daemon_process.h"

namespace jitd {
namespace {

using namespace std::chrono_literals;
using client::Client;
using Clock = std::chrono::steady_clock;
using testing::DaemonProcess;
using testing::ExitCode;
using testing::Spawn;
using testing::StatNumber;

// Runs until the execute deadline: the condition is always true.
constexpr char kEndless[] = R"(func.func public @main(%a: tensor<i32>) -> tensor<i32> {
  %r = stablehlo.while(%i = %a) : tensor<i32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %n = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %n : tensor<i32>
    }
  return %r : tensor<i32>
}
)";

// r = a * 2 + 1, elementwise.
constexpr char kTiny[] = R"(func.func public @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4xf32>
  %m = stablehlo.multiply %a, %two : tensor<4xf32>
  %r = stablehlo.add %m, %one : tensor<4xf32>
  return %r : tensor<4xf32>
}
)";

// A client of the tiny program that checks every result it gets.
struct TinyUser {
  std::unique_ptr<Client> client;
  client::Executable exe;
  client::Buffer in, out;

  Status Open(const std::string& socket, const std::string& device = "") {
    client::ClientOptions options;
    options.timeout = 60s;
    JITD_ASSIGN_OR_RETURN(client, Client::Connect(socket, options));
    client::CompileOptions compile;
    compile.device = device;
    JITD_ASSIGN_OR_RETURN(exe, client->Compile(kTiny, compile));
    JITD_ASSIGN_OR_RETURN(in, client->AllocateBuffer(exe.arguments.at(0)));
    JITD_ASSIGN_OR_RETURN(out, client->AllocateBuffer(exe.results.at(0)));
    return Status::Ok();
  }
  // One execute on inputs made from `seed`; INTERNAL when a result is wrong.
  Status Run(float seed) {
    float a[4] = {seed, -seed, seed * 0.5f, 3.0f};
    std::memcpy(in.data.data(), a, sizeof(a));
    const uint64_t args[] = {in.handle};
    const uint64_t outs[] = {out.handle};
    JITD_RETURN_IF_ERROR(client->Execute(exe.handle, args, outs).status());
    float r[4];
    std::memcpy(r, out.data.data(), sizeof(r));
    for (int i = 0; i < 4; ++i) {
      if (r[i] != a[i] * 2.0f + 1.0f) {
        return Internal("wrong result " + std::to_string(r[i]) + " for input " +
                        std::to_string(a[i]));
      }
    }
    return Status::Ok();
  }
};

// Compiles the endless loop on the interpreter (it checks the deadline
// between ops) and runs it once; returns the execute's status.
Status RunEndlessOnce(Client& c, std::chrono::microseconds deadline = 0us) {
  client::CompileOptions options;
  options.device = "interpreter";
  JITD_ASSIGN_OR_RETURN(client::Executable exe, c.Compile(kEndless, options));
  JITD_ASSIGN_OR_RETURN(client::Buffer in, c.AllocateBuffer(exe.arguments.at(0)));
  JITD_ASSIGN_OR_RETURN(client::Buffer out, c.AllocateBuffer(exe.results.at(0)));
  std::memset(in.data.data(), 0, in.data.size());
  const uint64_t args[] = {in.handle};
  const uint64_t outs[] = {out.handle};
  return c.Execute(exe.handle, args, outs, deadline).status();
}

// How long a fresh client takes to connect and get its Hello answered.
StatusOr<Clock::duration> TimeConnect(const std::string& socket) {
  const Clock::time_point start = Clock::now();
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<Client> c, Client::Connect(socket));
  return Clock::now() - start;
}

long Millis(Clock::duration d) {
  return static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(d).count());
}

// Waits (up to `timeout`) until the daemon lists `clients` clients (the
// asking one included); returns the last count seen.
long WaitForClients(Client& probe, long clients, std::chrono::milliseconds timeout) {
  const Clock::time_point end = Clock::now() + timeout;
  long seen = -1;
  while (Clock::now() < end) {
    StatusOr<std::string> stats = probe.Stats();
    if (stats.ok()) {
      seen = StatNumber(*stats, "sessions_active");
      if (seen == clients) return seen;
    }
    std::this_thread::sleep_for(20ms);
  }
  return seen;
}

// Blocks until `fd` has a byte to read (or `timeout`); true if it read one.
bool ReadByte(int fd, std::chrono::milliseconds timeout) {
  pollfd p{fd, POLLIN, 0};
  char byte;
  return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1 && ::read(fd, &byte, 1) == 1;
}

class HardeningTest : public ::testing::Test {
 protected:
  DaemonProcess daemon_{JITD_BIN};
};

// Runs `request` in a client process, SIGKILLs that process `after` it
// said it is about to send, then checks that fresh clients are served at
// once and that the killed client's session is reclaimed within `reclaim`.
void KillMidRequestThenCheck(const std::string& socket,
                             const std::function<void(Client&)>& request,
                             std::chrono::milliseconds after,
                             std::chrono::milliseconds reclaim) {
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  pid_t victim = Spawn([&] {
    auto c = Client::Connect(socket);
    if (!c.ok()) return 1;
    (void)!::write(ready[1], "r", 1);
    request(**c);
    return 0;
  });
  ASSERT_TRUE(ReadByte(ready[0], 10s));
  std::this_thread::sleep_for(after);  // the request is under way
  ::kill(victim, SIGKILL);
  WaitForExit(victim, 10s);
  ::close(ready[0]);
  ::close(ready[1]);
  // New clients are served at once, whatever the killed one's request does.
  for (int i = 0; i < 5; ++i) {
    StatusOr<Clock::duration> took = TimeConnect(socket);
    ASSERT_TRUE(took.ok()) << took.status().ToString();
    EXPECT_LT(Millis(*took), 100) << "connect " << i;
  }
  // And the killed client's session is reclaimed.
  auto probe = Client::Connect(socket);
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(WaitForClients(**probe, 1, reclaim), 1);
}

TEST_F(HardeningTest, AClientKilledMidExecuteStallsNobody) {
  ASSERT_TRUE(daemon_.Start({"--max-execute-time-ms=20000", "--segment-bytes=8388608"}));
  // Reclaimed well before the 20 s limit: the hang-up cancels the execute.
  KillMidRequestThenCheck(
      daemon_.socket(), [](Client& c) { (void)RunEndlessOnce(c); }, 300ms, 5s);
}

TEST_F(HardeningTest, AClientKilledMidCompileStallsNobody) {
  ASSERT_TRUE(daemon_.Start({"--segment-bytes=67108864"}, /*disk_cache=*/false));
  // A long chain of distinct ops: a compile of a second or more on cpu.
  std::string program = "func.func public @main(%a: tensor<64xf32>) -> tensor<64xf32> {\n";
  std::string last = "%a";
  for (int i = 0; i < 3000; ++i) {
    const std::string name = "%v" + std::to_string(i);
    program += "  " + name + " = stablehlo." +
               (i % 3 == 0 ? "add " : i % 3 == 1 ? "multiply " : "subtract ") + last +
               ", %a : tensor<64xf32>\n";
    last = name;
  }
  program += "  return " + last + " : tensor<64xf32>\n}\n";
  KillMidRequestThenCheck(
      daemon_.socket(),
      [&](Client& c) {
        client::CompileOptions options;
        options.device = "cpu";
        (void)c.Compile(program, options);
      },
      50ms, 60s);
}

TEST_F(HardeningTest, FiveHundredIdleSessionsAreCheapAndGoQuickly) {
  constexpr int kProcesses = 5, kPerProcess = 100;
  ASSERT_TRUE(daemon_.Start({"--segment-bytes=67108864", "--max-sessions-per-uid=0"}));
  const long threads_before = testing::ProcStatus(daemon_.pid(), "Threads");
  int ready[2], release[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(release), 0);
  const Clock::time_point open_start = Clock::now();
  std::vector<pid_t> holders;
  for (int p = 0; p < kProcesses; ++p) {
    holders.push_back(Spawn([&] {
      ::close(release[1]);
      std::vector<std::unique_ptr<Client>> clients;
      for (int i = 0; i < kPerProcess; ++i) {
        auto c = Client::Connect(daemon_.socket());
        if (!c.ok()) return 1;
        clients.push_back(std::move(c).value());
      }
      (void)!::write(ready[1], "r", 1);
      char byte;
      (void)!::read(release[0], &byte, 1);  // hold them until told (or EOF)
      return 0;
    }));
  }
  for (int p = 0; p < kProcesses; ++p) ASSERT_TRUE(ReadByte(ready[0], 60s)) << "holder " << p;
  const long open_ms = Millis(Clock::now() - open_start);
  // 500 sessions, each answered its Hello: set-up is quick and idle ones
  // cost no thread and little memory.
  EXPECT_LT(open_ms, 10'000);
  const long threads = testing::ProcStatus(daemon_.pid(), "Threads");
  EXPECT_LE(threads, threads_before + 4) << "threads before: " << threads_before;
  const long rss_kb = testing::ProcStatus(daemon_.pid(), "VmRSS");
  EXPECT_LT(rss_kb, 1'000'000) << "resident memory with 500 idle sessions";
  StatusOr<Clock::duration> took = TimeConnect(daemon_.socket());
  ASSERT_TRUE(took.ok()) << took.status().ToString();
  EXPECT_LT(Millis(*took), 100);
  std::printf("500 sessions: opened in %ld ms; daemon threads %ld (before %ld), VmRSS %ld kB\n",
              open_ms, threads, threads_before, rss_kb);
  // The stats list every one (a JSON too long for the reply ring comes
  // through the client's heap).
  auto probe = Client::Connect(daemon_.socket());
  ASSERT_TRUE(probe.ok());
  StatusOr<std::string> all = (*probe)->Stats();
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(StatNumber(*all, "sessions_active"), kProcesses * kPerProcess + 1);
  size_t listed = 0;
  for (size_t at = all->find("\"pid\""); at != std::string::npos; at = all->find("\"pid\"", at + 1)) {
    ++listed;
  }
  EXPECT_EQ(listed, size_t{kProcesses * kPerProcess + 1}) << all->size() << " bytes of JSON";
  // All 500 close at once: a fresh client and stats are served meanwhile.
  const Clock::time_point close_start = Clock::now();
  for (pid_t pid : holders) ::kill(pid, SIGKILL);
  for (pid_t pid : holders) WaitForExit(pid, 10s);
  took = TimeConnect(daemon_.socket());
  ASSERT_TRUE(took.ok()) << took.status().ToString();
  EXPECT_LT(Millis(*took), 100);
  const Clock::time_point stats_start = Clock::now();
  StatusOr<std::string> during = (*probe)->Stats();
  ASSERT_TRUE(during.ok()) << during.status().ToString();
  const long stats_ms = Millis(Clock::now() - stats_start);
  EXPECT_LT(stats_ms, 100);
  EXPECT_EQ(WaitForClients(**probe, 1, 10s), 1);
  std::printf("500 sessions closed and reclaimed in %ld ms; stats meanwhile took %ld ms\n",
              Millis(Clock::now() - close_start), stats_ms);
  for (int fd : {ready[0], ready[1], release[0], release[1]}) ::close(fd);
}

// Opens `n` sessions (into `*clients`), then checks that the next one is
// refused RESOURCE_EXHAUSTED naming `flag`.
void FillThenExpectRefused(const std::string& socket, int n, const std::string& flag,
                           std::vector<std::unique_ptr<Client>>* clients) {
  for (int i = 0; i < n; ++i) {
    // A session closed just before (the harness's readiness probe) counts
    // until the daemon has seen its client's close: give it a moment.
    auto c = Client::Connect(socket);
    for (const Clock::time_point end = Clock::now() + 2s;
         !c.ok() && c.status().code() == StatusCode::kResourceExhausted && Clock::now() < end;) {
      std::this_thread::sleep_for(10ms);
      c = Client::Connect(socket);
    }
    ASSERT_TRUE(c.ok()) << i << ": " << c.status().ToString();
    clients->push_back(std::move(c).value());
  }
  auto refused = Client::Connect(socket);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find(flag), std::string::npos)
      << refused.status().message();
}

TEST_F(HardeningTest, SessionsPerUidAreLimited) {
  ASSERT_TRUE(daemon_.Start({"--max-sessions-per-uid=4", "--segment-bytes=8388608"}));
  std::vector<std::unique_ptr<Client>> clients;
  FillThenExpectRefused(daemon_.socket(), 4, "--max-sessions-per-uid", &clients);
  // A closed session makes room again.
  clients.pop_back();
  const Clock::time_point end = Clock::now() + 5s;
  StatusOr<std::unique_ptr<Client>> again = Client::Connect(daemon_.socket());
  while (!again.ok() && Clock::now() < end) {
    std::this_thread::sleep_for(20ms);
    again = Client::Connect(daemon_.socket());
  }
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(HardeningTest, SessionsInAllAreLimited) {
  ASSERT_TRUE(daemon_.Start({"--max-sessions=3", "--max-sessions-per-uid=0",
                             "--segment-bytes=8388608"}));
  std::vector<std::unique_ptr<Client>> clients;
  FillThenExpectRefused(daemon_.socket(), 3, "--max-sessions", &clients);
}

TEST_F(HardeningTest, EndlessLoopsDoNotHoldUpShortExecutes) {
  ASSERT_TRUE(daemon_.Start({"--execute-slots=2", "--max-execute-time-ms=3000",
                             "--segment-bytes=8388608"}));
  // Four clients run endless loops back to back: every slot is always
  // taken by one of them.
  std::vector<pid_t> loopers;
  for (int i = 0; i < 4; ++i) {
    loopers.push_back(Spawn([&] {
      auto c = Client::Connect(daemon_.socket());
      if (!c.ok()) return 1;
      for (;;) (void)RunEndlessOnce(**c);
    }));
  }
  std::this_thread::sleep_for(1s);
  TinyUser tiny;
  ASSERT_TRUE(tiny.Open(daemon_.socket(), "interpreter").ok());
  // A client's first execute has no history: it may wait for the trial
  // lane (one execute of another new client, here a looper's first run).
  const Clock::time_point first = Clock::now();
  ASSERT_TRUE(tiny.Run(-1.0f).ok());
  EXPECT_LT(Millis(Clock::now() - first), 3500);
  std::vector<long> micros;
  for (int i = 0; i < 20; ++i) {
    const Clock::time_point start = Clock::now();
    Status ran = tiny.Run(static_cast<float>(i));
    micros.push_back(static_cast<long>(
        std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count()));
    ASSERT_TRUE(ran.ok()) << ran.ToString();
    std::this_thread::sleep_for(20ms);
  }
  for (pid_t pid : loopers) ::kill(pid, SIGKILL);
  for (pid_t pid : loopers) WaitForExit(pid, 10s);
  std::sort(micros.begin(), micros.end());
  std::printf("short executes beside 4 endless loops on 2 slots: median %ld us, max %ld us\n",
              micros[micros.size() / 2], micros.back());
  // Without the express lane these waited for a 3 s loop to end.
  EXPECT_LT(micros.back(), 100'000);
}

// Bounded chaos: 8 verifying clients, random SIGKILLs and SIGSTOP/SIGCONTs,
// one client looping forever, one flooding connections; a probe measures a
// fresh client's connect time throughout; afterwards nothing is left over.
TEST_F(HardeningTest, ChaosSoak) {
  ASSERT_TRUE(daemon_.Start({"--max-execute-time-ms=2000", "--segment-bytes=8388608"}));
  constexpr auto kRun = 30s;
  int wrong[2];
  ASSERT_EQ(::pipe(wrong), 0);
  ::fcntl(wrong[0], F_SETFL, O_NONBLOCK);
  auto worker = [&](int index) {
    return Spawn([&, index] {
      TinyUser user;
      if (!user.Open(daemon_.socket(), index % 2 == 0 ? "cpu" : "interpreter").ok()) return 1;
      for (int i = 0;; ++i) {
        Status ran = user.Run(static_cast<float>(index * 1000 + i % 1000));
        if (ran.code() == StatusCode::kInternal) {
          (void)!::write(wrong[1], "w", 1);
          return 2;
        }
        if (!ran.ok()) return 3;
      }
    });
  };
  std::vector<pid_t> workers;
  for (int i = 0; i < 8; ++i) workers.push_back(worker(i));
  const pid_t looper = Spawn([&] {
    auto c = Client::Connect(daemon_.socket());
    if (!c.ok()) return 1;
    for (;;) (void)RunEndlessOnce(**c);
  });
  const pid_t flooder = Spawn([&]() -> int {
    std::vector<std::unique_ptr<Client>> held;
    for (;;) {
      auto c = Client::Connect(daemon_.socket());
      if (c.ok()) held.push_back(std::move(c).value());
      if (held.size() > 50) held.erase(held.begin(), held.begin() + 25);
    }
  });
  std::mt19937 random(12345);
  std::vector<long> connect_ms;
  int kills = 0, stops = 0;
  const Clock::time_point end = Clock::now() + kRun;
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + random() % 200));
    pid_t& victim = workers[random() % workers.size()];
    if (random() % 3 == 0) {
      ::kill(victim, SIGSTOP);
      std::this_thread::sleep_for(std::chrono::milliseconds(random() % 300));
      ::kill(victim, SIGCONT);
      ++stops;
    } else {
      ::kill(victim, SIGKILL);
      WaitForExit(victim, 10s);
      victim = worker(static_cast<int>(random() % 1000));
      ++kills;
    }
    StatusOr<Clock::duration> took = TimeConnect(daemon_.socket());
    ASSERT_TRUE(took.ok()) << took.status().ToString();
    connect_ms.push_back(Millis(*took));
  }
  for (pid_t pid : workers) ::kill(pid, SIGKILL);
  ::kill(looper, SIGKILL);
  ::kill(flooder, SIGKILL);
  for (pid_t pid : workers) WaitForExit(pid, 10s);
  WaitForExit(looper, 10s);
  WaitForExit(flooder, 10s);
  char byte;
  EXPECT_NE(::read(wrong[0], &byte, 1), 1) << "a client got a wrong result";
  std::sort(connect_ms.begin(), connect_ms.end());
  std::printf("chaos: %d kills, %d stops; fresh connects: median %ld ms, max %ld ms (%zu)\n",
              kills, stops, connect_ms[connect_ms.size() / 2], connect_ms.back(),
              connect_ms.size());
  EXPECT_LT(connect_ms.back(), 100);
  // Nothing leaked: only the probe's session is left, holding nothing.
  auto probe = Client::Connect(daemon_.socket());
  ASSERT_TRUE(probe.ok());
  EXPECT_EQ(WaitForClients(**probe, 1, 10s), 1);
  StatusOr<std::string> stats = (*probe)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(StatNumber(*stats, "buffers"), 0) << *stats;
  EXPECT_EQ(StatNumber(*stats, "executables"), 0) << *stats;
  ::close(wrong[0]);
  ::close(wrong[1]);
}

}  // namespace
}  // namespace jitd
