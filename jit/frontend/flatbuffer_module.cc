#include "jit/frontend/flatbuffer_module.h"

#include <flatbuffers/flatbuffers.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "ipc/module_generated.h"
#include "jit/ir/verifier.h"

namespace jitd::frontend {
namespace {

namespace fb = ::jitd::fbmodule;

// Bounds on hostile input, beyond what the FlatBuffers verifier checks.
constexpr int kMaxRegionNesting = ir::kMaxRegionNesting;  // ops inside regions inside ops...
constexpr int kMaxAttributeNesting = 128;  // arrays / dictionaries inside each other
constexpr int kMaxTypeNesting = 64;        // tuples inside tuples
constexpr size_t kMaxValues = size_t{1} << 26;  // values per function

// ElementType (module.fbs) <-> ir::DType.
struct DTypePair {
  fb::ElementType wire;
  ir::DType dtype;
};
constexpr DTypePair kDTypes[] = {
    {fb::ElementType_PRED, ir::DType::kPred},
    {fb::ElementType_S8, ir::DType::kS8},
    {fb::ElementType_S16, ir::DType::kS16},
    {fb::ElementType_S32, ir::DType::kS32},
    {fb::ElementType_S64, ir::DType::kS64},
    {fb::ElementType_U8, ir::DType::kU8},
    {fb::ElementType_U16, ir::DType::kU16},
    {fb::ElementType_U32, ir::DType::kU32},
    {fb::ElementType_U64, ir::DType::kU64},
    {fb::ElementType_F16, ir::DType::kF16},
    {fb::ElementType_BF16, ir::DType::kBF16},
    {fb::ElementType_F32, ir::DType::kF32},
    {fb::ElementType_F64, ir::DType::kF64},
    {fb::ElementType_C64, ir::DType::kC64},
    {fb::ElementType_C128, ir::DType::kC128},
    {fb::ElementType_S2, ir::DType::kS2},
    {fb::ElementType_S4, ir::DType::kS4},
    {fb::ElementType_U2, ir::DType::kU2},
    {fb::ElementType_U4, ir::DType::kU4},
    {fb::ElementType_F8E4M3FN, ir::DType::kF8E4M3FN},
    {fb::ElementType_F8E5M2, ir::DType::kF8E5M2},
    {fb::ElementType_F8E4M3FNUZ, ir::DType::kF8E4M3FNUZ},
    {fb::ElementType_F8E5M2FNUZ, ir::DType::kF8E5M2FNUZ},
    {fb::ElementType_F8E4M3B11FNUZ, ir::DType::kF8E4M3B11FNUZ},
    {fb::ElementType_F8E3M4, ir::DType::kF8E3M4},
    {fb::ElementType_F8E4M3, ir::DType::kF8E4M3},
    {fb::ElementType_F8E8M0FNU, ir::DType::kF8E8M0FNU},
    {fb::ElementType_F4E2M1FN, ir::DType::kF4E2M1FN},
    {fb::ElementType_F6E2M3FN, ir::DType::kF6E2M3FN},
    {fb::ElementType_F6E3M2FN, ir::DType::kF6E3M2FN},
};

// Copies a vector of 8-byte scalars with memcpy: the FlatBuffers verifier
// only guarantees 4-byte alignment for vectors, so hostile bytes can place
// [long] / [double] elements off their alignment, where FlatBuffers' own
// accessors would load misaligned.
template <typename T>
std::vector<T> ReadVec(const flatbuffers::Vector<T>* v) {
  std::vector<T> out;
  if (v == nullptr) return out;
  out.resize(v->size());
  if (!out.empty()) std::memcpy(out.data(), v->Data(), out.size() * sizeof(T));
  return out;
}

fb::ElementType ToWire(ir::DType dtype) {
  for (const DTypePair& p : kDTypes) {
    if (p.dtype == dtype) return p.wire;
  }
  return fb::ElementType_INVALID;
}

std::optional<ir::DType> FromWire(fb::ElementType type) {
  for (const DTypePair& p : kDTypes) {
    if (p.wire == type) return p.dtype;
  }
  return std::nullopt;
}

// ---- IR -> FlatBuffers -------------------------------------------------------

class Writer {
 public:
  StatusOr<std::vector<uint8_t>> Write(const ir::Module& module) {
    std::vector<flatbuffers::Offset<fb::Function>> functions;
    for (const auto& fn : module.functions()) {
      JITD_ASSIGN_OR_RETURN(auto f, WriteFunction(*fn));
      functions.push_back(f);
    }
    std::vector<flatbuffers::Offset<fb::Resource>> resources;
    for (const ir::ResourceEntry& r : module.resources()) {
      auto section = fbb_.CreateString(r.section);
      auto group = fbb_.CreateString(r.group);
      auto key = fbb_.CreateString(r.key);
      auto value = fbb_.CreateString(r.value);
      resources.push_back(fb::CreateResource(fbb_, section, group, key, value));
    }
    auto attrs = WriteAttrs(module.attrs());
    auto name = fbb_.CreateString(module.name());
    auto fns = fbb_.CreateVector(functions);
    auto res = fbb_.CreateVector(resources);
    auto root = fb::CreateModule(fbb_, kFlatBufferModuleVersion, name, attrs, fns, res);
    fb::FinishModuleBuffer(fbb_, root);
    return std::vector<uint8_t>(fbb_.GetBufferPointer(),
                                fbb_.GetBufferPointer() + fbb_.GetSize());
  }

 private:
  flatbuffers::Offset<fb::Type> WriteType(const ir::Type& type) {
    switch (type.kind()) {
      case ir::Type::Kind::kToken:
        return fb::CreateType(fbb_, fb::TypeKind_TOKEN);
      case ir::Type::Kind::kTuple: {
        std::vector<flatbuffers::Offset<fb::Type>> elements;
        for (const ir::Type& t : type.elements()) elements.push_back(WriteType(t));
        return fb::CreateTypeDirect(fbb_, fb::TypeKind_TUPLE, fb::ElementType_INVALID, nullptr,
                                    &elements);
      }
      case ir::Type::Kind::kFuture: {
        std::vector<flatbuffers::Offset<fb::Type>> elements;
        for (const ir::Type& t : type.elements()) elements.push_back(WriteType(t));
        return fb::CreateTypeDirect(fbb_, fb::TypeKind_FUTURE, fb::ElementType_INVALID, nullptr,
                                    &elements);
      }
      case ir::Type::Kind::kTensor:
        break;
    }
    return fb::CreateTypeDirect(fbb_, fb::TypeKind_TENSOR, ToWire(type.dtype()), &type.dims());
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Type>>> WriteTypes(
      const std::vector<ir::Type>& types) {
    std::vector<flatbuffers::Offset<fb::Type>> out;
    for (const ir::Type& t : types) out.push_back(WriteType(t));
    return fbb_.CreateVector(out);
  }

  flatbuffers::Offset<fb::Attribute> WriteAttr(const ir::Attribute& attr) {
    return std::visit([&](const auto& a) { return WriteAttrOf(a); }, attr.storage());
  }

  flatbuffers::Offset<fb::Attribute> Simple(fb::AttributeKind kind) {
    fb::AttributeBuilder b(fbb_);
    b.add_kind(kind);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::UnitAttr&) {
    return Simple(fb::AttributeKind_UNIT);
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(bool v) {
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_BOOL);
    b.add_int_value(v ? 1 : 0);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::IntegerAttr& a) {
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_INTEGER);
    b.add_int_value(a.value);
    b.add_element_type(ToWire(a.dtype));
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::FloatAttr& a) {
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_FLOAT);
    b.add_float_value(a.value);
    b.add_element_type(ToWire(a.dtype));
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> StringKind(fb::AttributeKind kind, const std::string& s) {
    auto str = fbb_.CreateString(s);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(kind);
    b.add_string_value(str);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::StringAttr& a) {
    return StringKind(fb::AttributeKind_STRING, a.value);
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::SymbolRefAttr& a) {
    return StringKind(fb::AttributeKind_SYMBOL_REF, a.name);
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::OpaqueAttr& a) {
    return StringKind(fb::AttributeKind_OPAQUE, a.text);
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::TypeAttr& a) {
    auto t = WriteType(a.type);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_TYPE);
    b.add_type(t);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::ArrayAttr& a) {
    std::vector<flatbuffers::Offset<fb::Attribute>> elements;
    for (const ir::Attribute& e : a.elements) elements.push_back(WriteAttr(e));
    auto v = fbb_.CreateVector(elements);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_ARRAY);
    b.add_elements(v);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::DenseArrayAttr& a) {
    auto ints = fbb_.CreateVector(a.ints);
    auto floats = fbb_.CreateVector(a.floats);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_DENSE_ARRAY);
    b.add_element_type(ToWire(a.dtype));
    b.add_ints(ints);
    b.add_floats(floats);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::DenseElementsAttr& a) {
    auto t = WriteType(a.type);
    static const std::vector<uint8_t> kNone;
    auto data = fbb_.CreateVector(a.data ? *a.data : kNone);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_DENSE_ELEMENTS);
    b.add_type(t);
    b.add_splat(a.splat);
    b.add_data(data);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::DenseResourceAttr& a) {
    auto t = WriteType(a.type);
    auto s = fbb_.CreateString(a.handle);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_DENSE_RESOURCE);
    b.add_type(t);
    b.add_string_value(s);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::DictionaryAttr& a) {
    auto entries = WriteNamed(a.entries);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_DICTIONARY);
    b.add_entries(entries);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::EnumAttr& a) {
    auto dialect = fbb_.CreateString(a.dialect);
    auto enum_name = fbb_.CreateString(a.enum_name);
    auto value = fbb_.CreateString(a.value);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_ENUM);
    b.add_dialect(dialect);
    b.add_enum_name(enum_name);
    b.add_string_value(value);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::StructAttr& a) {
    std::vector<flatbuffers::Offset<fb::StructField>> fields;
    for (const ir::StructField& f : a.fields) {
      auto name = fbb_.CreateString(f.name);
      auto values = fbb_.CreateVector(f.values);
      fields.push_back(fb::CreateStructField(fbb_, name, f.is_list, values));
    }
    auto name = fbb_.CreateString(a.name);
    auto v = fbb_.CreateVector(fields);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_STRUCT);
    b.add_string_value(name);
    b.add_fields(v);
    return b.Finish();
  }
  flatbuffers::Offset<fb::Attribute> WriteAttrOf(const ir::ConvDimensionNumbers& c) {
    auto conv = fb::CreateConvDimensionsDirect(
        fbb_, c.input_batch_dimension, c.input_feature_dimension, &c.input_spatial_dimensions,
        c.kernel_input_feature_dimension, c.kernel_output_feature_dimension,
        &c.kernel_spatial_dimensions, c.output_batch_dimension, c.output_feature_dimension,
        &c.output_spatial_dimensions);
    fb::AttributeBuilder b(fbb_);
    b.add_kind(fb::AttributeKind_CONV_DIMENSIONS);
    b.add_conv(conv);
    return b.Finish();
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NamedAttribute>>> WriteNamed(
      const std::vector<ir::NamedAttribute>& entries) {
    std::vector<flatbuffers::Offset<fb::NamedAttribute>> out;
    for (const ir::NamedAttribute& e : entries) {
      auto value = WriteAttr(e.value);
      out.push_back(fb::CreateNamedAttribute(fbb_, fbb_.CreateString(e.name), value));
    }
    return fbb_.CreateVector(out);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::NamedAttribute>>> WriteAttrs(
      const ir::AttributeList& list) {
    return WriteNamed(list.entries());
  }

  uint32_t Define(const ir::Value* v) {
    uint32_t id = next_id_++;
    ids_[v] = id;
    return id;
  }

  // `depth`: regions enclosing this one (0 for a function body).
  StatusOr<flatbuffers::Offset<fb::Region>> WriteRegion(const ir::Region& region, int depth) {
    if (depth > kMaxRegionNesting) {
      return InvalidArgument("regions nested deeper than the limit of " +
                             std::to_string(kMaxRegionNesting) + " levels");
    }
    std::vector<flatbuffers::Offset<fb::Block>> blocks;
    // Arguments of every block are defined first: a branch may name a later
    // block's arguments only through successors, which StableHLO has not.
    for (size_t b = 0; b < region.num_blocks(); ++b) {
      const ir::Block& block = region.block(b);
      std::vector<ir::Type> arg_types;
      std::vector<flatbuffers::Offset<flatbuffers::String>> arg_names;
      for (size_t i = 0; i < block.num_args(); ++i) {
        Define(block.arg(i));
        arg_types.push_back(block.arg(i)->type());
        arg_names.push_back(fbb_.CreateString(block.arg(i)->name()));
      }
      std::vector<flatbuffers::Offset<fb::Op>> ops;
      for (const auto& op : block.ops()) {
        JITD_ASSIGN_OR_RETURN(auto o, WriteOp(*op, depth));
        ops.push_back(o);
      }
      auto types = WriteTypes(arg_types);
      auto names = fbb_.CreateVector(arg_names);
      auto ov = fbb_.CreateVector(ops);
      blocks.push_back(fb::CreateBlock(fbb_, types, names, ov));
    }
    return fb::CreateRegion(fbb_, fbb_.CreateVector(blocks));
  }

  StatusOr<flatbuffers::Offset<fb::Op>> WriteOp(const ir::Op& op, int depth) {
    std::vector<uint32_t> operands;
    for (const ir::Value* v : op.operands()) {
      auto it = ids_.find(v);
      if (it == ids_.end()) {
        return InvalidArgument("op '" + std::string(op.name()) +
                               "' at " + op.loc().ToString() +
                               " uses a value not defined before it");
      }
      operands.push_back(it->second);
    }
    for (size_t i = 0; i < op.num_results(); ++i) Define(op.result(i));
    std::vector<flatbuffers::Offset<fb::Region>> regions;
    for (size_t r = 0; r < op.num_regions(); ++r) {
      JITD_ASSIGN_OR_RETURN(auto region, WriteRegion(op.region(r), depth + 1));
      regions.push_back(region);
    }
    std::vector<flatbuffers::Offset<fb::ResultGroup>> groups;
    for (const ir::ResultGroup& g : op.result_groups()) {
      groups.push_back(fb::CreateResultGroup(fbb_, fbb_.CreateString(g.name), g.count));
    }
    auto name = fbb_.CreateString(op.name());
    auto ov = fbb_.CreateVector(operands);
    auto rt = WriteTypes(op.result_types());
    auto attrs = WriteAttrs(op.attrs());
    auto rv = fbb_.CreateVector(regions);
    auto gv = fbb_.CreateVector(groups);
    fb::Location loc(op.loc().line, op.loc().column);
    return fb::CreateOp(fbb_, name, ov, rt, attrs, rv, &loc, gv);
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::AttributeList>>> WriteLists(
      const std::vector<ir::AttributeList>& lists) {
    std::vector<flatbuffers::Offset<fb::AttributeList>> out;
    for (const ir::AttributeList& l : lists) {
      auto entries = WriteAttrs(l);
      out.push_back(fb::CreateAttributeList(fbb_, entries));
    }
    return fbb_.CreateVector(out);
  }

  StatusOr<flatbuffers::Offset<fb::Function>> WriteFunction(const ir::Function& fn) {
    ids_.clear();
    next_id_ = 0;
    flatbuffers::Offset<fb::Region> body = 0;
    if (!fn.body().empty()) {
      JITD_ASSIGN_OR_RETURN(body, WriteRegion(fn.body(), 0));
    }
    auto name = fbb_.CreateString(fn.name());
    auto vis = fbb_.CreateString(fn.visibility());
    auto at = WriteTypes(fn.arg_types());
    auto rt = WriteTypes(fn.result_types());
    auto aa = WriteLists(fn.arg_attrs());
    auto ra = WriteLists(fn.result_attrs());
    auto attrs = WriteAttrs(fn.attrs());
    fb::Location loc(fn.loc().line, fn.loc().column);
    return fb::CreateFunction(fbb_, name, vis, at, rt, aa, ra, attrs, body, &loc);
  }

  flatbuffers::FlatBufferBuilder fbb_{1024};
  std::unordered_map<const ir::Value*, uint32_t> ids_;
  uint32_t next_id_ = 0;
};

// ---- FlatBuffers -> IR -------------------------------------------------------

class Reader {
 public:
  StatusOr<std::unique_ptr<ir::Module>> Read(std::span<const uint8_t> bytes) {
    // FlatBuffers needs the buffer aligned for its scalars; copy if not.
    std::vector<uint8_t> aligned;
    const uint8_t* data = bytes.data();
    if (reinterpret_cast<uintptr_t>(data) % 8 != 0) {
      aligned.assign(bytes.begin(), bytes.end());
      data = aligned.data();
    }
    if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
      return InvalidArgument("flatbuffer module: larger than 2 GiB");
    }
    if (bytes.size() < 8 || !fb::ModuleBufferHasIdentifier(data)) {
      return InvalidArgument("flatbuffer module: not a jitd module (file identifier 'JDMF' missing)");
    }
    flatbuffers::Verifier::Options options;
    options.max_depth = 4 * kMaxRegionNesting + 2 * kMaxAttributeNesting + 64;
    options.max_tables = 1u << 26;
    flatbuffers::Verifier verifier(data, bytes.size(), options);
    if (!fb::VerifyModuleBuffer(verifier)) {
      return InvalidArgument("flatbuffer module: the FlatBuffers verifier refused the bytes "
                             "(truncated or corrupt)");
    }
    const fb::Module* m = fb::GetModule(data);
    if (m->version() == 0 || m->version() > kFlatBufferModuleVersion) {
      return InvalidArgument("flatbuffer module: format version " + std::to_string(m->version()) +
                             " is not supported (this reader knows 1.." +
                             std::to_string(kFlatBufferModuleVersion) + ")");
    }
    auto module = std::make_unique<ir::Module>();
    where_ = "module";
    if (m->name()) module->set_name(m->name()->str());
    JITD_RETURN_IF_ERROR(ReadAttrList(m->attributes(), module->attrs(), 0));
    if (m->functions()) {
      for (uint32_t i = 0; i < m->functions()->size(); ++i) {
        JITD_RETURN_IF_ERROR(ReadFunction(*m->functions()->Get(i), i, *module));
      }
    }
    if (m->resources()) {
      for (const fb::Resource* r : *m->resources()) {
        ir::ResourceEntry entry{Str(r->section()), Str(r->group()), Str(r->key()),
                                Str(r->value())};
        // Resources print verbatim into the file metadata block: only the
        // two sections MLIR has, and printable text without quotes in names.
        if (entry.section != "dialect_resources" && entry.section != "external_resources") {
          return Error("resource section '" + entry.section + "' is not dialect_resources or "
                       "external_resources");
        }
        auto printable = [](const std::string& s, bool allow_quotes) {
          for (unsigned char c : s) {
            if (c < 0x20 || c > 0x7e || (!allow_quotes && (c == '"' || c == '\\'))) return false;
          }
          return !s.empty();
        };
        if (!printable(entry.group, false) || !printable(entry.key, false) ||
            !printable(entry.value, true)) {
          return Error("resource '" + entry.key + "' has an empty or unprintable group, key or value");
        }
        module->resources().push_back(std::move(entry));
      }
    }
    return module;
  }

 private:
  static std::string Str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

  Status Error(const std::string& what) const {
    return InvalidArgument("flatbuffer module: " + where_ + ": " + what);
  }

  StatusOr<ir::DType> ReadDType(fb::ElementType t) const {
    std::optional<ir::DType> d = FromWire(t);
    if (!d) return Error("invalid element type " + std::to_string(static_cast<int>(t)));
    return *d;
  }

  StatusOr<ir::Type> ReadType(const fb::Type* t, int depth) const {
    if (!t) return Error("missing type");
    if (depth > kMaxTypeNesting) return Error("types nested too deeply");
    switch (t->kind()) {
      case fb::TypeKind_TOKEN:
        return ir::Type::Token();
      case fb::TypeKind_TUPLE: {
        std::vector<ir::Type> elements;
        if (t->elements()) {
          for (const fb::Type* e : *t->elements()) {
            JITD_ASSIGN_OR_RETURN(ir::Type et, ReadType(e, depth + 1));
            elements.push_back(std::move(et));
          }
        }
        return ir::Type::Tuple(std::move(elements));
      }
      case fb::TypeKind_FUTURE: {
        std::vector<ir::Type> elements;
        if (t->elements()) {
          for (const fb::Type* e : *t->elements()) {
            JITD_ASSIGN_OR_RETURN(ir::Type et, ReadType(e, depth + 1));
            if (!et.is_tensor()) return Error("a future of " + et.ToString() + " (only tensors)");
            elements.push_back(std::move(et));
          }
        }
        if (elements.empty()) return Error("a future of no values");
        return ir::Type::Future(std::move(elements));
      }
      case fb::TypeKind_TENSOR: {
        JITD_ASSIGN_OR_RETURN(ir::DType d, ReadDType(t->element_type()));
        std::vector<int64_t> dims;
        if (t->dims()) {
          if (t->dims()->size() > static_cast<uint32_t>(ir::kMaxRank)) {
            return Error("tensor rank " + std::to_string(t->dims()->size()) +
                         " exceeds the limit of " + std::to_string(ir::kMaxRank));
          }
          dims = ReadVec(t->dims());
        }
        StatusOr<ir::Type> checked = ir::Type::CheckedTensor(d, std::move(dims));
        if (!checked.ok()) return Error(checked.status().message());
        return std::move(checked).value();
      }
    }
    return Error("invalid type kind " + std::to_string(static_cast<int>(t->kind())));
  }

  StatusOr<std::vector<ir::Type>> ReadTypes(
      const flatbuffers::Vector<flatbuffers::Offset<fb::Type>>* types) const {
    std::vector<ir::Type> out;
    if (types) {
      for (const fb::Type* t : *types) {
        JITD_ASSIGN_OR_RETURN(ir::Type type, ReadType(t, 0));
        out.push_back(std::move(type));
      }
    }
    return out;
  }

  static std::vector<int64_t> Longs(const flatbuffers::Vector<int64_t>* v) { return ReadVec(v); }

  StatusOr<ir::Attribute> ReadAttr(const fb::Attribute* a, int depth) const {
    if (!a) return Error("missing attribute");
    if (depth > kMaxAttributeNesting) return Error("attributes nested too deeply");
    switch (a->kind()) {
      case fb::AttributeKind_UNIT:
        return ir::Attribute(ir::UnitAttr{});
      case fb::AttributeKind_BOOL:
        if (a->int_value() != 0 && a->int_value() != 1) return Error("bool attribute not 0 or 1");
        return ir::Attribute(a->int_value() != 0);
      case fb::AttributeKind_INTEGER: {
        JITD_ASSIGN_OR_RETURN(ir::DType d, ReadDType(a->element_type()));
        if (!ir::IsInteger(d) && !ir::IsPred(d)) {
          return Error("integer attribute of non-integer type " + std::string(ir::DTypeName(d)));
        }
        return ir::Attribute(ir::IntegerAttr{a->int_value(), d});
      }
      case fb::AttributeKind_FLOAT: {
        JITD_ASSIGN_OR_RETURN(ir::DType d, ReadDType(a->element_type()));
        if (!ir::IsFloat(d)) {
          return Error("float attribute of non-float type " + std::string(ir::DTypeName(d)));
        }
        return ir::Attribute(ir::FloatAttr{a->float_value(), d});
      }
      case fb::AttributeKind_STRING:
        return ir::Attribute(ir::StringAttr{Str(a->string_value())});
      case fb::AttributeKind_TYPE: {
        JITD_ASSIGN_OR_RETURN(ir::Type t, ReadType(a->type(), 0));
        return ir::Attribute(ir::TypeAttr{std::move(t)});
      }
      case fb::AttributeKind_SYMBOL_REF:
        if (!a->string_value() || a->string_value()->size() == 0) {
          return Error("symbol reference without a name");
        }
        return ir::Attribute(ir::SymbolRefAttr{Str(a->string_value())});
      case fb::AttributeKind_ARRAY: {
        ir::ArrayAttr arr;
        if (a->elements()) {
          for (const fb::Attribute* e : *a->elements()) {
            JITD_ASSIGN_OR_RETURN(ir::Attribute ea, ReadAttr(e, depth + 1));
            arr.elements.push_back(std::move(ea));
          }
        }
        return ir::Attribute(std::move(arr));
      }
      case fb::AttributeKind_DENSE_ARRAY: {
        JITD_ASSIGN_OR_RETURN(ir::DType d, ReadDType(a->element_type()));
        ir::DenseArrayAttr arr{d, Longs(a->ints()), {}};
        arr.floats = ReadVec(a->floats());
        if (!arr.ints.empty() && !arr.floats.empty()) {
          return Error("dense array with both integer and float elements");
        }
        if (ir::IsComplex(d) || (ir::IsFloat(d) ? !arr.ints.empty() : !arr.floats.empty())) {
          return Error("dense array elements do not match its element type");
        }
        return ir::Attribute(std::move(arr));
      }
      case fb::AttributeKind_DENSE_ELEMENTS: {
        JITD_ASSIGN_OR_RETURN(ir::Type t, ReadType(a->type(), 0));
        if (!t.is_tensor()) return Error("dense elements of a non-tensor type " + t.ToString());
        const int64_t element_bytes = ir::StorageBytes(t.dtype());
        const int64_t want = a->splat() ? element_bytes : t.num_elements() * element_bytes;
        const int64_t have = a->data() ? a->data()->size() : 0;
        if (have != want) {
          return Error("dense elements of " + t.ToString() + " need " + std::to_string(want) +
                       " bytes" + (a->splat() ? " (splat)" : "") + ", got " +
                       std::to_string(have));
        }
        if (t.dtype() == ir::DType::kPred && a->data()) {
          for (uint8_t byte : *a->data()) {
            if (byte > 1) return Error("dense elements of i1: bytes must be 0 or 1");
          }
        }
        ir::DenseElementsAttr dense;
        dense.type = std::move(t);
        dense.splat = a->splat();
        dense.data = std::make_shared<const std::vector<uint8_t>>(
            a->data() ? std::vector<uint8_t>(a->data()->begin(), a->data()->end())
                      : std::vector<uint8_t>());
        return ir::Attribute(std::move(dense));
      }
      case fb::AttributeKind_DENSE_RESOURCE: {
        JITD_ASSIGN_OR_RETURN(ir::Type t, ReadType(a->type(), 0));
        return ir::Attribute(ir::DenseResourceAttr{Str(a->string_value()), std::move(t)});
      }
      case fb::AttributeKind_DICTIONARY: {
        ir::DictionaryAttr dict;
        if (a->entries()) {
          for (const fb::NamedAttribute* e : *a->entries()) {
            if (!e->name()) return Error("dictionary entry without a name");
            JITD_ASSIGN_OR_RETURN(ir::Attribute v, ReadAttr(e->value(), depth + 1));
            dict.entries.push_back({e->name()->str(), std::move(v)});
          }
        }
        return ir::Attribute(std::move(dict));
      }
      case fb::AttributeKind_ENUM:
        return ir::Attribute(
            ir::EnumAttr{Str(a->dialect()), Str(a->enum_name()), Str(a->string_value())});
      case fb::AttributeKind_STRUCT: {
        ir::StructAttr s{Str(a->string_value()), {}};
        if (a->fields()) {
          for (const fb::StructField* f : *a->fields()) {
            s.fields.push_back({Str(f->name()), f->is_list(), Longs(f->values())});
          }
        }
        return ir::Attribute(std::move(s));
      }
      case fb::AttributeKind_CONV_DIMENSIONS: {
        const fb::ConvDimensions* c = a->conv();
        if (!c) return Error("convolution dimension numbers missing");
        ir::ConvDimensionNumbers n;
        n.input_batch_dimension = c->input_batch_dimension();
        n.input_feature_dimension = c->input_feature_dimension();
        n.input_spatial_dimensions = Longs(c->input_spatial_dimensions());
        n.kernel_input_feature_dimension = c->kernel_input_feature_dimension();
        n.kernel_output_feature_dimension = c->kernel_output_feature_dimension();
        n.kernel_spatial_dimensions = Longs(c->kernel_spatial_dimensions());
        n.output_batch_dimension = c->output_batch_dimension();
        n.output_feature_dimension = c->output_feature_dimension();
        n.output_spatial_dimensions = Longs(c->output_spatial_dimensions());
        return ir::Attribute(std::move(n));
      }
      case fb::AttributeKind_OPAQUE:
        return ir::Attribute(ir::OpaqueAttr{Str(a->string_value())});
    }
    return Error("invalid attribute kind " + std::to_string(static_cast<int>(a->kind())));
  }

  Status ReadAttrList(
      const flatbuffers::Vector<flatbuffers::Offset<fb::NamedAttribute>>* entries,
      ir::AttributeList& out, int depth) const {
    if (!entries) return Status::Ok();
    for (const fb::NamedAttribute* e : *entries) {
      if (!e->name() || e->name()->size() == 0) return Error("attribute without a name");
      if (out.Has(e->name()->string_view())) {
        return Error("attribute '" + e->name()->str() + "' given twice");
      }
      JITD_ASSIGN_OR_RETURN(ir::Attribute v, ReadAttr(e->value(), depth));
      out.Set(e->name()->str(), std::move(v));
    }
    return Status::Ok();
  }

  Status ReadFunction(const fb::Function& f, uint32_t index, ir::Module& module) {
    const std::string name = Str(f.name());
    where_ = "function #" + std::to_string(index) + " '" + name + "'";
    if (name.empty()) return Error("function without a name");
    ir::Location loc;
    if (f.location()) loc = {f.location()->line(), f.location()->column()};
    auto fn = std::make_unique<ir::Function>(name, loc);
    const std::string vis = f.visibility() ? f.visibility()->str() : "public";
    if (vis != "public" && vis != "private" && vis != "nested") {
      return Error("invalid visibility '" + vis + "'");
    }
    fn->set_visibility(vis);
    JITD_ASSIGN_OR_RETURN(fn->arg_types(), ReadTypes(f.arg_types()));
    JITD_ASSIGN_OR_RETURN(fn->result_types(), ReadTypes(f.result_types()));
    auto read_lists = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::AttributeList>>* v,
                          size_t want, std::vector<ir::AttributeList>& out,
                          const char* what) -> Status {
      if (!v) return Status::Ok();
      if (v->size() != 0 && v->size() != want) {
        return Error(std::string(what) + " attributes: " + std::to_string(v->size()) +
                     " lists for " + std::to_string(want) + " entries");
      }
      for (const fb::AttributeList* l : *v) {
        ir::AttributeList list;
        JITD_RETURN_IF_ERROR(ReadAttrList(l->entries(), list, 0));
        out.push_back(std::move(list));
      }
      return Status::Ok();
    };
    JITD_RETURN_IF_ERROR(
        read_lists(f.arg_attributes(), fn->arg_types().size(), fn->arg_attrs(), "argument"));
    JITD_RETURN_IF_ERROR(read_lists(f.result_attributes(), fn->result_types().size(),
                                    fn->result_attrs(), "result"));
    JITD_RETURN_IF_ERROR(ReadAttrList(f.attributes(), fn->attrs(), 0));
    values_.clear();
    op_counter_ = 0;
    if (f.body()) {
      JITD_RETURN_IF_ERROR(ReadRegion(*f.body(), fn->body(), 0));
      if (fn->body().empty()) return Error("function body without blocks");
      const ir::Block& entry = fn->body().block(0);
      bool match = entry.num_args() == fn->arg_types().size();
      for (size_t i = 0; match && i < entry.num_args(); ++i) {
        match = entry.arg(i)->type() == fn->arg_types()[i];
      }
      if (!match) {
        where_ = "function #" + std::to_string(index) + " '" + name + "'";
        return Error("entry block arguments do not match the function's argument types");
      }
    }
    where_ = "function #" + std::to_string(index) + " '" + name + "'";
    StatusOr<ir::Function*> added = module.AddFunction(std::move(fn));
    if (!added.ok()) return Error(added.status().message());
    return Status::Ok();
  }

  Status ReadRegion(const fb::Region& r, ir::Region& region, int depth) {
    if (depth > kMaxRegionNesting) {
      return Error("regions nested deeper than the limit of " + std::to_string(kMaxRegionNesting) +
                   " levels");
    }
    const size_t scope = values_.size();
    if (r.blocks()) {
      // Arguments of all blocks first (the writer numbers them that way).
      std::vector<ir::Block*> blocks;
      for (const fb::Block* b : *r.blocks()) {
        ir::Block& block = region.add_block();
        blocks.push_back(&block);
        JITD_ASSIGN_OR_RETURN(std::vector<ir::Type> types, ReadTypes(b->arg_types()));
        if (b->arg_names() && b->arg_names()->size() != 0 &&
            b->arg_names()->size() != types.size()) {
          return Error("block has " + std::to_string(types.size()) + " arguments but " +
                       std::to_string(b->arg_names()->size()) + " names");
        }
        for (size_t i = 0; i < types.size(); ++i) {
          ir::Value* v = block.add_arg(types[i]);
          if (b->arg_names() && b->arg_names()->size() != 0) {
            v->set_name(b->arg_names()->Get(static_cast<uint32_t>(i))->str());
          }
          JITD_RETURN_IF_ERROR(DefineValue(v));
        }
      }
      for (uint32_t i = 0; i < r.blocks()->size(); ++i) {
        const fb::Block* b = r.blocks()->Get(i);
        if (!b->ops()) continue;
        for (const fb::Op* o : *b->ops()) {
          JITD_RETURN_IF_ERROR(ReadOp(*o, *blocks[i], depth));
        }
      }
    }
    // Values of this region go out of scope; ids stay taken.
    for (size_t i = scope; i < values_.size(); ++i) values_[i] = nullptr;
    return Status::Ok();
  }

  Status DefineValue(ir::Value* v) {
    if (values_.size() >= kMaxValues) return Error("more than 2^26 values in one function");
    values_.push_back(v);
    return Status::Ok();
  }

  Status ReadOp(const fb::Op& o, ir::Block& block, int depth) {
    const std::string saved_where = where_;
    const uint64_t index = op_counter_++;
    const std::string name = Str(o.name());
    const std::string here = saved_where.substr(0, saved_where.find(" op #")) + " op #" +
                             std::to_string(index) + " (" + (name.empty() ? "?" : name) + ")";
    where_ = here;
    std::optional<ir::OpCode> code = ir::ParseOpName(name);
    if (!code) {
      std::string near = ir::NearestOpName(name);
      return Error("unknown op name '" + name + "'" +
                   (near.empty() ? std::string() : "; did you mean '" + near + "'?"));
    }
    ir::Location loc;
    if (o.location()) loc = {o.location()->line(), o.location()->column()};
    auto op = std::make_unique<ir::Op>(*code, loc);
    if (o.operands()) {
      for (uint32_t i = 0; i < o.operands()->size(); ++i) {
        const uint32_t id = o.operands()->Get(i);
        if (id >= values_.size() || values_[id] == nullptr) {
          return Error("operand " + std::to_string(i) + " names value " + std::to_string(id) +
                       ", which is not defined before the op or not in scope");
        }
        op->add_operand(values_[id]);
      }
    }
    JITD_ASSIGN_OR_RETURN(std::vector<ir::Type> results, ReadTypes(o.result_types()));
    JITD_RETURN_IF_ERROR(ReadAttrList(o.attributes(), op->attrs(), 0));
    if (o.result_groups() && o.result_groups()->size() != 0) {
      std::vector<ir::ResultGroup> groups;
      uint64_t total = 0;
      for (const fb::ResultGroup* g : *o.result_groups()) {
        if (g->count() < 1) return Error("result group with count < 1");
        total += static_cast<uint64_t>(g->count());
        groups.push_back({Str(g->name()), g->count()});
      }
      if (total != results.size()) {
        return Error("result groups name " + std::to_string(total) + " results, the op has " +
                     std::to_string(results.size()));
      }
      op->set_result_groups(std::move(groups));
    }
    ir::Op* added = block.add_op(std::move(op));
    for (ir::Type& t : results) JITD_RETURN_IF_ERROR(DefineValue(added->add_result(std::move(t))));
    if (o.regions()) {
      for (const fb::Region* r : *o.regions()) {
        JITD_RETURN_IF_ERROR(ReadRegion(*r, added->add_region(), depth + 1));
      }
    }
    where_ = saved_where;
    return Status::Ok();
  }

  std::string where_;
  std::vector<ir::Value*> values_;  // by id; null once out of scope
  uint64_t op_counter_ = 0;
};

}  // namespace

StatusOr<std::vector<uint8_t>> ModuleToFlatBuffer(const ir::Module& module) {
  // The format has no field for quantization parameters nor for dynamic
  // dimensions and their bounds: such programs are refused rather than
  // written as something else (storage types; a negative dimension the
  // reader refuses).
  auto not_carried = [](const ir::Type& t) -> const char* {
    if (t.is_quantized()) return "quantized element types (!quant.uniform)";
    if (t.is_dynamic()) return "dynamic dimensions ('?', #stablehlo.bounds)";
    return nullptr;
  };
  for (const auto& fn : module.functions()) {
    const char* what = nullptr;
    std::optional<ir::Location> at;
    for (const auto* types : {&fn->arg_types(), &fn->result_types()}) {
      for (const ir::Type& t : *types) {
        if (!what) what = not_carried(t);
      }
    }
    ir::WalkOps(fn->body(), [&](const ir::Op& op) {
      if (what) return;
      for (const ir::Value* v : op.operands()) {
        if (!what) what = not_carried(v->type());
      }
      for (size_t i = 0; i < op.num_results(); ++i) {
        if (!what) what = not_carried(op.result(i)->type());
      }
      if (what) at = op.loc();
    });
    if (what) {
      return Unimplemented("flatbuffer module: @" + fn->name() +
                           (at && at->line > 0 ? " at " + at->ToString() : std::string()) + ": " +
                           what + " are not carried by the FlatBuffers module format yet; send "
                           "the program as text");
    }
  }
  Writer writer;
  return writer.Write(module);
}

StatusOr<std::unique_ptr<ir::Module>> ModuleFromFlatBufferUnverified(
    std::span<const uint8_t> bytes) {
  Reader reader;
  return reader.Read(bytes);
}

StatusOr<std::unique_ptr<ir::Module>> ModuleFromFlatBuffer(std::span<const uint8_t> bytes) {
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> module, ModuleFromFlatBufferUnverified(bytes));
  Status verified = ir::VerifyModule(*module);
  if (!verified.ok()) {
    return InvalidArgument("flatbuffer module: " + std::string(verified.message()));
  }
  return module;
}

}  // namespace jitd::frontend
