// Conversions between the wire protocol's shapes (ipc/protocol.fbs) and
// jit/ir types, for the daemon.
//
// Stateless free functions; thread-safe. Results are owned values.
#ifndef JITD_DAEMON_WIRE_TYPES_H_
#define JITD_DAEMON_WIRE_TYPES_H_

#include <optional>
#include <string>

#include <flatbuffers/flatbuffers.h>

#include "base/status.h"
#include "ipc/protocol.h"
#include "jit/ir/dtype.h"
#include "jit/ir/type.h"

namespace jitd::daemon {

// The ir element type of a wire element type; nullopt for INVALID or a value
// this build does not know.
std::optional<ir::DType> FromWireElementType(wire::ElementType type);
// The wire element type of an ir element type (every DType has one).
wire::ElementType ToWireElementType(ir::DType dtype);

// A ranked tensor type from a wire shape; INVALID_ARGUMENT for a missing
// shape, an unknown element type, a negative dimension or an absurd size.
StatusOr<ir::Type> FromWireShape(const wire::TensorShape* shape);
// The wire shape of a tensor type; INVALID_ARGUMENT for tuples and tokens.
StatusOr<flatbuffers::Offset<wire::TensorShape>> ToWireShape(flatbuffers::FlatBufferBuilder& fbb,
                                                             const ir::Type& type);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_WIRE_TYPES_H_
