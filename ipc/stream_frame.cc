#include "ipc/stream_frame.h"

#include <algorithm>
#include <cstring>

namespace jitd::ipc {

namespace {

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void PutU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
uint64_t GetU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

constexpr size_t kMaxErrorMessage = 4096;
constexpr size_t kMaxRemoteMessage = 64 * 1024;

template <typename Root>
StatusOr<const Root*> VerifyRemote(std::span<const uint8_t> bytes, const char* what) {
  if (bytes.size() < 8 || bytes.size() > kMaxRemoteMessage) {
    return InvalidArgument(std::string(what) + " of " + std::to_string(bytes.size()) +
                           " bytes: must be 8 to " + std::to_string(kMaxRemoteMessage));
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    return InvalidArgument(std::string(what) + " buffer is not 8-byte aligned");
  }
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), remote::HeapRequestIdentifier())) {
    return InvalidArgument(std::string(what) + " lacks the \"JTR1\" identifier");
  }
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), /*max_depth=*/16,
                                 /*max_tables=*/256);
  if (!verifier.VerifyBuffer<Root>(remote::HeapRequestIdentifier())) {
    return InvalidArgument(std::string(what) + " failed FlatBuffers verification");
  }
  return flatbuffers::GetRoot<Root>(bytes.data());
}

}  // namespace

std::string FrameKindName(uint8_t kind) {
  switch (static_cast<FrameKind>(kind)) {
    case FrameKind::kHello: return "HELLO";
    case FrameKind::kHelloReply: return "HELLO_REPLY";
    case FrameKind::kRequest: return "REQUEST";
    case FrameKind::kReply: return "REPLY";
    case FrameKind::kHeapRequest: return "HEAP_REQUEST";
    case FrameKind::kHeapReply: return "HEAP_REPLY";
    case FrameKind::kData: return "DATA";
    case FrameKind::kError: return "ERROR";
  }
  return "UNKNOWN(" + std::to_string(kind) + ")";
}

std::array<uint8_t, kFrameHeaderBytes> EncodeFrameHeader(FrameKind kind, uint32_t length) {
  std::array<uint8_t, kFrameHeaderBytes> out{};
  PutU32(out.data(), length);
  out[4] = static_cast<uint8_t>(kind);
  return out;  // flags and reserved stay 0
}

StatusOr<FrameHeader> DecodeFrameHeader(std::span<const uint8_t, kFrameHeaderBytes> bytes) {
  FrameHeader header;
  header.length = GetU32(bytes.data());
  const uint8_t kind = bytes[4];
  if (kind < static_cast<uint8_t>(FrameKind::kHello) ||
      kind > static_cast<uint8_t>(FrameKind::kError)) {
    return InvalidArgument("frame header: unknown frame kind " + std::to_string(kind));
  }
  header.kind = static_cast<FrameKind>(kind);
  if (bytes[5] != 0 || bytes[6] != 0 || bytes[7] != 0) {
    return InvalidArgument("frame header (" + FrameKindName(kind) +
                           "): flags and reserved bytes must be 0");
  }
  if (header.length > kMaxFramePayload) {
    return InvalidArgument("frame header (" + FrameKindName(kind) + "): payload of " +
                           std::to_string(header.length) + " bytes exceeds the limit of " +
                           std::to_string(kMaxFramePayload));
  }
  return header;
}

Status AppendFrame(std::vector<uint8_t>* out, FrameKind kind, std::span<const uint8_t> payload) {
  if (payload.size() > kMaxFramePayload) {
    return InvalidArgument(FrameKindName(static_cast<uint8_t>(kind)) + " frame payload of " +
                           std::to_string(payload.size()) + " bytes exceeds the limit of " +
                           std::to_string(kMaxFramePayload));
  }
  const auto header = EncodeFrameHeader(kind, static_cast<uint32_t>(payload.size()));
  out->insert(out->end(), header.begin(), header.end());
  out->insert(out->end(), payload.begin(), payload.end());
  return Status::Ok();
}

std::array<uint8_t, kFrameHeaderBytes + kDataOffsetBytes> EncodeDataPrefix(uint64_t offset,
                                                                          uint32_t length) {
  std::array<uint8_t, kFrameHeaderBytes + kDataOffsetBytes> out{};
  const auto header =
      EncodeFrameHeader(FrameKind::kData, static_cast<uint32_t>(kDataOffsetBytes + length));
  std::copy(header.begin(), header.end(), out.begin());
  PutU64(out.data() + kFrameHeaderBytes, offset);
  return out;
}

StatusOr<DataChunk> ParseDataPayload(std::span<const uint8_t> payload) {
  if (payload.size() < kDataOffsetBytes) {
    return InvalidArgument("DATA frame of " + std::to_string(payload.size()) +
                           " bytes lacks its 8-byte heap offset");
  }
  if (payload.size() - kDataOffsetBytes > kMaxDataChunk) {
    return InvalidArgument("DATA frame carries " +
                           std::to_string(payload.size() - kDataOffsetBytes) +
                           " bytes, over the chunk limit of " + std::to_string(kMaxDataChunk));
  }
  DataChunk chunk;
  chunk.offset = GetU64(payload.data());
  chunk.bytes = payload.subspan(kDataOffsetBytes);
  return chunk;
}

std::vector<uint8_t> EncodeErrorPayload(const Status& status) {
  const std::string& message = status.message();
  const size_t n = std::min(message.size(), kMaxErrorMessage);
  std::vector<uint8_t> out(4 + n);
  const StatusCode code = status.ok() ? StatusCode::kInternal : status.code();
  PutU32(out.data(), static_cast<uint32_t>(code));
  std::memcpy(out.data() + 4, message.data(), n);
  return out;
}

Status DecodeErrorPayload(std::span<const uint8_t> payload) {
  if (payload.size() < 4) {
    return Internal("malformed ERROR frame from the daemon (" + std::to_string(payload.size()) +
                    " bytes)");
  }
  const uint32_t code = GetU32(payload.data());
  std::string message(reinterpret_cast<const char*>(payload.data() + 4), payload.size() - 4);
  if (code == 0 || code > static_cast<uint32_t>(StatusCode::kPermissionDenied)) {
    return Internal("ERROR frame with unknown status code " + std::to_string(code) + ": " +
                    message);
  }
  return Status(static_cast<StatusCode>(code), std::move(message));
}

StatusOr<const remote::RemoteHello*> VerifyRemoteHello(std::span<const uint8_t> bytes) {
  return VerifyRemote<remote::RemoteHello>(bytes, "remote hello");
}
StatusOr<const remote::RemoteHelloReply*> VerifyRemoteHelloReply(std::span<const uint8_t> bytes) {
  return VerifyRemote<remote::RemoteHelloReply>(bytes, "remote hello reply");
}
StatusOr<const remote::HeapRequest*> VerifyHeapRequest(std::span<const uint8_t> bytes) {
  return VerifyRemote<remote::HeapRequest>(bytes, "heap request");
}
StatusOr<const remote::HeapReply*> VerifyHeapReply(std::span<const uint8_t> bytes) {
  return VerifyRemote<remote::HeapReply>(bytes, "heap reply");
}

void FrameDecoder::Feed(std::span<const uint8_t> bytes) {
  if (!error_.ok()) return;
  // Drop what was consumed before growing, so the buffer holds at most one
  // partial frame plus the new bytes.
  if (consumed_ > 0) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<ptrdiff_t>(consumed_));
    consumed_ = 0;
  }
  buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

StatusOr<bool> FrameDecoder::Next(Frame* out) {
  if (!error_.ok()) return error_;
  const size_t available = buffer_.size() - consumed_;
  if (available < kFrameHeaderBytes) return false;
  const uint8_t* start = buffer_.data() + consumed_;
  StatusOr<FrameHeader> header =
      DecodeFrameHeader(std::span<const uint8_t, kFrameHeaderBytes>(start, kFrameHeaderBytes));
  if (!header.ok()) {
    error_ = header.status();
    return error_;
  }
  if (available - kFrameHeaderBytes < header->length) return false;
  out->kind = header->kind;
  out->payload = std::span<const uint8_t>(start + kFrameHeaderBytes, header->length);
  consumed_ += kFrameHeaderBytes + header->length;
  return true;
}

}  // namespace jitd::ipc
