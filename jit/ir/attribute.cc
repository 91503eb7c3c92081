#include "jit/ir/attribute.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace jitd::ir {

namespace {

uint64_t RoundToBits(double v, DType dtype) {
  switch (dtype) {
    case DType::kF32: return std::bit_cast<uint32_t>(static_cast<float>(v));
    case DType::kF64: return std::bit_cast<uint64_t>(v);
    default: return EncodeFloat(v, *GetFloatFormat(dtype));
  }
}

struct ElementPrinter {
  const DenseElementsAttr& attr;
  DType dtype;
  int width;

  uint64_t Bits(const uint8_t* p, int bytes) const {
    uint64_t v = 0;
    std::memcpy(&v, p, static_cast<size_t>(bytes));
    return v;
  }

  void AppendScalar(const uint8_t* p, DType t, std::string& out) const {
    if (t == DType::kPred) {
      out += *p ? "true" : "false";
      return;
    }
    const int bytes = StorageBytes(t);
    const uint64_t bits = Bits(p, bytes);
    if (IsFloat(t)) {
      AppendFloatBits(bits, t, out);
      return;
    }
    const int w = BitWidth(t);
    char buf[32];
    if (IsSignedInt(t)) {
      int64_t v = static_cast<int64_t>(bits);
      if (w < 64) {
        const uint64_t sign = uint64_t{1} << (w - 1);
        v = static_cast<int64_t>(((bits & ((uint64_t{1} << w) - 1)) ^ sign) - sign);
      }
      std::snprintf(buf, sizeof buf, "%" PRId64, v);
    } else {
      std::snprintf(buf, sizeof buf, "%" PRIu64,
                    w < 64 ? bits & ((uint64_t{1} << w) - 1) : bits);
    }
    out += buf;
  }

  void AppendElement(const uint8_t* p, std::string& out) const {
    if (IsComplex(dtype)) {
      const DType c = ComplexComponent(dtype);
      out += '(';
      AppendScalar(p, c, out);
      out += ',';
      AppendScalar(p + width / 2, c, out);
      out += ')';
    } else {
      AppendScalar(p, dtype, out);
    }
  }

  // Nested list for dimension `d` starting at element `*index`.
  void AppendList(size_t d, int64_t* index, std::string& out) const {
    const auto& dims = attr.type.dims();
    if (d == dims.size()) {
      AppendElement(attr.data->data() + *index * width, out);
      ++*index;
      return;
    }
    out += '[';
    for (int64_t i = 0; i < dims[d]; ++i) {
      if (i) out += ", ";
      AppendList(d + 1, index, out);
    }
    out += ']';
  }
};

void AppendDense(const DenseElementsAttr& attr, std::string& out) {
  const DType dtype = attr.type.dtype();
  ElementPrinter printer{attr, dtype, StorageBytes(dtype)};
  out += "dense<";
  const int64_t n = attr.type.num_elements();
  if (attr.splat) {
    printer.AppendElement(attr.data->data(), out);
  } else if (n == 0) {
    // `dense<>` denotes an empty tensor of any shape.
  } else if (n > 100) {
    static const char kHex[] = "0123456789ABCDEF";
    out += "\"0x";
    const size_t start = out.size();
    out.resize(start + attr.data->size() * 2);
    char* w = out.data() + start;
    for (uint8_t b : *attr.data) {
      *w++ = kHex[b >> 4];
      *w++ = kHex[b & 15];
    }
    out += '"';
  } else {
    int64_t index = 0;
    printer.AppendList(0, &index, out);
  }
  out += "> : ";
  if (attr.index_elements && attr.type.dtype() == DType::kS64) {
    std::string type = attr.type.ToString();  // tensor<2xi64>
    out += std::string_view(type).substr(0, type.size() - 4);
    out += "index>";
    return;
  }
  attr.type.AppendTo(out);
}

void AppendDenseArray(const DenseArrayAttr& a, std::string& out) {
  out += "array<";
  out += DTypeName(a.dtype);
  const size_t n = IsFloat(a.dtype) ? a.floats.size() : a.ints.size();
  if (n) out += ": ";
  for (size_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    if (IsFloat(a.dtype)) {
      AppendFloat(a.floats[i], a.dtype, out);
    } else if (a.dtype == DType::kPred) {
      out += a.ints[i] ? "true" : "false";
    } else {
      out += std::to_string(a.ints[i]);
    }
  }
  out += '>';
}

void AppendConvDims(const ConvDimensionNumbers& c, std::string& out) {
  // One bracketed layout per operand: b/f (o/i for the kernel) and spatial
  // dimension numbers at their positions.
  auto layout = [&](int64_t a, char ac, int64_t b, char bc,
                    const std::vector<int64_t>& spatial) {
    const int64_t rank = static_cast<int64_t>(spatial.size()) + 2;
    std::vector<std::string> slots(static_cast<size_t>(rank), "?");
    if (a >= 0 && a < rank) slots[static_cast<size_t>(a)] = std::string(1, ac);
    if (b >= 0 && b < rank) slots[static_cast<size_t>(b)] = std::string(1, bc);
    for (size_t i = 0; i < spatial.size(); ++i) {
      if (spatial[i] >= 0 && spatial[i] < rank) {
        slots[static_cast<size_t>(spatial[i])] = std::to_string(i);
      }
    }
    out += '[';
    for (size_t i = 0; i < slots.size(); ++i) {
      if (i) out += ", ";
      out += slots[i];
    }
    out += ']';
  };
  layout(c.input_batch_dimension, 'b', c.input_feature_dimension, 'f',
         c.input_spatial_dimensions);
  out += 'x';
  layout(c.kernel_output_feature_dimension, 'o', c.kernel_input_feature_dimension, 'i',
         c.kernel_spatial_dimensions);
  out += "->";
  layout(c.output_batch_dimension, 'b', c.output_feature_dimension, 'f',
         c.output_spatial_dimensions);
}

}  // namespace

void AppendFloatBits(uint64_t bits, DType dtype, std::string& out) {
  const FloatFormat format = *GetFloatFormat(dtype);
  const double v = DecodeFloat(bits, format);
  if (std::isfinite(v)) {
    AppendFloat(v, dtype, out);
    return;
  }
  char buf[32];
  const int digits = (BitWidth(dtype) + 3) / 4;
  std::snprintf(buf, sizeof buf, "0x%0*" PRIX64, digits, bits);
  out += buf;
}

void AppendFloat(double value, DType dtype, std::string& out) {
  if (!std::isfinite(value)) {
    AppendFloatBits(RoundToBits(value, dtype), dtype, out);
    return;
  }
  const uint64_t want = RoundToBits(value, dtype);
  char buf[40];
  for (int precision : {6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}) {
    std::snprintf(buf, sizeof buf, "%.*e", precision, value);
    if (RoundToBits(std::strtod(buf, nullptr), dtype) == want) {
      out += buf;
      return;
    }
  }
  std::snprintf(buf, sizeof buf, "%.17e", value);
  out += buf;
}

void AppendQuotedString(std::string_view s, std::string& out) {
  static const char kHex[] = "0123456789ABCDEF";
  out += '"';
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c >= 0x20 && c < 0x7F) {
      out += static_cast<char>(c);
    } else {
      out += '\\';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  out += '"';
}

void AppendSymbol(std::string_view name, std::string& out) {
  out += '@';
  bool bare = !name.empty();
  for (char c : name) {
    bare &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '$' || c == '.' || c == '-';
  }
  if (bare) {
    out += name;
  } else {
    AppendQuotedString(name, out);
  }
}

void AppendAttributeName(std::string_view name, std::string& out) {
  bool bare = !name.empty() && !(name[0] >= '0' && name[0] <= '9') && name[0] != '$' &&
              name[0] != '.';
  for (char c : name) {
    bare &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '_' || c == '$' || c == '.';
  }
  if (bare) {
    out += name;
  } else {
    AppendQuotedString(name, out);
  }
}

void AppendIntList(const std::vector<int64_t>& values, std::string& out) {
  out += '[';
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(values[i]);
  }
  out += ']';
}

std::string_view Attribute::KindName() const {
  static constexpr std::string_view kNames[] = {
      "unit", "bool", "integer", "float", "string", "type", "symbol reference",
      "array", "dense array", "dense elements", "dense resource", "dictionary",
      "enum", "struct", "convolution dimension numbers", "opaque"};
  return kNames[storage_.index()];
}

void Attribute::AppendTo(std::string& out) const {
  struct Visitor {
    std::string& out;
    void operator()(const UnitAttr&) { out += "unit"; }
    void operator()(bool b) { out += b ? "true" : "false"; }
    void operator()(const IntegerAttr& a) {
      if (a.dtype == DType::kPred) {
        out += a.value ? "true" : "false";
        return;
      }
      out += IsUnsignedInt(a.dtype) ? std::to_string(static_cast<uint64_t>(a.value))
                                    : std::to_string(a.value);
      out += " : ";
      out += DTypeName(a.dtype);
    }
    void operator()(const FloatAttr& a) {
      AppendFloat(a.value, a.dtype, out);
      out += " : ";
      out += DTypeName(a.dtype);
    }
    void operator()(const StringAttr& a) { AppendQuotedString(a.value, out); }
    void operator()(const TypeAttr& a) { a.type.AppendTo(out); }
    void operator()(const SymbolRefAttr& a) { AppendSymbol(a.name, out); }
    void operator()(const ArrayAttr& a) {
      out += '[';
      for (size_t i = 0; i < a.elements.size(); ++i) {
        if (i) out += ", ";
        a.elements[i].AppendTo(out);
      }
      out += ']';
    }
    void operator()(const DenseArrayAttr& a) { AppendDenseArray(a, out); }
    void operator()(const DenseElementsAttr& a) { AppendDense(a, out); }
    void operator()(const DenseResourceAttr& a) {
      out += "dense_resource<";
      out += a.handle;
      out += "> : ";
      a.type.AppendTo(out);
    }
    void operator()(const DictionaryAttr& a) {
      out += '{';
      for (size_t i = 0; i < a.entries.size(); ++i) {
        if (i) out += ", ";
        AppendAttributeName(a.entries[i].name, out);
        if (!a.entries[i].value.is<UnitAttr>()) {
          out += " = ";
          a.entries[i].value.AppendTo(out);
        }
      }
      out += '}';
    }
    void operator()(const EnumAttr& a) {
      out += '#';
      out += a.dialect;
      out += '<';
      out += a.enum_name;
      out += ' ';
      out += a.value;
      out += '>';
    }
    void operator()(const StructAttr& a) {
      out += '#';
      out += a.name;
      out += '<';
      for (size_t i = 0; i < a.fields.size(); ++i) {
        if (i) out += ", ";
        out += a.fields[i].name;
        out += " = ";
        if (a.fields[i].is_list) {
          AppendIntList(a.fields[i].values, out);
        } else {
          out += std::to_string(a.fields[i].values.empty() ? 0 : a.fields[i].values[0]);
        }
      }
      out += '>';
    }
    void operator()(const ConvDimensionNumbers& c) {
      out += "#stablehlo.conv<";
      AppendConvDims(c, out);
      out += '>';
    }
    void operator()(const OpaqueAttr& a) { out += a.text; }
  };
  std::visit(Visitor{out}, storage_);
}

std::string Attribute::ToString() const {
  std::string out;
  AppendTo(out);
  return out;
}

const Attribute* AttributeList::Find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const NamedAttribute& a, std::string_view n) {
                               return a.name < n;
                             });
  if (it != entries_.end() && it->name == name) return &it->value;
  return nullptr;
}

void AttributeList::Set(std::string name, Attribute value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const NamedAttribute& a, const std::string& n) {
                               return a.name < n;
                             });
  if (it != entries_.end() && it->name == name) {
    it->value = std::move(value);
  } else {
    entries_.insert(it, NamedAttribute{std::move(name), std::move(value)});
  }
}

bool AttributeList::Remove(std::string_view name) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const NamedAttribute& a) { return a.name == name; });
  if (it == entries_.end()) return false;
  entries_.erase(it);
  return true;
}

void AttributeList::AppendDictTo(std::string& out) const {
  if (entries_.empty()) return;
  Attribute(DictionaryAttr{entries_}).AppendTo(out);
}

DenseElementsAttr MakeDenseElements(const Literal& literal) {
  DenseElementsAttr attr;
  attr.type = literal.type();
  auto bytes = literal.bytes();
  if (literal.IsSplat()) {
    attr.splat = true;
    const size_t width = static_cast<size_t>(StorageBytes(literal.dtype()));
    attr.data = std::make_shared<const std::vector<uint8_t>>(bytes.begin(),
                                                             bytes.begin() + width);
  } else {
    attr.data = std::make_shared<const std::vector<uint8_t>>(bytes.begin(), bytes.end());
  }
  return attr;
}

StatusOr<Literal> DenseElementsToLiteral(const DenseElementsAttr& attr, int64_t max_bytes) {
  JITD_ASSIGN_OR_RETURN(Literal lit, Literal::Create(attr.type, max_bytes));
  auto out = lit.mutable_bytes();
  if (attr.splat) {
    const size_t width = attr.data->size();
    for (size_t off = 0; off + width <= out.size(); off += width) {
      std::memcpy(out.data() + off, attr.data->data(), width);
    }
  } else if (!out.empty()) {
    std::memcpy(out.data(), attr.data->data(), out.size());
  }
  return lit;
}

}  // namespace jitd::ir
