// Literal: a tensor value held in host memory — a tensor type plus its bytes.
//
// Elements are stored densely in row-major order, StorageBytes(dtype) bytes
// each, little-endian (the host order; jitd runs on little-endian hosts).
// Predicates are one byte, 0 or 1. Complex values are (real, imag) pairs.
// A Literal owns its bytes; copies are deep. Thread-compatible.
#ifndef JITD_JIT_IR_LITERAL_H_
#define JITD_JIT_IR_LITERAL_H_

#include <complex>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/ir/type.h"

namespace jitd::ir {

class Literal {
 public:
  Literal() = default;
  // A zero-filled literal of `type` (a tensor type). Fails with
  // RESOURCE_EXHAUSTED above `max_bytes` instead of allocating.
  static StatusOr<Literal> Create(const Type& type,
                                  int64_t max_bytes = int64_t{1} << 34);
  // Takes ownership of `bytes`, which must hold exactly type.byte_size().
  static StatusOr<Literal> FromBytes(const Type& type, std::vector<uint8_t> bytes);

  const Type& type() const { return type_; }
  DType dtype() const { return type_.dtype(); }
  int64_t num_elements() const { return type_.num_elements(); }
  std::span<const uint8_t> bytes() const { return bytes_; }
  std::span<uint8_t> mutable_bytes() { return bytes_; }
  const uint8_t* element_ptr(int64_t i) const {
    return bytes_.data() + i * StorageBytes(type_.dtype());
  }
  uint8_t* mutable_element_ptr(int64_t i) {
    return bytes_.data() + i * StorageBytes(type_.dtype());
  }

  // Raw bits of element i, zero-extended (complex: not supported, use parts).
  uint64_t GetBits(int64_t i) const;
  void SetBits(int64_t i, uint64_t bits);

  // Element i converted to the requested representation. Integers are
  // sign- or zero-extended per dtype; floats decode exactly to double.
  int64_t GetInt(int64_t i) const;
  uint64_t GetUInt(int64_t i) const;
  double GetDouble(int64_t i) const;
  std::complex<double> GetComplex(int64_t i) const;
  bool GetPred(int64_t i) const { return bytes_[static_cast<size_t>(i)] != 0; }

  // Stores `v` rounded (floats: to nearest even) or truncated (integers:
  // two's complement wrap) to the element type.
  void SetInt(int64_t i, int64_t v);
  void SetDouble(int64_t i, double v);
  void SetComplex(int64_t i, std::complex<double> v);

  // True when every element has the same bytes (and there is at least one).
  bool IsSplat() const;

  bool operator==(const Literal& other) const {
    return type_ == other.type_ && bytes_ == other.bytes_;
  }

 private:
  Type type_;
  std::vector<uint8_t> bytes_;
};

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_LITERAL_H_
