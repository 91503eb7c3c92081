#include "ipc/fd_passing.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include "ipc/testing.h"

namespace jitd::ipc {
namespace {

struct SocketPair {
  explicit SocketPair(int type = SOCK_STREAM) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, fds), 0);
    a.Reset(fds[0]);
    b.Reset(fds[1]);
  }
  UniqueFd a, b;
};

using testing::Bytes;

// A pipe; the test passes its write end and checks it still reaches the read end.
struct Pipe {
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read_end.Reset(fds[0]);
    write_end.Reset(fds[1]);
  }
  UniqueFd read_end, write_end;
};

void ExpectSameFile(int write_fd, int read_fd) {
  ASSERT_EQ(::write(write_fd, "z", 1), 1);
  char c = 0;
  ASSERT_EQ(::read(read_fd, &c, 1), 1);
  EXPECT_EQ(c, 'z');
}

class FdPassingTest : public ::testing::TestWithParam<int> {};

TEST_P(FdPassingTest, SendsDescriptorAndPayload) {
  SocketPair sockets(GetParam());
  Pipe pipe;
  ASSERT_TRUE(SendWithFd(sockets.a.get(), pipe.write_end.get(), Bytes("hello segment")).ok());
  auto message = ReceiveWithFd(sockets.b.get());
  ASSERT_TRUE(message.ok()) << message.status().ToString();
  ASSERT_TRUE(message->fd.valid());
  EXPECT_NE(message->fd.get(), pipe.write_end.get());
  EXPECT_TRUE(::fcntl(message->fd.get(), F_GETFD) & FD_CLOEXEC);
  EXPECT_EQ(std::string(message->payload.begin(), message->payload.end()), "hello segment");
  ExpectSameFile(message->fd.get(), pipe.read_end.get());
}

TEST_P(FdPassingTest, PayloadOnlyAndEmptyPayload) {
  SocketPair sockets(GetParam());
  ASSERT_TRUE(SendWithFd(sockets.a.get(), -1, Bytes("no fd")).ok());
  Pipe pipe;
  ASSERT_TRUE(SendWithFd(sockets.a.get(), pipe.write_end.get(), {}).ok());
  auto first = ReceiveWithFd(sockets.b.get());
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(first->fd.valid());
  EXPECT_EQ(first->payload.size(), 5u);
  auto second = ReceiveWithFd(sockets.b.get());
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_TRUE(second->fd.valid());
  EXPECT_TRUE(second->payload.empty());
}

TEST_P(FdPassingTest, PeerClosedIsUnavailable) {
  SocketPair sockets(GetParam());
  sockets.a.Reset();
  EXPECT_EQ(ReceiveWithFd(sockets.b.get()).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(SendWithFd(sockets.b.get(), -1, Bytes("x")).code(), StatusCode::kUnavailable);
}

TEST_P(FdPassingTest, RejectsTwoDescriptors) {
  SocketPair sockets(GetParam());
  Pipe pipe;
  uint8_t frame[5] = {1, 0, 0, 0, 'x'};
  iovec iov{frame, sizeof(frame)};
  alignas(cmsghdr) char control[CMSG_SPACE(2 * sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(2 * sizeof(int));
  int two[2] = {pipe.read_end.get(), pipe.write_end.get()};
  std::memcpy(CMSG_DATA(c), two, sizeof(two));
  ASSERT_EQ(::sendmsg(sockets.a.get(), &msg, 0), 5);
  auto message = ReceiveWithFd(sockets.b.get());
  EXPECT_EQ(message.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(message.status().message().find("2 descriptors"), std::string::npos);
}

TEST_P(FdPassingTest, RejectsOversizedPayload) {
  SocketPair sockets(GetParam());
  ASSERT_TRUE(SendWithFd(sockets.a.get(), -1, Bytes(std::string(100, 'x'))).ok());
  auto message = ReceiveWithFd(sockets.b.get(), 50);
  EXPECT_EQ(message.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SendWithFd(sockets.a.get(), -1, Bytes(std::string(kMaxFdMessagePayload + 1, 'x'))).code(),
            StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(SocketTypes, FdPassingTest,
                         ::testing::Values(SOCK_STREAM, SOCK_SEQPACKET),
                         [](const auto& info) {
                           return info.param == SOCK_STREAM ? "Stream" : "SeqPacket";
                         });

TEST(FdPassingStreamTest, LargePayloadSurvivesShortReadsAndWrites) {
  SocketPair sockets;
  int small = 4096;
  ::setsockopt(sockets.a.get(), SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
  ::setsockopt(sockets.b.get(), SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  std::string payload(kMaxFdMessagePayload, '\0');
  for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 7);
  Pipe pipe;
  Status sent;
  std::thread sender([&] {
    sent = SendWithFd(sockets.a.get(), pipe.write_end.get(), Bytes(payload));
    if (sent.ok()) sent = SendWithFd(sockets.a.get(), -1, Bytes("after"));
  });
  auto message = ReceiveWithFd(sockets.b.get());
  auto after = ReceiveWithFd(sockets.b.get());
  sender.join();
  ASSERT_TRUE(sent.ok()) << sent.ToString();
  ASSERT_TRUE(message.ok()) << message.status().ToString();
  EXPECT_EQ(std::string(message->payload.begin(), message->payload.end()), payload);
  ASSERT_TRUE(message->fd.valid());
  ExpectSameFile(message->fd.get(), pipe.read_end.get());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(std::string(after->payload.begin(), after->payload.end()), "after");
}

TEST(FdPassingStreamTest, RejectsDescriptorInTheMiddleOfAMessage) {
  SocketPair sockets;
  Pipe pipe;
  uint8_t header[4] = {3, 0, 0, 0};
  ASSERT_EQ(::send(sockets.a.get(), header, 4, 0), 4);
  // The payload comes in a second sendmsg that carries a descriptor.
  uint8_t body[3] = {'a', 'b', 'c'};
  iovec iov{body, 3};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int fd = pipe.write_end.get();
  std::memcpy(CMSG_DATA(c), &fd, sizeof(int));
  ASSERT_EQ(::sendmsg(sockets.a.get(), &msg, 0), 3);
  auto message = ReceiveWithFd(sockets.b.get());
  EXPECT_EQ(message.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(message.status().message().find("middle"), std::string::npos)
      << message.status().ToString();
}

TEST(FdPassingStreamTest, MessageCutShortIsUnavailable) {
  SocketPair sockets;
  uint8_t frame[6] = {10, 0, 0, 0, 'a', 'b'};
  ASSERT_EQ(::send(sockets.a.get(), frame, sizeof(frame), 0), 6);
  sockets.a.Reset();
  auto message = ReceiveWithFd(sockets.b.get());
  EXPECT_EQ(message.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(message.status().message().find("middle"), std::string::npos);
}

TEST(PeerCredentialsTest, ReportsThisProcess) {
  SocketPair sockets;
  auto cred = PeerCredentials(sockets.b.get());
  ASSERT_TRUE(cred.ok()) << cred.status().ToString();
  EXPECT_EQ(cred->pid, ::getpid());
  EXPECT_EQ(cred->uid, ::getuid());
  EXPECT_EQ(cred->gid, ::getgid());
  Pipe pipe;
  EXPECT_FALSE(PeerCredentials(pipe.read_end.get()).ok());
}

}  // namespace
}  // namespace jitd::ipc
