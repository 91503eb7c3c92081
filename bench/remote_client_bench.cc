// Remote clients on loopback (issue 18): one `jitd serve` child with a Unix
// socket and a TLS 1.3 listener (throwaway certificates made with the
// openssl command, mutual TLS), and a second with a plaintext loopback
// listener (--insecure-loopback + token), driven through libclient; in the
// same run, the same requests through the Unix socket + shared memory.
//
//   execute/tiny/{unix,tls,plain}  round trip of a tiny program (f32[4] add,
//                                  cpu): p50/p99 per call. Goal (TLS): p50
//                                  <= 50 us.
//   execute/copy64MB/{unix,tls,plain}  a 64 MiB f32 argument in, its negation
//                                  (64 MiB) out: for remote clients both
//                                  cross the connection (128 MiB). GB/s =
//                                  128 MiB / wall time; the daemon's own
//                                  execute time is a counter. Goal (TLS):
//                                  >= 1 GB/s.
//
// Run: build/bin/jitd_remote_client_bench (see BENCHMARKS.md). bench/remote_bench.cc
// measures the wire itself (frame-level client); this one the client library.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <netinet/in.h>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

#include "libclient/client.h"

namespace jitd {
namespace {

using Clock = std::chrono::steady_clock;
using client::Client;
using client::ClientOptions;

constexpr char kToken[] = "bench-0123456789abcdef0123456789";

constexpr char kAdd[] = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %s = stablehlo.add %a, %b : tensor<4xf32>
  return %s : tensor<4xf32>
}
)";

constexpr int64_t kCopyElements = int64_t{16} << 20;  // 64 MiB of f32
constexpr char kNegate[] = R"(
func.func @main(%x: tensor<16777216xf32>) -> tensor<16777216xf32> {
  %r = stablehlo.negate %x : tensor<16777216xf32>
  return %r : tensor<16777216xf32>
}
)";

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "remote_bench: %s\n", what.c_str());
  std::exit(1);
}

uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Certificates and tokens in a scratch directory; the two daemons.
struct Setup {
  std::string dir;
  struct Child {
    pid_t pid = -1;
    std::string socket, address;
  } tls, plain;

  void Start() {
    char tmpl[] = "/tmp/jitd-remote-bench-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) Die("mkdtemp failed");
    dir = tmpl;
    std::ofstream(dir + "/server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    std::ofstream(dir + "/client.ext") << "extendedKeyUsage=clientAuth\n";
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto sh = [&](const std::string& command) {
      if (std::system(("cd '" + dir + "' && " + command + " >/dev/null 2>&1").c_str()) != 0) {
        Die("failed: " + command);
      }
    };
    sh("openssl req -x509 " + key + " -keyout ca.key -out ca.pem -days 2 -subj /CN=ca");
    for (const char* name : {"server", "client"}) {
      const std::string n = name;
      sh("openssl req " + key + " -keyout " + n + ".key -out " + n + ".csr -subj /CN=" + n);
      sh("openssl x509 -req -in " + n + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
         "-out " + n + ".pem -extfile " + n + ".ext");
    }
    std::ofstream(dir + "/tokens") << "bench " << kToken << "\n";
    ::chmod((dir + "/tokens").c_str(), 0600);
    std::ofstream(dir + "/bench.token") << kToken << "\n";
    tls = Spawn("tls", {"--tls-cert", dir + "/server.pem", "--tls-key", dir + "/server.key",
                        "--tls-client-ca", dir + "/ca.pem"});
    plain = Spawn("plain", {"--insecure-loopback", "--token-file", dir + "/tokens"});
  }

  Child Spawn(const std::string& name, std::vector<std::string> flags) {
    Child c;
    c.socket = dir + "/" + name + ".sock";
    c.address = "tcp://127.0.0.1:" + std::to_string(FreePort());
    std::vector<std::string> args = {JITD_BINARY, "serve", "--socket", c.socket,
                                     "--no-disk-cache", "--log-level", "error",
                                     "--segment-bytes", "402653184", "--listen", c.address};
    args.insert(args.end(), flags.begin(), flags.end());
    c.pid = ::fork();
    if (c.pid < 0) Die("fork failed");
    if (c.pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::setsid();
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      std::_Exit(127);
    }
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < give_up) {
      if (Client::Connect(c.socket).ok()) return c;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Die("the daemon did not answer on " + c.socket);
  }

  void Stop() {
    for (Child* c : {&tls, &plain}) {
      if (c->pid > 0) {
        ::kill(c->pid, SIGTERM);
        ::waitpid(c->pid, nullptr, 0);
        c->pid = -1;
      }
    }
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }

  // 0: Unix socket (TLS daemon), 1: TLS, 2: plaintext loopback.
  std::unique_ptr<Client> Connect(int how) {
    ClientOptions options;
    std::string where = tls.socket;
    if (how == 1) {
      where = tls.address;
      options.tls_ca_file = dir + "/ca.pem";
      options.tls_cert_file = dir + "/client.pem";
      options.tls_key_file = dir + "/client.key";
    } else if (how == 2) {
      where = plain.address;
      options.insecure_loopback = true;
      options.token_file = dir + "/bench.token";
    }
    StatusOr<std::unique_ptr<Client>> c = Client::Connect(where, options);
    if (!c.ok()) Die("connect " + where + ": " + c.status().ToString());
    return std::move(c).value();
  }
};

Setup& TheSetup() {
  static Setup setup;
  return setup;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

void BM_Tiny(benchmark::State& state) {
  std::unique_ptr<Client> c = TheSetup().Connect(static_cast<int>(state.range(0)));
  StatusOr<client::Executable> exe = c->Compile(kAdd);
  if (!exe.ok()) Die("compile: " + exe.status().ToString());
  std::vector<uint64_t> args, results;
  for (int i = 0; i < 3; ++i) {
    StatusOr<client::Buffer> b = c->AllocateBuffer(client::TensorShape{wire::ElementType_F32, {4}});
    if (!b.ok()) Die("buffer: " + b.status().ToString());
    const float values[4] = {1, 2, 3, 4};
    std::memcpy(b->data.data(), values, sizeof(values));
    (i < 2 ? args : results).push_back(b->handle);
  }
  auto run = [&] {
    StatusOr<client::Timing> t = c->Execute(exe->handle, args, results);
    if (!t.ok()) Die("execute: " + t.status().ToString());
  };
  for (int i = 0; i < 200; ++i) run();
  std::vector<double> micros;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    run();
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    micros.push_back(us);
    state.SetIterationTime(us * 1e-6);
  }
  state.counters["p50_us"] = Percentile(micros, 0.50);
  state.counters["p99_us"] = Percentile(micros, 0.99);
}
BENCHMARK(BM_Tiny)->Name("execute/tiny/unix")->Arg(0)->UseManualTime()->MinTime(1.0);
BENCHMARK(BM_Tiny)->Name("execute/tiny/tls")->Arg(1)->UseManualTime()->MinTime(1.0);
BENCHMARK(BM_Tiny)->Name("execute/tiny/plain")->Arg(2)->UseManualTime()->MinTime(1.0);

void BM_Copy64MB(benchmark::State& state) {
  std::unique_ptr<Client> c = TheSetup().Connect(static_cast<int>(state.range(0)));
  StatusOr<client::Executable> exe = c->Compile(kNegate);
  if (!exe.ok()) Die("compile: " + exe.status().ToString());
  const client::TensorShape shape{wire::ElementType_F32, {kCopyElements}};
  StatusOr<client::Buffer> in = c->AllocateBuffer(shape);
  StatusOr<client::Buffer> out = c->AllocateBuffer(shape);
  if (!in.ok() || !out.ok()) Die("buffers: " + in.status().ToString() + out.status().ToString());
  float* x = reinterpret_cast<float*>(in->data.data());
  for (int64_t i = 0; i < kCopyElements; ++i) x[i] = static_cast<float>(i & 1023);
  const uint64_t args[] = {in->handle}, results[] = {out->handle};
  double daemon_us = 0;
  int64_t runs = 0;
  for (auto _ : state) {
    StatusOr<client::Timing> t = c->Execute(exe->handle, args, results);
    if (!t.ok()) Die("execute: " + t.status().ToString());
    daemon_us += static_cast<double>(t->total_micros);
    ++runs;
  }
  const float* y = reinterpret_cast<const float*>(out->data.data());
  if (y[kCopyElements - 1] != -static_cast<float>((kCopyElements - 1) & 1023)) {
    Die("wrong result");
  }
  state.SetBytesProcessed(state.iterations() * kCopyElements * 4 * 2);
  state.counters["daemon_us"] = daemon_us / static_cast<double>(std::max<int64_t>(runs, 1));
}
BENCHMARK(BM_Copy64MB)->Name("execute/copy64MB/unix")->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->MinTime(2.0);
BENCHMARK(BM_Copy64MB)->Name("execute/copy64MB/tls")->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->MinTime(2.0);
BENCHMARK(BM_Copy64MB)->Name("execute/copy64MB/plain")->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime()
    ->MinTime(2.0);

}  // namespace
}  // namespace jitd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  jitd::TheSetup().Start();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  jitd::TheSetup().Stop();
  return 0;
}
