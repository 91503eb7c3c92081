// `jitd serve --listen` as a real process, with real TLS certificates made
// by the openssl command: remote clients (the frame-level test client, in
// this process and in a child process that is killed mid-transfer) against
// the daemon binary.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "daemon/remote_test_client.h"
#include "daemon/test_programs.h"

#ifndef JITD_BINARY
#error "JITD_BINARY must name the jitd executable"
#endif

namespace jitd::daemon {
namespace {

namespace ssl = boost::asio::ssl;
using testing::kAliceToken;
using testing::RemoteTestClient;
using testing::Scratch;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class Daemon {
 public:
  // Starts `jitd serve` with `flags`; stderr goes to LOG.
  Daemon(const Scratch& scratch, const std::vector<std::string>& flags)
      : log_(scratch.Path("daemon.log")) {
    std::vector<std::string> args = {JITD_BINARY, "serve", "--socket",
                                     scratch.Path("jitd.sock"), "--no-disk-cache",
                                     "--default-device", "interpreter"};
    args.insert(args.end(), flags.begin(), flags.end());
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* log = std::freopen(log_.c_str(), "w", stderr);
      (void)log;
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~Daemon() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGTERM);
      int status = 0;
      ::waitpid(pid_, &status, 0);
    }
  }
  // The TCP port from the log, 0 when the daemon exited or did not say in 10 s.
  uint16_t WaitForPort() {
    const std::regex line("serving remote clients on tcp://127\\.0\\.0\\.1:([0-9]+)");
    for (int i = 0; i < 1000; ++i) {
      std::smatch m;
      const std::string log = ReadFile(log_);
      if (std::regex_search(log, m, line)) return static_cast<uint16_t>(std::stoi(m[1]));
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        return 0;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return 0;
  }
  // Waits for the daemon to exit by itself: its exit status.
  int Wait() {
    if (!exited_) {
      int status = 0;
      ::waitpid(pid_, &status, 0);
      exited_ = true;
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    }
    return exit_status_;
  }
  std::string log() const { return ReadFile(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_status_ = -1;
};

class RemoteProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!scratch_.MakeCertificates()) GTEST_SKIP() << "no openssl command to make certificates";
  }
  std::unique_ptr<ssl::context> ClientContext(const std::string& name) {
    auto ctx = std::make_unique<ssl::context>(ssl::context::tls_client);
    ctx->load_verify_file(scratch_.Path("ca.pem"));
    ctx->set_verify_mode(ssl::verify_peer);
    ctx->set_verify_callback(ssl::host_name_verification("localhost"));
    if (!name.empty()) {
      ctx->use_certificate_chain_file(scratch_.Path(name + ".pem"));
      ctx->use_private_key_file(scratch_.Path(name + ".key"), ssl::context::pem);
    }
    return ctx;
  }
  std::vector<std::string> TlsFlags() {
    return {"--listen", "tcp://127.0.0.1:0", "--tls-cert", scratch_.Path("server.pem"),
            "--tls-key", scratch_.Path("server.key"), "--tls-client-ca", scratch_.Path("ca.pem")};
  }
  // The number of sessions a stats request over `client` lists.
  static int SessionsListed(RemoteTestClient& client) {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = wire::CreateStatsRequest(fbb);
    StatusOr<std::vector<uint8_t>> reply =
        client.Request(fbb, wire::Request_StatsRequest, body.Union());
    if (!reply.ok()) return -1;
    const std::string json =
        (*ipc::VerifyReply(*reply))->body_as_StatsReply()->json()->str();
    int n = 0;
    for (size_t at = json.find("{\"session\":"); at != std::string::npos;
         at = json.find("{\"session\":", at + 1)) {
      ++n;
    }
    return n;
  }

  Scratch scratch_;
};

TEST_F(RemoteProcessTest, TlsClientRunsAProgramAndStrangersAreRefused) {
  Daemon daemon(scratch_, TlsFlags());
  const uint16_t port = daemon.WaitForPort();
  ASSERT_NE(port, 0) << daemon.log();

  auto alice_ctx = ClientContext("alice");
  RemoteTestClient alice(port, alice_ctx.get());
  ASSERT_FALSE(alice.handshake_error()) << alice.handshake_error().message();
  StatusOr<std::string> identity = alice.Hello("", "process-test");
  ASSERT_TRUE(identity.ok()) << identity.status().ToString() << daemon.log();
  EXPECT_EQ(*identity, "cert:alice");

  // Compile and run softmax through the daemon process.
  const std::string text = testing::kSoftmax;
  const uint64_t program = alice.Allocate(text.size()).value();
  ASSERT_TRUE(alice.Write(program, {reinterpret_cast<const uint8_t*>(text.data()), text.size()}));
  flatbuffers::FlatBufferBuilder compile;
  wire::HeapRef ref(program, text.size());
  auto body = wire::CreateCompileRequest(compile, wire::ProgramFormat_STABLEHLO_TEXT, &ref);
  auto reply = alice.Request(compile, wire::Request_CompileRequest, body.Union());
  ASSERT_TRUE(reply.ok());
  const wire::ReplyMessage* compiled = *ipc::VerifyReply(*reply);
  ASSERT_TRUE(ipc::FromWire(compiled->status()).ok())
      << ipc::FromWire(compiled->status()).ToString();
  const uint64_t executable = compiled->body_as_CompileReply()->executable();
  // Library-allocated result: the daemon registers the range as a buffer.
  const uint64_t in = alice.Allocate(32).value();
  const uint64_t out = alice.Allocate(32).value();
  ASSERT_TRUE(alice.Write(in, {reinterpret_cast<const uint8_t*>(testing::kSoftmaxInput), 32}));
  flatbuffers::FlatBufferBuilder create;
  auto dims = create.CreateVector(std::vector<int64_t>{2, 4});
  auto shape = wire::CreateTensorShape(create, wire::ElementType_F32, dims);
  wire::HeapRef in_ref(in, 32);
  auto create_body = wire::CreateCreateBufferRequest(create, shape, &in_ref);
  auto created = alice.Request(create, wire::Request_CreateBufferRequest, create_body.Union());
  ASSERT_TRUE(created.ok());
  const uint64_t buffer =
      (*ipc::VerifyReply(*created))->body_as_CreateBufferReply()->buffer();
  flatbuffers::FlatBufferBuilder execute;
  auto args = execute.CreateVector(std::vector<uint64_t>{buffer});
  std::vector<wire::HeapRef> result_refs = {wire::HeapRef(out, 32)};
  auto result_data = execute.CreateVectorOfStructs(result_refs);
  wire::ExecuteRequestBuilder eb(execute);
  eb.add_executable(executable);
  eb.add_arguments(args);
  eb.add_result_data(result_data);
  auto executed = alice.Request(execute, wire::Request_ExecuteRequest, eb.Finish().Union());
  ASSERT_TRUE(executed.ok());
  const wire::ReplyMessage* ran = *ipc::VerifyReply(*executed);
  ASSERT_TRUE(ipc::FromWire(ran->status()).ok()) << ipc::FromWire(ran->status()).ToString();
  std::vector<uint8_t> bytes = alice.Read(out, 32).value();
  float result[8];
  std::memcpy(result, bytes.data(), 32);
  EXPECT_NEAR(result[0] + result[1] + result[2] + result[3], 1.0f, 1e-5);
  EXPECT_NEAR(result[3], std::exp(0.f) / (std::exp(-3.f) + std::exp(-2.f) + std::exp(-1.f) + 1),
              1e-5);

  // No certificate, a certificate from another CA, plaintext: refused.
  for (const std::string name : {"", "mallory"}) {
    auto ctx = ClientContext(name);
    RemoteTestClient stranger(port, ctx.get());
    if (!stranger.handshake_error()) EXPECT_FALSE(stranger.Hello("").ok());
  }
  RemoteTestClient plain(port, nullptr);
  EXPECT_FALSE(plain.Hello(kAliceToken).ok());
  // Alice is still served.
  EXPECT_EQ(SessionsListed(alice), 1);
  // The daemon's owner sees the remote identity, its address and the
  // listener's counters in `jitd stats`.
  const std::string stats_json = scratch_.Path("stats.json");
  const std::string stats_text = scratch_.Path("stats.txt");
  const std::string stats = std::string(JITD_BINARY) + " stats --socket " +
                            scratch_.Path("jitd.sock");
  ASSERT_EQ(std::system((stats + " --json > " + stats_json).c_str()), 0);
  ASSERT_EQ(std::system((stats + " > " + stats_text).c_str()), 0);
  const std::string json = ReadFile(stats_json);
  EXPECT_NE(json.find("\"remote\":\"cert:alice\",\"address\":\"127.0.0.1:"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"remote\":{\"listen\":[\"tcp://127.0.0.1:" + std::to_string(port)),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"refused\":3"), std::string::npos) << json;
  const std::string summary = ReadFile(stats_text);
  EXPECT_NE(summary.find("remote client cert:alice from 127.0.0.1:"), std::string::npos)
      << summary;
  EXPECT_NE(summary.find("(TLS), 1 sessions open"), std::string::npos) << summary;
  const std::string log = daemon.log();
  EXPECT_NE(log.find("session 1 opened for cert:alice"), std::string::npos) << log;
  EXPECT_NE(log.find("sha256="), std::string::npos) << log;
  EXPECT_NE(log.find("certificate verify failed"), std::string::npos) << log;
}

TEST_F(RemoteProcessTest, KilledClientProcessIsReclaimed) {
  Daemon daemon(scratch_, TlsFlags());
  const uint16_t port = daemon.WaitForPort();
  ASSERT_NE(port, 0) << daemon.log();
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  if (child == 0) {
    // A client that starts a 1 MiB transfer, sends part of it and waits to
    // be killed.
    auto ctx = ClientContext("alice");
    RemoteTestClient client(port, ctx.get());
    if (!client.Hello("").ok()) ::_exit(1);
    auto offset = client.Allocate(8 << 20);
    if (!offset.ok()) ::_exit(2);
    auto prefix = ipc::EncodeDataPrefix(*offset, ipc::kMaxDataChunk);
    std::vector<uint8_t> part(5000, 1);
    if (!client.WriteRaw(prefix) || !client.WriteRaw(part)) ::_exit(3);
    const char byte = 'r';
    (void)!::write(ready[1], &byte, 1);
    while (true) ::pause();
  }
  ::close(ready[1]);
  char byte = 0;
  ASSERT_EQ(::read(ready[0], &byte, 1), 1) << "the child client failed";
  ::close(ready[0]);

  auto ctx = ClientContext("alice");
  RemoteTestClient observer(port, ctx.get());
  ASSERT_TRUE(observer.Hello("").ok());
  EXPECT_EQ(SessionsListed(observer), 2);  // the child's and this one
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  bool reclaimed = false;
  for (int i = 0; i < 500 && !reclaimed; ++i) {
    reclaimed = SessionsListed(observer) == 1;
    if (!reclaimed) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(reclaimed) << daemon.log();
}

TEST_F(RemoteProcessTest, UnsafeConfigurationsDoNotStart) {
  {
    Daemon daemon(scratch_, {"--listen", "tcp://127.0.0.1:0", "--tls-cert",
                             scratch_.Path("server.pem"), "--tls-key",
                             scratch_.Path("server.key")});
    EXPECT_EQ(daemon.Wait(), 2);
    EXPECT_NE(daemon.log().find("refuses to serve unauthenticated clients"), std::string::npos)
        << daemon.log();
  }
  {
    Daemon daemon(scratch_, {"--listen", "tcp://0.0.0.0:0", "--insecure-loopback",
                             "--token-file", scratch_.Path("tokens")});
    EXPECT_EQ(daemon.Wait(), 2);
    EXPECT_NE(daemon.log().find("loopback addresses only"), std::string::npos) << daemon.log();
  }
  {
    Daemon daemon(scratch_, {"--listen", "tcp://127.0.0.1:0", "--tls-cert",
                             scratch_.Path("ca.pem"), "--tls-key", scratch_.Path("server.key"),
                             "--tls-client-ca", scratch_.Path("ca.pem")});
    EXPECT_EQ(daemon.Wait(), 2);
    EXPECT_NE(daemon.log().find("--tls-key"), std::string::npos) << daemon.log();
  }
}

}  // namespace
}  // namespace jitd::daemon
