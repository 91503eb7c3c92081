// Dispatcher tests: a worker pool serving sessions' rings through real
// memfd segments and socket pairs, as the server hands them over.
#include "daemon/dispatcher.h"

#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/cpu_move.h"
#include "ipc/protocol.h"

namespace jitd::daemon {
namespace {

using namespace std::chrono_literals;

// One client of a session: its own mapping of the segment and its end of
// the connection, ringing the daemon the way libclient does.
struct FakeClient {
  std::unique_ptr<ipc::Segment> segment;
  UniqueFd socket;
  uint64_t next_id = 1;

  static void Ring(void* context) {
    const char bell = 0;
    (void)!::send(static_cast<FakeClient*>(context)->socket.get(), &bell, 1,
                  MSG_DONTWAIT | MSG_NOSIGNAL);
  }

  // Sends a Hello and waits for its reply: OK or the reply's status.
  Status Hello(std::chrono::milliseconds timeout = 5000ms) { return HelloBurst(1, timeout); }

  // Sends `n` Hellos at once, then waits for their `n` replies, in order
  // (the session has requests waiting all along).
  Status HelloBurst(int n, std::chrono::milliseconds timeout = 5000ms) {
    flatbuffers::FlatBufferBuilder fbb;
    const uint64_t first_id = next_id;
    for (int i = 0; i < n; ++i) {
      fbb.Clear();
      auto body = wire::CreateHello(fbb, ipc::kProtocolVersion, fbb.CreateString("test"));
      fbb.Finish(wire::CreateRequestMessage(fbb, next_id++, wire::Request_Hello, body.Union()),
                 wire::RequestMessageIdentifier());
      JITD_RETURN_IF_ERROR(segment->request_ring().Push(
          std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize())));
    }
    ipc::RingMessage reply;
    ipc::WaitOptions wait;
    wait.deadline = std::chrono::steady_clock::now() + timeout;
    for (int i = 0; i < n; ++i) {
      JITD_RETURN_IF_ERROR(segment->reply_ring().Pop(&reply, wait));
      StatusOr<const wire::ReplyMessage*> verified = ipc::VerifyReply(reply.bytes);
      JITD_RETURN_IF_ERROR(verified.status());
      if ((*verified)->id() != first_id + i) return Internal("reply to another request");
    }
    return Status::Ok();
  }

  // A request that holds its worker for `wait` without using a CPU: a
  // TransferFromOutfeed of an f32 no program ever writes, given up after
  // `wait`. OK when its reply says DEADLINE_EXCEEDED, as it must.
  Status WaitForNothing(std::chrono::microseconds wait) {
    flatbuffers::FlatBufferBuilder fbb;
    const uint64_t id = next_id++;
    const wire::HeapRef data(0, sizeof(float));
    auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, fbb.CreateVector<int64_t>({}));
    auto body = wire::CreateTransferFromOutfeedRequest(fbb, /*device=*/0, /*replica=*/0, shape,
                                                       &data, static_cast<uint64_t>(wait.count()));
    fbb.Finish(wire::CreateRequestMessage(fbb, id, wire::Request_TransferFromOutfeedRequest,
                                          body.Union()),
               wire::RequestMessageIdentifier());
    JITD_RETURN_IF_ERROR(segment->request_ring().Push(
        std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize())));
    ipc::RingMessage reply;
    ipc::WaitOptions options;
    options.deadline = std::chrono::steady_clock::now() + 5s;
    JITD_RETURN_IF_ERROR(segment->reply_ring().Pop(&reply, options));
    StatusOr<const wire::ReplyMessage*> verified = ipc::VerifyReply(reply.bytes);
    JITD_RETURN_IF_ERROR(verified.status());
    if ((*verified)->id() != id) return Internal("reply to another request");
    const wire::Status* status = (*verified)->status();
    if (status == nullptr || status->code() != wire::StatusCode_DEADLINE_EXCEEDED) {
      return Internal("the wait for an outfeed value did not time out");
    }
    return Status::Ok();
  }
};

class DispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto instance = Instance::Create({});
    ASSERT_TRUE(instance.ok()) << instance.status().ToString();
    instance_ = std::move(instance).value();
  }

  std::unique_ptr<Dispatcher> MakeDispatcher(DispatcherOptions options = {}) {
    auto dispatcher = Dispatcher::Create(options, [this](const Session&) { ++closed_; });
    EXPECT_TRUE(dispatcher.ok()) << dispatcher.status().ToString();
    return std::move(dispatcher).value();
  }

  // A session added to `dispatcher`, and its client.
  std::unique_ptr<FakeClient> Connect(Dispatcher& dispatcher) {
    SessionOptions options;
    options.segment_bytes = 4 << 20;
    auto session = Session::Create(instance_.get(), next_session_++, options);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    auto client = std::make_unique<FakeClient>();
    auto segment = ipc::Segment::Attach(UniqueFd(::dup((*session)->segment_fd())));
    EXPECT_TRUE(segment.ok()) << segment.status().ToString();
    client->segment = std::move(segment).value();
    client->socket.Reset(fds[1]);
    client->segment->request_ring().set_wake_hook(&FakeClient::Ring, client.get());
    EXPECT_TRUE(dispatcher.Add(std::move(session).value(), UniqueFd(fds[0])).ok());
    return client;
  }

  // Defined with the tests of turns, below.
  DispatcherStats CallOversubscribed(int n, int cpus);
  void ExpectQuanta(int n, int cpus);

  static void WaitFor(const std::function<bool()>& done) {
    const auto end = std::chrono::steady_clock::now() + 10s;
    while (!done() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(1ms);
  }

  std::unique_ptr<Instance> instance_;
  std::atomic<int> closed_{0};
  uint64_t next_session_ = 1;
};

TEST_F(DispatcherTest, ServesRequestsAfterTheSessionWentIdle) {
  auto dispatcher = MakeDispatcher();
  auto client = Connect(*dispatcher);
  ASSERT_TRUE(client->Hello().ok());
  // Long enough for the worker to stop spinning and arm the ring: the next
  // request must arrive through the socket's doorbell.
  std::this_thread::sleep_for(50ms);
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(client->Hello().ok());
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_GE(dispatcher->stats().requests, 4u);
}

TEST_F(DispatcherTest, IdleSessionsCostNoThread) {
  DispatcherOptions options;
  options.workers = 2;
  auto dispatcher = MakeDispatcher(options);
  std::vector<std::unique_ptr<FakeClient>> clients;
  for (int i = 0; i < 64; ++i) clients.push_back(Connect(*dispatcher));
  for (auto& client : clients) ASSERT_TRUE(client->Hello().ok());
  EXPECT_EQ(dispatcher->stats().sessions, 64u);
  EXPECT_EQ(dispatcher->stats().threads, 2u);
}

TEST_F(DispatcherTest, ClosingTheConnectionFreesTheSession) {
  auto dispatcher = MakeDispatcher();
  auto a = Connect(*dispatcher);
  auto b = Connect(*dispatcher);
  ASSERT_TRUE(a->Hello().ok());
  ASSERT_TRUE(b->Hello().ok());
  a->socket.Reset();
  WaitFor([&] { return closed_.load() == 1; });
  EXPECT_EQ(closed_.load(), 1);
  EXPECT_EQ(dispatcher->stats().sessions, 1u);
  ASSERT_TRUE(b->Hello().ok());
}

TEST_F(DispatcherTest, AStuckWorkerDoesNotDelayOtherClients) {
  DispatcherOptions options;
  options.workers = 1;
  options.stall = 5ms;
  auto dispatcher = MakeDispatcher(options);
  // The only worker runs a task that blocks for a long time.
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  dispatcher->Post([released] { released.wait(); });
  std::this_thread::sleep_for(10ms);
  auto client = Connect(*dispatcher);
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(client->Hello(2000ms).ok());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_LT(waited, 100ms);
  EXPECT_GE(dispatcher->stats().spares_started, 1u);
  release.set_value();
}

// Clients sending bursts of 32 requests back to back, each from its own
// thread, for `run`; returns each one's count of requests (0 for one that
// failed).
std::vector<uint64_t> CallBackToBack(std::vector<std::unique_ptr<FakeClient>>& clients,
                                     std::chrono::milliseconds run) {
  constexpr int kBurst = 32;
  std::vector<uint64_t> counts(clients.size());
  std::vector<std::thread> threads;
  const auto end = std::chrono::steady_clock::now() + run;
  for (size_t i = 0; i < clients.size(); ++i) {
    threads.emplace_back([&, i] {
      while (std::chrono::steady_clock::now() < end) {
        if (!clients[i]->HelloBurst(kBurst).ok()) {
          counts[i] = 0;
          return;
        }
        counts[i] += kBurst;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return counts;
}

// `n` clients calling back to back (bursts of 32) for 300 ms on a
// dispatcher of two workers for `cpus` CPUs, which they outnumber; the
// dispatcher's counters after.
DispatcherStats DispatcherTest::CallOversubscribed(int n, int cpus) {
  DispatcherOptions options;
  options.workers = 2;
  options.cpus = cpus;
  auto dispatcher = MakeDispatcher(options);
  std::vector<std::unique_ptr<FakeClient>> clients;
  for (int i = 0; i < n; ++i) clients.push_back(Connect(*dispatcher));
  const std::vector<uint64_t> counts = CallBackToBack(clients, 300ms);
  for (size_t i = 0; i < counts.size(); ++i) EXPECT_GT(counts[i], 0u) << "client " << i;
  return dispatcher->stats();
}

// There, turns are quanta, each serving bursts of one session (about 1 ms
// of them) while the others wait, where a turn without one would serve a
// request and move on.
void DispatcherTest::ExpectQuanta(int n, int cpus) {
  const DispatcherStats stats = CallOversubscribed(n, cpus);
  ASSERT_GT(stats.quanta, 0u);
  EXPECT_GE(stats.quantum_requests, 8 * stats.quanta)
      << stats.quantum_requests << " requests in " << stats.quanta << " quanta";
}

TEST_F(DispatcherTest, WhenClientsOutnumberTheCpusATurnIsAQuantum) { ExpectQuanta(3, 1); }

// Two clients calling back to back need four CPUs to run without sharing
// one (each client and the worker serving it), so on two they take turns.
TEST_F(DispatcherTest, TwoBusyClientsOnTwoCpusTakeTurns) { ExpectQuanta(2, 2); }

// The worker without the one turn slot sleeps until it is needed (an item
// that needs no slot, or the slot's worker stuck in a request). Looking
// for a free slot every millisecond instead, it found the slot taken about
// 260 times in these 300 ms, each time taking a CPU from the client or the
// worker of the quantum.
TEST_F(DispatcherTest, AWorkerWithoutASlotSleepsUntilNeeded) {
  const DispatcherStats stats = CallOversubscribed(3, 1);
  ASSERT_GT(stats.quanta, 0u);
  EXPECT_LT(stats.slot_waits, 60u) << "in " << stats.quanta << " quanta";
}

// Sessions whose requests hold their worker long (executes that compute,
// waits) have clients asleep meanwhile: they take no turn slot, so that
// they are served side by side however many there are. Only a session's
// first two requests, before it is known to be one of them, may take one.
TEST_F(DispatcherTest, SessionsOfLongRequestsTakeNoTurnSlot) {
  DispatcherOptions options;
  options.workers = 3;
  options.cpus = 1;  // three busy sessions of short requests would take turns
  auto dispatcher = MakeDispatcher(options);
  constexpr int kClients = 3, kRequests = 12;
  std::vector<std::unique_ptr<FakeClient>> clients;
  for (int i = 0; i < kClients; ++i) clients.push_back(Connect(*dispatcher));
  std::vector<Status> results(kClients, Status::Ok());
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i) {
    threads.emplace_back([&, i] {
      for (int r = 0; r < kRequests && results[i].ok(); ++r) {
        results[i] = clients[i]->WaitForNothing(2ms);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_TRUE(results[i].ok()) << results[i].ToString();
  // A worker counts a request after its reply went out.
  WaitFor([&] { return dispatcher->stats().requests == uint64_t{kClients * kRequests}; });
  const DispatcherStats stats = dispatcher->stats();
  EXPECT_EQ(stats.requests, uint64_t{kClients * kRequests});
  EXPECT_LE(stats.quanta, uint64_t{2 * kClients}) << "of " << stats.turns << " turns";
}

// A quantum whose client sleeps on its worker's CPU starts by asking that
// client to move off it (Ring::AskConsumerToMoveOff; libclient then leaves
// the CPU for a moment), since the kernel would wake the client there and
// the two would share the CPU. Here everything runs on one CPU, so every
// sleeping client sleeps on its worker's CPU; the fake clients only count
// the requests (they cannot move).
TEST_F(DispatcherTest, AQuantumAsksAClientSleepingOnItsWorkersCpuToMove) {
  // On a thread of its own, pinned to one CPU: the dispatcher's threads and
  // the clients' start from it and inherit that; the pin ends with it.
  std::thread body([&] {
    const int cpu = ::sched_getcpu();
    ASSERT_GE(cpu, 0);
    ASSERT_TRUE(PinThisThread(cpu));
    DispatcherOptions options;
    options.workers = 2;
    options.cpus = 1;  // three busy clients take turns
    auto dispatcher = MakeDispatcher(options);
    std::vector<std::unique_ptr<FakeClient>> clients;
    for (int i = 0; i < 3; ++i) clients.push_back(Connect(*dispatcher));
    std::vector<int> asked(clients.size(), 0), asked_elsewhere(clients.size(), 0);
    std::vector<std::thread> threads;
    const auto end = std::chrono::steady_clock::now() + 300ms;
    for (size_t i = 0; i < clients.size(); ++i) {
      threads.emplace_back([&, i] {
        while (std::chrono::steady_clock::now() < end && clients[i]->HelloBurst(32).ok()) {
          const int named = clients[i]->segment->reply_ring().TakeMoveOffRequest();
          if (named == cpu) ++asked[i];
          if (named >= 0 && named != cpu) ++asked_elsewhere[i];
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const DispatcherStats stats = dispatcher->stats();
    ASSERT_GT(stats.quanta, 0u);
    EXPECT_GT(stats.moves, 0u) << "in " << stats.quanta << " quanta";
    int total = 0;
    for (size_t i = 0; i < clients.size(); ++i) {
      total += asked[i];
      EXPECT_EQ(asked_elsewhere[i], 0) << "client " << i << " was asked to leave another CPU";
    }
    EXPECT_GT(total, 0) << stats.moves << " requests counted by the dispatcher";
    EXPECT_LE(static_cast<uint64_t>(total), stats.moves);
  });
  body.join();
}

TEST_F(DispatcherTest, OneRequestPerTurnTurnsQuantaOff) {
  DispatcherOptions options;
  options.workers = 2;
  options.cpus = 1;
  options.turn_requests = 1;
  auto dispatcher = MakeDispatcher(options);
  std::vector<std::unique_ptr<FakeClient>> clients;
  for (int i = 0; i < 3; ++i) clients.push_back(Connect(*dispatcher));
  const std::vector<uint64_t> counts = CallBackToBack(clients, 100ms);
  for (size_t i = 0; i < counts.size(); ++i) EXPECT_GT(counts[i], 0u) << "client " << i;
  EXPECT_EQ(dispatcher->stats().quanta, 0u);
}

// While busy clients take turns, a turn goes to the session with a request
// waiting that has had the least of the slots' time, not to the queue's
// front; but nothing else is passed over (TurnOrderTest.*Choose* checks the
// rule itself). Here one session's client asks now and then and goes
// quiet, so its session is queued hot with nothing to serve, and tasks are
// posted meanwhile: each runs within a second, not when the busy clients
// stop. (This did not catch a version that passed over a quiet front
// session: the busy sessions here are often queued with nothing waiting
// too, and then the front is taken.)
TEST_F(DispatcherTest, NothingQueuedBehindAQuietSessionWaitsForTheBusyOnes) {
  DispatcherOptions options;
  options.workers = 2;
  options.cpus = 1;
  auto dispatcher = MakeDispatcher(options);
  std::vector<std::unique_ptr<FakeClient>> busy;
  for (int i = 0; i < 3; ++i) busy.push_back(Connect(*dispatcher));
  auto quiet = Connect(*dispatcher);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (auto& client : busy) {
    threads.emplace_back([&stop, c = client.get()] {
      while (!stop.load() && c->HelloBurst(16).ok()) {
      }
    });
  }
  std::this_thread::sleep_for(20ms);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(quiet->Hello().ok());
    std::this_thread::sleep_for(3ms);
  }
  for (int i = 0; i < 10; ++i) {
    std::promise<void> ran;
    std::future<void> done = ran.get_future();
    dispatcher->Post([&ran] { ran.set_value(); });
    EXPECT_EQ(done.wait_for(1s), std::future_status::ready) << "task " << i;
    done.wait();  // the promise outlives the task
    std::this_thread::sleep_for(2ms);
  }
  EXPECT_TRUE(quiet->Hello().ok());
  stop.store(true);
  for (std::thread& t : threads) t.join();
  EXPECT_GT(dispatcher->stats().quanta, 0u);
}

TEST_F(DispatcherTest, DestroyingTheDispatcherFreesEverySession) {
  {
    auto dispatcher = MakeDispatcher();
    auto a = Connect(*dispatcher);
    auto b = Connect(*dispatcher);
    ASSERT_TRUE(a->Hello().ok());
  }
  EXPECT_EQ(closed_.load(), 2);
}

TEST_F(DispatcherTest, DoorbellBytesWithoutRequestsAreHarmless) {
  auto dispatcher = MakeDispatcher();
  auto client = Connect(*dispatcher);
  ASSERT_TRUE(client->Hello().ok());
  // A client that rings and rings with nothing on its ring.
  for (int i = 0; i < 1000; ++i) FakeClient::Ring(client.get());
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(client->Hello().ok());
  EXPECT_EQ(dispatcher->stats().sessions, 1u);
}

}  // namespace
}  // namespace jitd::daemon
