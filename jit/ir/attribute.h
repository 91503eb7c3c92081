// Attributes: the compile-time constants attached to ops, functions and
// modules, with the kinds MLIR's StableHLO text uses.
//
// An Attribute is a value type (copies are deep except for dense element
// data, which is shared and immutable). Thread-compatible.
#ifndef JITD_JIT_IR_ATTRIBUTE_H_
#define JITD_JIT_IR_ATTRIBUTE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "base/status.h"
#include "jit/ir/literal.h"
#include "jit/ir/type.h"

namespace jitd::ir {

class Attribute;
struct NamedAttribute;

struct UnitAttr {};
struct IntegerAttr { int64_t value; DType dtype; };  // `3 : i64`
struct FloatAttr { double value; DType dtype; };      // `1.0e-03 : f32`
struct StringAttr { std::string value; };             // decoded contents
struct TypeAttr { Type type; };
struct SymbolRefAttr { std::string name; };           // `@main` (without '@')
struct ArrayAttr { std::vector<Attribute> elements; };
// `array<i64: 1, 2>`; bools are 0/1 in `ints`, floats use `floats`.
struct DenseArrayAttr {
  DType dtype;
  std::vector<int64_t> ints;
  std::vector<double> floats;
};
// `dense<...> : tensor<...>`. `data` holds the row-major bytes of every
// element, or of one element when `splat` (a splat is never materialized,
// so `dense<0.0> : tensor<1000000000xf32>` costs four bytes).
struct DenseElementsAttr {
  Type type;
  bool splat = false;
  std::shared_ptr<const std::vector<uint8_t>> data;
  // Written with MLIR's `index` element type (`dense<[0, 1]> :
  // tensor<2xindex>`, as jax.export writes custom-call layouts): `type` holds
  // i64 and printing writes `index` back.
  bool index_elements = false;
};
// `dense_resource<__elided__> : tensor<...>`: a named placeholder whose
// bytes a later stage supplies.
struct DenseResourceAttr { std::string handle; Type type; };
struct DictionaryAttr { std::vector<NamedAttribute> entries; };
// `#stablehlo<comparison_direction EQ>`: dialect "stablehlo",
// enum "comparison_direction", value "EQ".
struct EnumAttr { std::string dialect; std::string enum_name; std::string value; };
// `#stablehlo.gather<offset_dims = [1], index_vector_dim = 1>` and the other
// dimension-number structs: a name and (field, integers) pairs in order.
struct StructField {
  std::string name;
  bool is_list = true;  // `[1, 2]` versus a lone `3`
  std::vector<int64_t> values;
};
struct StructAttr { std::string name; std::vector<StructField> fields; };
// `#stablehlo.conv<[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]>`.
struct ConvDimensionNumbers {
  int64_t input_batch_dimension = 0;
  int64_t input_feature_dimension = 1;
  std::vector<int64_t> input_spatial_dimensions;
  int64_t kernel_input_feature_dimension = 0;
  int64_t kernel_output_feature_dimension = 1;
  std::vector<int64_t> kernel_spatial_dimensions;
  int64_t output_batch_dimension = 0;
  int64_t output_feature_dimension = 1;
  std::vector<int64_t> output_spatial_dimensions;
  bool operator==(const ConvDimensionNumbers&) const = default;
};
// Any other `#dialect...` attribute, kept verbatim so it prints back.
struct OpaqueAttr { std::string text; };

class Attribute {
 public:
  using Storage =
      std::variant<UnitAttr, bool, IntegerAttr, FloatAttr, StringAttr, TypeAttr,
                   SymbolRefAttr, ArrayAttr, DenseArrayAttr, DenseElementsAttr,
                   DenseResourceAttr, DictionaryAttr, EnumAttr, StructAttr,
                   ConvDimensionNumbers, OpaqueAttr>;

  // Defined below, once NamedAttribute is complete.
  Attribute();
  template <typename T>
  Attribute(T value);  // NOLINT: implicit

  template <typename T>
  bool is() const { return std::holds_alternative<T>(storage_); }
  template <typename T>
  const T& as() const { return std::get<T>(storage_); }
  template <typename T>
  const T* get_if() const { return std::get_if<T>(&storage_); }
  const Storage& storage() const { return storage_; }

  // A short name of the kind ("integer", "dense elements", ...) for errors.
  std::string_view KindName() const;

  // MLIR spelling.
  std::string ToString() const;
  void AppendTo(std::string& out) const;

 private:
  Storage storage_;
};

struct NamedAttribute {
  std::string name;
  Attribute value;
};

inline Attribute::Attribute() : storage_(UnitAttr{}) {}
template <typename T>
inline Attribute::Attribute(T value) : storage_(std::move(value)) {}

// An ordered list of named attributes with lookup by name; MLIR prints them
// in sorted order, and so do we.
class AttributeList {
 public:
  const Attribute* Find(std::string_view name) const;
  bool Has(std::string_view name) const { return Find(name) != nullptr; }
  // Inserts or replaces, keeping the list sorted by name.
  void Set(std::string name, Attribute value);
  bool Remove(std::string_view name);
  const std::vector<NamedAttribute>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }

  // `{a = 1 : i64, b}`; empty string when empty.
  void AppendDictTo(std::string& out) const;

 private:
  std::vector<NamedAttribute> entries_;
};

// Dense elements helpers.
DenseElementsAttr MakeDenseElements(const Literal& literal);  // splat-folds
// Materializes every element; fails above `max_bytes` (splats expand here).
StatusOr<Literal> DenseElementsToLiteral(const DenseElementsAttr& attr,
                                         int64_t max_bytes = int64_t{1} << 34);

// Number formatting shared by attribute and op printing: the shortest
// decimal in MLIR's style ("1.000000e+00" when six digits round-trip, more
// digits when needed) that parses back to the same bits of `dtype`; NaN and
// infinities as the hex bit pattern ("0x7FC00000").
void AppendFloat(double value, DType dtype, std::string& out);
void AppendFloatBits(uint64_t bits, DType dtype, std::string& out);
void AppendQuotedString(std::string_view s, std::string& out);
// An attribute name: bare when it is an identifier, else quoted.
void AppendAttributeName(std::string_view name, std::string& out);
// `@name`, or `@"name"` when the name needs quoting.
void AppendSymbol(std::string_view name, std::string& out);
void AppendIntList(const std::vector<int64_t>& values, std::string& out);  // "[1, 2]"

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_ATTRIBUTE_H_
