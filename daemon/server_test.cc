// The Server and libclient in one process: the server runs on a thread.
#include "daemon/server.h"

#include <sys/socket.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
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
    options.session.poll_interval = std::chrono::milliseconds(20);
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
  auto second = Server::Create(instance_.get(), {socket_, {}, false, 0});
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
  auto server = Server::Create(instance->get(), {path, {}, false, 0});
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

}  // namespace
}  // namespace jitd::daemon
