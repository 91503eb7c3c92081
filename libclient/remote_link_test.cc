// Remote clients against real `jitd serve --listen` processes on loopback:
// one daemon with mutual TLS, one with bearer tokens. Every remote result is
// checked against the same request made by a local client of the same
// daemon (Unix socket + shared memory). $JITD_TEST_BINARY is the jitd CLI.
#include "libclient/remote_link.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "base/process.h"
#include "libclient/client.h"

namespace jitd::client {
namespace {

using namespace std::chrono_literals;

constexpr char kToken[] = "alice-0123456789abcdef0123456789";

constexpr char kAddMul[] = R"(
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %s = stablehlo.add %a, %b : tensor<4xf32>
  %p = stablehlo.multiply %a, %b : tensor<4xf32>
  return %s, %p : tensor<4xf32>, tensor<4xf32>
}
)";

// 4 Mi f32 (16 MiB, 16 DATA frames each way): x * 2 + 1.
constexpr char kLarge[] = R"(
func.func @main(%x: tensor<4194304xf32>) -> tensor<4194304xf32> {
  %two = stablehlo.constant dense<2.0> : tensor<4194304xf32>
  %one = stablehlo.constant dense<1.0> : tensor<4194304xf32>
  %m = stablehlo.multiply %x, %two : tensor<4194304xf32>
  %r = stablehlo.add %m, %one : tensor<4194304xf32>
  return %r : tensor<4194304xf32>
}
)";

constexpr char kFeeds[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  %done = "stablehlo.outfeed"(%s, %v#1) : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
  return %s : tensor<2xf32>
}
)";

bool Shell(const std::string& dir, const std::string& command) {
  return std::system(("cd '" + dir + "' && " + command + " >/dev/null 2>&1").c_str()) == 0;
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

bool PortOpen(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// A `jitd serve` child process with a Unix socket and a TCP listener.
class Daemon {
 public:
  Daemon(const std::string& dir, const std::string& name, std::vector<std::string> remote_flags)
      : socket_(dir + "/" + name + ".sock"), port_(FreePort()) {
    const char* binary = std::getenv("JITD_TEST_BINARY");
    if (binary == nullptr) return;
    std::vector<std::string> args = {binary,         "serve",
                                     "--socket",     socket_,
                                     "--log-level",  "error",
                                     "--cache-dir",  dir + "/" + name + "-cache",
                                     "--default-device", "cpu",
                                     "--segment-bytes", "67108864",
                                     "--listen",     "tcp://127.0.0.1:" + std::to_string(port_)};
    args.insert(args.end(), remote_flags.begin(), remote_flags.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    for (int i = 0; i < 200 && !PortOpen(port_); ++i) std::this_thread::sleep_for(50ms);
  }
  ~Daemon() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      if (WaitForExit(pid_, 10s) < 0) ::kill(pid_, SIGKILL);
    }
  }
  bool up() const { return pid_ > 0 && PortOpen(port_); }
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      (void)WaitForExit(pid_, 10s);
      pid_ = -1;
    }
  }
  std::string address() const { return "tcp://127.0.0.1:" + std::to_string(port_); }
  const std::string& socket() const { return socket_; }

 private:
  std::string socket_;
  uint16_t port_;
  pid_t pid_ = -1;
};

class RemoteClientTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    char pattern[] = "/tmp/jitd-remote-client-XXXXXX";
    dir_ = new std::string(::mkdtemp(pattern));
    const std::string& d = *dir_;
    std::ofstream(d + "/server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    std::ofstream(d + "/client.ext") << "extendedKeyUsage=clientAuth\n";
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto ca = [&](const std::string& name) {
      return Shell(d, "openssl req -x509 " + key + " -keyout " + name + ".key -out " + name +
                        ".pem -days 2 -subj '/CN=" + name + "'");
    };
    auto leaf = [&](const std::string& name, const std::string& issuer, const std::string& ext) {
      return Shell(d, "openssl req " + key + " -keyout " + name + ".key -out " + name +
                        ".csr -subj '/CN=" + name + "'") &&
             Shell(d, "openssl x509 -req -in " + name + ".csr -CA " + issuer + ".pem -CAkey " +
                        issuer + ".key -CAcreateserial -days 2 -out " + name + ".pem -extfile " +
                        ext);
    };
    certificates_ = ca("ca") && ca("rogue") && leaf("server", "ca", "server.ext") &&
                    leaf("alice", "ca", "client.ext") && leaf("mallory", "rogue", "client.ext");
    std::ofstream(d + "/tokens") << "alice " << kToken << "\n";
    ::chmod((d + "/tokens").c_str(), 0600);
    std::ofstream(d + "/alice.token") << kToken << "\n";
    std::ofstream(d + "/wrong.token") << "not-the-token-0123456789abcdef\n";
    if (!certificates_) return;
    mtls_ = new Daemon(d, "mtls",
                       {"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key",
                        "--tls-client-ca", d + "/ca.pem"});
    token_ = new Daemon(d, "token",
                        {"--tls-cert", d + "/server.pem", "--tls-key", d + "/server.key",
                         "--token-file", d + "/tokens"});
  }
  static void TearDownTestSuite() {
    delete mtls_;
    delete token_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    if (std::getenv("JITD_TEST_BINARY") == nullptr) GTEST_SKIP() << "JITD_TEST_BINARY not set";
    if (!certificates_) GTEST_SKIP() << "no openssl command to make test certificates";
    ASSERT_TRUE(mtls_->up() && token_->up()) << "jitd serve did not come up";
  }

  static std::string Path(const std::string& name) { return *dir_ + "/" + name; }
  static ClientOptions Mtls() {
    ClientOptions options;
    options.tls_ca_file = Path("ca.pem");
    options.tls_cert_file = Path("alice.pem");
    options.tls_key_file = Path("alice.key");
    return options;
  }
  static ClientOptions WithToken(const std::string& file) {
    ClientOptions options;
    options.tls_ca_file = Path("ca.pem");
    options.token_file = Path(file);
    return options;
  }

  static inline std::string* dir_ = nullptr;
  static inline bool certificates_ = false;
  static inline Daemon* mtls_ = nullptr;
  static inline Daemon* token_ = nullptr;
};

std::vector<uint8_t> Bytes(std::span<const uint8_t> span) { return {span.begin(), span.end()}; }

// Compiles `program`, fills its arguments from `seed`, runs it once into
// preallocated results and once allocating them, and returns every result's
// bytes.
std::vector<std::vector<uint8_t>> RunProgram(Client& client, const char* program, uint32_t seed) {
  std::vector<std::vector<uint8_t>> out;
  StatusOr<Executable> exe = client.Compile(program);
  EXPECT_TRUE(exe.ok()) << exe.status().ToString();
  if (!exe.ok()) return out;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-4, 4);
  std::vector<uint64_t> args, results;
  std::vector<Buffer> result_buffers;
  for (const TensorShape& shape : exe->arguments) {
    StatusOr<Buffer> b = client.AllocateBuffer(shape);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return out;
    float* f = reinterpret_cast<float*>(b->data.data());
    for (size_t i = 0; i < b->data.size() / 4; ++i) f[i] = dist(rng);
    args.push_back(b->handle);
  }
  for (const TensorShape& shape : exe->results) {
    StatusOr<Buffer> b = client.AllocateBuffer(shape);
    EXPECT_TRUE(b.ok()) << b.status().ToString();
    if (!b.ok()) return out;
    std::memset(b->data.data(), 0xff, b->data.size());
    result_buffers.push_back(*b);
    results.push_back(b->handle);
  }
  StatusOr<Timing> ran = client.Execute(exe->handle, args, results);
  EXPECT_TRUE(ran.ok()) << ran.status().ToString();
  for (const Buffer& b : result_buffers) out.push_back(Bytes(b.data));
  std::vector<Buffer> allocated;
  ran = client.ExecuteAllocatingResults(exe->handle, args, exe->results, {}, &allocated);
  EXPECT_TRUE(ran.ok()) << ran.status().ToString();
  for (const Buffer& b : allocated) {
    out.push_back(Bytes(b.data));
    EXPECT_TRUE(client.DestroyBuffer(b.handle).ok());
  }
  for (uint64_t h : args) EXPECT_TRUE(client.DestroyBuffer(h).ok());
  for (uint64_t h : results) EXPECT_TRUE(client.DestroyBuffer(h).ok());
  EXPECT_TRUE(client.Release(exe->handle).ok());
  return out;
}

TEST(RemoteAddressTest, Parses) {
  StatusOr<RemoteAddress> a = ParseRemoteAddress("tcp://127.0.0.1:7000");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 7000);
  EXPECT_TRUE(a->loopback());
  StatusOr<RemoteAddress> v6 = ParseRemoteAddress("tcp://[::1]:443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_TRUE(v6->loopback());
  EXPECT_EQ(v6->ToString(), "[::1]:443");
  StatusOr<RemoteAddress> name = ParseRemoteAddress("tcp://gpu-box.example:9");
  ASSERT_TRUE(name.ok());
  EXPECT_FALSE(name->loopback());
  for (const char* bad : {"tcp://host", "tcp://:80", "tcp://h:0", "tcp://h:70000", "tcp://h:8x",
                          "tcp://::1:80", "tcp://[::1]80", "unix:///tmp/s"}) {
    StatusOr<RemoteAddress> parsed = ParseRemoteAddress(bad);
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(IsRemoteAddress("tcp://x:1"));
  EXPECT_FALSE(IsRemoteAddress("/run/jitd.sock"));
}

TEST(RemoteAddressTest, PlaintextOnlyToLoopback) {
  ClientOptions options;
  options.insecure_loopback = true;
  StatusOr<std::unique_ptr<Client>> c = Client::Connect("tcp://192.0.2.1:7000", options);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("loopback"), std::string::npos) << c.status().message();
}

TEST_F(RemoteClientTest, MutualTlsGivesTheSameResultsAsLocal) {
  StatusOr<std::unique_ptr<Client>> remote = Client::Connect(mtls_->address(), Mtls());
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  StatusOr<std::unique_ptr<Client>> local = Client::Connect(mtls_->socket());
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_TRUE((*remote)->remote());
  EXPECT_FALSE((*local)->remote());
  EXPECT_EQ((*remote)->remote_identity(), "cert:alice");
  EXPECT_EQ((*remote)->daemon_version(), (*local)->daemon_version());
  EXPECT_EQ((*remote)->daemon_devices(), (*local)->daemon_devices());

  const auto remote_results = RunProgram(**remote, kAddMul, 7);
  const auto local_results = RunProgram(**local, kAddMul, 7);
  ASSERT_EQ(remote_results.size(), 4u);
  EXPECT_EQ(remote_results, local_results);
  // And the numbers are right: a + b.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-4, 4);
  float a[4], b[4];
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  const float* sum = reinterpret_cast<const float*>(remote_results[0].data());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(sum[i], a[i] + b[i]);
}

TEST_F(RemoteClientTest, EmptyTensors) {
  constexpr char kEmpty[] = R"(
func.func @main(%a: tensor<0xf32>, %b: tensor<2xf32>) -> (tensor<0xf32>, tensor<2xf32>) {
  %s = stablehlo.add %a, %a : tensor<0xf32>
  %t = stablehlo.add %b, %b : tensor<2xf32>
  return %s, %t : tensor<0xf32>, tensor<2xf32>
}
)";
  StatusOr<std::unique_ptr<Client>> remote = Client::Connect(mtls_->address(), Mtls());
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  StatusOr<std::unique_ptr<Client>> local = Client::Connect(mtls_->socket());
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  const auto remote_results = RunProgram(**remote, kEmpty, 9);
  ASSERT_EQ(remote_results.size(), 4u);
  EXPECT_TRUE(remote_results[0].empty());
  EXPECT_EQ(remote_results, RunProgram(**local, kEmpty, 9));
}

TEST_F(RemoteClientTest, LargeTensorsTravelInChunks) {
  StatusOr<std::unique_ptr<Client>> remote = Client::Connect(mtls_->address(), Mtls());
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  StatusOr<std::unique_ptr<Client>> local = Client::Connect(mtls_->socket());
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  const auto remote_results = RunProgram(**remote, kLarge, 3);
  const auto local_results = RunProgram(**local, kLarge, 3);
  ASSERT_EQ(remote_results.size(), 2u);
  ASSERT_EQ(remote_results[0].size(), 16u << 20);
  EXPECT_TRUE(remote_results == local_results);
}

TEST_F(RemoteClientTest, FingerprintsFeedsStatsAndDumps) {
  StatusOr<std::unique_ptr<Client>> remote = Client::Connect(token_->address(),
                                                            WithToken("alice.token"));
  ASSERT_TRUE(remote.ok()) << remote.status().ToString();
  Client& c = **remote;
  EXPECT_EQ(c.remote_identity(), "token:alice");
  CompileOptions dumped;
  dumped.dump_dir = Path("dumps");
  StatusOr<Executable> exe = c.Compile(kFeeds, dumped);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_FALSE(exe->dumps.empty());
  EXPECT_TRUE(std::filesystem::exists(Path("dumps/optimized.mlir")));
  StatusOr<Executable> again = c.CompileByFingerprint(exe->fingerprint);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->cache_hit);
  Fingerprint unknown{};
  EXPECT_EQ(c.CompileByFingerprint(unknown).status().code(), StatusCode::kNotFound);

  const float fed[2] = {10, 20};
  ASSERT_TRUE(c.TransferToInfeed("", TensorShape{wire::ElementType_F32, {2}},
                                 {reinterpret_cast<const uint8_t*>(fed), sizeof(fed)})
                  .ok());
  StatusOr<Buffer> x = c.AllocateBuffer(exe->arguments[0]);
  StatusOr<Buffer> y = c.AllocateBuffer(exe->results[0]);
  ASSERT_TRUE(x.ok() && y.ok());
  const float xs[2] = {1, 2};
  std::memcpy(x->data.data(), xs, sizeof(xs));
  const uint64_t args[] = {x->handle}, outs[] = {y->handle};
  StatusOr<Timing> ran = c.Execute(again->handle, args, outs);
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  const float* got = reinterpret_cast<const float*>(y->data.data());
  EXPECT_EQ(got[0], 11);
  EXPECT_EQ(got[1], 22);
  float drained[2] = {0, 0};
  Status outfeed = c.TransferFromOutfeed("", TensorShape{wire::ElementType_F32, {2}},
                                         {reinterpret_cast<uint8_t*>(drained), sizeof(drained)},
                                         5000ms);
  ASSERT_TRUE(outfeed.ok()) << outfeed.ToString();
  EXPECT_EQ(drained[0], 11);
  EXPECT_EQ(drained[1], 22);
  // Buffer feeds: the buffer's bytes as they are in the mirror now.
  const float fed2[2] = {100, 200};
  std::memcpy(x->data.data(), fed2, sizeof(fed2));
  ASSERT_TRUE(c.TransferBufferToInfeed("", *x).ok());
  ran = c.Execute(again->handle, args, outs);
  ASSERT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_EQ(got[0], 200);
  EXPECT_EQ(got[1], 400);
  std::memset(y->data.data(), 0, y->data.size());
  ASSERT_TRUE(c.TransferFromOutfeedToBuffer("", *y, 5000ms).ok());
  EXPECT_EQ(got[0], 200);
  // A failed execute leaves the result mirror alone.
  const float mark[2] = {-1, -1};
  std::memcpy(y->data.data(), mark, sizeof(mark));
  ran = c.Execute(again->handle, args, outs, 200ms);  // no infeed: its deadline passes
  EXPECT_FALSE(ran.ok());
  EXPECT_EQ(got[0], -1);

  StatusOr<std::string> stats = c.Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_NE(stats->find("token:alice"), std::string::npos) << *stats;
  EXPECT_TRUE(c.DestroyBuffer(x->handle).ok());
  EXPECT_EQ(c.DestroyBuffer(x->handle).code(), StatusCode::kNotFound);
  // Many buffers come and go without exhausting the daemon's heap.
  for (int i = 0; i < 200; ++i) {
    StatusOr<Buffer> b = c.AllocateBuffer(TensorShape{wire::ElementType_F32, {1 << 18}});
    ASSERT_TRUE(b.ok()) << i << ": " << b.status().ToString();
    ASSERT_TRUE(c.DestroyBuffer(b->handle).ok());
  }
}

TEST_F(RemoteClientTest, WrongCertificatesAndTokensAreRefusedClearly) {
  // The daemon's certificate checked against another CA.
  ClientOptions rogue_ca = Mtls();
  rogue_ca.tls_ca_file = Path("rogue.pem");
  StatusOr<std::unique_ptr<Client>> c = Client::Connect(mtls_->address(), rogue_ca);
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  EXPECT_NE(c.status().message().find("does not verify"), std::string::npos)
      << c.status().message();
  // A client certificate from a CA the daemon does not trust, or none.
  ClientOptions mallory = Mtls();
  mallory.tls_cert_file = Path("mallory.pem");
  mallory.tls_key_file = Path("mallory.key");
  c = Client::Connect(mtls_->address(), mallory);
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  ClientOptions anonymous = Mtls();
  anonymous.tls_cert_file.clear();
  anonymous.tls_key_file.clear();
  c = Client::Connect(mtls_->address(), anonymous);
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  // Tokens: wrong, none.
  c = Client::Connect(token_->address(), WithToken("wrong.token"));
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  EXPECT_NE(c.status().message().find("token"), std::string::npos) << c.status().message();
  ClientOptions no_token = WithToken("alice.token");
  no_token.token_file.clear();
  c = Client::Connect(token_->address(), no_token);
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  // Files that are not there.
  ClientOptions missing = Mtls();
  missing.tls_ca_file = Path("nope.pem");
  c = Client::Connect(mtls_->address(), missing);
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument) << c.status().ToString();
  EXPECT_NE(c.status().message().find("nope.pem"), std::string::npos);
  // Nothing listening.
  c = Client::Connect("tcp://127.0.0.1:" + std::to_string(FreePort()), Mtls());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status().ToString();
}

TEST_F(RemoteClientTest, EnvironmentSuppliesTheTlsOptions) {
  ::setenv("JITD_TLS_CA", Path("ca.pem").c_str(), 1);
  ::setenv("JITD_TOKEN_FILE", Path("alice.token").c_str(), 1);
  StatusOr<std::unique_ptr<Client>> c = Client::Connect(token_->address());
  ::unsetenv("JITD_TLS_CA");
  ::unsetenv("JITD_TOKEN_FILE");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ((*c)->remote_identity(), "token:alice");
}

// Plaintext on loopback (--insecure-loopback), a call that times out, and
// a daemon that dies: each later call says the daemon has gone away.
TEST_F(RemoteClientTest, PlaintextTimeoutsAndADeadDaemon) {
  Daemon plain(*dir_, "plain", {"--insecure-loopback", "--token-file", Path("tokens")});
  ASSERT_TRUE(plain.up());
  ClientOptions options;
  options.insecure_loopback = true;
  options.token_file = Path("alice.token");
  options.timeout = 300ms;
  StatusOr<std::unique_ptr<Client>> c = Client::Connect(plain.address(), options);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const auto results = RunProgram(**c, kAddMul, 11);
  StatusOr<std::unique_ptr<Client>> local = Client::Connect(plain.socket());
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(results, RunProgram(**local, kAddMul, 11));

  // An execute waiting for an infeed nobody sends outlasts the client's 300 ms.
  StatusOr<Executable> exe = (*c)->Compile(kFeeds);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  StatusOr<Buffer> x = (*c)->AllocateBuffer(exe->arguments[0]);
  StatusOr<Buffer> y = (*c)->AllocateBuffer(exe->results[0]);
  ASSERT_TRUE(x.ok() && y.ok());
  const uint64_t args[] = {x->handle}, outs[] = {y->handle};
  StatusOr<Timing> ran = (*c)->Execute(exe->handle, args, outs, std::chrono::microseconds(5'000'000));
  EXPECT_EQ(ran.status().code(), StatusCode::kDeadlineExceeded) << ran.status().ToString();
  Status after = (*c)->Stats().status();
  EXPECT_EQ(after.code(), StatusCode::kUnavailable);
  EXPECT_NE(after.message().find("has gone away"), std::string::npos) << after.message();

  // A fresh client works; then the daemon dies under it.
  StatusOr<std::unique_ptr<Client>> d = Client::Connect(plain.address(), options);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_TRUE((*d)->Stats().ok());
  plain.Kill();
  Status dead = (*d)->Stats().status();
  EXPECT_EQ(dead.code(), StatusCode::kUnavailable) << dead.ToString();
  EXPECT_NE(dead.message().find("has gone away"), std::string::npos) << dead.message();
  EXPECT_EQ((*d)->Stats().status().code(), StatusCode::kUnavailable);
}

TEST_F(RemoteClientTest, ATlsDaemonDiesUnderAClient) {
  Daemon dying(*dir_, "dying", {"--tls-cert", Path("server.pem"), "--tls-key", Path("server.key"),
                                "--token-file", Path("tokens")});
  ASSERT_TRUE(dying.up());
  StatusOr<std::unique_ptr<Client>> c = Client::Connect(dying.address(), WithToken("alice.token"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_TRUE((*c)->Stats().ok());
  dying.Kill();
  Status dead = (*c)->Stats().status();
  EXPECT_EQ(dead.code(), StatusCode::kUnavailable) << dead.ToString();
  EXPECT_NE(dead.message().find("has gone away"), std::string::npos) << dead.message();
}

}  // namespace
}  // namespace jitd::client
