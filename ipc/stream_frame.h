// Stream frames: how jitd messages travel over a byte stream (TCP, TLS) to
// remote clients, where there is no shared memory (docs/REMOTE.md, "Remote
// wire").
//
// A frame is an 8-byte header followed by `length` payload bytes:
//
//   u32 length (LE) | u8 kind | u8 flags (0) | u16 reserved (0) | payload
//
// `length` is at most kMaxFramePayload; a larger length, an unknown kind, or
// nonzero flags / reserved bits make the frame malformed, and the receiver
// closes the connection (the daemon after a best-effort ERROR frame).
//
// Payloads by kind:
//   HELLO         client -> daemon, first frame: remote::RemoteHello
//   HELLO_REPLY   daemon -> client: remote::RemoteHelloReply
//   REQUEST       client -> daemon: wire::RequestMessage (protocol.fbs)
//   REPLY         daemon -> client: wire::ReplyMessage, one per REQUEST, in order
//   HEAP_REQUEST  client -> daemon: remote::HeapRequest (allocate/free/read)
//   HEAP_REPLY    daemon -> client: remote::HeapReply, one per HEAP_REQUEST
//   DATA          both ways: u64 heap offset (LE) | bytes (<= kMaxDataChunk)
//                 client -> daemon: written into an allocated heap range;
//                 daemon -> client: the bytes of a ReadRequest, before its
//                 HEAP_REPLY
//   ERROR         daemon -> client: u32 wire::StatusCode (LE) | UTF-8 message;
//                 the daemon closes the connection after it
//
// Frames from one side are handled in the order sent, so a client may send
// DATA, then a REQUEST that names those bytes, without waiting.
//
// Thread safety: free functions are stateless; a FrameDecoder is used by one
// thread at a time. The decoded views point into the decoder's buffer and
// live until its next Feed.
#ifndef JITD_IPC_STREAM_FRAME_H_
#define JITD_IPC_STREAM_FRAME_H_

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "ipc/remote_generated.h"

namespace jitd::ipc {

// Grows with compatible additions to remote.fbs and the frame kinds.
// 1: the first remote wire (hello, request/reply, heap ops, data, error).
inline constexpr uint32_t kRemoteProtocolVersion = 1;

enum class FrameKind : uint8_t {
  kHello = 1,
  kHelloReply = 2,
  kRequest = 3,
  kReply = 4,
  kHeapRequest = 5,
  kHeapReply = 6,
  kData = 7,
  kError = 8,
};
// "HELLO", "DATA", ...; "UNKNOWN(n)" for other values.
std::string FrameKindName(uint8_t kind);

inline constexpr size_t kFrameHeaderBytes = 8;
// Data bytes in one DATA frame, and the largest payload of any frame (a
// DATA frame's offset + a full chunk; messages are capped by
// kMaxMessageBytes = 1 MiB, below it).
inline constexpr uint32_t kMaxDataChunk = uint32_t{1} << 20;
inline constexpr uint32_t kMaxFramePayload = kMaxDataChunk + 64;
inline constexpr size_t kDataOffsetBytes = 8;

struct FrameHeader {
  uint32_t length = 0;
  FrameKind kind = FrameKind::kError;
};

// The 8 header bytes of a frame of `kind` carrying `length` payload bytes.
std::array<uint8_t, kFrameHeaderBytes> EncodeFrameHeader(FrameKind kind, uint32_t length);
// Checks a received header: INVALID_ARGUMENT naming the problem (length over
// the cap, unknown kind, nonzero flags or reserved bits).
StatusOr<FrameHeader> DecodeFrameHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes);

// Appends a whole frame (header + payload) to `out`. The payload must be at
// most kMaxFramePayload bytes (INVALID_ARGUMENT otherwise, nothing appended).
Status AppendFrame(std::vector<uint8_t>* out, FrameKind kind, std::span<const uint8_t> payload);

// DATA frames. The header + offset prefix of a DATA frame carrying `length`
// bytes at heap `offset` (the bytes follow it on the stream).
std::array<uint8_t, kFrameHeaderBytes + kDataOffsetBytes> EncodeDataPrefix(uint64_t offset,
                                                                          uint32_t length);
struct DataChunk {
  uint64_t offset = 0;
  std::span<const uint8_t> bytes;
};
// Splits a DATA payload: INVALID_ARGUMENT when it is shorter than the offset
// or carries more than kMaxDataChunk bytes.
StatusOr<DataChunk> ParseDataPayload(std::span<const uint8_t> payload);

// ERROR frames: the payload for `status` (not OK; the message is cut to
// 4 KiB), and the Status a payload holds (a malformed payload becomes an
// INTERNAL status saying so; never OK).
std::vector<uint8_t> EncodeErrorPayload(const Status& status);
Status DecodeErrorPayload(std::span<const uint8_t> payload);

// Verification of remote.fbs messages, like VerifyRequest (protocol.h):
// the caller passes a private, 8-byte aligned copy; INVALID_ARGUMENT naming
// what was wrong (size, identifier, FlatBuffers verification).
StatusOr<const remote::RemoteHello*> VerifyRemoteHello(std::span<const uint8_t> bytes);
StatusOr<const remote::RemoteHelloReply*> VerifyRemoteHelloReply(std::span<const uint8_t> bytes);
StatusOr<const remote::HeapRequest*> VerifyHeapRequest(std::span<const uint8_t> bytes);
StatusOr<const remote::HeapReply*> VerifyHeapReply(std::span<const uint8_t> bytes);

// Incremental decoder over a byte stream (what arrives is fed in pieces of
// any size): after Feed, Next yields each complete frame in turn. A
// malformed header puts the decoder in a failed state: Next returns the
// error from then on.
class FrameDecoder {
 public:
  struct Frame {
    FrameKind kind;
    // Valid until the next Feed; not aligned: copy it before verifying.
    std::span<const uint8_t> payload;
  };

  void Feed(std::span<const uint8_t> bytes);
  // A complete frame (true), none yet (false), or the stream's error.
  StatusOr<bool> Next(Frame* out);
  // Bytes buffered but not yet returned as frames.
  size_t buffered() const { return buffer_.size() - consumed_; }

 private:
  std::vector<uint8_t> buffer_;
  size_t consumed_ = 0;
  Status error_;
};

}  // namespace jitd::ipc

#endif  // JITD_IPC_STREAM_FRAME_H_
