#include "ipc/protocol.h"

#include <string>

namespace jitd::ipc {

namespace {

template <typename Root>
StatusOr<const Root*> Verify(std::span<const uint8_t> bytes, const char* what) {
  if (bytes.size() < 8) {
    return InvalidArgument(std::string(what) + " of " + std::to_string(bytes.size()) +
                           " bytes is too short");
  }
  if (bytes.size() > kMaxMessageBytes) {
    return InvalidArgument(std::string(what) + " of " + std::to_string(bytes.size()) +
                           " bytes exceeds the limit of " + std::to_string(kMaxMessageBytes));
  }
  // The Verifier checks alignment relative to the buffer's start, and
  // FlatBuffers reads 8-byte scalars in place: the start must be aligned.
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint64_t) != 0) {
    return InvalidArgument(std::string(what) + " buffer is not 8-byte aligned");
  }
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), wire::RequestMessageIdentifier())) {
    return InvalidArgument(std::string(what) + " lacks the \"JTD1\" identifier");
  }
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), kMaxDepth, kMaxTables);
  if (!verifier.VerifyBuffer<Root>(wire::RequestMessageIdentifier())) {
    return InvalidArgument(std::string(what) + " failed FlatBuffers verification");
  }
  return flatbuffers::GetRoot<Root>(bytes.data());
}

}  // namespace

StatusOr<const wire::RequestMessage*> VerifyRequest(std::span<const uint8_t> bytes) {
  return Verify<wire::RequestMessage>(bytes, "request");
}

StatusOr<const wire::ReplyMessage*> VerifyReply(std::span<const uint8_t> bytes) {
  return Verify<wire::ReplyMessage>(bytes, "reply");
}

wire::StatusCode ToWire(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return wire::StatusCode_OK;
    case StatusCode::kInvalidArgument: return wire::StatusCode_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return wire::StatusCode_NOT_FOUND;
    case StatusCode::kAlreadyExists: return wire::StatusCode_ALREADY_EXISTS;
    case StatusCode::kResourceExhausted: return wire::StatusCode_RESOURCE_EXHAUSTED;
    case StatusCode::kFailedPrecondition: return wire::StatusCode_FAILED_PRECONDITION;
    case StatusCode::kUnimplemented: return wire::StatusCode_UNIMPLEMENTED;
    case StatusCode::kUnavailable: return wire::StatusCode_UNAVAILABLE;
    case StatusCode::kDeadlineExceeded: return wire::StatusCode_DEADLINE_EXCEEDED;
    case StatusCode::kInternal: return wire::StatusCode_INTERNAL;
    case StatusCode::kPermissionDenied: return wire::StatusCode_PERMISSION_DENIED;
  }
  return wire::StatusCode_INTERNAL;
}

Status FromWire(const wire::Status* status) {
  if (!status || status->code() == wire::StatusCode_OK) return Status::Ok();
  const std::string message = status->message() ? status->message()->str() : "";
  switch (status->code()) {
    case wire::StatusCode_INVALID_ARGUMENT: return Status(StatusCode::kInvalidArgument, message);
    case wire::StatusCode_NOT_FOUND: return Status(StatusCode::kNotFound, message);
    case wire::StatusCode_ALREADY_EXISTS: return Status(StatusCode::kAlreadyExists, message);
    case wire::StatusCode_RESOURCE_EXHAUSTED: return Status(StatusCode::kResourceExhausted, message);
    case wire::StatusCode_FAILED_PRECONDITION: return Status(StatusCode::kFailedPrecondition, message);
    case wire::StatusCode_UNIMPLEMENTED: return Status(StatusCode::kUnimplemented, message);
    case wire::StatusCode_UNAVAILABLE: return Status(StatusCode::kUnavailable, message);
    case wire::StatusCode_DEADLINE_EXCEEDED: return Status(StatusCode::kDeadlineExceeded, message);
    case wire::StatusCode_INTERNAL: return Status(StatusCode::kInternal, message);
    case wire::StatusCode_PERMISSION_DENIED: return Status(StatusCode::kPermissionDenied, message);
    default:
      return Status(StatusCode::kInternal,
                    "unknown status code " + std::to_string(static_cast<int>(status->code())) +
                        (message.empty() ? "" : ": " + message));
  }
}

}  // namespace jitd::ipc
