// The Server and libclient in one process: the server runs on a thread.
#include "daemon/server.h"

#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include "daemon/test_programs.h"
#include "libclient/client.h"

namespace jitd::daemon {
namespace {

class ServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/jitd_server_test_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    socket_ = dir_ + "/sub/jitd.sock";
    auto instance = Instance::Create({});
    ASSERT_TRUE(instance.ok());
    instance_ = std::move(instance).value();
    ServerOptions options;
    options.socket_path = socket_;
    options.handle_signals = false;
    options.log_level = 0;
    options.session.segment_bytes = 8 << 20;
    auto server = Server::Create(instance_.get(), options);
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(server).value();
    thread_ = std::thread([this] { EXPECT_TRUE(server_->Run().ok()); });
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_, socket_;
  std::unique_ptr<Instance> instance_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServerTest, DirectoryIsPrivate) {
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
}

TEST_F(ServerTest, CompileAndExecute) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->daemon_protocol_version(), ipc::kProtocolVersion);
  auto exe = (*client)->Compile(testing::kSoftmax);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  ASSERT_EQ(exe->arguments.size(), 1u);
  ASSERT_EQ(exe->results.size(), 1u);
  EXPECT_EQ(exe->arguments[0].ToString(), "f32[2,4]");
  auto arg = (*client)->AllocateBuffer(exe->arguments[0]);
  ASSERT_TRUE(arg.ok()) << arg.status().ToString();
  ASSERT_EQ(arg->data.size(), sizeof(testing::kSoftmaxInput));
  std::memcpy(arg->data.data(), testing::kSoftmaxInput, sizeof(testing::kSoftmaxInput));
  auto out = (*client)->AllocateBuffer(exe->results[0]);
  ASSERT_TRUE(out.ok());
  const uint64_t args[] = {arg->handle};
  const uint64_t outs[] = {out->handle};
  auto timing = (*client)->Execute(exe->handle, args, outs);
  ASSERT_TRUE(timing.ok()) << timing.status().ToString();
  float result[8];
  std::memcpy(result, out->data.data(), sizeof(result));
  EXPECT_NEAR(result[3], 0.6439143f, 1e-5);
  EXPECT_NEAR(result[4], 0.018626483f, 1e-5);
  // Wrong result buffer shape.
  const uint64_t wrong[] = {arg->handle, out->handle};
  auto bad = (*client)->Execute(exe->handle, args, wrong);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE((*client)->Release(exe->handle).ok());
  EXPECT_EQ((*client)->Release(exe->handle).code(), StatusCode::kNotFound);
  EXPECT_TRUE((*client)->DestroyBuffer(arg->handle).ok());
}

TEST_F(ServerTest, HandlesArePerSession) {
  auto a = client::Client::Connect(socket_);
  auto b = client::Client::Connect(socket_);
  ASSERT_TRUE(a.ok() && b.ok());
  auto exe = (*a)->Compile(testing::kSoftmax);
  ASSERT_TRUE(exe.ok());
  auto from_b = (*b)->Execute(exe->handle, {}, {});
  EXPECT_EQ(from_b.status().code(), StatusCode::kNotFound);
  auto again = (*b)->Compile(testing::kSoftmax);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->cache_hit);
  EXPECT_EQ(again->fingerprint, exe->fingerprint);
  auto by_fp = (*b)->CompileByFingerprint(exe->fingerprint);
  ASSERT_TRUE(by_fp.ok()) << by_fp.status().ToString();
  client::Fingerprint unknown{};
  EXPECT_EQ((*b)->CompileByFingerprint(unknown).status().code(), StatusCode::kNotFound);
}

TEST_F(ServerTest, MalformedMessageThenKeepsWorking) {
  auto c = client::Client::Connect(socket_);
  ASSERT_TRUE(c.ok());
  std::vector<uint8_t> garbage(100, 0x5A);
  EXPECT_EQ((*c)->SendRawForTesting(garbage).code(), StatusCode::kInvalidArgument);
  auto stats = (*c)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_NE(stats->find("\"bad_requests\":1"), std::string::npos) << *stats;
}

TEST_F(ServerTest, SecondServerOnSameSocketIsRefused) {
  ServerOptions options;
  options.socket_path = socket_;
  options.handle_signals = false;
  options.log_level = 0;
  auto second = Server::Create(instance_.get(), options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
}

TEST_F(ServerTest, ClosedClientFreesItsSession) {
  {
    auto c = client::Client::Connect(socket_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Compile(testing::kSoftmax).ok());
  }
  for (int i = 0; i < 200 && instance_->stats().sessions_closed < 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(instance_->stats().sessions_closed, 1u);
}

TEST(ServerStaleTest, StaleSocketIsReplaced) {
  const std::string dir = "/tmp/jitd_server_stale_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/jitd.sock";
  {
    // A bound socket nobody listens on: a stale file.
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  ServerOptions options;
  options.socket_path = path;
  options.handle_signals = false;
  options.log_level = 0;
  auto server = Server::Create(instance->get(), options);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  server->reset();
  EXPECT_FALSE(std::filesystem::exists(path));
  std::filesystem::remove_all(dir);
}

TEST(ClientTest, NoDaemonIsUnavailable) {
  auto c = client::Client::Connect("/tmp/jitd-no-such-dir-xyz/jitd.sock");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
}

// A server on its own thread with the given options (for the tests below
// that need a policy or quotas of their own).
class CustomServer {
 public:
  explicit CustomServer(const std::string& name, ServerOptions options = {},
                        InstanceOptions instance_options = {}) {
    dir_ = "/tmp/jitd_server_" + name + "_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    socket_ = dir_ + "/jitd.sock";
    instance_ = std::move(Instance::Create(std::move(instance_options))).value();
    options.socket_path = socket_;
    options.handle_signals = false;
    options.log_level = 0;
    options.session.segment_bytes = 8 << 20;
    auto server = Server::Create(instance_.get(), options);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return;
    server_ = std::move(server).value();
    thread_ = std::thread([this] { EXPECT_TRUE(server_->Run().ok()); });
  }
  ~CustomServer() {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  const std::string& socket() const { return socket_; }
  Instance* instance() { return instance_.get(); }

 private:
  std::string dir_, socket_;
  std::unique_ptr<Instance> instance_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST(ServerPeerTest, RefusedUserGetsPermissionDenied) {
  // This daemon serves another uid, so this process is a stranger to it.
  ServerOptions options;
  options.peers.owner_uid = static_cast<int64_t>(::geteuid()) + 1;
  CustomServer server("refuse", options);
  auto c = client::Client::Connect(server.socket());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kPermissionDenied) << c.status().ToString();
  EXPECT_NE(c.status().message().find("uid " + std::to_string(::geteuid())), std::string::npos)
      << c.status().message();
  EXPECT_NE(c.status().message().find("--allow-uid"), std::string::npos) << c.status().message();
  EXPECT_EQ(server.instance()->stats().sessions_opened, 0u);
}

// A real stranger: a child process that drops to uid/gid 65534 (needs root;
// skipped otherwise) connects to a root daemon whose socket it can reach.
// Returns the child's exit code: 0 refused with PERMISSION_DENIED, 10
// admitted, 1 anything else.
int ConnectAsNobody(const std::string& dir, const std::string& socket) {
  ::chmod(dir.c_str(), 0711);
  ::chmod(socket.c_str(), 0666);
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0) {
      std::_Exit(2);
    }
    auto c = client::Client::Connect(socket);
    if (c.ok()) std::_Exit(10);
    std::_Exit(c.status().code() == StatusCode::kPermissionDenied ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(ServerPeerTest, AnotherUserIsRefusedUnlessAllowed) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to become another user";
  {
    CustomServer server("nobody_refused");
    EXPECT_EQ(ConnectAsNobody(std::filesystem::path(server.socket()).parent_path(),
                              server.socket()),
              0);
    EXPECT_EQ(server.instance()->stats().sessions_opened, 0u);
  }
  {
    ServerOptions options;
    options.peers.allow_uids = {65534};
    CustomServer server("nobody_allowed", options);
    EXPECT_EQ(ConnectAsNobody(std::filesystem::path(server.socket()).parent_path(),
                              server.socket()),
              10);
  }
  {
    ServerOptions options;
    options.peers.allow_gids = {65534};
    CustomServer server("nobody_group", options);
    EXPECT_EQ(ConnectAsNobody(std::filesystem::path(server.socket()).parent_path(),
                              server.socket()),
              10);
  }
}

TEST(ServerPeerTest, AllowUidAndAllowGidAdmit) {
  {
    ServerOptions options;
    options.peers.owner_uid = static_cast<int64_t>(::geteuid()) + 1;
    options.peers.allow_uids = {::geteuid()};
    CustomServer server("allow_uid", options);
    auto c = client::Client::Connect(server.socket());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    EXPECT_TRUE((*c)->Compile(testing::kSoftmax).ok());
  }
  {
    ServerOptions options;
    options.peers.owner_uid = static_cast<int64_t>(::geteuid()) + 1;
    options.peers.allow_gids = {::getegid()};
    CustomServer server("allow_gid", options);
    auto c = client::Client::Connect(server.socket());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
  }
}

TEST(ServerLockTest, SecondServerIsRefusedByTheLockEvenWithoutTheSocket) {
  CustomServer server("lock");
  // Even with the socket file gone (a racing daemon cannot see it yet), the
  // lock keeps a second server out.
  std::filesystem::remove(server.socket());
  auto instance = Instance::Create({});
  ASSERT_TRUE(instance.ok());
  ServerOptions options;
  options.socket_path = server.socket();
  options.handle_signals = false;
  options.log_level = 0;
  auto second = Server::Create(instance->get(), options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kAlreadyExists);
  EXPECT_NE(second.status().message().find(".lock"), std::string::npos)
      << second.status().message();
}

TEST_F(ServerTest, LibraryAllocatedResultsAndStats) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto exe = (*client)->Compile(testing::kSoftmax);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto arg = (*client)->AllocateBuffer(exe->arguments[0]);
  ASSERT_TRUE(arg.ok());
  std::memcpy(arg->data.data(), testing::kSoftmaxInput, sizeof(testing::kSoftmaxInput));
  const uint64_t args[] = {arg->handle};
  std::vector<client::Buffer> results;
  auto timing = (*client)->ExecuteAllocatingResults(exe->handle, args, exe->results, {}, &results);
  ASSERT_TRUE(timing.ok()) << timing.status().ToString();
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].shape, exe->results[0]);
  float result[8];
  ASSERT_EQ(results[0].data.size(), sizeof(result));
  std::memcpy(result, results[0].data.data(), sizeof(result));
  EXPECT_NEAR(result[3], 0.6439143f, 1e-5);
  // The new buffer is a real handle: usable as an argument, destroyable once.
  const uint64_t again_args[] = {results[0].handle};
  std::vector<client::Buffer> second;
  ASSERT_TRUE(
      (*client)->ExecuteAllocatingResults(exe->handle, again_args, exe->results, {}, &second).ok());
  EXPECT_TRUE((*client)->DestroyBuffer(results[0].handle).ok());
  EXPECT_EQ((*client)->DestroyBuffer(results[0].handle).code(), StatusCode::kNotFound);
  // Wrong result shapes are refused by the daemon and leave nothing behind.
  std::vector<client::TensorShape> wrong = {client::TensorShape{wire::ElementType_F32, {3}}};
  std::vector<client::Buffer> none;
  EXPECT_EQ((*client)->ExecuteAllocatingResults(exe->handle, args, wrong, {}, &none).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(none.empty());

  // Stats: this client with its counters, latency percentiles.
  auto stats = (*client)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_NE(stats->find("\"clients\":[{\"session\":"), std::string::npos) << *stats;
  EXPECT_NE(stats->find("\"name\":\"libclient\""), std::string::npos) << *stats;
  EXPECT_NE(stats->find("\"executes\":3"), std::string::npos) << *stats;
  EXPECT_NE(stats->find("\"buffers\":2"), std::string::npos) << *stats;  // arg + second result
  EXPECT_NE(stats->find("\"execute_latency\":{\"count\":2,"), std::string::npos) << *stats;
  EXPECT_NE(stats->find("\"compile_latency\":{\"count\":1,"), std::string::npos) << *stats;
}

// A program with a dense_resource placeholder (elided weights).
constexpr char kResourceProgram[] = R"(
func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {
  %w = stablehlo.constant dense_resource<weights> : tensor<4xf32>
  %0 = stablehlo.add %arg0, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

TEST_F(ServerTest, ResourceSeedFillsDenseResources) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok());
  auto exe = (*client)->Compile(kResourceProgram);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto arg = (*client)->AllocateBuffer(exe->arguments[0]);
  ASSERT_TRUE(arg.ok());
  std::memset(arg->data.data(), 0, arg->data.size());
  auto run = [&](std::optional<uint64_t> seed) -> StatusOr<std::vector<float>> {
    client::ExecuteOptions options;
    options.resource_seed = seed;
    std::vector<client::Buffer> out;
    const uint64_t args[] = {arg->handle};
    JITD_RETURN_IF_ERROR(
        (*client)->ExecuteAllocatingResults(exe->handle, args, exe->results, options, &out).status());
    std::vector<float> values(4);
    std::memcpy(values.data(), out[0].data.data(), 16);
    return values;
  };
  // No seed: the program cannot run, and says why.
  auto unseeded = run(std::nullopt);
  ASSERT_FALSE(unseeded.ok());
  EXPECT_NE(unseeded.status().message().find("fill seed"), std::string::npos)
      << unseeded.status().message();
  auto a = run(7), b = run(7), c = run(8);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status().ToString();
  EXPECT_EQ(*a, *b);  // the same seed, the same weights
  EXPECT_NE(*a, *c);
}

// ExecuteRequest.resource_fill: the weights fill reaches the device (vectors
// in [0.5, 1.5)), not only --in-process.
TEST_F(ServerTest, ResourceFillTravelsToTheDevice) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok());
  auto exe = (*client)->Compile(kResourceProgram);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  auto arg = (*client)->AllocateBuffer(exe->arguments[0]);
  ASSERT_TRUE(arg.ok());
  std::memset(arg->data.data(), 0, arg->data.size());
  auto run = [&](client::ExecuteOptions::ResourceFill fill) -> StatusOr<std::vector<float>> {
    client::ExecuteOptions options;
    options.resource_seed = 7;
    options.resource_fill = fill;
    std::vector<client::Buffer> out;
    const uint64_t args[] = {arg->handle};
    JITD_RETURN_IF_ERROR(
        (*client)->ExecuteAllocatingResults(exe->handle, args, exe->results, options, &out).status());
    std::vector<float> values(4);
    std::memcpy(values.data(), out[0].data.data(), 16);
    return values;
  };
  auto uniform = run(client::ExecuteOptions::ResourceFill::kUniform);
  auto weights = run(client::ExecuteOptions::ResourceFill::kWeights);
  ASSERT_TRUE(uniform.ok() && weights.ok()) << weights.status().ToString();
  EXPECT_NE(*uniform, *weights);
  for (float v : *weights) {
    EXPECT_GE(v, 0.5f);
    EXPECT_LT(v, 1.5f);
  }
}

// The cpu device runs on private copies of the shared buffers (no literals):
// several arguments and results of other sizes, an empty tensor, results in
// registered buffers and library-allocated ones, and repeated runs that reuse
// the copies with other sizes.
TEST_F(ServerTest, CpuExecutesOnBufferCopies) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  constexpr char kProgram[] = R"(
func.func @main(%a: tensor<5xf32>, %b: tensor<0xi32>, %c: tensor<2x3xi64>)
    -> (tensor<5xf32>, tensor<3x2xi64>, tensor<0xi32>) {
  %0 = stablehlo.multiply %a, %a : tensor<5xf32>
  %1 = stablehlo.transpose %c, dims = [1, 0] : (tensor<2x3xi64>) -> tensor<3x2xi64>
  return %0, %1, %b : tensor<5xf32>, tensor<3x2xi64>, tensor<0xi32>
})";
  client::CompileOptions options;
  options.device = "cpu";
  auto exe = (*client)->Compile(kProgram, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<uint64_t> args;
  std::vector<client::Buffer> arg_buffers;
  for (const client::TensorShape& shape : exe->arguments) {
    auto b = (*client)->AllocateBuffer(shape);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    args.push_back(b->handle);
    arg_buffers.push_back(*b);
  }
  for (int round = 0; round < 3; ++round) {
    const float a[5] = {1.f + round, 2, 3, 4, 5};
    std::memcpy(arg_buffers[0].data.data(), a, sizeof(a));
    const int64_t c[6] = {0, 1, 2, 3, 4, 5 + round};
    std::memcpy(arg_buffers[2].data.data(), c, sizeof(c));
    std::vector<client::Buffer> results;
    auto timing = (*client)->ExecuteAllocatingResults(exe->handle, args, exe->results, {}, &results);
    ASSERT_TRUE(timing.ok()) << timing.status().ToString();
    ASSERT_EQ(results.size(), 3u);
    float squares[5];
    std::memcpy(squares, results[0].data.data(), sizeof(squares));
    EXPECT_EQ(squares[0], (1.f + round) * (1.f + round));
    EXPECT_EQ(squares[4], 25.f);
    int64_t t[6];
    std::memcpy(t, results[1].data.data(), sizeof(t));
    EXPECT_EQ(t[0], 0);
    EXPECT_EQ(t[1], 3);
    EXPECT_EQ(t[5], 5 + round);
    EXPECT_EQ(results[2].data.size(), 0u);
    for (const client::Buffer& r : results) EXPECT_TRUE((*client)->DestroyBuffer(r.handle).ok());
  }
  // The same client, a program of other sizes: the copies grow.
  auto big = (*client)->Compile(testing::kSoftmax, options);
  ASSERT_TRUE(big.ok()) << big.status().ToString();
  auto arg = (*client)->AllocateBuffer(big->arguments[0]);
  auto out = (*client)->AllocateBuffer(big->results[0]);
  ASSERT_TRUE(arg.ok() && out.ok());
  std::memcpy(arg->data.data(), testing::kSoftmaxInput, sizeof(testing::kSoftmaxInput));
  const uint64_t big_args[] = {arg->handle};
  const uint64_t big_outs[] = {out->handle};
  ASSERT_TRUE((*client)->Execute(big->handle, big_args, big_outs).ok());
  float result[8];
  std::memcpy(result, out->data.data(), sizeof(result));
  EXPECT_NEAR(result[3], 0.6439143f, 1e-5);
}

// CompileOptions::dump_dir: the daemon sends the dumps, this library writes
// the files; the cpu device's include every pass, LLVM IR and assembly.
TEST_F(ServerTest, DumpDirGetsEveryDumpOfACpuCompile) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  client::CompileOptions options;
  options.device = "cpu";
  options.dump_dir = dir_ + "/dumps/softmax";
  auto exe = (*client)->Compile(testing::kSoftmax, options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  ASSERT_GE(exe->dumps.size(), 6u);
  for (const auto& [name, bytes] : exe->dumps) {
    const std::string path = options.dump_dir + "/" + name;
    ASSERT_TRUE(std::filesystem::exists(path)) << path;
    EXPECT_EQ(std::filesystem::file_size(path), bytes) << path;
  }
  for (const char* name : {"000-input.mlir", "001-inline.mlir", "optimized.mlir", "llvm.ll",
                           "llvm.opt.ll", "asm.s"}) {
    EXPECT_TRUE(std::filesystem::exists(options.dump_dir + "/" + name)) << name;
  }
  // Read once: the library took them all.
  EXPECT_EQ((*client)->ReadDump(exe->handle, 0, exe->dumps[0].second).status().code(),
            StatusCode::kNotFound);
  // The same program without dumps is a cache hit now.
  options.dump_dir.clear();
  auto again = (*client)->Compile(testing::kSoftmax, options);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_TRUE(again->dumps.empty());
  // A dump_dir that cannot be made is an error naming it, and leaves no
  // executable behind.
  options.dump_dir = "/proc/no/such/dir";
  auto bad = (*client)->Compile(testing::kSoftmax, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("/proc/no/such/dir"), std::string::npos)
      << bad.status().message();
}

// CompileOptions::profile: each execute reports its rows, on both devices.
TEST_F(ServerTest, ProfiledProgramsReportRowsWithEveryExecute) {
  auto client = client::Client::Connect(socket_);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (const char* device : {"interpreter", "cpu"}) {
    SCOPED_TRACE(device);
    for (bool profile : {false, true}) {
      client::CompileOptions options;
      options.device = device;
      options.profile = profile;
      auto exe = (*client)->Compile(testing::kSoftmax, options);
      ASSERT_TRUE(exe.ok()) << exe.status().ToString();
      auto arg = (*client)->AllocateBuffer(exe->arguments[0]);
      auto out = (*client)->AllocateBuffer(exe->results[0]);
      ASSERT_TRUE(arg.ok() && out.ok());
      std::memcpy(arg->data.data(), testing::kSoftmaxInput, sizeof(testing::kSoftmaxInput));
      const uint64_t args[] = {arg->handle};
      const uint64_t outs[] = {out->handle};
      auto timing = (*client)->Execute(exe->handle, args, outs);
      ASSERT_TRUE(timing.ok()) << timing.status().ToString();
      EXPECT_EQ(timing->profile_omitted, 0u);
      if (!profile) {
        EXPECT_TRUE(timing->profile.empty());
        continue;
      }
      ASSERT_FALSE(timing->profile.empty());
      for (const auto& row : timing->profile) {
        EXPECT_FALSE(row.name.empty());
        EXPECT_GE(row.count, 1u);
      }
      float result[8];
      std::memcpy(result, out->data.data(), sizeof(result));
      EXPECT_NEAR(result[3], 0.6439143f, 1e-5);
    }
  }
}

TEST(ServerQuotaTest, CompileTimeLimitAnswersDeadlineExceededAndCompilesOn) {
  ServerOptions options;
  options.session.max_compile_time = std::chrono::milliseconds(1);
  CustomServer server("compile_limit", options);
  // A long chain of adds: parsing and verifying it takes well over 1 ms.
  std::string program = "func.func public @main(%a: tensor<16xf32>) -> tensor<16xf32> {\n";
  std::string last = "%a";
  for (int i = 0; i < 20000; ++i) {
    program += "  %v" + std::to_string(i) + " = stablehlo.add " + last + ", %a : tensor<16xf32>\n";
    last = "%v" + std::to_string(i);
  }
  program += "  return " + last + " : tensor<16xf32>\n}\n";
  auto c = client::Client::Connect(server.socket());
  ASSERT_TRUE(c.ok());
  auto slow = (*c)->Compile(program);
  ASSERT_FALSE(slow.ok());
  EXPECT_EQ(slow.status().code(), StatusCode::kDeadlineExceeded) << slow.status().ToString();
  EXPECT_NE(slow.status().message().find("max_compile_time"), std::string::npos);
  // The compile went on in the background and lands in the cache: a retry
  // hits (while it still runs, the retry is RESOURCE_EXHAUSTED).
  bool hit = false;
  for (int i = 0; i < 500 && !hit; ++i) {
    auto retry = (*c)->Compile(program);
    if (retry.ok()) {
      EXPECT_TRUE(retry->cache_hit);
      hit = true;
    } else {
      EXPECT_TRUE(retry.status().code() == StatusCode::kResourceExhausted ||
                  retry.status().code() == StatusCode::kDeadlineExceeded)
          << retry.status().ToString();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  EXPECT_TRUE(hit);
  EXPECT_EQ(server.instance()->stats().compiles, 1u);
}

TEST(ServerGateTest, AnExecuteWaitingForInfeedDoesNotHoldTheOnlySlot) {
  InstanceOptions instance_options;
  instance_options.execute_slots = 1;
  CustomServer server("gate_feed", {}, instance_options);
  constexpr char kInfeed[] = R"(
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %t = stablehlo.create_token : !stablehlo.token
  %v:2 = "stablehlo.infeed"(%t) : (!stablehlo.token) -> (tensor<2xf32>, !stablehlo.token)
  %s = stablehlo.add %x, %v#0 : tensor<2xf32>
  return %s : tensor<2xf32>
}
)";
  auto waiter = client::Client::Connect(server.socket());
  auto other = client::Client::Connect(server.socket());
  ASSERT_TRUE(waiter.ok() && other.ok());
  auto feed_exe = (*waiter)->Compile(kInfeed);
  ASSERT_TRUE(feed_exe.ok()) << feed_exe.status().ToString();
  auto x = (*waiter)->AllocateBuffer(feed_exe->arguments[0]);
  auto y = (*waiter)->AllocateBuffer(feed_exe->results[0]);
  ASSERT_TRUE(x.ok() && y.ok());
  std::memset(x->data.data(), 0, x->data.size());
  // The waiter's execute blocks on the infeed (up to 10 s).
  std::thread blocked([&] {
    const uint64_t args[] = {x->handle};
    const uint64_t outs[] = {y->handle};
    auto t = (*waiter)->Execute(feed_exe->handle, args, outs, std::chrono::seconds(10));
    EXPECT_TRUE(t.ok()) << t.status().ToString();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // Meanwhile another client's execute gets the single slot at once.
  auto exe = (*other)->Compile(testing::kSoftmax);
  ASSERT_TRUE(exe.ok());
  auto arg = (*other)->AllocateBuffer(exe->arguments[0]);
  ASSERT_TRUE(arg.ok());
  std::memcpy(arg->data.data(), testing::kSoftmaxInput, sizeof(testing::kSoftmaxInput));
  std::vector<client::Buffer> out;
  const uint64_t args[] = {arg->handle};
  const auto start = std::chrono::steady_clock::now();
  auto ran = (*other)->ExecuteAllocatingResults(exe->handle, args, exe->results, {}, &out);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(ran.ok()) << ran.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(2));
  // Feed the waiter; it finishes with the fed value.
  const float fed[2] = {3, 4};
  ASSERT_TRUE((*other)
                  ->TransferToInfeed("", client::TensorShape{wire::ElementType_F32, {2}},
                                     std::span<const uint8_t>(
                                         reinterpret_cast<const uint8_t*>(fed), sizeof(fed)))
                  .ok());
  blocked.join();
  float result[2];
  std::memcpy(result, y->data.data(), sizeof(result));
  EXPECT_EQ(result[0], 3.0f);
  EXPECT_EQ(result[1], 4.0f);
}

}  // namespace
}  // namespace jitd::daemon
