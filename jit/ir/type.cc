#include "jit/ir/type.h"

#include <charconv>
#include <string>

namespace jitd::ir {

int64_t StorageTypeMin(DType storage) {
  if (IsUnsignedInt(storage) || IsPred(storage)) return 0;
  return -(int64_t{1} << (BitWidth(storage) - 1));
}

int64_t StorageTypeMax(DType storage) {
  if (IsPred(storage)) return 1;
  const int bits = BitWidth(storage);
  if (IsUnsignedInt(storage)) {
    return bits >= 64 ? INT64_MAX : static_cast<int64_t>((uint64_t{1} << bits) - 1);
  }
  return bits >= 64 ? INT64_MAX : (int64_t{1} << (bits - 1)) - 1;
}

namespace {

// The shortest spelling that reads back as the same double.
void AppendDouble(double v, std::string& out) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  std::string_view s(buf, static_cast<size_t>(r.ptr - buf));
  out += s;
  // "1" would read back as an integer token; keep it a float literal.
  if (s.find_first_of(".eEn") == std::string_view::npos) out += ".0";
}

void AppendScaleZeroPoint(double scale, int64_t zero_point, std::string& out) {
  AppendDouble(scale, out);
  if (zero_point != 0) {
    out += ':';
    out += std::to_string(zero_point);
  }
}

}  // namespace

void QuantParams::AppendTo(std::string& out) const {
  out += "!quant.uniform<";
  // MLIR's quant dialect spells unsigned storage "u8", not "ui8".
  std::string_view name = DTypeName(storage);
  if (IsUnsignedInt(storage)) {
    out += 'u';
    out += name.substr(2);
  } else {
    out += name;
  }
  if (storage_min != StorageTypeMin(storage) || storage_max != StorageTypeMax(storage)) {
    out += '<';
    out += std::to_string(storage_min);
    out += ':';
    out += std::to_string(storage_max);
    out += '>';
  }
  out += ':';
  out += DTypeName(expressed);
  if (per_axis()) {
    out += ':';
    out += std::to_string(quantized_dimension);
    out += ", {";
    for (size_t i = 0; i < scales.size(); ++i) {
      if (i) out += ',';
      AppendScaleZeroPoint(scales[i], zero_points[i], out);
    }
    out += "}>";
    return;
  }
  out += ", ";
  AppendScaleZeroPoint(scales.empty() ? 1.0 : scales[0],
                       zero_points.empty() ? 0 : zero_points[0], out);
  out += '>';
}

Type Type::Quantized(QuantParams params, std::vector<int64_t> dims) {
  Type t = Tensor(params.storage, std::move(dims));
  t.quant_ = std::make_shared<const QuantParams>(std::move(params));
  return t;
}

Type Type::WithQuant(QuantParams params) const {
  Type t = *this;
  t.dtype_ = params.storage;
  t.quant_ = std::make_shared<const QuantParams>(std::move(params));
  return t;
}

Type Type::Tensor(DType dtype, std::vector<int64_t> dims) {
  Type t;
  t.kind_ = Kind::kTensor;
  t.dtype_ = dtype;
  if (!dims.empty()) t.dims_ = std::make_shared<const std::vector<int64_t>>(std::move(dims));
  return t;
}

Type Type::Token() {
  Type t;
  t.kind_ = Kind::kToken;
  return t;
}

Type Type::Tuple(std::vector<Type> elements) {
  Type t;
  t.kind_ = Kind::kTuple;
  t.tuple_ = std::make_shared<const std::vector<Type>>(std::move(elements));
  return t;
}

Type Type::Future(std::vector<Type> elements) {
  Type t;
  t.kind_ = Kind::kFuture;
  t.tuple_ = std::make_shared<const std::vector<Type>>(std::move(elements));
  return t;
}

StatusOr<Type> Type::CheckedTensor(DType dtype, std::vector<int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return InvalidArgument("tensor rank " + std::to_string(dims.size()) +
                           " exceeds the limit of " + std::to_string(kMaxRank));
  }
  for (int64_t d : dims) {
    if (d < 0) return InvalidArgument("negative tensor dimension " + std::to_string(d));
  }
  // A zero dimension makes the tensor empty whatever the others are; the
  // limit applies to the product of the nonzero dimensions too, so that
  // reshapes and broadcasts of the type stay in range.
  int64_t nonzero = 1;
  for (int64_t d : dims) {
    if (d == 0) continue;
    if (nonzero > kMaxElements / d) {
      return InvalidArgument("tensor of " + std::to_string(dims.size()) +
                             " dimensions exceeds the limit of 2^40 elements");
    }
    nonzero *= d;
  }
  return Tensor(dtype, std::move(dims));
}

StatusOr<Type> Type::CheckedDynamicTensor(DType dtype, std::vector<int64_t> dims,
                                          std::vector<int64_t> bounds) {
  if (!bounds.empty() && bounds.size() != dims.size()) {
    return InvalidArgument("#stablehlo.bounds has " + std::to_string(bounds.size()) +
                           " entries for a tensor of rank " + std::to_string(dims.size()));
  }
  std::vector<int64_t> known;
  known.reserve(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] != kDynamic) {
      known.push_back(dims[i]);
      if (!bounds.empty() && bounds[i] != kDynamic) {
        return InvalidArgument("#stablehlo.bounds gives bound " + std::to_string(bounds[i]) +
                               " to static dimension " + std::to_string(i) +
                               " (only dynamic dimensions have bounds)");
      }
    } else if (!bounds.empty() && bounds[i] != kDynamic) {
      if (bounds[i] < 0) {
        return InvalidArgument("negative bound " + std::to_string(bounds[i]) + " of dimension " +
                               std::to_string(i));
      }
      known.push_back(bounds[i]);
    }
  }
  // The static dimensions and the bounds must fit the limits on their own.
  JITD_RETURN_IF_ERROR(CheckedTensor(dtype, std::move(known)).status());
  Type t = Tensor(dtype, std::move(dims));
  if (!bounds.empty()) {
    t.bounds_ = std::make_shared<const std::vector<int64_t>>(std::move(bounds));
  }
  return t;
}

bool Type::is_dynamic() const {
  switch (kind_) {
    case Kind::kTensor:
      for (int64_t d : dims()) {
        if (d == kDynamic) return true;
      }
      return false;
    case Kind::kToken:
      return false;
    case Kind::kTuple:
    case Kind::kFuture:
      for (const Type& e : elements()) {
        if (e.is_dynamic()) return true;
      }
      return false;
  }
  return false;
}

Type Type::WithDims(std::vector<int64_t> dims) const {
  Type t = *this;
  t.dims_ = dims.empty() ? nullptr : std::make_shared<const std::vector<int64_t>>(std::move(dims));
  t.bounds_.reset();
  return t;
}

const std::vector<int64_t>& Type::EmptyDims() {
  static const std::vector<int64_t> kEmpty;
  return kEmpty;
}

int64_t Type::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims()) {
    if (d == kDynamic) return -1;
    n *= d;
  }
  return n;
}

const std::vector<Type>& Type::elements() const {
  static const std::vector<Type> kEmpty;
  return tuple_ ? *tuple_ : kEmpty;
}

bool Type::operator==(const Type& other) const {
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kTensor:
      if (dtype_ != other.dtype_ || (quant_ == nullptr) != (other.quant_ == nullptr)) return false;
      if (quant_ && quant_ != other.quant_ && !(*quant_ == *other.quant_)) return false;
      if (bounds() != other.bounds()) return false;
      return dims_ == other.dims_ || dims() == other.dims();
    case Kind::kToken:
      return true;
    case Kind::kTuple:
    case Kind::kFuture:
      return elements() == other.elements();
  }
  return false;
}

void Type::AppendTo(std::string& out) const {
  switch (kind_) {
    case Kind::kTensor:
      out += "tensor<";
      for (int64_t d : dims()) {
        if (d == kDynamic) {
          out += '?';
        } else {
          out += std::to_string(d);
        }
        out += 'x';
      }
      if (quant_) {
        quant_->AppendTo(out);
      } else {
        out += DTypeName(dtype_);
      }
      if (bounds_) {
        out += ", #stablehlo.bounds<";
        for (size_t i = 0; i < bounds_->size(); ++i) {
          if (i) out += ", ";
          const int64_t b = (*bounds_)[i];
          if (b == kDynamic) {
            out += '?';
          } else {
            out += std::to_string(b);
          }
        }
        out += '>';
      }
      out += '>';
      return;
    case Kind::kToken:
      out += "!stablehlo.token";
      return;
    case Kind::kTuple:
    case Kind::kFuture: {
      out += kind_ == Kind::kTuple ? "tuple<" : "!stablehlo.future<";
      bool first = true;
      for (const Type& e : elements()) {
        if (!first) out += ", ";
        first = false;
        e.AppendTo(out);
      }
      out += '>';
      return;
    }
  }
}

std::string Type::ToString() const {
  std::string out;
  AppendTo(out);
  return out;
}

std::string FunctionTypeToString(std::span<const Type> inputs,
                                 std::span<const Type> results) {
  std::string out = "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i) out += ", ";
    inputs[i].AppendTo(out);
  }
  out += ") -> ";
  if (results.size() == 1 && !results[0].is_tuple()) {
    results[0].AppendTo(out);
  } else {
    out += '(';
    for (size_t i = 0; i < results.size(); ++i) {
      if (i) out += ", ";
      results[i].AppendTo(out);
    }
    out += ')';
  }
  return out;
}

}  // namespace jitd::ir
