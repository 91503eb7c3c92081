#include "ipc/segment.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <string>

#include "ipc/fd_passing.h"

namespace jitd::ipc {
namespace {

constexpr uint64_t kSize = 1 << 20;

UniqueFd Dup(int fd) { return UniqueFd(::fcntl(fd, F_DUPFD_CLOEXEC, 0)); }

std::span<const uint8_t> AsBytes(const void* p, size_t n) {
  return {static_cast<const uint8_t*>(p), n};
}

template <typename T>
void WriteAt(int fd, uint64_t offset, const T& value) {
  ASSERT_EQ(::pwrite(fd, &value, sizeof(value), static_cast<off_t>(offset)),
            static_cast<ssize_t>(sizeof(value)));
}

TEST(SegmentTest, CreateRejectsBadSizes) {
  EXPECT_EQ(Segment::Create(4096).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Segment::Create(Segment::kMaxSize + 1).status().code(), StatusCode::kInvalidArgument);
  SegmentLayout layout;
  layout.request_ring.slot_count = 3;
  EXPECT_EQ(Segment::Create(kSize, layout).status().code(), StatusCode::kInvalidArgument);
}

TEST(SegmentTest, CreateSealsAndLaysOut) {
  auto segment = Segment::Create(kSize - 100);  // rounded up to pages
  ASSERT_TRUE(segment.ok()) << segment.status().ToString();
  EXPECT_EQ((*segment)->size(), kSize);
  const int seals = ::fcntl((*segment)->fd(), F_GET_SEALS);
  EXPECT_TRUE(seals & F_SEAL_SHRINK);
  EXPECT_TRUE(seals & F_SEAL_GROW);
  EXPECT_NE(::ftruncate((*segment)->fd(), 4096), 0);  // cannot shrink it
  EXPECT_GT((*segment)->heap_size(), Segment::kMinHeapSize);
  EXPECT_LT((*segment)->heap_size(), kSize);
  EXPECT_EQ((*segment)->request_ring().slot_count(), 256u);
}

TEST(SegmentTest, CreateAllocatesThePrefaultedPrefix) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok()) << segment.status().ToString();
  const uint64_t prefault = Segment::PrefaultBytes((*segment)->size());
  ASSERT_GT(prefault, 0u);
  // The memfd's blocks are allocated already (posix_fallocate), not on first touch.
  struct stat st;
  ASSERT_EQ(::fstat((*segment)->fd(), &st), 0);
  EXPECT_GE(static_cast<uint64_t>(st.st_blocks) * 512, prefault);
  EXPECT_EQ(Segment::PrefaultBytes(uint64_t{1} << 30), Segment::kPrefaultLimit);
}

TEST(SegmentTest, AttachInSameProcessSharesRingsAndHeap) {
  auto daemon = Segment::Create(kSize);
  ASSERT_TRUE(daemon.ok());
  auto client = Segment::Attach(Dup((*daemon)->fd()));
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  EXPECT_EQ((*client)->heap_size(), (*daemon)->heap_size());

  // Request: client -> daemon, inline.
  ASSERT_TRUE((*client)->request_ring().TryPush(AsBytes("ping", 4)).ok());
  RingMessage m;
  ASSERT_TRUE((*daemon)->request_ring().Pop(&m).ok());
  EXPECT_EQ(std::string(m.bytes.begin(), m.bytes.end()), "ping");

  // A large request goes through the heap, allocated by the client.
  std::string big(100000, 'q');
  big[777] = '!';
  RingHeapRef ref;
  ASSERT_TRUE((*client)->TryPushMessage((*client)->request_ring(), AsBytes(big.data(), big.size()),
                                        &ref).ok());
  EXPECT_EQ(ref.length, big.size());
  ASSERT_TRUE((*daemon)->request_ring().Pop(&m).ok());
  ASSERT_EQ(m.kind, RingMessageKind::kHeapRef);
  auto copy = (*daemon)->CopyFromHeap(m.heap);
  ASSERT_TRUE(copy.ok());
  EXPECT_EQ(std::string(copy->begin(), copy->end()), big);
  const uint64_t free_before = (*client)->heap_free_bytes();
  EXPECT_TRUE((*client)->Deallocate(ref).ok());
  EXPECT_GT((*client)->heap_free_bytes(), free_before);

  // Reply: daemon -> client, small enough to go inline.
  ASSERT_TRUE((*daemon)->TryPushMessage((*daemon)->reply_ring(), AsBytes("pong", 4), &ref).ok());
  EXPECT_EQ(ref.length, 0u);
  ASSERT_TRUE((*client)->reply_ring().Pop(&m).ok());
  EXPECT_EQ(std::string(m.bytes.begin(), m.bytes.end()), "pong");
}

TEST(SegmentTest, HeapBoundsAndExhaustion) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  Segment& s = **segment;
  EXPECT_EQ(s.Allocate(s.heap_size() + 1).status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.Allocate(s.heap_size() - 16).status().code(), StatusCode::kResourceExhausted);
  auto block = s.Allocate(1000);
  ASSERT_TRUE(block.ok());
  auto view = s.HeapBytes(*block);
  ASSERT_TRUE(view.ok());
  EXPECT_EQ(view->size(), 1000u);
  EXPECT_FALSE(s.HeapBytes({s.heap_size() - 10, 11}).ok());
  EXPECT_FALSE(s.HeapBytes({~uint64_t{0} - 5, 10}).ok());
  EXPECT_FALSE(s.CopyFromHeap({s.heap_size() + 1, 0}).ok());
  EXPECT_TRUE(s.HeapBytes({s.heap_size(), 0}).ok());
  EXPECT_FALSE(s.Deallocate({s.heap_size(), 1}).ok());
  EXPECT_TRUE(s.Deallocate(*block).ok());
}

TEST(SegmentTest, AttachRefusesWrongMagic) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  WriteAt((*segment)->fd(), 0, uint64_t{0x1234});
  auto attached = Segment::Attach(Dup((*segment)->fd()));
  EXPECT_EQ(attached.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(attached.status().message().find("bad magic"), std::string::npos);
}

TEST(SegmentTest, AttachRefusesWrongVersion) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  WriteAt((*segment)->fd(), offsetof(SegmentHeader, layout_version), uint32_t{2});
  auto attached = Segment::Attach(Dup((*segment)->fd()));
  EXPECT_NE(attached.status().message().find("layout version 2"), std::string::npos);
}

TEST(SegmentTest, AttachRefusesRegionsOutsideTheSegment) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  const int fd = (*segment)->fd();
  WriteAt(fd, offsetof(SegmentHeader, heap) + 8, uint64_t{kSize});  // heap size too big
  auto attached = Segment::Attach(Dup(fd));
  EXPECT_NE(attached.status().message().find("heap"), std::string::npos)
      << attached.status().ToString();
  EXPECT_NE(attached.status().message().find("outside"), std::string::npos);

  auto other = Segment::Create(kSize);
  ASSERT_TRUE(other.ok());
  // The reply ring moved onto the request ring.
  WriteAt((*other)->fd(), offsetof(SegmentHeader, reply_ring), uint64_t{4096});
  auto overlapping = Segment::Attach(Dup((*other)->fd()));
  EXPECT_NE(overlapping.status().message().find("overlaps"), std::string::npos)
      << overlapping.status().ToString();
}

TEST(SegmentTest, AttachRefusesCorruptRingHeader) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  WriteAt((*segment)->fd(), 4096 + offsetof(RingHeader, slot_count), uint32_t{1u << 19});
  auto attached = Segment::Attach(Dup((*segment)->fd()));
  EXPECT_NE(attached.status().message().find("request ring"), std::string::npos)
      << attached.status().ToString();
}

// A copy of a good segment's first `size` bytes in a fresh sealed memfd.
UniqueFd TruncatedCopy(int fd, uint64_t size, bool seal) {
  UniqueFd copy(::memfd_create("truncated", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  std::string bytes(size, '\0');
  EXPECT_EQ(::pread(fd, bytes.data(), size, 0), static_cast<ssize_t>(size));
  EXPECT_EQ(::write(copy.get(), bytes.data(), size), static_cast<ssize_t>(size));
  if (seal) EXPECT_EQ(::fcntl(copy.get(), F_ADD_SEALS, F_SEAL_SHRINK), 0);
  return copy;
}

TEST(SegmentTest, AttachRefusesTruncatedSegment) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  auto truncated = Segment::Attach(TruncatedCopy((*segment)->fd(), kSize / 2, true));
  EXPECT_EQ(truncated.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos)
      << truncated.status().ToString();
  auto tiny = Segment::Attach(TruncatedCopy((*segment)->fd(), 100, true));
  EXPECT_NE(tiny.status().message().find("truncated"), std::string::npos);
}

TEST(SegmentTest, AttachRefusesUnsealedOrNonMemfd) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  auto unsealed = Segment::Attach(TruncatedCopy((*segment)->fd(), kSize, false));
  EXPECT_NE(unsealed.status().message().find("not sealed"), std::string::npos);
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  UniqueFd keep_write(pipe_fds[1]);
  EXPECT_FALSE(Segment::Attach(UniqueFd(pipe_fds[0])).ok());
  EXPECT_FALSE(Segment::Attach(UniqueFd()).ok());
}

// The real data path: the daemon creates the segment, passes the memfd over
// a Unix socket to another process, which attaches and answers requests.
// `spin` = 0 makes both sides sleep on the futex doorbell for every message.
void PingPongAcrossFork(uint64_t rounds, std::chrono::nanoseconds spin) {
  auto segment = Segment::Create(kSize);
  ASSERT_TRUE(segment.ok());
  int sockets[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
  UniqueFd parent_socket(sockets[0]), child_socket(sockets[1]);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Child (the "daemon side" answering): exit code 0 = success.
    parent_socket.Reset();
    auto message = ReceiveWithFd(child_socket.get());
    if (!message.ok() || !message->fd.valid()) ::_exit(10);
    uint64_t count;
    if (message->payload.size() != 8) ::_exit(11);
    std::memcpy(&count, message->payload.data(), 8);
    auto attached = Segment::Attach(std::move(message->fd));
    if (!attached.ok()) ::_exit(12);
    WaitOptions wait;
    wait.spin = spin;
    wait.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    RingMessage m;
    for (uint64_t i = 0; i < count; ++i) {
      if (!(*attached)->request_ring().Pop(&m, wait).ok()) ::_exit(13);
      if (m.bytes.size() != 8) ::_exit(14);
      uint64_t v;
      std::memcpy(&v, m.bytes.data(), 8);
      if (v != i) ::_exit(15);
      ++v;
      if (!(*attached)->reply_ring().Push(AsBytes(&v, 8), wait).ok()) ::_exit(16);
    }
    ::_exit(0);
  }
  child_socket.Reset();
  ASSERT_TRUE(SendWithFd(parent_socket.get(), (*segment)->fd(), AsBytes(&rounds, 8)).ok());
  WaitOptions wait;
  wait.spin = spin;
  wait.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  RingMessage m;
  uint64_t sum = 0, replies = 0;
  for (uint64_t i = 0; i < rounds; ++i) {
    Status pushed = (*segment)->request_ring().Push(AsBytes(&i, 8), wait);
    if (!pushed.ok()) {
      ADD_FAILURE() << pushed.ToString();
      break;
    }
    Status popped = (*segment)->reply_ring().Pop(&m, wait);
    if (!popped.ok() || m.bytes.size() != 8) {
      ADD_FAILURE() << "round " << i << ": " << popped.ToString();
      break;
    }
    uint64_t v;
    std::memcpy(&v, m.bytes.data(), 8);
    EXPECT_EQ(v, i + 1);
    sum += v;
    ++replies;
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(pid, &wstatus, 0), pid);
  EXPECT_TRUE(WIFEXITED(wstatus));
  EXPECT_EQ(WEXITSTATUS(wstatus), 0);
  EXPECT_EQ(replies, rounds);
  EXPECT_EQ(sum, rounds * (rounds + 1) / 2);
  if (spin.count() == 0) EXPECT_GT((*segment)->reply_ring().futex_waits(), 0u);
}

TEST(SegmentTest, PingPongAcrossForkSpinThenSleep) {
  PingPongAcrossFork(100000, std::chrono::microseconds(5));
}

TEST(SegmentTest, PingPongAcrossForkAlwaysSleeping) {
  PingPongAcrossFork(10000, std::chrono::nanoseconds(0));
}

}  // namespace
}  // namespace jitd::ipc
