#include "daemon/wire_types.h"

#include "ipc/protocol.h"

#include <vector>

namespace jitd::daemon {
namespace {

struct Pair {
  wire::ElementType wire;
  ir::DType ir;
};

constexpr Pair kPairs[] = {
    {wire::ElementType_PRED, ir::DType::kPred},
    {wire::ElementType_S8, ir::DType::kS8},
    {wire::ElementType_S16, ir::DType::kS16},
    {wire::ElementType_S32, ir::DType::kS32},
    {wire::ElementType_S64, ir::DType::kS64},
    {wire::ElementType_U8, ir::DType::kU8},
    {wire::ElementType_U16, ir::DType::kU16},
    {wire::ElementType_U32, ir::DType::kU32},
    {wire::ElementType_U64, ir::DType::kU64},
    {wire::ElementType_F16, ir::DType::kF16},
    {wire::ElementType_BF16, ir::DType::kBF16},
    {wire::ElementType_F32, ir::DType::kF32},
    {wire::ElementType_F64, ir::DType::kF64},
    {wire::ElementType_C64, ir::DType::kC64},
    {wire::ElementType_C128, ir::DType::kC128},
    {wire::ElementType_S2, ir::DType::kS2},
    {wire::ElementType_S4, ir::DType::kS4},
    {wire::ElementType_U2, ir::DType::kU2},
    {wire::ElementType_U4, ir::DType::kU4},
    {wire::ElementType_F8E4M3FN, ir::DType::kF8E4M3FN},
    {wire::ElementType_F8E5M2, ir::DType::kF8E5M2},
    {wire::ElementType_F8E4M3FNUZ, ir::DType::kF8E4M3FNUZ},
    {wire::ElementType_F8E5M2FNUZ, ir::DType::kF8E5M2FNUZ},
    {wire::ElementType_F8E4M3B11FNUZ, ir::DType::kF8E4M3B11FNUZ},
    {wire::ElementType_F8E3M4, ir::DType::kF8E3M4},
    {wire::ElementType_F8E4M3, ir::DType::kF8E4M3},
    {wire::ElementType_F8E8M0FNU, ir::DType::kF8E8M0FNU},
    {wire::ElementType_F4E2M1FN, ir::DType::kF4E2M1FN},
    {wire::ElementType_F6E2M3FN, ir::DType::kF6E2M3FN},
    {wire::ElementType_F6E3M2FN, ir::DType::kF6E3M2FN},
};

// Largest tensor a wire shape may describe (the segment heap bounds real
// buffers far below this; this only keeps the arithmetic from overflowing).
constexpr int64_t kMaxElements = int64_t{1} << 48;

}  // namespace

std::optional<ir::DType> FromWireElementType(wire::ElementType type) {
  for (const Pair& p : kPairs) {
    if (p.wire == type) return p.ir;
  }
  return std::nullopt;
}

wire::ElementType ToWireElementType(ir::DType dtype) {
  for (const Pair& p : kPairs) {
    if (p.ir == dtype) return p.wire;
  }
  return wire::ElementType_INVALID;
}

StatusOr<ir::Type> FromWireShape(const wire::TensorShape* shape) {
  if (shape == nullptr) return InvalidArgument("tensor shape missing");
  std::optional<ir::DType> dtype = FromWireElementType(shape->element_type());
  if (!dtype) {
    return InvalidArgument("unknown element type " +
                           std::to_string(static_cast<int>(shape->element_type())));
  }
  std::vector<int64_t> dims;
  int64_t elements = 1;
  if (shape->dims() != nullptr) {
    if (shape->dims()->size() > 64) return InvalidArgument("tensor rank above 64");
    for (int64_t d : ipc::ReadVector(shape->dims())) {
      if (d < 0) return InvalidArgument("negative dimension " + std::to_string(d));
      if (d > 0 && elements > kMaxElements / d) return InvalidArgument("tensor too large");
      elements *= d;
      dims.push_back(d);
    }
  }
  return ir::Type::CheckedTensor(*dtype, std::move(dims));
}

StatusOr<flatbuffers::Offset<wire::TensorShape>> ToWireShape(flatbuffers::FlatBufferBuilder& fbb,
                                                             const ir::Type& type) {
  if (!type.is_tensor()) {
    return InvalidArgument("the daemon passes only tensors; this value is a " + type.ToString());
  }
  auto dims = fbb.CreateVector(type.dims());
  return wire::CreateTensorShape(fbb, ToWireElementType(type.dtype()), dims);
}

}  // namespace jitd::daemon
