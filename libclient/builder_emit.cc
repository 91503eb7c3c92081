// Emitters of built computations: the FlatBuffers module (ipc/module.fbs)
// and StableHLO text in MLIR's generic op form. Both number values the same
// way module.fbs defines: per function, block arguments then each op's
// results (before the op's regions), in program order.
#include <flatbuffers/flatbuffers.h>

#include <cctype>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "libclient/builder.h"

namespace jitd::client {
namespace {

namespace fb = ::jitd::fbmodule;

// Value ids of the graphs being walked, innermost last.
class Numbering {
 public:
  void Push(size_t num_args) {
    Level level;
    for (size_t i = 0; i < num_args; ++i) level.args.push_back(next_++);
    stack_.push_back(std::move(level));
  }
  void Pop() { stack_.pop_back(); }
  // Defines the results of the next node of the innermost graph.
  uint32_t DefineNode(size_t num_results) {
    const uint32_t base = next_;
    stack_.back().nodes.push_back(base);
    next_ += static_cast<uint32_t>(num_results);
    return base;
  }
  uint32_t Id(const ValueRef& r) const {
    const Level& level = stack_[stack_.size() - 1 - static_cast<size_t>(r.up)];
    return r.node == ValueRef::kArg ? level.args[static_cast<size_t>(r.index)]
                                    : level.nodes[static_cast<size_t>(r.node)] +
                                          static_cast<uint32_t>(r.index);
  }
  const std::vector<uint32_t>& args() const { return stack_.back().args; }

 private:
  struct Level {
    std::vector<uint32_t> args;
    std::vector<uint32_t> nodes;  // first result id of each node
  };
  std::vector<Level> stack_;
  uint32_t next_ = 0;
};

// The main function's block: the body plus its func.return.
Graph MainBlock(const Computation& c) {
  Graph g = c.body();
  Node ret;
  ret.name = "func.return";
  ret.operands = c.results();
  g.nodes.push_back(std::move(ret));
  return g;
}

// ---- FlatBuffers -----------------------------------------------------------------

class FbWriter {
 public:
  std::vector<uint8_t> Write(const Computation& c) {
    const Graph main = MainBlock(c);
    auto body = WriteRegion(main);
    auto name = fbb_.CreateString("main");
    auto vis = fbb_.CreateString("public");
    auto args = Types(c.parameters());
    auto results = Types(c.result_shapes());
    fb::FunctionBuilder fn(fbb_);
    fn.add_name(name);
    fn.add_visibility(vis);
    fn.add_arg_types(args);
    fn.add_result_types(results);
    fn.add_body(body);
    auto function = fn.Finish();
    std::vector<flatbuffers::Offset<fb::Function>> functions = {function};
    auto module_name = fbb_.CreateString(c.name());
    auto fv = fbb_.CreateVector(functions);
    fb::ModuleBuilder m(fbb_);
    m.add_version(1);
    m.add_name(module_name);
    m.add_functions(fv);
    fb::FinishModuleBuffer(fbb_, m.Finish());
    return std::vector<uint8_t>(fbb_.GetBufferPointer(), fbb_.GetBufferPointer() + fbb_.GetSize());
  }

 private:
  flatbuffers::Offset<fb::Type> TypeOf(const Shape& s) {
    switch (s.kind()) {
      case Shape::Kind::kToken:
        return fb::CreateType(fbb_, fb::TypeKind_TOKEN);
      case Shape::Kind::kTuple: {
        std::vector<flatbuffers::Offset<fb::Type>> elements;
        for (const Shape& e : s.elements()) elements.push_back(TypeOf(e));
        return fb::CreateTypeDirect(fbb_, fb::TypeKind_TUPLE, fb::ElementType_INVALID, nullptr,
                                    &elements);
      }
      case Shape::Kind::kArray:
        break;
    }
    return fb::CreateTypeDirect(fbb_, fb::TypeKind_TENSOR, s.dtype(), &s.dims());
  }

  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Type>>> Types(
      const std::vector<Shape>& shapes) {
    std::vector<flatbuffers::Offset<fb::Type>> out;
    for (const Shape& s : shapes) out.push_back(TypeOf(s));
    return fbb_.CreateVector(out);
  }

  flatbuffers::Offset<fb::Attribute> AttrOf(const Attr& a) {
    switch (a.kind) {
      case Attr::Kind::kBool: {
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_BOOL);
        b.add_int_value(a.i);
        return b.Finish();
      }
      case Attr::Kind::kInt: {
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_INTEGER);
        b.add_int_value(a.i);
        b.add_element_type(a.int_type);
        return b.Finish();
      }
      case Attr::Kind::kString:
      case Attr::Kind::kSymbol: {
        auto s = fbb_.CreateString(a.s);
        fb::AttributeBuilder b(fbb_);
        b.add_kind(a.kind == Attr::Kind::kString ? fb::AttributeKind_STRING
                                                 : fb::AttributeKind_SYMBOL_REF);
        b.add_string_value(s);
        return b.Finish();
      }
      case Attr::Kind::kI64Array: {
        auto ints = fbb_.CreateVector(a.ints);
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_DENSE_ARRAY);
        b.add_element_type(fb::ElementType_S64);
        b.add_ints(ints);
        return b.Finish();
      }
      case Attr::Kind::kDense: {
        auto type = TypeOf(a.dense_type);
        auto data = fbb_.CreateVector(*a.bytes);
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_DENSE_ELEMENTS);
        b.add_type(type);
        b.add_splat(a.splat);
        b.add_data(data);
        return b.Finish();
      }
      case Attr::Kind::kEnum: {
        auto dialect = fbb_.CreateString("stablehlo");
        auto name = fbb_.CreateString(a.enum_name);
        auto value = fbb_.CreateString(a.s);
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_ENUM);
        b.add_dialect(dialect);
        b.add_enum_name(name);
        b.add_string_value(value);
        return b.Finish();
      }
      case Attr::Kind::kStruct: {
        std::vector<flatbuffers::Offset<fb::StructField>> fields;
        for (const StructField& f : a.fields) {
          fields.push_back(fb::CreateStructFieldDirect(fbb_, f.name.c_str(), f.is_list, &f.values));
        }
        auto name = fbb_.CreateString(a.s);
        auto fv = fbb_.CreateVector(fields);
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_STRUCT);
        b.add_string_value(name);
        b.add_fields(fv);
        return b.Finish();
      }
      case Attr::Kind::kConv: {
        const ConvDims& d = a.conv;
        auto conv = fb::CreateConvDimensionsDirect(
            fbb_, d.input_batch, d.input_feature, &d.input_spatial, d.kernel_input_feature,
            d.kernel_output_feature, &d.kernel_spatial, d.output_batch, d.output_feature,
            &d.output_spatial);
        fb::AttributeBuilder b(fbb_);
        b.add_kind(fb::AttributeKind_CONV_DIMENSIONS);
        b.add_conv(conv);
        return b.Finish();
      }
    }
    return fb::CreateAttribute(fbb_, fb::AttributeKind_UNIT);
  }

  // Ops get the location (line, column) at which the text form (TextWriter
  // below) prints them: `line_` follows that layout, with the module and
  // func lines first, one line per op header, a `^bb0` line per region with
  // arguments and a closing line per region. Distinct locations matter: the
  // interpreter seeds each stablehlo.rng from its op's location, so ops
  // without one would all draw the same numbers; matching the text's makes a
  // computation draw the same numbers from its module and from its text.
  flatbuffers::Offset<fb::Region> WriteRegion(const Graph& g, uint32_t indent = 4) {
    numbering_.Push(g.args.size());
    std::vector<flatbuffers::Offset<fb::Op>> ops;
    for (const Node& n : g.nodes) {
      std::vector<uint32_t> operands;
      for (const ValueRef& r : n.operands) operands.push_back(numbering_.Id(r));
      numbering_.DefineNode(n.results.size());
      const fb::Location location(line_++, indent + 1);
      std::vector<flatbuffers::Offset<fb::Region>> regions;
      for (const Graph& r : n.regions) {
        if (!r.args.empty()) ++line_;  // ^bb0(...)
        regions.push_back(WriteRegion(r, indent + 2));
        ++line_;  // the region's closing brace
      }
      std::vector<flatbuffers::Offset<fb::NamedAttribute>> attrs;
      for (const auto& [name, value] : n.attrs) {
        auto v = AttrOf(value);
        attrs.push_back(fb::CreateNamedAttribute(fbb_, fbb_.CreateString(name), v));
      }
      auto name = fbb_.CreateString(n.name);
      auto ov = fbb_.CreateVector(operands);
      auto rt = Types(n.results);
      auto av = fbb_.CreateVector(attrs);
      auto rv = fbb_.CreateVector(regions);
      ops.push_back(fb::CreateOp(fbb_, name, ov, rt, av, rv, &location));
    }
    numbering_.Pop();
    std::vector<flatbuffers::Offset<flatbuffers::String>> names;
    for (const std::string& s : g.arg_names) names.push_back(fbb_.CreateString(s));
    auto types = Types(g.args);
    auto nv = fbb_.CreateVector(names);
    auto ov = fbb_.CreateVector(ops);
    std::vector<flatbuffers::Offset<fb::Block>> blocks = {fb::CreateBlock(fbb_, types, nv, ov)};
    return fb::CreateRegion(fbb_, fbb_.CreateVector(blocks));
  }

  flatbuffers::FlatBufferBuilder fbb_{4096};
  Numbering numbering_;
  uint32_t line_ = 3;  // the first op of @main: after the module and func lines
};

// ---- Text ---------------------------------------------------------------------

void AppendQuoted(const std::string& s, std::string& out) {
  static const char kHex[] = "0123456789ABCDEF";
  out += '"';
  for (unsigned char ch : s) {
    if (ch == '"' || ch == '\\' || ch < 0x20 || ch >= 0x7f) {
      out += '\\';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    } else {
      out += static_cast<char>(ch);
    }
  }
  out += '"';
}

void AppendInts(const std::vector<int64_t>& v, std::string& out) {
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
}

void AppendAttr(const Attr& a, std::string& out) {
  switch (a.kind) {
    case Attr::Kind::kBool:
      out += a.i ? "true" : "false";
      return;
    case Attr::Kind::kInt:
      out += std::to_string(a.i) + " : " + std::string(MlirTypeName(a.int_type));
      return;
    case Attr::Kind::kString:
      AppendQuoted(a.s, out);
      return;
    case Attr::Kind::kSymbol:
      out += "@";
      AppendQuoted(a.s, out);
      return;
    case Attr::Kind::kI64Array:
      out += "array<i64";
      if (!a.ints.empty()) {
        out += ": ";
        AppendInts(a.ints, out);
      }
      out += ">";
      return;
    case Attr::Kind::kDense: {
      static const char kHex[] = "0123456789ABCDEF";
      out += "dense<\"0x";
      for (uint8_t b : *a.bytes) {
        out += kHex[b >> 4];
        out += kHex[b & 15];
      }
      out += "\"> : " + a.dense_type.ToMlir();
      return;
    }
    case Attr::Kind::kEnum:
      out += "#stablehlo<" + a.enum_name + " " + a.s + ">";
      return;
    case Attr::Kind::kStruct:
      out += "#" + a.s + "<";
      for (size_t i = 0; i < a.fields.size(); ++i) {
        const StructField& f = a.fields[i];
        out += (i ? ", " : "") + f.name + " = ";
        if (f.is_list) {
          out += "[";
          AppendInts(f.values, out);
          out += "]";
        } else {
          out += std::to_string(f.values.empty() ? 0 : f.values[0]);
        }
      }
      out += ">";
      return;
    case Attr::Kind::kConv: {
      const ConvDims& d = a.conv;
      auto list = [&](const std::vector<int64_t>& v) {
        std::string s = "[";
        AppendInts(v, s);
        return s + "]";
      };
      out += "#stablehlo.conv<raw input_batch_dimension = " + std::to_string(d.input_batch) +
             ", input_feature_dimension = " + std::to_string(d.input_feature) +
             ", input_spatial_dimensions = " + list(d.input_spatial) +
             ", kernel_input_feature_dimension = " + std::to_string(d.kernel_input_feature) +
             ", kernel_output_feature_dimension = " + std::to_string(d.kernel_output_feature) +
             ", kernel_spatial_dimensions = " + list(d.kernel_spatial) +
             ", output_batch_dimension = " + std::to_string(d.output_batch) +
             ", output_feature_dimension = " + std::to_string(d.output_feature) +
             ", output_spatial_dimensions = " + list(d.output_spatial) + ">";
      return;
    }
  }
}

class TextWriter {
 public:
  std::string Write(const Computation& c) {
    std::string module_name;
    for (char ch : c.name()) {
      module_name += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') ? ch : '_';
    }
    if (module_name.empty() || std::isdigit(static_cast<unsigned char>(module_name[0]))) {
      module_name = "m_" + module_name;
    }
    out_ += "module @" + module_name + " {\n";
    const Graph main = MainBlock(c);
    numbering_.Push(main.args.size());
    RecordTypes(numbering_.args(), main.args);
    out_ += "  func.func public @main(";
    for (size_t i = 0; i < main.args.size(); ++i) {
      out_ += (i ? ", " : "") + ArgName(numbering_.args()[i]) + ": " + main.args[i].ToMlir();
    }
    out_ += ")";
    if (!c.result_shapes().empty()) {
      out_ += " -> (";
      for (size_t i = 0; i < c.result_shapes().size(); ++i) {
        out_ += (i ? ", " : "") + c.result_shapes()[i].ToMlir();
      }
      out_ += ")";
    }
    out_ += " {\n";
    WriteNodes(main, 4);
    numbering_.Pop();
    out_ += "  }\n}\n";
    return std::move(out_);
  }

 private:
  static std::string ArgName(uint32_t id) { return "%a" + std::to_string(id); }

  std::string Ref(const ValueRef& r) const {
    const uint32_t id = numbering_.Id(r);
    auto it = names_.find(id);
    return it == names_.end() ? ArgName(id) : it->second;
  }

  void WriteNodes(const Graph& g, int indent) {
    for (const Node& n : g.nodes) {
      std::vector<std::string> operands;
      for (const ValueRef& r : n.operands) operands.push_back(Ref(r));
      std::vector<std::string> operand_types;
      for (const ValueRef& r : n.operands) operand_types.push_back(types_.at(numbering_.Id(r)));
      const uint32_t base = numbering_.DefineNode(n.results.size());
      for (size_t i = 0; i < n.results.size(); ++i) {
        types_[base + static_cast<uint32_t>(i)] = n.results[i].ToMlir();
      }
      out_.append(static_cast<size_t>(indent), ' ');
      const std::string v = "%v" + std::to_string(base);
      if (n.results.size() == 1) {
        names_[base] = v;
        out_ += v + " = ";
      } else if (n.results.size() > 1) {
        for (size_t i = 0; i < n.results.size(); ++i) {
          names_[base + static_cast<uint32_t>(i)] = v + "#" + std::to_string(i);
        }
        out_ += v + ":" + std::to_string(n.results.size()) + " = ";
      }
      out_ += "\"" + n.name + "\"(";
      for (size_t i = 0; i < operands.size(); ++i) out_ += (i ? ", " : "") + operands[i];
      out_ += ")";
      if (!n.attrs.empty()) {
        out_ += " <{";
        for (size_t i = 0; i < n.attrs.size(); ++i) {
          out_ += (i ? ", " : "") + n.attrs[i].first + " = ";
          AppendAttr(n.attrs[i].second, out_);
        }
        out_ += "}>";
      }
      if (!n.regions.empty()) {
        out_ += " (";
        for (size_t r = 0; r < n.regions.size(); ++r) {
          const Graph& region = n.regions[r];
          out_ += r ? ", {\n" : "{\n";
          numbering_.Push(region.args.size());
          RecordTypes(numbering_.args(), region.args);
          if (!region.args.empty()) {
            out_.append(static_cast<size_t>(indent), ' ');
            out_ += "^bb0(";
            for (size_t i = 0; i < region.args.size(); ++i) {
              out_ += (i ? ", " : "") + ArgName(numbering_.args()[i]) + ": " +
                      region.args[i].ToMlir();
            }
            out_ += "):\n";
          }
          WriteNodes(region, indent + 2);
          numbering_.Pop();
          out_.append(static_cast<size_t>(indent), ' ');
          out_ += "}";
        }
        out_ += ")";
      }
      out_ += " : (";
      for (size_t i = 0; i < operand_types.size(); ++i) {
        out_ += (i ? ", " : "") + operand_types[i];
      }
      out_ += ") -> ";
      if (n.results.size() == 1 && !n.results[0].is_tuple()) {
        out_ += n.results[0].ToMlir();
      } else {
        out_ += "(";
        for (size_t i = 0; i < n.results.size(); ++i) out_ += (i ? ", " : "") + n.results[i].ToMlir();
        out_ += ")";
      }
      out_ += "\n";
    }
  }

  void RecordTypes(const std::vector<uint32_t>& ids, const std::vector<Shape>& shapes) {
    for (size_t i = 0; i < shapes.size(); ++i) types_[ids[i]] = shapes[i].ToMlir();
  }

  Numbering numbering_;
  std::string out_;
  std::map<uint32_t, std::string> names_;
  std::map<uint32_t, std::string> types_;
};

}  // namespace

std::vector<uint8_t> EmitFlatBuffer(const Computation& c) {
  FbWriter writer;
  return writer.Write(c);
}

std::string EmitText(const Computation& c) {
  TextWriter writer;
  return writer.Write(c);
}

}  // namespace jitd::client
