// Remote clients on loopback (issue 18, item 5), the daemon side: two real
// `jitd serve` children — one with TLS 1.3 (throwaway certificates made by
// the openssl command) and bearer tokens, one plaintext
// (--insecure-loopback) — driven by the frame-level test client
// (daemon/remote_test_client.h: blocking, one request at a time, so these
// figures are the wire + daemon cost without a client library's extras);
// against the same through the Unix socket and shared memory (libclient) in
// the same run.
//
//   execute/{local,remote_plain,remote_tls}: round trip of a tiny execute
//     (add of two f32[4] buffers into a third), p50/p90/p99 counters in µs.
//   transfer_64MB/{remote_plain,remote_tls}/{upload,download}: 64 MiB into
//     an allocated heap range (DATA frames; the upload ends with a heap
//     request's reply, which the daemon sends after the data is in) and
//     back (a ReadRequest); local/upload is the same bytes copied into a
//     shared-memory buffer. bytes_per_second is the rate.
//
// Run: build/bin/jitd_remote_bench (see BENCHMARKS.md).
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <benchmark/benchmark.h>

#include "daemon/remote_test_client.h"
#include "libclient/client.h"

namespace jitd {
namespace {

using Clock = std::chrono::steady_clock;
using daemon::testing::RemoteTestClient;
using daemon::testing::Scratch;
namespace ssl = boost::asio::ssl;

constexpr char kAdd[] = R"(func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";
constexpr size_t kTransferBytes = size_t{64} << 20;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "remote_bench: %s\n", what.c_str());
  std::exit(1);
}

struct Daemon {
  pid_t pid = -1;
  std::string socket;
  uint16_t port = 0;

  void Start(const Scratch& scratch, const std::string& name, std::vector<std::string> flags) {
    socket = scratch.Path(name + ".sock");
    const std::string log = scratch.Path(name + ".log");
    std::vector<std::string> args = {JITD_BINARY, "serve", "--socket", socket, "--no-disk-cache",
                                     "--default-device", "cpu"};
    args.insert(args.end(), flags.begin(), flags.end());
    pid = ::fork();
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setsid();
      if (std::freopen(log.c_str(), "w", stderr) == nullptr) std::_Exit(126);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    const std::regex line("serving remote clients on tcp://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 1000 && port == 0; ++i) {
      std::ifstream in(log);
      std::stringstream text;
      text << in.rdbuf();
      const std::string s = text.str();
      std::smatch m;
      if (std::regex_search(s, m, line)) port = static_cast<uint16_t>(std::stoi(m[1]));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (port == 0) Die("the " + name + " daemon did not start; see " + log);
  }
  void Stop() {
    if (pid > 0) {
      ::kill(pid, SIGTERM);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
};

struct World {
  Scratch scratch;
  Daemon tls, plain;
  std::unique_ptr<ssl::context> client_tls;
  World() {
    if (!scratch.MakeCertificates()) Die("the openssl command is needed to make certificates");
    tls.Start(scratch, "tls",
              {"--listen", "tcp://127.0.0.1:0", "--tls-cert", scratch.Path("server.pem"),
               "--tls-key", scratch.Path("server.key"), "--token-file", scratch.Path("tokens")});
    plain.Start(scratch, "plain",
                {"--listen", "tcp://127.0.0.1:0", "--insecure-loopback", "--token-file",
                 scratch.Path("tokens")});
    client_tls = std::make_unique<ssl::context>(ssl::context::tls_client);
    client_tls->load_verify_file(scratch.Path("ca.pem"));
    client_tls->set_verify_mode(ssl::verify_peer);
  }
  ~World() {
    tls.Stop();
    plain.Stop();
  }
};

World& TheWorld() {
  static World world;
  return world;
}

std::unique_ptr<RemoteTestClient> RemoteClient(bool tls) {
  World& w = TheWorld();
  auto client = std::make_unique<RemoteTestClient>(tls ? w.tls.port : w.plain.port,
                                                   tls ? w.client_tls.get() : nullptr);
  if (client->handshake_error()) Die("TLS: " + client->handshake_error().message());
  StatusOr<std::string> hello = client->Hello(daemon::testing::kAliceToken, "remote_bench");
  if (!hello.ok()) Die("hello: " + hello.status().ToString());
  return client;
}

const wire::ReplyMessage* CheckedReply(const StatusOr<std::vector<uint8_t>>& reply,
                                       const char* what) {
  if (!reply.ok()) Die(std::string(what) + ": " + reply.status().ToString());
  const wire::ReplyMessage* message = *ipc::VerifyReply(*reply);
  if (Status s = ipc::FromWire(message->status()); !s.ok()) {
    Die(std::string(what) + ": " + s.ToString());
  }
  return message;
}

void Report(benchmark::State& state, std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  auto at = [&](double p) {
    return micros.empty() ? 0.0
                          : micros[std::min(micros.size() - 1,
                                            static_cast<size_t>(p * static_cast<double>(
                                                                        micros.size())))];
  };
  state.counters["p50_us"] = at(0.50);
  state.counters["p90_us"] = at(0.90);
  state.counters["p99_us"] = at(0.99);
}

void BM_ExecuteRemote(benchmark::State& state) {
  const bool tls = state.range(0) == 1;
  auto client = RemoteClient(tls);
  const std::string text = kAdd;
  const uint64_t program = client->Allocate(text.size()).value();
  client->Write(program, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  uint64_t exe = 0;
  {
    flatbuffers::FlatBufferBuilder fbb;
    wire::HeapRef ref(program, text.size());
    auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &ref);
    exe = CheckedReply(client->Request(fbb, wire::Request_CompileRequest, body.Union()),
                       "compile")
              ->body_as_CompileReply()
              ->executable();
  }
  uint64_t buffers[3];
  for (uint64_t& buffer : buffers) {
    const uint64_t offset = client->Allocate(16).value();
    const float values[4] = {1, 2, 3, 4};
    client->Write(offset, {reinterpret_cast<const uint8_t*>(values), 16});
    flatbuffers::FlatBufferBuilder fbb;
    auto dims = fbb.CreateVector(std::vector<int64_t>{4});
    auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, dims);
    wire::HeapRef ref(offset, 16);
    auto body = wire::CreateCreateBufferRequest(fbb, shape, &ref);
    buffer = CheckedReply(client->Request(fbb, wire::Request_CreateBufferRequest, body.Union()),
                          "buffer")
                 ->body_as_CreateBufferReply()
                 ->buffer();
  }
  auto execute = [&] {
    flatbuffers::FlatBufferBuilder fbb(256);
    auto args = fbb.CreateVector(std::vector<uint64_t>{buffers[0], buffers[1]});
    auto results = fbb.CreateVector(std::vector<uint64_t>{buffers[2]});
    auto body = wire::CreateExecuteRequest(fbb, exe, args, results);
    CheckedReply(client->Request(fbb, wire::Request_ExecuteRequest, body.Union()), "execute");
  };
  for (int i = 0; i < 200; ++i) execute();
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    execute();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    micros.push_back(us);
    state.SetIterationTime(us / 1e6);
  }
  Report(state, std::move(micros));
}
BENCHMARK(BM_ExecuteRemote)->Name("execute/remote_plain")->Arg(0)->UseManualTime()->MinTime(1.0);
BENCHMARK(BM_ExecuteRemote)->Name("execute/remote_tls")->Arg(1)->UseManualTime()->MinTime(1.0);

void BM_ExecuteLocal(benchmark::State& state) {
  StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(TheWorld().tls.socket);
  if (!c.ok()) Die("connect: " + c.status().ToString());
  client::Client& client = **c;
  StatusOr<client::Executable> e = client.Compile(kAdd);
  if (!e.ok()) Die("compile: " + e.status().ToString());
  std::vector<uint64_t> args, results;
  client::TensorShape shape{wire::ElementType_F32, {4}};
  for (int i = 0; i < 3; ++i) {
    StatusOr<client::Buffer> b = client.AllocateBuffer(shape);
    if (!b.ok()) Die("buffer: " + b.status().ToString());
    (i < 2 ? args : results).push_back(b->handle);
  }
  for (int i = 0; i < 200; ++i) (void)client.Execute(e->handle, args, results);
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    StatusOr<client::Timing> t = client.Execute(e->handle, args, results);
    if (!t.ok()) Die("execute: " + t.status().ToString());
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    micros.push_back(us);
    state.SetIterationTime(us / 1e6);
  }
  Report(state, std::move(micros));
}
BENCHMARK(BM_ExecuteLocal)->Name("execute/local")->UseManualTime()->MinTime(1.0);

// 64 MiB up (range 1 = 0) or down (1) over plain (range 0 = 0) or TLS (1).
void BM_TransferRemote(benchmark::State& state) {
  const bool tls = state.range(0) == 1;
  const bool download = state.range(1) == 1;
  auto client = RemoteClient(tls);
  std::vector<uint8_t> data(kTransferBytes);
  for (size_t i = 0; i < data.size(); i += 4096) data[i] = static_cast<uint8_t>(i >> 12);
  const uint64_t offset = client->Allocate(kTransferBytes).value();
  client->Write(offset, data);
  if (!client->Allocate(64).ok()) Die("sync");
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    if (download) {
      StatusOr<std::vector<uint8_t>> back = client->Read(offset, kTransferBytes);
      if (!back.ok() || back->size() != kTransferBytes) Die("read");
    } else {
      if (!client->Write(offset, data)) Die("write");
      // The reply comes after the DATA frames before it are in the heap.
      StatusOr<uint64_t> sync = client->Allocate(64);
      if (!sync.ok()) Die("sync: " + sync.status().ToString());
      (void)client->Free(*sync);
    }
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(kTransferBytes));
}
BENCHMARK(BM_TransferRemote)->Name("transfer_64MB/remote_plain/upload")->Args({0, 0})
    ->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TransferRemote)->Name("transfer_64MB/remote_plain/download")->Args({0, 1})
    ->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TransferRemote)->Name("transfer_64MB/remote_tls/upload")->Args({1, 0})
    ->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TransferRemote)->Name("transfer_64MB/remote_tls/download")->Args({1, 1})
    ->UseManualTime()->Iterations(10)->Unit(benchmark::kMillisecond);

void BM_TransferLocal(benchmark::State& state) {
  StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(TheWorld().tls.socket);
  if (!c.ok()) Die("connect: " + c.status().ToString());
  client::TensorShape shape{wire::ElementType_U8, {static_cast<int64_t>(kTransferBytes)}};
  StatusOr<client::Buffer> b = (*c)->AllocateBuffer(shape);
  if (!b.ok()) Die("buffer: " + b.status().ToString());
  std::vector<uint8_t> data(kTransferBytes, 1);
  std::memcpy(b->data.data(), data.data(), kTransferBytes);
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    std::memcpy(b->data.data(), data.data(), kTransferBytes);
    benchmark::ClobberMemory();
    state.SetIterationTime(std::chrono::duration<double>(Clock::now() - start).count());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(kTransferBytes));
}
BENCHMARK(BM_TransferLocal)->Name("transfer_64MB/local/upload")->UseManualTime()->Iterations(10)
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace jitd

BENCHMARK_MAIN();
