// The wire protocol's C++ side: the generated FlatBuffers types
// (ipc/protocol.fbs) and the verification every received message goes
// through before any field is read.
//
// Thread-safe, stateless functions. The returned pointers point into the
// caller's buffer and live as long as it does; the caller must pass a
// private, 8-byte aligned copy (std::vector storage is), never bytes that
// still sit in shared memory (a client could change them between
// verification and use).
#ifndef JITD_IPC_PROTOCOL_H_
#define JITD_IPC_PROTOCOL_H_

#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>
#include <vector>

#include "base/status.h"
#include "ipc/protocol_generated.h"

namespace jitd::ipc {

// Grows with compatible schema additions (see protocol.fbs).
// 2: TransferToInfeed / TransferFromOutfeed.
// 3: PERMISSION_DENIED; ExecuteRequest.resource_seed and .result_data.
// 4: CompileOptions.dumps, CompileReply.dumps, ReadDump; ExecuteReply.profile.
// 5: the client rings the daemon by writing a byte on its connection socket
//    (a request ring found asleep; see daemon/dispatcher.h), not the futex.
// 6: ExecuteRequest.resource_fill.
// 7: replicated execution: CompileOptions.num_replicas / num_partitions /
//    device_assignment, CompileReply.num_replicas / num_partitions,
//    ExecuteRequest.processes; feed replicas other than 0.
// 8: device-resident buffers: CreateBufferRequest.device, CopyBufferRequest.
inline constexpr uint32_t kProtocolVersion = 8;

// Verifier limits: a message is small; anything deeper or larger is hostile.
inline constexpr size_t kMaxMessageBytes = size_t{1} << 20;
inline constexpr uint32_t kMaxDepth = 16;
inline constexpr uint32_t kMaxTables = 4096;

// INVALID_ARGUMENT with what was wrong when `bytes` is not a well-formed
// RequestMessage (size, identifier, offsets, nesting, union type, strings).
StatusOr<const wire::RequestMessage*> VerifyRequest(std::span<const uint8_t> bytes);
StatusOr<const wire::ReplyMessage*> VerifyReply(std::span<const uint8_t> bytes);

// Reads element `i` of a vector of 8-byte scalars ([long], [ulong]) with
// memcpy. The Verifier only guarantees 4-byte alignment for vectors, so a
// hostile message can place 8-byte elements off their alignment, and
// FlatBuffers' own accessors would then load misaligned. Use these for
// every 8-byte vector read from a peer. (Little-endian hosts only, as all of
// jitd.)
template <typename T>
T ReadVectorElement(const flatbuffers::Vector<T>& v, size_t i) {
  static_assert(std::is_trivially_copyable_v<T>);
  T out;
  std::memcpy(&out, v.Data() + i * sizeof(T), sizeof(T));
  return out;
}
template <typename T>
std::vector<T> ReadVector(const flatbuffers::Vector<T>* v) {
  std::vector<T> out;
  if (v == nullptr) return out;
  out.resize(v->size());
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

// Conversions between the wire status and jitd::Status.
Status FromWire(const wire::Status* status);
wire::StatusCode ToWire(StatusCode code);

}  // namespace jitd::ipc

#endif  // JITD_IPC_PROTOCOL_H_
