#include "jit/ir/literal.h"

#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>

namespace jitd::ir {

namespace {

// double -> int64 without undefined behaviour: NaN is 0, out-of-range
// values saturate. (Op semantics such as convert are the evaluator's job;
// this only keeps the generic accessors defined for every input.)
int64_t SaturatingToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

uint64_t SaturatingToUInt64(double v) {
  if (std::isnan(v) || v <= 0) return 0;
  if (v >= 18446744073709551615.0) return UINT64_MAX;
  return static_cast<uint64_t>(v);
}

}  // namespace

StatusOr<Literal> Literal::Create(const Type& type, int64_t max_bytes) {
  if (!type.is_tensor()) {
    return InvalidArgument("a literal needs a tensor type, got " + type.ToString());
  }
  const int64_t size = type.byte_size();
  if (size > max_bytes) {
    return ResourceExhausted("literal of type " + type.ToString() + " needs " +
                             std::to_string(size) + " bytes, over the limit of " +
                             std::to_string(max_bytes));
  }
  Literal lit;
  lit.type_ = type;
  lit.bytes_.assign(static_cast<size_t>(size), 0);
  return lit;
}

StatusOr<Literal> Literal::FromBytes(const Type& type, std::vector<uint8_t> bytes) {
  if (!type.is_tensor()) {
    return InvalidArgument("a literal needs a tensor type, got " + type.ToString());
  }
  if (static_cast<int64_t>(bytes.size()) != type.byte_size()) {
    return InvalidArgument("literal of type " + type.ToString() + " needs " +
                           std::to_string(type.byte_size()) + " bytes, got " +
                           std::to_string(bytes.size()));
  }
  Literal lit;
  lit.type_ = type;
  lit.bytes_ = std::move(bytes);
  return lit;
}

uint64_t Literal::GetBits(int64_t i) const {
  uint64_t v = 0;
  std::memcpy(&v, element_ptr(i), static_cast<size_t>(StorageBytes(dtype())));
  return v;
}

void Literal::SetBits(int64_t i, uint64_t bits) {
  std::memcpy(mutable_element_ptr(i), &bits, static_cast<size_t>(StorageBytes(dtype())));
}

int64_t Literal::GetInt(int64_t i) const {
  const DType t = dtype();
  if (IsFloat(t) || IsComplex(t)) return SaturatingToInt64(GetDouble(i));
  const uint64_t bits = GetBits(i);
  const int width = BitWidth(t);
  if (IsSignedInt(t) && width < 64) {
    const uint64_t sign = uint64_t{1} << (width - 1);
    const uint64_t mask = (uint64_t{1} << width) - 1;
    return static_cast<int64_t>(((bits & mask) ^ sign) - sign);
  }
  return static_cast<int64_t>(bits);
}

uint64_t Literal::GetUInt(int64_t i) const {
  const DType t = dtype();
  if (IsSignedInt(t)) return static_cast<uint64_t>(GetInt(i));
  if (IsFloat(t) || IsComplex(t)) return SaturatingToUInt64(GetDouble(i));
  const int width = BitWidth(t);
  const uint64_t bits = GetBits(i);
  return width < 64 ? bits & ((uint64_t{1} << width) - 1) : bits;
}

double Literal::GetDouble(int64_t i) const {
  const DType t = dtype();
  switch (t) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, element_ptr(i), 4);
      return f;
    }
    case DType::kF64: {
      double d;
      std::memcpy(&d, element_ptr(i), 8);
      return d;
    }
    case DType::kF16: return HalfToFloat(static_cast<uint16_t>(GetBits(i)));
    case DType::kBF16: return BFloat16ToFloat(static_cast<uint16_t>(GetBits(i)));
    case DType::kC64:
    case DType::kC128: return GetComplex(i).real();
    case DType::kPred: return GetPred(i) ? 1.0 : 0.0;
    default: break;
  }
  if (auto format = GetFloatFormat(t)) return DecodeFloat(GetBits(i), *format);
  if (IsUnsignedInt(t)) return static_cast<double>(GetUInt(i));
  return static_cast<double>(GetInt(i));
}

std::complex<double> Literal::GetComplex(int64_t i) const {
  if (dtype() == DType::kC64) {
    float parts[2];
    std::memcpy(parts, element_ptr(i), 8);
    return {parts[0], parts[1]};
  }
  if (dtype() == DType::kC128) {
    double parts[2];
    std::memcpy(parts, element_ptr(i), 16);
    return {parts[0], parts[1]};
  }
  return {GetDouble(i), 0.0};
}

void Literal::SetInt(int64_t i, int64_t v) {
  const DType t = dtype();
  if (IsFloat(t) || IsComplex(t)) {
    SetDouble(i, static_cast<double>(v));
  } else if (t == DType::kPred) {
    bytes_[static_cast<size_t>(i)] = v != 0;
  } else {
    const int width = BitWidth(t);
    uint64_t bits = static_cast<uint64_t>(v);
    if (width < 64) bits &= (uint64_t{1} << width) - 1;
    SetBits(i, bits);
  }
}

void Literal::SetDouble(int64_t i, double v) {
  const DType t = dtype();
  switch (t) {
    case DType::kF32: {
      const float f = static_cast<float>(v);
      std::memcpy(mutable_element_ptr(i), &f, 4);
      return;
    }
    case DType::kF64:
      std::memcpy(mutable_element_ptr(i), &v, 8);
      return;
    case DType::kC64:
    case DType::kC128:
      SetComplex(i, {v, 0.0});
      return;
    case DType::kPred:
      bytes_[static_cast<size_t>(i)] = v != 0;
      return;
    default:
      break;
  }
  if (auto format = GetFloatFormat(t)) {
    SetBits(i, EncodeFloat(v, *format));
  } else if (IsUnsignedInt(t)) {
    SetInt(i, static_cast<int64_t>(SaturatingToUInt64(v)));
  } else {
    SetInt(i, SaturatingToInt64(v));
  }
}

void Literal::SetComplex(int64_t i, std::complex<double> v) {
  if (dtype() == DType::kC64) {
    const float parts[2] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
    std::memcpy(mutable_element_ptr(i), parts, 8);
  } else if (dtype() == DType::kC128) {
    const double parts[2] = {v.real(), v.imag()};
    std::memcpy(mutable_element_ptr(i), parts, 16);
  } else {
    SetDouble(i, v.real());
  }
}

bool Literal::IsSplat() const {
  const size_t width = static_cast<size_t>(StorageBytes(dtype()));
  if (bytes_.size() < width || width == 0) return false;
  for (size_t off = width; off < bytes_.size(); off += width) {
    if (std::memcmp(bytes_.data(), bytes_.data() + off, width) != 0) return false;
  }
  return true;
}

}  // namespace jitd::ir
