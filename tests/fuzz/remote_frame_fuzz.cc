// libFuzzer target for the remote wire (ipc/stream_frame.h, ipc/remote.fbs,
// daemon/remote_heap.h): the byte stream a hostile remote client sends,
// taken apart the way the daemon's connection does it (daemon/
// remote_server.cc), on the same functions:
//
//   - the input's first byte picks how the stream is cut into reads (1 to
//     256 bytes each, a pseudo-random sequence seeded by it); the rest is
//     the stream, fed to a FrameDecoder piece by piece;
//   - every frame header passes DecodeFrameHeader (the decoder's) or the
//     stream ends, as the connection closes;
//   - HELLO and HEAP_REQUEST payloads go through VerifyRemoteHello /
//     VerifyHeapRequest on an aligned private copy; a verified heap request
//     is applied to a RemoteHeap over a 1 MiB buffer (allocate, free, read:
//     CheckRange, then the bytes are read from the buffer);
//   - DATA payloads go through ParseDataPayload and RemoteHeap::CheckRange,
//     then are copied into the buffer, as the daemon reads them into the
//     session's heap;
//   - ERROR payloads go through DecodeErrorPayload (a client's decoder);
//     REQUEST payloads through ipc::VerifyRequest (Session::Handle's first
//     step; the session itself is daemon_fuzz.cc's).
//
// Contract: no crash, overflow or leak (ASan/UBSan); a decoded payload is
// never longer than kMaxFramePayload; a range CheckRange accepts lies inside
// the heap buffer and inside one live allocation of the model kept here,
// and live allocations never overlap; DecodeErrorPayload is never OK.
// A broken contract ends in __builtin_trap().
//
// Seeds: `jitd_remote_frame_fuzz --write-seeds=DIR` writes valid streams
// (hello; allocate, DATA, read, free; a request; an error) and exits; ctest
// does that before its short run (tests/CMakeLists.txt).
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "daemon/remote_heap.h"
#include "ipc/protocol.h"
#include "ipc/stream_frame.h"

namespace {

constexpr uint64_t kHeapBytes = uint64_t{1} << 20;

void Check(bool condition) {
  if (!condition) __builtin_trap();
}

struct Model {
  jitd::daemon::RemoteHeap heap{kHeapBytes};
  std::vector<uint8_t> bytes = std::vector<uint8_t>(kHeapBytes);
  std::map<uint64_t, uint64_t> live;  // offset -> requested length

  void CheckedRange(uint64_t offset, uint64_t length) {
    Check(offset <= kHeapBytes && length <= kHeapBytes - offset);
    auto it = live.upper_bound(offset);
    Check(it != live.begin());
    --it;
    const uint64_t rounded = (std::max<uint64_t>(it->second, 1) + 63) / 64 * 64;
    Check(offset >= it->first && offset + length <= it->first + rounded);
  }

  void Apply(const jitd::remote::HeapRequest& request) {
    if (request.op() == nullptr) return;  // refused as malformed, as the daemon does
    switch (request.op_type()) {
      case jitd::remote::HeapOp_AllocateRequest: {
        const uint64_t n = request.op_as_AllocateRequest()->bytes();
        jitd::StatusOr<uint64_t> offset = heap.Allocate(n);
        if (!offset.ok()) return;
        Check(*offset % 64 == 0 && *offset < kHeapBytes);
        const uint64_t rounded = (std::max<uint64_t>(n, 1) + 63) / 64 * 64;
        auto next = live.lower_bound(*offset);
        if (next != live.end()) Check(*offset + rounded <= next->first);
        if (next != live.begin()) {
          auto prev = std::prev(next);
          Check(prev->first + (std::max<uint64_t>(prev->second, 1) + 63) / 64 * 64 <= *offset);
        }
        live[*offset] = n;
        return;
      }
      case jitd::remote::HeapOp_FreeRequest: {
        const uint64_t offset = request.op_as_FreeRequest()->offset();
        const bool ok = heap.Free(offset).ok();
        Check(ok == (live.count(offset) == 1));
        live.erase(offset);
        return;
      }
      case jitd::remote::HeapOp_ReadRequest: {
        const auto* read = request.op_as_ReadRequest();
        if (!heap.CheckRange(read->offset(), read->length()).ok()) return;
        CheckedRange(read->offset(), read->length());
        volatile uint8_t sink = 0;
        for (uint64_t i = 0; i < read->length(); i += 4096) sink ^= bytes[read->offset() + i];
        (void)sink;
        return;
      }
      default:
        return;
    }
  }

  void Data(std::span<const uint8_t> payload) {
    jitd::StatusOr<jitd::ipc::DataChunk> chunk = jitd::ipc::ParseDataPayload(payload);
    if (!chunk.ok()) return;
    Check(chunk->bytes.size() <= jitd::ipc::kMaxDataChunk);
    if (!heap.CheckRange(chunk->offset, chunk->bytes.size()).ok()) return;
    CheckedRange(chunk->offset, chunk->bytes.size());
    std::memcpy(bytes.data() + chunk->offset, chunk->bytes.data(), chunk->bytes.size());
  }
};

}  // namespace

namespace {

void AppendHeapRequest(std::vector<uint8_t>* out, uint64_t id, jitd::remote::HeapOp type,
                       uint64_t a, uint64_t b) {
  flatbuffers::FlatBufferBuilder fbb;
  flatbuffers::Offset<void> op;
  if (type == jitd::remote::HeapOp_AllocateRequest) {
    op = jitd::remote::CreateAllocateRequest(fbb, a).Union();
  } else if (type == jitd::remote::HeapOp_FreeRequest) {
    op = jitd::remote::CreateFreeRequest(fbb, a).Union();
  } else {
    op = jitd::remote::CreateReadRequest(fbb, a, b).Union();
  }
  fbb.Finish(jitd::remote::CreateHeapRequest(fbb, id, type, op),
             jitd::remote::HeapRequestIdentifier());
  (void)jitd::ipc::AppendFrame(out, jitd::ipc::FrameKind::kHeapRequest,
                               {fbb.GetBufferPointer(), fbb.GetSize()});
}

void WriteSeeds(const std::string& dir) {
  auto write = [&](const std::string& name, const std::vector<uint8_t>& stream) {
    std::ofstream out(dir + "/" + name, std::ios::binary);
    const char cut = 7;
    out.write(&cut, 1);
    out.write(reinterpret_cast<const char*>(stream.data()),
              static_cast<std::streamsize>(stream.size()));
  };
  std::vector<uint8_t> hello;
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto name = fbb.CreateString("seed");
    auto token = fbb.CreateString("alice-0123456789abcdef");
    fbb.Finish(jitd::remote::CreateRemoteHello(fbb, jitd::ipc::kRemoteProtocolVersion, name,
                                               token),
               jitd::remote::HeapRequestIdentifier());
    (void)jitd::ipc::AppendFrame(&hello, jitd::ipc::FrameKind::kHello,
                                 {fbb.GetBufferPointer(), fbb.GetSize()});
  }
  write("hello", hello);
  std::vector<uint8_t> heap = hello;
  AppendHeapRequest(&heap, 1, jitd::remote::HeapOp_AllocateRequest, 100, 0);
  AppendHeapRequest(&heap, 2, jitd::remote::HeapOp_AllocateRequest, 300, 0);
  auto prefix = jitd::ipc::EncodeDataPrefix(0, 100);
  heap.insert(heap.end(), prefix.begin(), prefix.end());
  heap.insert(heap.end(), 100, 0x42);
  AppendHeapRequest(&heap, 3, jitd::remote::HeapOp_ReadRequest, 0, 100);
  AppendHeapRequest(&heap, 4, jitd::remote::HeapOp_FreeRequest, 0, 0);
  AppendHeapRequest(&heap, 5, jitd::remote::HeapOp_ReadRequest, 128, 300);
  write("heap", heap);
  std::vector<uint8_t> request = hello;
  {
    flatbuffers::FlatBufferBuilder fbb;
    auto body = jitd::wire::CreateStatsRequest(fbb);
    fbb.Finish(jitd::wire::CreateRequestMessage(fbb, 9, jitd::wire::Request_StatsRequest,
                                                body.Union()),
               jitd::wire::RequestMessageIdentifier());
    (void)jitd::ipc::AppendFrame(&request, jitd::ipc::FrameKind::kRequest,
                                 {fbb.GetBufferPointer(), fbb.GetSize()});
  }
  auto error = jitd::ipc::EncodeErrorPayload(jitd::Status(jitd::StatusCode::kPermissionDenied,
                                                          "no"));
  (void)jitd::ipc::AppendFrame(&request, jitd::ipc::FrameKind::kError, error);
  write("request", request);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const std::string flag = "--write-seeds=";
  for (int i = 1; i < *argc; ++i) {
    const std::string arg = (*argv)[i];
    if (arg.rfind(flag, 0) == 0) {
      WriteSeeds(arg.substr(flag.size()));
      std::exit(0);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  uint32_t cut = data[0] * 2654435761u + 1;
  std::span<const uint8_t> stream(data + 1, size - 1);
  jitd::ipc::FrameDecoder decoder;
  Model model;
  std::vector<uint8_t> aligned;
  while (!stream.empty()) {
    cut = cut * 1103515245u + 12345u;
    const size_t n = std::min<size_t>(stream.size(), 1 + (cut >> 16) % 256);
    decoder.Feed(stream.first(n));
    stream = stream.subspan(n);
    jitd::ipc::FrameDecoder::Frame frame;
    while (true) {
      jitd::StatusOr<bool> next = decoder.Next(&frame);
      if (!next.ok()) return 0;  // the connection closes
      if (!*next) break;
      Check(frame.payload.size() <= jitd::ipc::kMaxFramePayload);
      aligned.assign(frame.payload.begin(), frame.payload.end());
      switch (frame.kind) {
        case jitd::ipc::FrameKind::kHello:
          (void)jitd::ipc::VerifyRemoteHello(aligned);
          break;
        case jitd::ipc::FrameKind::kHeapRequest: {
          auto request = jitd::ipc::VerifyHeapRequest(aligned);
          if (request.ok()) model.Apply(**request);
          break;
        }
        case jitd::ipc::FrameKind::kData:
          model.Data(frame.payload);
          break;
        case jitd::ipc::FrameKind::kError:
          Check(!jitd::ipc::DecodeErrorPayload(frame.payload).ok());
          break;
        case jitd::ipc::FrameKind::kRequest:
          (void)jitd::ipc::VerifyRequest(aligned);
          break;
        case jitd::ipc::FrameKind::kHelloReply:
          (void)jitd::ipc::VerifyRemoteHelloReply(aligned);
          break;
        case jitd::ipc::FrameKind::kHeapReply:
          (void)jitd::ipc::VerifyHeapReply(aligned);
          break;
        default:
          break;
      }
    }
  }
  return 0;
}
