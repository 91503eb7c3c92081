// MLIR bytecode of the VHLO dialect -> generic StableHLO text -> ir::Module.
// See bytecode_reader.h. Formats: MLIR's docs/BytecodeFormat.md and
// StableHLO's VHLO bytecode encoding (stablehlo/dialect/VhloBytecode.cpp).
#include "jit/frontend/bytecode_reader.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/frontend/parser.h"
#include "jit/ir/attribute.h"
#include "jit/ir/dtype.h"

namespace jitd::frontend {
namespace {

constexpr std::string_view kMagic("ML\xEFR", 4);
// Attributes and types refer to each other; this bounds that recursion.
constexpr int kMaxAttrNesting = 48;
// Output text is refused past this size (a bytecode's text is ~10x its size).
constexpr size_t kMaxTextBytes = size_t{1} << 30;

enum SectionId : uint8_t {
  kStringSection = 0,
  kDialectSection = 1,
  kAttrTypeSection = 2,
  kAttrTypeOffsetSection = 3,
  kIrSection = 4,
  kResourceSection = 5,
  kResourceOffsetSection = 6,
  kDialectVersionsSection = 7,
  kPropertiesSection = 8,
  kNumSections = 9,
};

// Op encoding mask bits.
constexpr uint8_t kHasAttrs = 0x01;
constexpr uint8_t kHasResults = 0x02;
constexpr uint8_t kHasOperands = 0x04;
constexpr uint8_t kHasSuccessors = 0x08;
constexpr uint8_t kHasInlineRegions = 0x10;
constexpr uint8_t kHasUseListOrders = 0x20;
constexpr uint8_t kHasProperties = 0x40;

Status ErrAt(size_t offset, const std::string& what) {
  return InvalidArgument("bytecode offset " + std::to_string(offset) + ": " + what);
}

// A bounds-checked cursor over [begin, end) of the whole input; offsets in
// errors are absolute.
class Cursor {
 public:
  Cursor(std::string_view all, size_t begin, size_t end) : all_(all), pos_(begin), end_(end) {}
  size_t pos() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }
  bool done() const { return pos_ >= end_; }

  StatusOr<uint8_t> Byte(std::string_view what) {
    if (pos_ >= end_) return ErrAt(pos_, "unexpected end of data reading " + std::string(what));
    return static_cast<uint8_t>(all_[pos_++]);
  }
  StatusOr<uint64_t> VarInt(std::string_view what) {
    size_t start = pos_;
    if (pos_ >= end_) return ErrAt(pos_, "unexpected end of data reading " + std::string(what));
    uint8_t first = static_cast<uint8_t>(all_[pos_]);
    int n = first == 0 ? 9 : __builtin_ctz(first) + 1;
    if (remaining() < static_cast<size_t>(n)) {
      return ErrAt(start, "truncated varint (" + std::to_string(n) + " bytes) reading " + std::string(what));
    }
    uint64_t v = 0;
    if (n == 9) {
      for (int i = 8; i >= 1; --i) v = (v << 8) | static_cast<uint8_t>(all_[pos_ + i]);
    } else {
      for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(all_[pos_ + i]);
      v >>= n;
    }
    pos_ += n;
    return v;
  }
  StatusOr<int64_t> SignedVarInt(std::string_view what) {
    JITD_ASSIGN_OR_RETURN(uint64_t u, VarInt(what));
    return static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));
  }
  // A count of items each at least `min_bytes` long: checked against the
  // bytes left so hostile counts cannot drive allocation.
  StatusOr<uint64_t> Count(std::string_view what, size_t min_bytes = 1) {
    size_t at = pos_;
    JITD_ASSIGN_OR_RETURN(uint64_t n, VarInt(what));
    if (min_bytes > 0 && n > remaining() / min_bytes) {
      return ErrAt(at, std::string(what) + " " + std::to_string(n) + " exceeds the " +
                           std::to_string(remaining()) + " bytes left");
    }
    return n;
  }
  StatusOr<std::string_view> Bytes(uint64_t n, std::string_view what) {
    if (n > remaining()) {
      return ErrAt(pos_, std::string(what) + " of " + std::to_string(n) + " bytes overruns the " +
                             std::to_string(remaining()) + " bytes left");
    }
    std::string_view s = all_.substr(pos_, n);
    pos_ += n;
    return s;
  }

 private:
  std::string_view all_;
  size_t pos_;
  size_t end_;
};

struct Section {
  bool present = false;
  size_t begin = 0;
  size_t end = 0;
};

// Reads one section header; returns its id and span.
StatusOr<std::pair<uint8_t, Section>> ReadSection(Cursor& c) {
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint8_t id_and_align, c.Byte("a section id"));
  uint8_t id = id_and_align & 0x7F;
  if (id >= kNumSections) return ErrAt(at, "unknown section id " + std::to_string(id));
  JITD_ASSIGN_OR_RETURN(uint64_t length, c.VarInt("a section length"));
  if (id_and_align & 0x80) {
    size_t align_at = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t align, c.VarInt("a section alignment"));
    if (align == 0 || (align & (align - 1)) != 0 || align > 4096) {
      return ErrAt(align_at, "section alignment " + std::to_string(align) + " is not a power of two up to 4096");
    }
    // Padding (0xCB bytes) up to the alignment, relative to the file start.
    while (c.pos() % align != 0) {
      size_t pad_at = c.pos();
      JITD_ASSIGN_OR_RETURN(uint8_t pad, c.Byte("section padding"));
      if (pad != 0xCB) return ErrAt(pad_at, "section padding byte is not 0xCB");
    }
  }
  if (length > c.remaining()) {
    return ErrAt(at, "section " + std::to_string(id) + " of " + std::to_string(length) +
                         " bytes overruns the " + std::to_string(c.remaining()) + " bytes left");
  }
  Section s{true, c.pos(), c.pos() + length};
  JITD_RETURN_IF_ERROR(c.Bytes(length, "section data").status());
  return std::make_pair(id, s);
}

// A decoded VHLO type.
struct BType {
  enum Kind { kElement, kTensor, kToken, kTuple, kFunction } kind = kElement;
  std::string text;            // MLIR spelling
  ir::DType dtype = ir::DType::kF32;  // element / tensor element type
  std::vector<int64_t> dims;   // tensor
  std::vector<int> inputs;     // function inputs / tuple elements (type ids)
  std::vector<int> results;    // function results
};

// A decoded attribute (VHLO or builtin).
struct BAttr {
  enum Kind { kArray, kBool, kEnum, kDict, kFloat, kInt, kString, kTensor, kType, kUnit, kLocation, kOther } kind = kOther;
  std::string text;                       // StableHLO spelling
  std::string str;                        // string value
  std::vector<int> elements;              // array elements (attr ids)
  std::vector<std::pair<int, int>> dict;  // (name attr id, value attr id)
  std::vector<int64_t> ints;              // integer tensors' elements
  int64_t int_value = 0;
  bool bool_value = false;
  int type_id = -1;                       // tensor / int / float / type attr type
};

class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  StatusOr<std::string> Run();

 private:
  struct Entry {
    int dialect = -1;
    size_t begin = 0;
    size_t end = 0;
    bool custom = false;
  };
  struct OpName {
    int dialect = -1;
    std::string name;  // without the dialect prefix
  };
  struct Value {
    std::string name;  // "%v12"
    int type = -1;
  };
  // One open region scope for value numbering.
  struct Scope {
    std::vector<std::optional<Value>> values;
    std::vector<size_t> next;  // per open region: next value id
  };

  Status ReadStrings(const Section& s);
  Status ReadDialects(const Section& s);
  Status ReadAttrTypeOffsets(const Section& s, const Section& data);
  Status ReadProperties(const Section& s);
  Status CheckResources(const Section& offsets);

  StatusOr<std::string_view> String(uint64_t index, size_t at) const {
    if (index >= strings_.size()) {
      return ErrAt(at, "string index " + std::to_string(index) + " out of range (" +
                           std::to_string(strings_.size()) + " strings)");
    }
    return strings_[index];
  }

  StatusOr<const BAttr*> Attr(uint64_t index, size_t at, int depth = 0);
  StatusOr<const BType*> Type(uint64_t index, size_t at, int depth = 0);
  StatusOr<BAttr> DecodeAttr(const Entry& e, int depth);
  StatusOr<BType> DecodeType(const Entry& e, int depth);
  StatusOr<BAttr> DecodeVhloAttr(Cursor& c, int depth);
  StatusOr<BAttr> DecodeBuiltinAttr(Cursor& c, int depth);
  StatusOr<BType> DecodeVhloType(Cursor& c, int depth);
  StatusOr<std::vector<int64_t>> SignedList(Cursor& c, std::string_view what);

  StatusOr<std::string> TensorText(const BAttr& a, size_t at);

  // IR.
  Status ReadBlockHeader(Cursor& c, Scope& scope, int* num_ops, std::vector<Value>* args);
  Status DefineValue(Scope& scope, Value v, size_t at);
  Status SkipUseListOrders(Cursor& c, uint64_t range_size);
  Status ReadRegion(Cursor& c, Scope& scope, int depth, const std::string& parent_op, std::string& out);
  Status ReadOp(Cursor& c, Scope& scope, int depth, const std::string& parent_op, std::string& out);
  Status ReadModule(Cursor& c, std::string& out);
  StatusOr<std::string> OpAttrText(const std::string& op, const BAttr& dict, size_t at);
  StatusOr<std::string> FuncText(const BAttr& dict, size_t at, std::vector<int>* arg_types);

  // A synthetic string attribute naming a property (for dictionaries).
  int PropertyNameAttr(std::string_view name) {
    BAttr a;
    a.kind = BAttr::kString;
    a.str = std::string(name);
    ir::AppendQuotedString(a.str, a.text);
    attrs_.push_back(std::move(a));
    return static_cast<int>(attrs_.size() - 1);
  }
  static const std::vector<std::string_view>* VhloPropertyNames(const std::string& op);

  std::string_view data_;
  uint64_t version_ = 0;
  std::string producer_;
  std::vector<std::string_view> strings_;
  std::vector<std::string> dialects_;
  std::vector<OpName> op_names_;
  std::vector<Entry> attr_entries_;
  std::vector<Entry> type_entries_;
  std::vector<std::optional<BAttr>> attrs_;
  std::vector<std::optional<BType>> types_;
  std::vector<char> attr_busy_, type_busy_;
  std::vector<std::pair<size_t, size_t>> properties_;
  int next_value_ = 0;
};

StatusOr<std::vector<int64_t>> Reader::SignedList(Cursor& c, std::string_view what) {
  JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count(what));
  std::vector<int64_t> v;
  v.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(int64_t x, c.SignedVarInt(what));
    v.push_back(x);
  }
  return v;
}

Status Reader::ReadStrings(const Section& s) {
  Cursor c(data_, s.begin, s.end);
  JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("the string count"));
  std::vector<uint64_t> sizes(n);
  for (uint64_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(sizes[n - 1 - i], c.VarInt("a string length"));
  }
  strings_.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = c.pos();
    if (sizes[i] == 0) return ErrAt(at, "string " + std::to_string(i) + " has length 0 (no NUL)");
    JITD_ASSIGN_OR_RETURN(std::string_view str, c.Bytes(sizes[i], "a string"));
    if (str.back() != '\0') return ErrAt(at, "string " + std::to_string(i) + " is not NUL-terminated");
    strings_.push_back(str.substr(0, str.size() - 1));
  }
  if (!c.done()) return ErrAt(c.pos(), "trailing bytes after the string data");
  return Status::Ok();
}

// Compares "a.b.c" versions numerically; nullopt when not of that form.
std::optional<int> CompareVersions(std::string_view a, std::string_view b) {
  auto parse = [](std::string_view s) -> std::optional<std::vector<long>> {
    std::vector<long> parts;
    long cur = -1;
    for (char ch : s) {
      if (ch >= '0' && ch <= '9') {
        cur = (cur < 0 ? 0 : cur) * 10 + (ch - '0');
        if (cur > 1000000) return std::nullopt;
      } else if (ch == '.' && cur >= 0) {
        parts.push_back(cur);
        cur = -1;
      } else {
        return std::nullopt;
      }
    }
    if (cur < 0) return std::nullopt;
    parts.push_back(cur);
    return parts;
  };
  auto pa = parse(a), pb = parse(b);
  if (!pa || !pb) return std::nullopt;
  return *pa < *pb ? -1 : (*pa == *pb ? 0 : 1);
}

Status Reader::ReadDialects(const Section& s) {
  Cursor c(data_, s.begin, s.end);
  JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("the dialect count"));
  for (uint64_t i = 0; i < n; ++i) {
    size_t at = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("a dialect name"));
    JITD_ASSIGN_OR_RETURN(std::string_view name, String(enc >> 1, at));
    dialects_.emplace_back(name);
    if (enc & 1) {
      size_t vat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t size, c.VarInt("a dialect version size"));
      JITD_ASSIGN_OR_RETURN(std::string_view ver, c.Bytes(size, "a dialect version"));
      if (name == "vhlo") {
        // VHLO writes its version as three varints: major, minor, patch.
        Cursor vc(data_, vat + (c.pos() - vat - size), c.pos());
        std::string text;
        for (int k = 0; k < 3; ++k) {
          JITD_ASSIGN_OR_RETURN(int64_t part, vc.SignedVarInt("the vhlo dialect version"));
          if (k) text += '.';
          text += std::to_string(part);
        }
        (void)ver;
        auto cmp = CompareVersions(text, kMaxVhloVersion);
        if (!cmp || *cmp > 0) {
          return ErrAt(vat, "VHLO dialect version " + text + " is not supported (newest supported: " +
                                std::string(kMaxVhloVersion) + ")");
        }
      }
    }
  }
  // The total number of op names, then groups of them by dialect.
  JITD_ASSIGN_OR_RETURN(uint64_t total_ops, c.Count("the op-name count"));
  while (op_names_.size() < total_ops) {
    size_t at = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t dialect, c.VarInt("an op-name group's dialect"));
    if (dialect >= dialects_.size()) return ErrAt(at, "dialect index " + std::to_string(dialect) + " out of range");
    JITD_ASSIGN_OR_RETURN(uint64_t count, c.Count("an op-name count"));
    if (count > total_ops - op_names_.size()) return ErrAt(at, "op-name group overruns the op-name count");
    for (uint64_t k = 0; k < count; ++k) {
      size_t nat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("an op name"));
      uint64_t index = version_ >= 5 ? enc >> 1 : enc;
      JITD_ASSIGN_OR_RETURN(std::string_view name, String(index, nat));
      op_names_.push_back({static_cast<int>(dialect), std::string(name)});
    }
  }
  return Status::Ok();
}

Status Reader::ReadAttrTypeOffsets(const Section& s, const Section& data) {
  Cursor c(data_, s.begin, s.end);
  JITD_ASSIGN_OR_RETURN(uint64_t num_attrs, c.Count("the attribute count", 0));
  JITD_ASSIGN_OR_RETURN(uint64_t num_types, c.Count("the type count", 0));
  uint64_t data_size = data.end - data.begin;
  if (num_attrs > data_size || num_types > data_size || num_attrs + num_types > data_size + 1) {
    // Every entry takes at least one byte of the attribute/type section.
    if (num_attrs + num_types > data_size) {
      return ErrAt(s.begin, std::to_string(num_attrs) + " attributes and " + std::to_string(num_types) +
                                " types cannot fit in a " + std::to_string(data_size) + "-byte section");
    }
  }
  size_t offset = data.begin;
  auto fill = [&](std::vector<Entry>& out, uint64_t total) -> Status {
    while (out.size() < total) {
      size_t at = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t dialect, c.VarInt("an attribute/type group's dialect"));
      if (dialect >= dialects_.size()) return ErrAt(at, "dialect index " + std::to_string(dialect) + " out of range");
      JITD_ASSIGN_OR_RETURN(uint64_t count, c.Count("an attribute/type group size"));
      if (count > total - out.size()) return ErrAt(at, "attribute/type group overruns the declared count");
      for (uint64_t i = 0; i < count; ++i) {
        size_t eat = c.pos();
        JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("an attribute/type size"));
        uint64_t size = enc >> 1;
        if (size > data.end - offset) return ErrAt(eat, "attribute/type entry overruns its section");
        out.push_back({static_cast<int>(dialect), offset, offset + static_cast<size_t>(size), (enc & 1) != 0});
        offset += size;
      }
    }
    return Status::Ok();
  };
  attr_entries_.reserve(num_attrs);
  type_entries_.reserve(num_types);
  JITD_RETURN_IF_ERROR(fill(attr_entries_, num_attrs));
  JITD_RETURN_IF_ERROR(fill(type_entries_, num_types));
  attrs_.resize(num_attrs);
  types_.resize(num_types);
  attr_busy_.assign(num_attrs, 0);
  type_busy_.assign(num_types, 0);
  return Status::Ok();
}

Status Reader::ReadProperties(const Section& s) {
  Cursor c(data_, s.begin, s.end);
  if (c.done()) return Status::Ok();
  JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("the properties count"));
  for (uint64_t i = 0; i < n; ++i) {
    JITD_ASSIGN_OR_RETURN(uint64_t size, c.VarInt("a properties size"));
    size_t begin = c.pos();
    JITD_RETURN_IF_ERROR(c.Bytes(size, "properties").status());
    properties_.emplace_back(begin, c.pos());
  }
  return Status::Ok();
}

Status Reader::CheckResources(const Section& offsets) {
  if (!offsets.present) return Status::Ok();
  Cursor c(data_, offsets.begin, offsets.end);
  if (c.done()) return Status::Ok();
  JITD_ASSIGN_OR_RETURN(uint64_t external, c.VarInt("the external resource group count"));
  if (external != 0 || !c.done()) {
    // dense_resource blobs would need the resource section decoded; the
    // artifacts jitd reads carry their weights as arguments or dense data.
    return ErrAt(offsets.begin, "bytecode resources (dense_resource blobs) are not supported by this reader");
  }
  return Status::Ok();
}

StatusOr<const BAttr*> Reader::Attr(uint64_t index, size_t at, int depth) {
  if (index >= attrs_.size()) {
    return ErrAt(at, "attribute index " + std::to_string(index) + " out of range (" +
                         std::to_string(attrs_.size()) + " attributes)");
  }
  if (!attrs_[index]) {
    if (depth > kMaxAttrNesting) return ErrAt(at, "attributes nest deeper than " + std::to_string(kMaxAttrNesting));
    if (attr_busy_[index]) return ErrAt(at, "attribute " + std::to_string(index) + " refers to itself");
    attr_busy_[index] = 1;
    auto a = DecodeAttr(attr_entries_[index], depth + 1);
    attr_busy_[index] = 0;
    if (!a.ok()) return a.status();
    attrs_[index] = std::move(*a);
  }
  return &*attrs_[index];
}

StatusOr<const BType*> Reader::Type(uint64_t index, size_t at, int depth) {
  if (index >= types_.size()) {
    return ErrAt(at, "type index " + std::to_string(index) + " out of range (" + std::to_string(types_.size()) +
                         " types)");
  }
  if (!types_[index]) {
    if (depth > kMaxAttrNesting) return ErrAt(at, "types nest deeper than " + std::to_string(kMaxAttrNesting));
    if (type_busy_[index]) return ErrAt(at, "type " + std::to_string(index) + " refers to itself");
    type_busy_[index] = 1;
    auto t = DecodeType(type_entries_[index], depth + 1);
    type_busy_[index] = 0;
    if (!t.ok()) return t.status();
    types_[index] = std::move(*t);
  }
  return &*types_[index];
}

StatusOr<BAttr> Reader::DecodeAttr(const Entry& e, int depth) {
  Cursor c(data_, e.begin, e.end);
  const std::string& dialect = dialects_[e.dialect];
  if (!e.custom) {
    // The textual assembly form, NUL-terminated. Only locations are expected
    // here (they carry no meaning for jitd); other text is kept verbatim.
    std::string_view text = data_.substr(e.begin, e.end - e.begin);
    if (text.empty() || text.back() != '\0') return ErrAt(e.begin, "attribute text is not NUL-terminated");
    BAttr a;
    a.kind = BAttr::kOther;
    a.text = std::string(text.substr(0, text.size() - 1));
    if (a.text.rfind("loc(", 0) == 0) a.kind = BAttr::kLocation;
    return a;
  }
  if (dialect == "vhlo") return DecodeVhloAttr(c, depth);
  if (dialect == "builtin") return DecodeBuiltinAttr(c, depth);
  return ErrAt(e.begin, "attribute of dialect '" + dialect + "' is not supported (expected vhlo or builtin)");
}

StatusOr<BType> Reader::DecodeType(const Entry& e, int depth) {
  Cursor c(data_, e.begin, e.end);
  const std::string& dialect = dialects_[e.dialect];
  if (!e.custom) {
    std::string_view text = data_.substr(e.begin, e.end - e.begin);
    return ErrAt(e.begin, "type in text form '" + std::string(text.substr(0, std::min<size_t>(text.size(), 60))) +
                              "' is not supported");
  }
  if (dialect == "vhlo") return DecodeVhloType(c, depth);
  if (dialect == "builtin") {
    // Builtin IntegerType (code 0: width << 2 | signedness), as in the
    // module's `mhlo.num_partitions = 1 : i32`.
    size_t at = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t code, c.VarInt("a builtin type code"));
    if (code != 0) return ErrAt(at, "builtin type code " + std::to_string(code) + " is not supported");
    JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("an integer type"));
    uint64_t width = enc >> 2, sign = enc & 3;
    std::string name = (sign == 2 ? "ui" : sign == 1 ? "si" : "i") + std::to_string(width);
    auto d = ir::ParseDTypeName(name);
    if (!d) return ErrAt(at, "integer type " + name + " is not supported");
    BType t;
    t.kind = BType::kElement;
    t.dtype = *d;
    t.text = name;
    return t;
  }
  return ErrAt(e.begin, "type of dialect '" + dialect + "' is not supported (expected vhlo)");
}

StatusOr<uint64_t> ReadApInt(Cursor& c, int bits);

// Builtin attributes appear for locations (skipped: jitd keeps no debug
// locations from bytecode) and, in the module's attribute dictionary, for
// dictionaries and strings. Codes from MLIR's BuiltinDialectBytecode.td.
StatusOr<BAttr> Reader::DecodeBuiltinAttr(Cursor& c, int depth) {
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t code, c.VarInt("a builtin attribute code"));
  BAttr a;
  switch (code) {
    case 0: {  // ArrayAttr
      JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("an array size"));
      a.kind = BAttr::kArray;
      for (uint64_t i = 0; i < n; ++i) {
        size_t eat = c.pos();
        JITD_ASSIGN_OR_RETURN(uint64_t idx, c.VarInt("an array element"));
        JITD_RETURN_IF_ERROR(Attr(idx, eat, depth).status());
        a.elements.push_back(static_cast<int>(idx));
      }
      return a;
    }
    case 1: {  // DictionaryAttr
      JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("a dictionary size", 2));
      a.kind = BAttr::kDict;
      for (uint64_t i = 0; i < n; ++i) {
        size_t eat = c.pos();
        JITD_ASSIGN_OR_RETURN(uint64_t k, c.VarInt("a dictionary key"));
        JITD_ASSIGN_OR_RETURN(uint64_t v, c.VarInt("a dictionary value"));
        JITD_RETURN_IF_ERROR(Attr(k, eat, depth).status());
        JITD_RETURN_IF_ERROR(Attr(v, eat, depth).status());
        a.dict.emplace_back(static_cast<int>(k), static_cast<int>(v));
      }
      return a;
    }
    case 2: {  // StringAttr
      size_t sat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t s, c.VarInt("a string"));
      JITD_ASSIGN_OR_RETURN(std::string_view str, String(s, sat));
      a.kind = BAttr::kString;
      a.str = std::string(str);
      a.text.clear();
      ir::AppendQuotedString(a.str, a.text);
      return a;
    }
    case 8: {  // IntegerAttr
      size_t tat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t ti, c.VarInt("an integer type"));
      JITD_ASSIGN_OR_RETURN(const BType* t, Type(ti, tat, depth));
      if (t->kind != BType::kElement || (!ir::IsInteger(t->dtype) && !ir::IsPred(t->dtype))) {
        return ErrAt(tat, "integer attribute of type " + t->text);
      }
      int bits = ir::BitWidth(t->dtype);
      JITD_ASSIGN_OR_RETURN(uint64_t raw, ReadApInt(c, bits));
      int64_t v = static_cast<int64_t>(raw);
      if (bits < 64 && bits > 1 && !ir::IsUnsignedInt(t->dtype)) {
        uint64_t m = uint64_t{1} << (bits - 1);
        v = static_cast<int64_t>(((raw & ((uint64_t{1} << bits) - 1)) ^ m) - m);
      }
      a.kind = BAttr::kInt;
      a.int_value = v;
      a.type_id = static_cast<int>(ti);
      a.text = ir::IsPred(t->dtype) ? std::string((raw & 1) ? "true" : "false") : std::to_string(v) + " : " + t->text;
      return a;
    }
    case 7:  // UnitAttr
      a.kind = BAttr::kUnit;
      a.text = "unit";
      return a;
    case 10: case 11: case 12: case 13: case 14: case 15: case 22:  // locations
      a.kind = BAttr::kLocation;
      return a;
    default:
      return ErrAt(at, "builtin attribute code " + std::to_string(code) + " is not supported");
  }
}

StatusOr<BType> Reader::DecodeVhloType(Cursor& c, int depth) {
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t code, c.VarInt("a vhlo type code"));
  BType t;
  auto element = [&](ir::DType d) {
    t.kind = BType::kElement;
    t.dtype = d;
    t.text = std::string(ir::DTypeName(d));
    return t;
  };
  auto type_list = [&](std::vector<int>& out) -> Status {
    JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("a type list size"));
    for (uint64_t i = 0; i < n; ++i) {
      size_t eat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t idx, c.VarInt("a type"));
      JITD_RETURN_IF_ERROR(Type(idx, eat, depth).status());
      out.push_back(static_cast<int>(idx));
    }
    return Status::Ok();
  };
  switch (code) {
    case 0: return element(ir::DType::kPred);           // BooleanV1Type (i1)
    case 2: return element(ir::DType::kBF16);
    case 3: return element(ir::DType::kF16);
    case 4: return element(ir::DType::kF32);
    case 5: return element(ir::DType::kF64);
    case 10: case 11: case 12: case 13: case 14:         // IntegerSI{4,8,16,32,64}V1 (signless)
    case 15: case 16: case 17: case 18: case 19: {       // IntegerUI{4,8,16,32,64}V1
      static constexpr const char* kNames[] = {"i4", "i8", "i16", "i32", "i64",
                                               "ui4", "ui8", "ui16", "ui32", "ui64"};
      auto d = ir::ParseDTypeName(kNames[code - 10]);
      if (!d) return ErrAt(at, std::string("element type ") + kNames[code - 10] + " is not supported");
      return element(*d);
    }
    case 1: {  // ComplexV1Type
      size_t eat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t idx, c.VarInt("a complex element type"));
      JITD_ASSIGN_OR_RETURN(const BType* inner, Type(idx, eat, depth));
      if (inner->kind != BType::kElement) return ErrAt(eat, "complex of a non-element type");
      auto d = ir::ComplexOf(inner->dtype);
      if (!d) return ErrAt(eat, "complex<" + inner->text + "> is not supported");
      return element(*d);
    }
    case 8: {  // FunctionV1Type
      t.kind = BType::kFunction;
      JITD_RETURN_IF_ERROR(type_list(t.inputs));
      JITD_RETURN_IF_ERROR(type_list(t.results));
      t.text = "(";
      for (size_t i = 0; i < t.inputs.size(); ++i) t.text += (i ? ", " : "") + types_[t.inputs[i]]->text;
      t.text += ") -> (";
      for (size_t i = 0; i < t.results.size(); ++i) t.text += (i ? ", " : "") + types_[t.results[i]]->text;
      t.text += ")";
      return t;
    }
    case 20: {  // RankedTensorV1Type
      JITD_ASSIGN_OR_RETURN(t.dims, SignedList(c, "a tensor shape"));
      size_t eat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t idx, c.VarInt("a tensor element type"));
      JITD_ASSIGN_OR_RETURN(const BType* inner, Type(idx, eat, depth));
      if (inner->kind != BType::kElement) return ErrAt(eat, "tensor of a non-element type " + inner->text);
      if (static_cast<int64_t>(t.dims.size()) > ir::kMaxRank) return ErrAt(at, "tensor rank above the limit");
      t.kind = BType::kTensor;
      t.dtype = inner->dtype;
      t.text = "tensor<";
      for (int64_t d : t.dims) {
        // MLIR writes a dynamic dimension (`?`) as INT64_MIN.
        if (d == ir::Type::kDynamic) {
          t.text += "?x";
          continue;
        }
        if (d < 0) return ErrAt(at, "negative tensor dimension " + std::to_string(d));
        t.text += std::to_string(d) + "x";
      }
      t.text += inner->text + ">";
      return t;
    }
    case 22:  // TokenV1Type
      t.kind = BType::kToken;
      t.text = "!stablehlo.token";
      return t;
    case 23: {  // TupleV1Type
      t.kind = BType::kTuple;
      JITD_RETURN_IF_ERROR(type_list(t.inputs));
      t.text = "tuple<";
      for (size_t i = 0; i < t.inputs.size(); ++i) t.text += (i ? ", " : "") + types_[t.inputs[i]]->text;
      t.text += ">";
      return t;
    }
    case 6: return ErrAt(at, "vhlo type f8E4M3FN is not supported");
    case 7: return ErrAt(at, "vhlo type f8E5M2 is not supported");
    case 9: return ErrAt(at, "vhlo index type is not supported");
    case 21: return ErrAt(at, "vhlo ranked tensor type with an encoding is not supported");
    case 24: return ErrAt(at, "vhlo uniform quantized type is not supported");
    case 25: return ErrAt(at, "vhlo unranked tensor type is not supported (jitd needs static shapes)");
    case 26: return ErrAt(at, "vhlo witness type is not supported");
    default: return ErrAt(at, "unknown vhlo type code " + std::to_string(code));
  }
}

// Enum spellings by VHLO's encoded values.
std::optional<std::string> EnumText(uint64_t code, uint64_t v) {
  static const std::vector<std::string> kDir = {"EQ", "NE", "GE", "GT", "LE", "LT"};
  static const std::vector<std::string> kCmpType = {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"};
  static const std::vector<std::string> kPrecision = {"DEFAULT", "HIGH", "HIGHEST"};
  static const std::vector<std::string> kFft = {"FFT", "IFFT", "RFFT", "IRFFT"};
  static const std::vector<std::string> kRngAlg = {"DEFAULT", "THREE_FRY", "PHILOX"};
  static const std::vector<std::string> kRngDist = {"", "UNIFORM", "NORMAL"};
  static const std::vector<std::string> kTranspose = {"TRANSPOSE_INVALID", "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT"};
  auto pick = [&](const std::vector<std::string>& names, const char* kind) -> std::optional<std::string> {
    if (v >= names.size() || names[v].empty()) return std::nullopt;
    return std::string("#stablehlo<") + kind + " " + names[v] + ">";
  };
  switch (code) {
    case 3: return pick(kDir, "comparison_direction");
    case 4: return pick(kCmpType, "comparison_type");
    case 7: return pick(kFft, "fft_type");
    case 11: return pick(kPrecision, "precision");
    case 12: return pick(kRngAlg, "rng_algorithm");
    case 13: return pick(kRngDist, "rng_distribution");
    case 16: return pick(kTranspose, "transpose");
    default: return std::nullopt;
  }
}

// Reads an APInt of `bits` width as MLIR's bytecode writes it.
StatusOr<uint64_t> ReadApInt(Cursor& c, int bits) {
  if (bits <= 8) {
    JITD_ASSIGN_OR_RETURN(uint8_t b, c.Byte("an 8-bit integer"));
    return b;
  }
  if (bits <= 64) {
    JITD_ASSIGN_OR_RETURN(int64_t v, c.SignedVarInt("an integer"));
    return static_cast<uint64_t>(v);
  }
  return ErrAt(c.pos(), "integers wider than 64 bits are not supported");
}

StatusOr<BAttr> Reader::DecodeVhloAttr(Cursor& c, int depth) {
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t code, c.VarInt("a vhlo attribute code"));
  BAttr a;
  switch (code) {
    case 1: {  // ArrayV1Attr
      JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("an array size"));
      a.kind = BAttr::kArray;
      a.text = "[";
      for (uint64_t i = 0; i < n; ++i) {
        size_t eat = c.pos();
        JITD_ASSIGN_OR_RETURN(uint64_t idx, c.VarInt("an array element"));
        JITD_ASSIGN_OR_RETURN(const BAttr* el, Attr(idx, eat, depth));
        a.elements.push_back(static_cast<int>(idx));
        a.text += (i ? ", " : "") + el->text;
      }
      a.text += "]";
      return a;
    }
    case 2: {  // BooleanV1Attr
      JITD_ASSIGN_OR_RETURN(uint64_t v, c.VarInt("a boolean"));
      a.kind = BAttr::kBool;
      a.bool_value = v != 0;
      a.text = v ? "true" : "false";
      return a;
    }
    case 3: case 4: case 7: case 11: case 12: case 13: case 16: {
      size_t vat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t v, c.VarInt("an enum value"));
      auto text = EnumText(code, v);
      if (!text) return ErrAt(vat, "enum value " + std::to_string(v) + " out of range for vhlo attribute code " +
                                       std::to_string(code));
      a.kind = BAttr::kEnum;
      a.int_value = static_cast<int64_t>(v);
      a.text = *text;
      return a;
    }
    case 6: {  // DictionaryV1Attr
      JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("a dictionary size", 2));
      a.kind = BAttr::kDict;
      for (uint64_t i = 0; i < n; ++i) {
        size_t eat = c.pos();
        JITD_ASSIGN_OR_RETURN(uint64_t k, c.VarInt("a dictionary key"));
        JITD_ASSIGN_OR_RETURN(uint64_t v, c.VarInt("a dictionary value"));
        JITD_ASSIGN_OR_RETURN(const BAttr* key, Attr(k, eat, depth));
        if (key->kind != BAttr::kString) return ErrAt(eat, "dictionary key is not a string");
        JITD_RETURN_IF_ERROR(Attr(v, eat, depth).status());
        a.dict.emplace_back(static_cast<int>(k), static_cast<int>(v));
      }
      return a;
    }
    case 8: {  // FloatV1Attr
      size_t tat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t ti, c.VarInt("a float type"));
      JITD_ASSIGN_OR_RETURN(const BType* t, Type(ti, tat, depth));
      if (t->kind != BType::kElement || !ir::IsFloat(t->dtype)) return ErrAt(tat, "float attribute of type " + t->text);
      JITD_ASSIGN_OR_RETURN(uint64_t bits, ReadApInt(c, ir::BitWidth(t->dtype)));
      a.kind = BAttr::kFloat;
      a.type_id = static_cast<int>(ti);
      ir::AppendFloatBits(bits, t->dtype, a.text);
      a.text += " : " + t->text;
      return a;
    }
    case 9: {  // IntegerV1Attr
      size_t tat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t ti, c.VarInt("an integer type"));
      JITD_ASSIGN_OR_RETURN(const BType* t, Type(ti, tat, depth));
      if (t->kind != BType::kElement || (!ir::IsInteger(t->dtype) && !ir::IsPred(t->dtype))) {
        return ErrAt(tat, "integer attribute of type " + t->text);
      }
      int bits = ir::BitWidth(t->dtype);
      JITD_ASSIGN_OR_RETURN(uint64_t raw, ReadApInt(c, bits));
      int64_t v = static_cast<int64_t>(raw);
      if (bits < 64 && ir::IsSignedInt(t->dtype)) {  // sign-extend from the width
        uint64_t m = uint64_t{1} << (bits - 1);
        uint64_t x = raw & ((uint64_t{1} << bits) - 1);
        v = static_cast<int64_t>((x ^ m) - m);
      }
      a.kind = BAttr::kInt;
      a.int_value = v;
      a.type_id = static_cast<int>(ti);
      a.text = (ir::IsPred(t->dtype) ? std::string(v ? "true" : "false") : std::to_string(v) + " : " + t->text);
      return a;
    }
    case 14: {  // StringV1Attr
      size_t sat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t s, c.VarInt("a string"));
      JITD_ASSIGN_OR_RETURN(std::string_view str, String(s, sat));
      a.kind = BAttr::kString;
      a.str = std::string(str);
      ir::AppendQuotedString(a.str, a.text);
      return a;
    }
    case 15: {  // TensorV1Attr
      size_t tat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t ti, c.VarInt("a tensor type"));
      JITD_ASSIGN_OR_RETURN(const BType* t, Type(ti, tat, depth));
      if (t->kind != BType::kTensor) return ErrAt(tat, "tensor attribute of type " + t->text);
      JITD_ASSIGN_OR_RETURN(uint64_t size, c.VarInt("a tensor blob size"));
      size_t blob_at = c.pos();
      JITD_ASSIGN_OR_RETURN(std::string_view blob, c.Bytes(size, "a tensor blob"));
      a.kind = BAttr::kTensor;
      a.type_id = static_cast<int>(ti);
      a.str = std::string(blob);
      JITD_ASSIGN_OR_RETURN(a.text, TensorText(a, blob_at));
      return a;
    }
    case 17: {  // TypeV1Attr
      size_t tat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t ti, c.VarInt("a type"));
      JITD_ASSIGN_OR_RETURN(const BType* t, Type(ti, tat, depth));
      a.kind = BAttr::kType;
      a.type_id = static_cast<int>(ti);
      a.text = t->text;
      return a;
    }
    case 0: return ErrAt(at, "vhlo attribute arg_result_alias_v1 is not supported");
    case 5: return ErrAt(at, "vhlo attribute custom_call_api_version_v1 is not supported");
    case 10: return ErrAt(at, "vhlo attribute output_operand_alias_v1 is not supported");
    case 18: return ErrAt(at, "vhlo attribute type_extensions_v1 (bounded dynamism) is not supported");
    default: return ErrAt(at, "unknown vhlo attribute code " + std::to_string(code));
  }
}

// `dense<...> : tensor<...>` from a tensor attribute's raw data (row-major,
// little-endian; one element for a splat; i1 as bytes or packed bits).
StatusOr<std::string> Reader::TensorText(const BAttr& a, size_t at) {
  const BType& t = *types_[a.type_id];
  int64_t n = 1;
  for (int64_t d : t.dims) {
    if (d < 0) return ErrAt(at, "dense data of the dynamic type " + t.text);
    if (d != 0 && n > ir::kMaxElements / d) return ErrAt(at, "tensor " + t.text + " has too many elements");
    n *= d;
  }
  const std::string& raw = a.str;
  ir::DType d = t.dtype;
  BAttr& mut = const_cast<BAttr&>(a);
  auto element_at = [&](int64_t i, int bytes) -> uint64_t {
    uint64_t v = 0;
    std::memcpy(&v, raw.data() + i * bytes, static_cast<size_t>(bytes));
    return v;
  };
  std::vector<uint64_t> elems;
  bool splat = false;
  if (ir::IsPred(d)) {
    if (static_cast<int64_t>(raw.size()) == n) {
      for (int64_t i = 0; i < n; ++i) elems.push_back(raw[i] != 0);
    } else if (raw.size() == 1) {
      splat = true;
      elems.push_back(raw[0] != 0);
    } else if (static_cast<int64_t>(raw.size()) == (n + 7) / 8) {
      for (int64_t i = 0; i < n; ++i) elems.push_back((static_cast<uint8_t>(raw[i / 8]) >> (i % 8)) & 1);
    } else {
      return ErrAt(at, "i1 tensor data of " + std::to_string(raw.size()) + " bytes does not fit " + t.text);
    }
  } else {
    if (ir::IsComplex(d)) return ErrAt(at, "complex tensor constants are not supported");
    int bits = ir::BitWidth(d);
    if (bits % 8 != 0) return ErrAt(at, "tensor constants of " + t.text + " (sub-byte elements) are not supported");
    int bytes = bits / 8;
    if (static_cast<int64_t>(raw.size()) == bytes && n != 1) {
      splat = true;
      elems.push_back(element_at(0, bytes));
    } else if (n > 0 && static_cast<int64_t>(raw.size()) / bytes == n &&
               static_cast<int64_t>(raw.size()) % bytes == 0) {
      elems.reserve(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) elems.push_back(element_at(i, bytes));
    } else if (n == 0 && raw.empty()) {
    } else {
      return ErrAt(at, "tensor data of " + std::to_string(raw.size()) + " bytes does not fit " + t.text);
    }
    if (ir::IsSignedInt(d) && bits < 64) {
      for (uint64_t& e : elems) {
        uint64_t m = uint64_t{1} << (bits - 1);
        e = ((e & ((uint64_t{1} << bits) - 1)) ^ m) - m;
      }
    }
  }
  auto one = [&](uint64_t e, std::string& out) {
    if (ir::IsFloat(d)) {
      ir::AppendFloatBits(e, d, out);
    } else if (ir::IsPred(d)) {
      out += e ? "true" : "false";
    } else if (ir::IsSignedInt(d)) {
      out += std::to_string(static_cast<int64_t>(e));
    } else {
      out += std::to_string(e);
    }
  };
  if (!ir::IsFloat(d)) {
    mut.ints.clear();
    if (splat) {
      mut.ints.assign(static_cast<size_t>(std::min<int64_t>(n, 1 << 20)), static_cast<int64_t>(elems[0]));
    } else {
      for (uint64_t e : elems) mut.ints.push_back(static_cast<int64_t>(e));
    }
  }
  std::string out = "dense<";
  if (splat || n == 1) {
    if (!elems.empty()) one(elems[0], out);
  } else {
    // Nested brackets per dimension, as MLIR writes them.
    std::vector<int64_t> strides(t.dims.size(), 1);
    for (int i = static_cast<int>(t.dims.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * t.dims[i + 1];
    for (int64_t i = 0; i < n; ++i) {
      // '[' for every dimension whose run starts here, ']' where one ends.
      int opens = 0;
      for (size_t k = 0; k < t.dims.size(); ++k) {
        if (i % (strides[k] * t.dims[k]) == 0) ++opens;
      }
      if (i != 0) out += ", ";
      out.append(static_cast<size_t>(opens), '[');
      one(elems[static_cast<size_t>(i)], out);
      int closes = 0;
      for (size_t k = 0; k < t.dims.size(); ++k) {
        if ((i + 1) % (strides[k] * t.dims[k]) == 0) ++closes;
      }
      out.append(static_cast<size_t>(closes), ']');
    }
    if (n == 0) out += "[]";
  }
  out += "> : " + t.text;
  return out;
}

// ---- IR ---------------------------------------------------------------------

Status Reader::DefineValue(Scope& scope, Value v, size_t at) {
  size_t& id = scope.next.back();
  if (id >= scope.values.size()) {
    return ErrAt(at, "more values defined than the region declared (" + std::to_string(scope.values.size()) + ")");
  }
  scope.values[id++] = std::move(v);
  return Status::Ok();
}

Status Reader::SkipUseListOrders(Cursor& c, uint64_t range_size) {
  uint64_t count = 1;
  if (range_size > 1) {
    JITD_ASSIGN_OR_RETURN(count, c.Count("a use-list order count"));
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (range_size > 1) {
      size_t at = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t idx, c.VarInt("a use-list value index"));
      if (idx >= range_size) return ErrAt(at, "use-list value index out of range");
    }
    JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("a use-list encoding"));
    uint64_t n = enc >> 1;
    if (n > c.remaining()) return ErrAt(c.pos(), "use-list of " + std::to_string(n) + " indices overruns the data");
    for (uint64_t k = 0; k < n; ++k) JITD_RETURN_IF_ERROR(c.VarInt("a use-list index").status());
  }
  // Use-list order changes only the order of uses in MLIR's in-memory lists;
  // jitd's IR keeps no use lists, so there is nothing to apply.
  return Status::Ok();
}

Status Reader::ReadBlockHeader(Cursor& c, Scope& scope, int* num_ops, std::vector<Value>* args) {
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("a block header"));
  uint64_t ops = enc >> 1;
  if (ops > c.remaining()) return ErrAt(at, "block of " + std::to_string(ops) + " ops overruns the data");
  *num_ops = static_cast<int>(ops);
  if (enc & 1) {
    JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("a block argument count"));
    for (uint64_t i = 0; i < n; ++i) {
      size_t aat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t tenc, c.VarInt("a block argument"));
      JITD_ASSIGN_OR_RETURN(const BType* t, Type(tenc >> 1, aat));
      (void)t;
      if (tenc & 1) {
        size_t lat = c.pos();
        JITD_ASSIGN_OR_RETURN(uint64_t loc, c.VarInt("a block argument location"));
        JITD_RETURN_IF_ERROR(Attr(loc, lat).status());
      }
      Value v{"%v" + std::to_string(next_value_++), static_cast<int>(tenc >> 1)};
      args->push_back(v);
      JITD_RETURN_IF_ERROR(DefineValue(scope, v, aat));
    }
    JITD_ASSIGN_OR_RETURN(uint8_t has_orders, c.Byte("a block's use-list flag"));
    if (has_orders) JITD_RETURN_IF_ERROR(SkipUseListOrders(c, n));
  }
  return Status::Ok();
}

Status Reader::ReadRegion(Cursor& c, Scope& scope, int depth, const std::string& parent_op, std::string& out) {
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t num_blocks, c.Count("a region's block count"));
  if (num_blocks == 0) {
    out += "{\n}";
    return Status::Ok();
  }
  if (num_blocks != 1) return ErrAt(at, "regions with " + std::to_string(num_blocks) + " blocks are not supported");
  JITD_ASSIGN_OR_RETURN(uint64_t num_values, c.VarInt("a region's value count"));
  // Every value takes at least a byte to define (an op or an argument).
  if (num_values > c.remaining() + 1) return ErrAt(at, "region declares more values than the data can define");
  size_t base = scope.values.size();
  scope.next.push_back(base);
  scope.values.resize(base + num_values);
  int num_ops = 0;
  std::vector<Value> args;
  JITD_RETURN_IF_ERROR(ReadBlockHeader(c, scope, &num_ops, &args));
  out += "{\n";
  if (!args.empty()) {
    out += "^bb0(";
    for (size_t i = 0; i < args.size(); ++i) {
      out += (i ? ", " : "") + args[i].name + ": " + types_[args[i].type]->text;
    }
    out += "):\n";
  }
  for (int i = 0; i < num_ops; ++i) JITD_RETURN_IF_ERROR(ReadOp(c, scope, depth, parent_op, out));
  out += "}";
  scope.values.resize(base);
  scope.next.pop_back();
  return Status::Ok();
}

// Attribute names whose VHLO tensor<Nxi64> value is an `array<i64: ...>` in
// StableHLO.
bool IsI64ArrayAttr(std::string_view op, std::string_view name) {
  static constexpr std::string_view kNames[] = {
      "broadcast_dimensions", "permutation", "dimensions", "slice_sizes", "start_indices",
      "limit_indices", "strides", "window_dimensions", "window_strides", "base_dilations",
      "window_dilations", "lhs_dilation", "rhs_dilation", "edge_padding_low", "edge_padding_high",
      "interior_padding", "known_expanding_dimensions", "known_nonexpanding_dimensions"};
  (void)op;
  return std::find(std::begin(kNames), std::end(kNames), name) != std::end(kNames);
}

std::string IntList(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

StatusOr<std::string> Reader::OpAttrText(const std::string& op, const BAttr& dict, size_t at) {
  std::vector<std::pair<std::string, std::string>> out;
  std::vector<std::pair<std::string, const BAttr*>> fields;
  for (auto [k, v] : dict.dict) fields.emplace_back(attrs_[k]->str, &*attrs_[v]);
  auto take = [&](std::string_view name) -> const BAttr* {
    for (auto& f : fields) {
      if (f.first == name && f.second) {
        const BAttr* a = f.second;
        f.second = nullptr;
        return a;
      }
    }
    return nullptr;
  };
  auto ints_of = [&](const BAttr* a, std::string_view name) -> StatusOr<std::vector<int64_t>> {
    if (!a) return std::vector<int64_t>{};
    if (a->kind == BAttr::kTensor && !ir::IsFloat(types_[a->type_id]->dtype)) return a->ints;
    if (a->kind == BAttr::kInt) return std::vector<int64_t>{a->int_value};
    return ErrAt(at, std::string(op) + " attribute " + std::string(name) + " is not an integer tensor");
  };
  if (op == "dot_general") {
    std::string dn = "#stablehlo.dot<";
    bool first = true;
    for (std::string_view f : {"lhs_batching_dimensions", "rhs_batching_dimensions", "lhs_contracting_dimensions",
                               "rhs_contracting_dimensions"}) {
      JITD_ASSIGN_OR_RETURN(std::vector<int64_t> v, ints_of(take(f), f));
      if (v.empty()) continue;
      dn += (first ? "" : ", ") + std::string(f) + " = " + IntList(v);
      first = false;
    }
    out.emplace_back("dot_dimension_numbers", dn + ">");
  } else if (op == "gather" || op == "dynamic_gather") {
    std::string dn = "#stablehlo.gather<";
    bool first = true;
    for (std::string_view f : {"offset_dims", "collapsed_slice_dims", "start_index_map"}) {
      JITD_ASSIGN_OR_RETURN(std::vector<int64_t> v, ints_of(take(f), f));
      if (v.empty()) continue;
      dn += (first ? "" : ", ") + std::string(f) + " = " + IntList(v);
      first = false;
    }
    JITD_ASSIGN_OR_RETURN(std::vector<int64_t> ivd, ints_of(take("index_vector_dim"), "index_vector_dim"));
    if (ivd.size() != 1) return ErrAt(at, "gather needs one index_vector_dim");
    dn += (first ? "" : ", ") + std::string("index_vector_dim = ") + std::to_string(ivd[0]);
    out.emplace_back("dimension_numbers", dn + ">");
  } else if (op == "scatter" || op == "convolution") {
    return ErrAt(at, "vhlo." + op + "_v1 is not supported by this reader yet");
  }
  for (auto& [name, a] : fields) {
    if (!a) continue;
    // VHLO writes every attribute, defaults included; StableHLO omits these.
    if (name == "compare_type" && a->kind == BAttr::kEnum && a->int_value == 0) continue;
    if (name == "precision_config" && a->kind == BAttr::kArray &&
        std::all_of(a->elements.begin(), a->elements.end(), [&](int e) {
          return attrs_[e]->kind == BAttr::kEnum && attrs_[e]->int_value == 0;
        })) {
      continue;  // all DEFAULT, as StableHLO leaves it unwritten
    }
    if ((name == "indices_are_sorted" || name == "unique_indices") && a->kind == BAttr::kBool && !a->bool_value) {
      continue;
    }
    if (name == "callee" && a->kind == BAttr::kString) {
      std::string s;
      ir::AppendSymbol(a->str, s);
      out.emplace_back(name, s);
      continue;
    }
    if (a->kind == BAttr::kTensor && IsI64ArrayAttr(op, name)) {
      std::string s = "array<i64";
      for (size_t i = 0; i < a->ints.size(); ++i) s += (i ? ", " : ": ") + std::to_string(a->ints[i]);
      out.emplace_back(name, s + ">");
      continue;
    }
    if (a->kind == BAttr::kDict || a->kind == BAttr::kLocation || a->kind == BAttr::kOther) {
      return ErrAt(at, "attribute " + name + " of vhlo." + op + " has an unsupported kind");
    }
    out.emplace_back(name, a->text);
  }
  std::string s;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i) s += ", ";
    ir::AppendAttributeName(out[i].first, s);
    s += " = " + out[i].second;
  }
  return s;
}

// A dictionary of VHLO attributes as `{a = ..., b = ...}` (arg/res/module
// attributes, whose values keep their StableHLO spelling).
std::string DictText(const std::vector<std::optional<BAttr>>& attrs, const BAttr& d) {
  std::string s = "{";
  for (size_t i = 0; i < d.dict.size(); ++i) {
    if (i) s += ", ";
    ir::AppendAttributeName(attrs[d.dict[i].first]->str, s);
    const BAttr& v = *attrs[d.dict[i].second];
    if (v.kind != BAttr::kUnit) s += " = " + v.text;
  }
  return s + "}";
}

// The inherent attributes of VHLO v1 ops, sorted by name (the order of their
// properties in bytecode). Ops without attributes map to an empty list.
const std::vector<std::string_view>* Reader::VhloPropertyNames(const std::string& op) {
  static const std::vector<std::pair<std::string_view, std::vector<std::string_view>>> kTable = {
      {"func_v1", {"arg_attrs", "function_type", "res_attrs", "sym_name", "sym_visibility"}},
      {"broadcast_in_dim_v1", {"broadcast_dimensions"}},
      {"transpose_v1", {"permutation"}},
      {"dot_general_v1", {"lhs_batching_dimensions", "lhs_contracting_dimensions", "precision_config",
                          "rhs_batching_dimensions", "rhs_contracting_dimensions"}},
      {"compare_v1", {"compare_type", "comparison_direction"}},
      {"reduce_v1", {"dimensions"}},
      {"constant_v1", {"value"}},
      {"call_v1", {"callee"}},
      {"gather_v1", {"collapsed_slice_dims", "index_vector_dim", "indices_are_sorted", "offset_dims",
                     "slice_sizes", "start_index_map"}},
      {"concatenate_v1", {"dimension"}},
      {"slice_v1", {"limit_indices", "start_indices", "strides"}},
      {"iota_v1", {"iota_dimension"}},
  };
  static const std::vector<std::string_view> kNone;
  for (const auto& [name, attrs] : kTable) {
    if (name == op) return &attrs;
  }
  static constexpr std::string_view kNoAttrs[] = {
      "add_v1", "multiply_v1", "reshape_v1", "return_v1", "subtract_v1", "divide_v1", "select_v1",
      "rsqrt_v1", "maximum_v1", "minimum_v1", "exponential_v1", "not_v1", "negate_v1", "abs_v1", "or_v1",
      "and_v1", "convert_v1", "tanh_v1", "sqrt_v1", "log_v1", "xor_v1", "power_v1", "sine_v1", "cosine_v1",
      "floor_v1", "ceil_v1", "logistic_v1", "remainder_v1", "clamp_v1", "sign_v1", "log_plus_one_v1",
      "exponential_minus_one_v1", "tuple_v1"};
  if (std::find(std::begin(kNoAttrs), std::end(kNoAttrs), op) != std::end(kNoAttrs)) return &kNone;
  return nullptr;
}

Status Reader::ReadOp(Cursor& c, Scope& scope, int depth, const std::string& parent_op, std::string& out) {
  size_t at = c.pos();
  if (out.size() > kMaxTextBytes) return ErrAt(at, "program text would exceed the size limit");
  JITD_ASSIGN_OR_RETURN(uint64_t name_idx, c.VarInt("an op name"));
  if (name_idx >= op_names_.size()) return ErrAt(at, "op name index " + std::to_string(name_idx) + " out of range");
  const OpName& on = op_names_[name_idx];
  const std::string& dialect = dialects_[on.dialect];
  JITD_ASSIGN_OR_RETURN(uint8_t mask, c.Byte("an op encoding mask"));
  if (mask & 0x80) return ErrAt(at + 1, "unknown op encoding mask bits");
  size_t lat = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t loc, c.VarInt("an op location"));
  JITD_RETURN_IF_ERROR(Attr(loc, lat).status());
  const BAttr* dict = nullptr;
  BAttr prop_dict;
  prop_dict.kind = BAttr::kDict;
  size_t dat = c.pos();
  if (mask & kHasAttrs) {
    JITD_ASSIGN_OR_RETURN(uint64_t d, c.VarInt("an op attribute dictionary"));
    JITD_ASSIGN_OR_RETURN(dict, Attr(d, dat));
    if (dict->kind != BAttr::kDict) return ErrAt(dat, "op attributes are not a dictionary");
  }
  if (mask & kHasProperties) {
    size_t pat = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t p, c.VarInt("an op properties index"));
    if (p >= properties_.size()) return ErrAt(pat, "properties index " + std::to_string(p) + " out of range");
    // A registered VHLO op's properties are its inherent attributes, each a
    // required attribute index, in the order of VhloPropertyNames.
    const std::vector<std::string_view>* names = VhloPropertyNames(on.name);
    if (dialect != "vhlo" || !names) {
      return ErrAt(pat, "properties on " + dialect + "." + on.name + " are not supported");
    }
    Cursor pc(data_, properties_[p].first, properties_[p].second);
    for (std::string_view pname : *names) {
      size_t eat = pc.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t enc, pc.VarInt("a property of " + on.name));
      // VHLO's attributes are all required: a plain attribute index.
      JITD_RETURN_IF_ERROR(Attr(enc, eat).status());
      prop_dict.dict.emplace_back(PropertyNameAttr(pname), static_cast<int>(enc));
    }
    if (!pc.done()) return ErrAt(pc.pos(), "trailing bytes in the properties of " + on.name);
    if (dict) {
      for (auto kv : dict->dict) prop_dict.dict.push_back(kv);
    }
    dict = &prop_dict;
  }
  std::vector<int> result_types;
  if (mask & kHasResults) {
    JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("a result count"));
    for (uint64_t i = 0; i < n; ++i) {
      size_t tat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t ti, c.VarInt("a result type"));
      JITD_RETURN_IF_ERROR(Type(ti, tat).status());
      result_types.push_back(static_cast<int>(ti));
    }
  }
  std::vector<const Value*> operands;
  if (mask & kHasOperands) {
    JITD_ASSIGN_OR_RETURN(uint64_t n, c.Count("an operand count"));
    for (uint64_t i = 0; i < n; ++i) {
      size_t oat = c.pos();
      JITD_ASSIGN_OR_RETURN(uint64_t vi, c.VarInt("an operand"));
      if (vi >= scope.values.size() || !scope.values[vi]) {
        return ErrAt(oat, "operand refers to value " + std::to_string(vi) + ", which is not defined before its use");
      }
      operands.push_back(&*scope.values[vi]);
    }
  }
  if (mask & kHasSuccessors) return ErrAt(at, "ops with successor blocks are not supported");
  if (mask & kHasUseListOrders) JITD_RETURN_IF_ERROR(SkipUseListOrders(c, result_types.size()));
  uint64_t num_regions = 0;
  bool isolated = false;
  if (mask & kHasInlineRegions) {
    JITD_ASSIGN_OR_RETURN(uint64_t enc, c.VarInt("a region count"));
    num_regions = enc >> 1;
    isolated = (enc & 1) != 0;
    if (num_regions > c.remaining()) return ErrAt(at, "region count overruns the data");
  }
  if (num_regions > 0 && depth >= ir::kMaxRegionNesting) {
    return ErrAt(at, "regions nest deeper than " + std::to_string(ir::kMaxRegionNesting));
  }
  if (dialect != "vhlo") return ErrAt(at, "op " + dialect + "." + on.name + " is not a VHLO op");
  // vhlo.NAME_vN -> NAME; only version 1 ops exist up to VHLO 1.0.0.
  size_t vpos = on.name.rfind("_v");
  if (vpos == std::string::npos) return ErrAt(at, "vhlo op " + on.name + " has no version suffix");
  std::string base = on.name.substr(0, vpos);
  std::string ver = on.name.substr(vpos + 2);
  if (ver != "1") return ErrAt(at, "vhlo." + on.name + " (op version " + ver + ") is not supported");

  // Results: fresh names, defined after the regions (regions cannot use them).
  std::vector<Value> results;
  for (int t : result_types) results.push_back({"%v" + std::to_string(next_value_++), t});

  auto read_regions = [&](std::string& text, const std::string& owner) -> Status {
    for (uint64_t r = 0; r < num_regions; ++r) {
      if (r) text += ", ";
      if (isolated) {
        JITD_ASSIGN_OR_RETURN(auto sec, ReadSection(c));
        if (sec.first != kIrSection) return ErrAt(at, "expected an IR section for an isolated region");
        Cursor rc(data_, sec.second.begin, sec.second.end);
        Scope inner;
        JITD_RETURN_IF_ERROR(ReadRegion(rc, inner, depth + 1, owner, text));
        if (!rc.done()) return ErrAt(rc.pos(), "trailing bytes after an isolated region");
      } else {
        JITD_RETURN_IF_ERROR(ReadRegion(c, scope, depth + 1, owner, text));
      }
    }
    return Status::Ok();
  };

  if (base == "func") {
    if (!dict) return ErrAt(at, "vhlo.func_v1 without attributes");
    std::string props, extra;
    std::string fname;
    for (auto [k, v] : dict->dict) {
      const std::string& name = attrs_[k]->str;
      const BAttr& a = *attrs_[v];
      if (name == "sym_name") {
        fname = a.str;
        props += (props.empty() ? "" : ", ") + std::string("sym_name = ") + a.text;
      } else if (name == "function_type") {
        if (a.kind != BAttr::kType || types_[a.type_id]->kind != BType::kFunction) {
          return ErrAt(dat, "func function_type is not a function type");
        }
        props += (props.empty() ? "" : ", ") + std::string("function_type = ") + a.text;
      } else if (name == "sym_visibility") {
        if (a.str != "public") props += (props.empty() ? "" : ", ") + std::string("sym_visibility = ") + a.text;
      } else if (name == "arg_attrs" || name == "res_attrs") {
        if (a.kind != BAttr::kArray) return ErrAt(dat, "func " + name + " is not an array");
        bool any = false;
        std::string s = "[";
        for (size_t i = 0; i < a.elements.size(); ++i) {
          const BAttr& e = *attrs_[a.elements[i]];
          if (e.kind != BAttr::kDict) return ErrAt(dat, "func " + name + " element is not a dictionary");
          if (!e.dict.empty()) any = true;
          s += (i ? ", " : "") + DictText(attrs_, e);
        }
        if (any) props += (props.empty() ? "" : ", ") + name + " = " + s + "]";
      } else {
        if (a.kind == BAttr::kLocation || a.kind == BAttr::kOther) return ErrAt(dat, "func attribute " + name + " unsupported");
        std::string s;
        ir::AppendAttributeName(name, s);
        extra += (extra.empty() ? "" : ", ") + s + (a.kind == BAttr::kUnit ? "" : " = " + a.text);
      }
    }
    out += "\"func.func\"() <{" + props + "}> (";
    JITD_RETURN_IF_ERROR(read_regions(out, "func"));
    out += ")";
    if (!extra.empty()) out += " {" + extra + "}";
    out += " : () -> ()\n";
    (void)fname;
  } else {
    std::string name;
    if (base == "return") {
      name = parent_op == "func" ? "func.return" : "stablehlo.return";
    } else if (base == "call") {
      name = "func.call";
    } else {
      name = "stablehlo." + base;
      if (!ir::ParseOpName(name)) return ErrAt(at, "vhlo." + on.name + " has no jitd equivalent (" + name + ")");
    }
    if (!results.empty()) {
      for (size_t i = 0; i < results.size(); ++i) out += (i ? ", " : "") + results[i].name;
      out += " = ";
    }
    out += "\"" + name + "\"(";
    for (size_t i = 0; i < operands.size(); ++i) out += (i ? ", " : "") + operands[i]->name;
    out += ")";
    if (num_regions > 0) {
      out += " (";
      JITD_RETURN_IF_ERROR(read_regions(out, base));
      out += ")";
    }
    if (dict && !dict->dict.empty()) {
      JITD_ASSIGN_OR_RETURN(std::string attrs, OpAttrText(base, *dict, dat));
      if (!attrs.empty()) out += " {" + attrs + "}";
    }
    out += " : (";
    for (size_t i = 0; i < operands.size(); ++i) out += (i ? ", " : "") + types_[operands[i]->type]->text;
    out += ") -> (";
    for (size_t i = 0; i < results.size(); ++i) out += (i ? ", " : "") + types_[results[i].type]->text;
    out += ")\n";
  }
  for (Value& v : results) JITD_RETURN_IF_ERROR(DefineValue(scope, v, at));
  return Status::Ok();
}

Status Reader::ReadModule(Cursor& c, std::string& out) {
  // The IR section is one block (no region header) holding builtin.module.
  Scope top;
  top.next.push_back(0);
  int num_ops = 0;
  std::vector<Value> args;
  JITD_RETURN_IF_ERROR(ReadBlockHeader(c, top, &num_ops, &args));
  if (num_ops != 1 || !args.empty()) return ErrAt(c.pos(), "the top level must hold exactly one builtin.module");
  size_t at = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t name_idx, c.VarInt("an op name"));
  if (name_idx >= op_names_.size() || dialects_[op_names_[name_idx].dialect] != "builtin" ||
      op_names_[name_idx].name != "module") {
    return ErrAt(at, "the top-level op is not builtin.module");
  }
  JITD_ASSIGN_OR_RETURN(uint8_t mask, c.Byte("an op encoding mask"));
  size_t lat = c.pos();
  JITD_ASSIGN_OR_RETURN(uint64_t loc, c.VarInt("an op location"));
  JITD_RETURN_IF_ERROR(Attr(loc, lat).status());
  std::string attrs_text;
  if (mask & kHasAttrs) {
    size_t dat = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t d, c.VarInt("the module attributes"));
    JITD_ASSIGN_OR_RETURN(const BAttr* dict, Attr(d, dat));
    if (dict->kind != BAttr::kDict) return ErrAt(dat, "module attributes are not a dictionary");
    std::string name;
    std::vector<std::pair<int, int>> rest;
    for (auto kv : dict->dict) {
      const BAttr& v = *attrs_[kv.second];
      if (attrs_[kv.first]->str == "sym_name" && v.kind == BAttr::kString) {
        name = v.str;
      } else {
        if (v.kind == BAttr::kLocation || v.kind == BAttr::kOther || v.kind == BAttr::kDict) {
          return ErrAt(dat, "module attribute " + attrs_[kv.first]->str + " has an unsupported kind");
        }
        rest.push_back(kv);
      }
    }
    if (!name.empty()) ir::AppendSymbol(name, attrs_text);
    if (!rest.empty()) {
      BAttr d2;
      d2.kind = BAttr::kDict;
      d2.dict = rest;
      attrs_text += (attrs_text.empty() ? "" : " ") + std::string("attributes ") + DictText(attrs_, d2);
    }
  }
  if (mask & kHasProperties) {
    size_t pat = c.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t p, c.VarInt("the module properties"));
    if (p >= properties_.size()) return ErrAt(pat, "properties index out of range");
    // builtin.module's properties: optional sym_name, optional sym_visibility,
    // each an attribute index with a presence flag.
    Cursor pc(data_, properties_[p].first, properties_[p].second);
    size_t nat = pc.pos();
    JITD_ASSIGN_OR_RETURN(uint64_t enc, pc.VarInt("the module's sym_name"));
    if (enc & 1) {
      JITD_ASSIGN_OR_RETURN(const BAttr* a, Attr(enc >> 1, nat));
      if (a->kind != BAttr::kString) return ErrAt(nat, "module sym_name is not a string");
      std::string sym;
      ir::AppendSymbol(a->str, sym);
      attrs_text = sym + (attrs_text.empty() ? "" : " " + attrs_text);
    }
  }
  if (mask & (kHasResults | kHasOperands | kHasSuccessors | kHasUseListOrders)) {
    return ErrAt(at, "builtin.module with results, operands or successors");
  }
  if (!(mask & kHasInlineRegions)) return ErrAt(at, "builtin.module without a body");
  JITD_ASSIGN_OR_RETURN(uint64_t renc, c.VarInt("the module region count"));
  if ((renc >> 1) != 1) return ErrAt(at, "builtin.module must have one region");
  Cursor* body = &c;
  std::optional<Cursor> section_cursor;
  if (renc & 1) {
    JITD_ASSIGN_OR_RETURN(auto sec, ReadSection(c));
    if (sec.first != kIrSection) return ErrAt(at, "expected an IR section for the module body");
    section_cursor.emplace(data_, sec.second.begin, sec.second.end);
    body = &*section_cursor;
  }
  out += "module " + attrs_text + (attrs_text.empty() ? "" : " ");
  Scope scope;
  JITD_RETURN_IF_ERROR(ReadRegion(*body, scope, 0, "module", out));
  out += "\n";
  return Status::Ok();
}

StatusOr<std::string> Reader::Run() {
  if (!IsMlirBytecode(data_)) return ErrAt(0, "not MLIR bytecode (no 'ML\\xEFR' magic)");
  Cursor c(data_, 4, data_.size());
  size_t vat = c.pos();
  JITD_ASSIGN_OR_RETURN(version_, c.VarInt("the bytecode version"));
  if (version_ < static_cast<uint64_t>(kMinBytecodeVersion) || version_ > static_cast<uint64_t>(kMaxBytecodeVersion)) {
    return ErrAt(vat, "MLIR bytecode version " + std::to_string(version_) + " is not supported (supported: " +
                          std::to_string(kMinBytecodeVersion) + " to " + std::to_string(kMaxBytecodeVersion) + ")");
  }
  size_t pat = c.pos();
  size_t nul = data_.find('\0', pat);
  if (nul == std::string_view::npos) return ErrAt(pat, "the producer string is not NUL-terminated");
  producer_ = std::string(data_.substr(pat, nul - pat));
  JITD_RETURN_IF_ERROR(c.Bytes(nul + 1 - pat, "the producer").status());
  // "StableHLO_vX.Y.Z": refuse artifacts newer than this reader knows.
  constexpr std::string_view kPrefix = "StableHLO_v";
  if (producer_.rfind(kPrefix, 0) == 0) {
    std::string ver = producer_.substr(kPrefix.size());
    auto cmp = CompareVersions(ver, kMaxVhloVersion);
    if (!cmp) return ErrAt(pat, "producer '" + producer_ + "' has an unreadable StableHLO version");
    if (*cmp > 0) {
      return ErrAt(pat, "StableHLO/VHLO version " + ver + " (producer '" + producer_ +
                            "') is not supported (newest supported: " + std::string(kMaxVhloVersion) + ")");
    }
  }
  Section sections[kNumSections];
  while (!c.done()) {
    size_t at = c.pos();
    JITD_ASSIGN_OR_RETURN(auto sec, ReadSection(c));
    if (sections[sec.first].present) return ErrAt(at, "section " + std::to_string(sec.first) + " appears twice");
    sections[sec.first] = sec.second;
  }
  for (uint8_t required : {kStringSection, kDialectSection, kAttrTypeSection, kAttrTypeOffsetSection, kIrSection}) {
    if (!sections[required].present) {
      return ErrAt(data_.size(), "missing required section " + std::to_string(required));
    }
  }
  if (sections[kResourceSection].present != sections[kResourceOffsetSection].present) {
    return ErrAt(data_.size(), "resource and resource-offset sections must come together");
  }
  JITD_RETURN_IF_ERROR(ReadStrings(sections[kStringSection]));
  JITD_RETURN_IF_ERROR(ReadDialects(sections[kDialectSection]));
  if (std::find(dialects_.begin(), dialects_.end(), "vhlo") == dialects_.end()) {
    return ErrAt(sections[kDialectSection].begin,
                 "the bytecode uses no vhlo dialect (only VHLO portable artifacts are supported)");
  }
  JITD_RETURN_IF_ERROR(ReadAttrTypeOffsets(sections[kAttrTypeOffsetSection], sections[kAttrTypeSection]));
  if (sections[kPropertiesSection].present) JITD_RETURN_IF_ERROR(ReadProperties(sections[kPropertiesSection]));
  JITD_RETURN_IF_ERROR(CheckResources(sections[kResourceOffsetSection]));
  std::string out;
  Cursor ir(data_, sections[kIrSection].begin, sections[kIrSection].end);
  JITD_RETURN_IF_ERROR(ReadModule(ir, out));
  if (!ir.done()) return ErrAt(ir.pos(), "trailing bytes after the module");
  return out;
}

}  // namespace

bool IsMlirBytecode(std::string_view bytes) { return bytes.substr(0, 4) == kMagic; }

StatusOr<std::string> BytecodeToStableHloText(std::string_view bytes) { return Reader(bytes).Run(); }

StatusOr<std::unique_ptr<ir::Module>> ReadBytecode(std::string_view bytes) {
  JITD_ASSIGN_OR_RETURN(std::string text, BytecodeToStableHloText(bytes));
  auto module = ParseModule(text);
  if (!module.ok()) {
    return InvalidArgument("bytecode: the decoded program does not parse as StableHLO (" +
                           module.status().message() + ")");
  }
  return module;
}

StatusOr<std::unique_ptr<ir::Module>> ParseProgram(std::string_view bytes) {
  if (IsMlirBytecode(bytes)) return ReadBytecode(bytes);
  return ParseModule(bytes);
}

std::vector<ModuleText> SplitProgram(std::string_view file_bytes) {
  if (IsMlirBytecode(file_bytes)) return {ModuleText{file_bytes, 1}};
  return SplitModules(file_bytes);
}

StatusOr<std::unique_ptr<ir::Module>> ParseProgram(const ModuleText& piece) {
  if (IsMlirBytecode(piece.text)) return ReadBytecode(piece.text);
  return ParseModule(piece.text, piece.first_line);
}

StatusOr<std::vector<std::unique_ptr<ir::Module>>> ParsePrograms(std::string_view file_bytes) {
  if (!IsMlirBytecode(file_bytes)) return ParseModules(file_bytes);
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ReadBytecode(file_bytes));
  std::vector<std::unique_ptr<ir::Module>> modules;
  modules.push_back(std::move(module));
  return modules;
}

}  // namespace jitd::frontend
