#include "jit/frontend/parser.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <unordered_map>

#include "jit/frontend/lexer.h"

namespace jitd::frontend {

namespace {

using ir::Attribute;
using ir::AttributeList;
using ir::DType;
using ir::Location;
using ir::OpCode;
using ir::Type;
using ir::Value;

// Nesting limit for regions, attributes and types: deeper input is refused
// rather than risking the stack.
constexpr int kMaxNesting = 128;

// A reference to a value as written: %name or %name#index.
struct OperandRef {
  std::string_view name;
  int64_t index = -1;  // -1: no '#'
  Location loc;
};

// One element of a dense literal before its type is known.
struct DenseElement {
  enum class Kind : uint8_t { kInt, kFloat, kBool, kHex, kComplex };
  Kind kind = Kind::kInt;
  bool negative = false;
  std::string_view text;    // digits (kInt/kFloat/kHex) or "true"/"false"
  Location loc;
  int real_index = -1;      // kComplex: indexes into the parts vector
};

// The body of dense<...> as written.
struct DenseBody {
  enum class Kind : uint8_t { kEmpty, kHex, kElements };
  Kind kind = Kind::kEmpty;
  std::string_view hex;  // without quotes and 0x
  Location hex_loc;
  bool nested = false;            // written as a [..] list (else one splat element)
  std::vector<int64_t> shape;     // shape of the nested lists
  std::vector<DenseElement> elements;
  std::vector<DenseElement> complex_parts;  // pairs for kComplex elements
};

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsChloUnary(OpCode c) {
  return (c >= OpCode::kChloAcos && c <= OpCode::kChloTan) || c == OpCode::kChloAsinAcosKernel;
}
bool IsChloBinary(OpCode c) {
  return c == OpCode::kChloNextAfter || c == OpCode::kChloPolygamma || c == OpCode::kChloZeta ||
         c == OpCode::kChloMulhi;
}

// "unknown op 'stablehlo.ad'; did you mean 'stablehlo.add'?"
std::string UnknownOpMessage(std::string_view name) {
  std::string message = "unknown op '" + std::string(name.substr(0, 60)) + "'";
  if (std::string near = ir::NearestOpName(name); !near.empty()) {
    message += "; did you mean '" + near + "'?";
  }
  return message;
}

bool IsCheckOp(OpCode c) {
  return c >= OpCode::kCheckExpectEq && c <= OpCode::kCheckExpectSerializedEq;
}
bool IsCheckConstOp(OpCode c) {
  return c == OpCode::kCheckExpectEqConst || c == OpCode::kCheckExpectAlmostEqConst;
}

class Parser {
 public:
  Parser(std::string_view text, int first_line) : text_(text), lex_(text, first_line) {
    Advance();
  }

  StatusOr<std::unique_ptr<ir::Module>> ParseTopLevel();

 private:
  // A name's values: an op's run of results, or one block argument.
  struct Definition {
    ir::Op* op = nullptr;   // null: `single` is the value
    Value* single = nullptr;
    uint32_t start = 0;
    uint32_t count = 1;
    Value* at(uint32_t i) const { return op ? op->result(start + i) : single; }
  };
  struct Scope {
    bool isolated;
    std::unordered_map<std::string_view, Definition> values;
  };


  // ---- Tokens -------------------------------------------------------------
  void Advance() { tok_ = lex_.Next(); }
  bool Is(TokenKind k) const { return tok_.kind == k; }
  bool IsKeyword(std::string_view kw) const {
    return tok_.kind == TokenKind::kBareId && tok_.text == kw;
  }
  bool Consume(TokenKind k) {
    if (!Is(k)) return false;
    Advance();
    return true;
  }
  // Consumes `: elemtype` after a number attribute, but leaves a ':' that
  // belongs to the enclosing op (followed by a tensor type) alone.
  bool ConsumeColonBeforeElementType() {
    if (!Is(TokenKind::kColon)) return false;
    const Lexer::State saved = lex_.Save();
    const Token colon = tok_;
    Advance();
    if (Is(TokenKind::kBareId) && (tok_.text == "complex" || ir::ParseDTypeName(tok_.text))) {
      return true;
    }
    lex_.Restore(saved);
    tok_ = colon;
    return false;
  }
  bool ConsumeKeyword(std::string_view kw) {
    if (!IsKeyword(kw)) return false;
    Advance();
    return true;
  }
  std::string Describe(const Token& t) const {
    if (t.kind == TokenKind::kEof) return "end of input";
    std::string_view text = t.text;
    if (text.size() > 40) text = text.substr(0, 40);
    std::string sigil;
    switch (t.kind) {
      case TokenKind::kPercentId: sigil = "%"; break;
      case TokenKind::kAtId: sigil = "@"; break;
      case TokenKind::kHashId: sigil = "#"; break;
      case TokenKind::kCaretId: sigil = "^"; break;
      case TokenKind::kBangId: sigil = "!"; break;
      default: break;
    }
    // Bytes that are not printable ASCII or valid UTF-8 (a binary file, a
    // control character) print as \xNN, never raw.
    std::string shown;
    for (size_t i = 0; i < text.size();) {
      const unsigned char c = static_cast<unsigned char>(text[i]);
      size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 1;
      if (c >= 0x80 && n == 1) n = 0;  // a stray continuation byte, 0xC0/0xC1 or > 0xF4
      bool valid = n > 1 && i + n <= text.size();
      for (size_t k = 1; valid && k < n; ++k) {
        valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
      }
      if ((c >= 0x20 && c < 0x7F) || valid) {
        const size_t len = valid ? n : 1;
        shown.append(text.substr(i, len));
        i += len;
        continue;
      }
      static constexpr char kHex[] = "0123456789abcdef";
      shown += "\\x";
      shown += kHex[c >> 4];
      shown += kHex[c & 15];
      ++i;
    }
    return "'" + sigil + shown + (t.text.size() > 40 ? "...'" : "'");
  }
  Status ErrorAt(Location loc, std::string message) const {
    return InvalidArgument(loc.ToString() + ": " + message);
  }
  Status Error(std::string message) const { return ErrorAt(tok_.loc, std::move(message)); }
  Status ErrorExpected(std::string_view what) const {
    return Error("expected " + std::string(what) + ", got " + Describe(tok_));
  }
  Status Expect(TokenKind k, std::string_view context = {}) {
    if (Consume(k)) return Status::Ok();
    std::string what(TokenKindName(k));
    if (!context.empty()) what += " " + std::string(context);
    return ErrorExpected(what);
  }
  Status ExpectKeyword(std::string_view kw, std::string_view context = {}) {
    if (ConsumeKeyword(kw)) return Status::Ok();
    std::string what = "'" + std::string(kw) + "'";
    if (!context.empty()) what += " " + std::string(context);
    return ErrorExpected(what);
  }

  // Tracks nesting depth; refuses input nested deeper than kMaxNesting.
  struct DepthGuard {
    Parser* p;
    explicit DepthGuard(Parser* parser) : p(parser) { ++p->depth_; }
    ~DepthGuard() { --p->depth_; }
  };
  Status CheckDepth() const {
    if (depth_ > kMaxNesting) {
      return Error("nesting deeper than " + std::to_string(kMaxNesting) + " levels");
    }
    return Status::Ok();
  }

  // ---- Numbers and lists --------------------------------------------------
  StatusOr<int64_t> ParseInt();  // optional '-', decimal or hex
  StatusOr<std::vector<int64_t>> ParseIntList();  // [1, -2, 3]
  Status ParseCommaSeparated(TokenKind close, const std::function<Status()>& each);

  // ---- Types --------------------------------------------------------------
  StatusOr<DType> ParseElementType();
  StatusOr<Type> ParseType();
  StatusOr<ir::QuantParams> ParseQuantUniformBody(const Location& loc, const char*& p,
                                                  const char* end);
  StatusOr<Type> ParseTensorBody();  // after 'tensor', at '<'
  StatusOr<std::vector<Type>> ParseTypeList();  // T, T, ... (at least one)
  // `(T, T) -> R` or `(T) -> (R, R)`.
  Status ParseFunctionType(std::vector<Type>& inputs, std::vector<Type>& results);
  Status ParseResultTypes(std::vector<Type>& results);  // R | (R, ...) | ()

  // ---- Attributes ---------------------------------------------------------
  StatusOr<Attribute> ParseAttribute();
  Status ParseAttrDict(AttributeList& attrs);  // at '{'
  Status ParseOptionalAttrDict(AttributeList& attrs) {
    return Is(TokenKind::kLBrace) ? ParseAttrDict(attrs) : Status::Ok();
  }
  StatusOr<Attribute> ParseHashAttribute();
  StatusOr<Attribute> ParseDenseArray();
  StatusOr<Attribute> ParseDense();
  StatusOr<std::optional<Type>> ParseIndexTensorType();
  Status ParseDenseBody(DenseBody& body);
  Status ParseDenseList(DenseBody& body, size_t level);
  StatusOr<DenseElement> ParseDenseElement(DenseBody& body);
  Status ParseDenseScalar(DenseElement& e);
  StatusOr<ir::DenseElementsAttr> BuildDense(const DenseBody& body, const Type& type,
                                             Location loc);
  Status StoreElement(const DenseBody& body, const DenseElement& e, DType dtype, uint8_t* out);
  Status StoreScalar(const DenseElement& e, DType dtype, uint8_t* out);
  StatusOr<ir::StructAttr> ParseStructBody(std::string name);
  StatusOr<ir::ConvDimensionNumbers> ParseConvDims();
  StatusOr<std::string_view> ScanBalanced(const char* start);  // raw `<...>` body
  StatusOr<std::string> DecodeString(const Token& t);
  // The name of an '@' token, unquoted: @main -> main, @"<lambda>" -> <lambda>.
  StatusOr<std::string> SymbolName(const Token& t) {
    if (!t.text.empty() && t.text[0] == '"') return DecodeString(t);
    return std::string(t.text);
  }
  Status SkipLocation();  // `loc(...)` if present

  // ---- Structure ----------------------------------------------------------
  Status ParseModuleInto(ir::Module& module);
  Status ParseModuleBody(ir::Module& module);  // at '{'
  Status ParseFunction(ir::Module& module);     // after 'func.func'
  Status ParseGenericFunction(ir::Module& module);  // after "func.func"
  Status ParseFileMetadata(ir::Module& module);
  Status ParseRegion(ir::Region& region, const std::vector<std::pair<OperandRef, Type>>* args);
  Status ParseBlockBody(ir::Block& block);  // ops until '}'
  Status ParseOperation(ir::Block& block);

  // ---- Values -------------------------------------------------------------
  StatusOr<OperandRef> ParseOperandRef();
  StatusOr<std::vector<OperandRef>> ParseOperandRefs(TokenKind close);  // until close (not consumed)
  StatusOr<std::vector<OperandRef>> ParseOperandRefList();  // %a, %b, ... (at least one)
  StatusOr<Value*> Lookup(const OperandRef& ref);
  StatusOr<Value*> Resolve(const OperandRef& ref, const Type& type);
  Status ResolveAll(const std::vector<OperandRef>& refs, const std::vector<Type>& types,
                    ir::Op& op);
  Status Define(std::string_view name, Definition def, Location loc);
  Status DefineValue(std::string_view name, Value* v, Location loc) {
    Definition def;
    def.single = v;
    if (v->name().empty()) v->set_name(std::string(name));
    return Define(name, def, loc);
  }
  void PushScope(bool isolated) { scopes_.push_back(Scope{isolated, {}}); }
  void PopScope() { scopes_.pop_back(); }

  // ---- Op syntax ----------------------------------------------------------
  StatusOr<std::unique_ptr<ir::Op>> ParseGenericOp(OpCode code, Location loc);
  StatusOr<std::unique_ptr<ir::Op>> ParsePrettyOp(OpCode code, Location loc);
  // The type list of ops printed with SameOperandsAndResultType: one type
  // for all, or a function type.
  Status ParseSameOperandsAndResultType(size_t num_operands, std::vector<Type>& operand_types,
                                        Type& result);
  Status ParseNamedIntList(std::string_view keyword, std::vector<int64_t>& out);
  Status ParseEnumKeyword(std::string_view enum_name,
                          std::initializer_list<std::string_view> allowed, ir::Op& op,
                          std::string attr_name);
  StatusOr<std::unique_ptr<ir::Op>> ParseReduce(Location loc);
  StatusOr<std::unique_ptr<ir::Op>> ParseWhile(Location loc);
  StatusOr<std::unique_ptr<ir::Op>> ParseConvolution(Location loc);
  StatusOr<std::unique_ptr<ir::Op>> ParseDotGeneral(OpCode code, Location loc);
  StatusOr<std::unique_ptr<ir::Op>> ParseCheckOp(OpCode code, Location loc);
  StatusOr<std::unique_ptr<ir::Op>> ParseSlice(Location loc);
  Status ParsePrecisionList(ir::Op& op);

  std::string_view text_;
  Lexer lex_;
  Token tok_;
  int depth_ = 0;
  int region_depth_ = 0;  // ParseRegion calls open (function body included)
  std::vector<Scope> scopes_;
  std::unordered_map<std::string_view, Type> type_cache_;  // keyed by `2x3xf32>`
  ir::Module* module_ = nullptr;
};

// ===========================================================================
// Numbers, lists, strings

StatusOr<int64_t> Parser::ParseInt() {
  const bool negative = Consume(TokenKind::kMinus);
  if (!Is(TokenKind::kInteger)) return ErrorExpected("integer");
  uint64_t value = 0;
  std::string_view t = tok_.text;
  std::from_chars_result r;
  if (t.size() > 2 && t[1] == 'x') {
    r = std::from_chars(t.data() + 2, t.data() + t.size(), value, 16);
  } else {
    r = std::from_chars(t.data(), t.data() + t.size(), value, 10);
  }
  if (r.ec != std::errc() || r.ptr != t.data() + t.size()) {
    return Error("integer " + std::string(t.substr(0, 30)) + " is out of range");
  }
  const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
  if (value > limit) return Error("integer " + std::string(t.substr(0, 30)) + " is out of range");
  Advance();
  return negative ? static_cast<int64_t>(0 - value) : static_cast<int64_t>(value);
}

Status Parser::ParseCommaSeparated(TokenKind close, const std::function<Status()>& each) {
  if (Consume(close)) return Status::Ok();
  while (true) {
    JITD_RETURN_IF_ERROR(each());
    if (Consume(TokenKind::kComma)) continue;
    return Expect(close);
  }
}

StatusOr<std::vector<int64_t>> Parser::ParseIntList() {
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare));
  std::vector<int64_t> values;
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
    JITD_ASSIGN_OR_RETURN(int64_t v, ParseInt());
    values.push_back(v);
    return Status::Ok();
  }));
  return values;
}

StatusOr<std::string> Parser::DecodeString(const Token& t) {
  std::string out;
  std::string_view body = t.text.substr(1, t.text.size() - 2);
  out.reserve(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (i + 1 >= body.size()) return ErrorAt(t.loc, "unterminated escape in string");
    const char e = body[++i];
    switch (e) {
      case 'n': out += '\n'; break;
      case 't': out += '\t'; break;
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      default: {
        if (i + 1 < body.size() && HexValue(e) >= 0 && HexValue(body[i + 1]) >= 0) {
          out += static_cast<char>(HexValue(e) * 16 + HexValue(body[i + 1]));
          ++i;
        } else {
          return ErrorAt(t.loc, std::string("unknown escape '\\") + e + "' in string");
        }
      }
    }
  }
  return out;
}

Status Parser::SkipLocation() {
  if (!IsKeyword("loc")) return Status::Ok();
  Advance();
  if (!Is(TokenKind::kLParen)) return ErrorExpected("'(' after 'loc'");
  // Skip a balanced parenthesized body, strings included.
  int level = 0;
  do {
    if (Is(TokenKind::kEof) || Is(TokenKind::kError)) return ErrorExpected("')' closing 'loc('");
    if (Is(TokenKind::kLParen)) ++level;
    if (Is(TokenKind::kRParen)) --level;
    Advance();
  } while (level > 0);
  return Status::Ok();
}

// ===========================================================================
// Types

StatusOr<DType> Parser::ParseElementType() {
  if (!Is(TokenKind::kBareId)) return ErrorExpected("element type");
  if (tok_.text == "complex") {
    const Location loc = tok_.loc;
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'complex'"));
    JITD_ASSIGN_OR_RETURN(DType inner, ParseElementType());
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing 'complex<'"));
    auto c = ir::ComplexOf(inner);
    if (!c) return ErrorAt(loc, "complex element type must be f32 or f64");
    return *c;
  }
  auto t = ir::ParseDTypeName(tok_.text);
  if (!t) return Error("unknown element type " + Describe(tok_));
  Advance();
  return *t;
}

StatusOr<Type> Parser::ParseTensorBody() {
  // tok_ is '<' and the lexer stands right after it. The body is scanned
  // by hand, because the lexer would read `2x3xf32` as "2" and "x3xf32".
  // Programs repeat the same few types, so parsed types are cached by text.
  const Location loc = tok_.loc;
  const char* const start = lex_.position();
  const char* p = start;
  const char* end = lex_.end();
  auto skip_space = [&] {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
  };
  int64_t dims[ir::kMaxRank];
  size_t rank = 0;
  bool has_dynamic = false;
  while (true) {
    skip_space();
    if (p < end && *p >= '0' && *p <= '9') {
      int64_t d = 0;
      auto r = std::from_chars(p, end, d);
      if (r.ec != std::errc()) return ErrorAt(loc, "tensor dimension is out of range");
      p = r.ptr;
      skip_space();
      if (p >= end || *p != 'x') return ErrorAt(loc, "expected 'x' after a tensor dimension");
      ++p;
      if (rank == static_cast<size_t>(ir::kMaxRank)) {
        return ErrorAt(loc, "tensor rank exceeds the limit of " + std::to_string(ir::kMaxRank));
      }
      dims[rank++] = d;
      continue;
    }
    if (p < end && *p == '?') {
      ++p;
      skip_space();
      if (p >= end || *p != 'x') return ErrorAt(loc, "expected 'x' after a tensor dimension");
      ++p;
      if (rank == static_cast<size_t>(ir::kMaxRank)) {
        return ErrorAt(loc, "tensor rank exceeds the limit of " + std::to_string(ir::kMaxRank));
      }
      dims[rank++] = Type::kDynamic;
      has_dynamic = true;
      continue;
    }
    if (p < end && *p == '*') {
      return ErrorAt(loc, "unranked tensors ('tensor<*x...>') are not supported");
    }
    break;
  }
  // The element type: an identifier, or complex<identifier>.
  auto scan_identifier = [&]() -> std::string_view {
    const char* id = p;
    while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                       (*p >= '0' && *p <= '9') || *p == '_')) {
      ++p;
    }
    return std::string_view(id, static_cast<size_t>(p - id));
  };
  std::optional<ir::QuantParams> quant;
  std::optional<DType> dtype;
  if (p < end && *p == '!') {
    const std::string_view rest(p, static_cast<size_t>(end - p));
    if (rest.substr(0, 15) != "!quant.uniform<") {
      const std::string_view word = rest.substr(0, rest.find_first_of("<> ,"));
      return ErrorAt(loc, "unknown element type '" + std::string(word.substr(0, 40)) +
                              "' in tensor type (of the quant dialect jitd takes !quant.uniform)");
    }
    p += 15;
    JITD_ASSIGN_OR_RETURN(quant, ParseQuantUniformBody(loc, p, end));
    dtype = quant->storage;
  }
  std::string_view name = quant ? std::string_view() : scan_identifier();
  if (quant) {
    // parsed above
  } else if (name == "complex") {
    skip_space();
    if (p < end && *p == '<') {
      ++p;
      skip_space();
      auto inner = ir::ParseDTypeName(scan_identifier());
      skip_space();
      if (inner && p < end && *p == '>') {
        ++p;
        dtype = ir::ComplexOf(*inner);
      }
    }
    if (!dtype) return ErrorAt(loc, "complex element type must be complex<f32> or complex<f64>");
  } else {
    dtype = ir::ParseDTypeName(name);
    if (!dtype) {
      return ErrorAt(loc, "unknown element type '" + std::string(name.substr(0, 40)) +
                              "' in tensor type");
    }
  }
  skip_space();
  // The one tensor encoding StableHLO defines: `#stablehlo.bounds<b0, ?, ...>`
  // (dynamism.md), an upper bound or `?` per dimension.
  std::vector<int64_t> bounds;
  bool has_bounds = false;
  if (p < end && *p == ',') {
    ++p;
    skip_space();
    constexpr std::string_view kBounds = "#stablehlo.bounds<";
    if (std::string_view(p, static_cast<size_t>(end - p)).substr(0, kBounds.size()) != kBounds) {
      return ErrorAt(loc, "unsupported tensor encoding (jitd takes #stablehlo.bounds<...> only)");
    }
    p += kBounds.size();
    has_bounds = true;
    skip_space();
    while (p < end && *p != '>') {
      if (!bounds.empty()) {
        if (*p != ',') return ErrorAt(loc, "expected ',' between #stablehlo.bounds entries");
        ++p;
        skip_space();
      }
      if (p < end && *p == '?') {
        ++p;
        bounds.push_back(Type::kDynamic);
      } else {
        int64_t b = 0;
        auto r = std::from_chars(p, end, b);
        if (r.ec != std::errc()) return ErrorAt(loc, "expected a bound or '?' in #stablehlo.bounds");
        p = r.ptr;
        bounds.push_back(b);
      }
      skip_space();
      if (bounds.size() > static_cast<size_t>(ir::kMaxRank)) {
        return ErrorAt(loc, "#stablehlo.bounds has more entries than the rank limit");
      }
    }
    if (p >= end) return ErrorAt(loc, "expected '>' closing '#stablehlo.bounds<'");
    ++p;
    skip_space();
  }
  if (p >= end || *p != '>') return ErrorAt(loc, "expected '>' closing 'tensor<'");
  ++p;
  const std::string_view key(start, static_cast<size_t>(p - start));
  lex_.ResetTo(p);
  Advance();
  if (auto it = type_cache_.find(key); it != type_cache_.end()) return it->second;
  if (has_bounds && bounds.size() != rank) {
    return ErrorAt(loc, "#stablehlo.bounds has " + std::to_string(bounds.size()) +
                            " entries for a tensor of rank " + std::to_string(rank));
  }
  auto checked = has_dynamic || has_bounds
                     ? Type::CheckedDynamicTensor(*dtype, std::vector<int64_t>(dims, dims + rank),
                                                  std::move(bounds))
                     : Type::CheckedTensor(*dtype, std::vector<int64_t>(dims, dims + rank));
  if (!checked.ok()) return ErrorAt(loc, checked.status().message());
  if (quant) {
    // The constraints of quantization.md that tie the parameters to the shape.
    if (quant->per_axis()) {
      if (quant->quantized_dimension >= static_cast<int64_t>(rank)) {
        return ErrorAt(loc, "quantized_dimension " + std::to_string(quant->quantized_dimension) +
                                " of !quant.uniform is out of range for a tensor of rank " +
                                std::to_string(rank));
      }
      const int64_t size = dims[quant->quantized_dimension];
      if (size == Type::kDynamic) {
        return ErrorAt(loc, "quantized_dimension " + std::to_string(quant->quantized_dimension) +
                                " of !quant.uniform is a dynamic dimension");
      }
      if (static_cast<int64_t>(quant->scales.size()) != size) {
        return ErrorAt(loc, "!quant.uniform has " + std::to_string(quant->scales.size()) +
                                " scale:zero_point pairs but dimension " +
                                std::to_string(quant->quantized_dimension) + " of the tensor has size " +
                                std::to_string(size));
      }
    }
    *checked = checked->WithQuant(std::move(*quant));
  }
  type_cache_.emplace(key, *checked);
  return std::move(checked).value();
}

// The body of `!quant.uniform<...>` after the '<' (MLIR's quant dialect
// syntax, as quantization.md uses it):
//   storage[<min:max>] : expressed [: quantized_dimension] ,
//     (scale[:zero_point] | {scale[:zero_point], ...}) >
// `p` ends past the closing '>'.
StatusOr<ir::QuantParams> Parser::ParseQuantUniformBody(const Location& loc, const char*& p,
                                                         const char* end) {
  auto skip_space = [&] {
    while (p < end && (*p == ' ' || *p == '\t')) ++p;
  };
  auto expect = [&](char c, std::string_view what) -> Status {
    skip_space();
    if (p >= end || *p != c) {
      return ErrorAt(loc, "expected '" + std::string(1, c) + "' " + std::string(what) +
                              " in !quant.uniform");
    }
    ++p;
    return Status::Ok();
  };
  auto scan_identifier = [&]() -> std::string_view {
    skip_space();
    const char* id = p;
    while (p < end && ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
                       (*p >= '0' && *p <= '9') || *p == '_')) {
      ++p;
    }
    return std::string_view(id, static_cast<size_t>(p - id));
  };
  auto scan_int = [&](std::string_view what) -> StatusOr<int64_t> {
    skip_space();
    int64_t v = 0;
    if (p < end && *p == '+') ++p;
    auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc()) {
      return ErrorAt(loc, "expected an integer " + std::string(what) + " in !quant.uniform");
    }
    p = r.ptr;
    return v;
  };
  auto scan_double = [&]() -> StatusOr<double> {
    skip_space();
    double v = 0;
    auto r = std::from_chars(p, end, v);
    if (r.ec != std::errc()) return ErrorAt(loc, "expected a scale (a float) in !quant.uniform");
    p = r.ptr;
    return v;
  };
  ir::QuantParams q;
  // Storage type: iN (signed) or uN (unsigned), as the quant dialect spells them.
  const std::string_view storage = scan_identifier();
  std::optional<DType> st;
  if (storage.size() >= 2 && storage[0] == 'u' && storage[1] != 'i') {
    st = ir::ParseDTypeName("ui" + std::string(storage.substr(1)));
  } else if (storage.size() >= 2 && storage[0] == 'i') {
    st = ir::ParseDTypeName(storage);
  }
  if (!st || !ir::IsInteger(*st)) {
    return ErrorAt(loc, "storage type '" + std::string(storage.substr(0, 20)) +
                            "' of !quant.uniform must be an integer type (i2..i64, u2..u64)");
  }
  q.storage = *st;
  q.storage_min = ir::StorageTypeMin(*st);
  q.storage_max = ir::StorageTypeMax(*st);
  skip_space();
  if (p < end && *p == '<') {
    ++p;
    JITD_ASSIGN_OR_RETURN(q.storage_min, scan_int("storage minimum"));
    JITD_RETURN_IF_ERROR(expect(':', "between the storage range's bounds"));
    JITD_ASSIGN_OR_RETURN(q.storage_max, scan_int("storage maximum"));
    JITD_RETURN_IF_ERROR(expect('>', "closing the storage range"));
    if (q.storage_min < ir::StorageTypeMin(*st) || q.storage_max > ir::StorageTypeMax(*st) ||
        q.storage_min > q.storage_max) {
      return ErrorAt(loc, "storage range <" + std::to_string(q.storage_min) + ":" +
                              std::to_string(q.storage_max) + "> of !quant.uniform must lie within " +
                              std::string(storage) + "'s range [" +
                              std::to_string(ir::StorageTypeMin(*st)) + ", " +
                              std::to_string(ir::StorageTypeMax(*st)) + "] with min <= max");
    }
  }
  JITD_RETURN_IF_ERROR(expect(':', "after the storage type"));
  const std::string_view expressed = scan_identifier();
  auto et = ir::ParseDTypeName(expressed);
  if (!et || !ir::IsFloat(*et)) {
    return ErrorAt(loc, "expressed type '" + std::string(expressed.substr(0, 20)) +
                            "' of !quant.uniform must be a floating-point type");
  }
  q.expressed = *et;
  skip_space();
  if (p < end && *p == ':') {
    ++p;
    JITD_ASSIGN_OR_RETURN(q.quantized_dimension, scan_int("quantized dimension"));
    if (q.quantized_dimension < 0) {
      return ErrorAt(loc, "quantized_dimension of !quant.uniform must be >= 0");
    }
  }
  JITD_RETURN_IF_ERROR(expect(',', "before the scale"));
  auto scale_zero_point = [&]() -> Status {
    JITD_ASSIGN_OR_RETURN(double scale, scan_double());
    int64_t zero_point = 0;
    skip_space();
    if (p < end && *p == ':') {
      ++p;
      JITD_ASSIGN_OR_RETURN(zero_point, scan_int("zero point"));
    }
    q.scales.push_back(scale);
    q.zero_points.push_back(zero_point);
    return Status::Ok();
  };
  skip_space();
  if (q.per_axis()) {
    JITD_RETURN_IF_ERROR(expect('{', "opening a per-axis list of scale:zero_point pairs"));
    JITD_RETURN_IF_ERROR(scale_zero_point());
    while (true) {
      skip_space();
      if (p < end && *p == ',') {
        ++p;
        JITD_RETURN_IF_ERROR(scale_zero_point());
        continue;
      }
      break;
    }
    JITD_RETURN_IF_ERROR(expect('}', "closing the per-axis list"));
  } else {
    if (p < end && *p == '{') {
      return ErrorAt(loc, "a list of scales in !quant.uniform needs a quantized dimension "
                          "(storage:expressed:dim)");
    }
    JITD_RETURN_IF_ERROR(scale_zero_point());
  }
  JITD_RETURN_IF_ERROR(expect('>', "closing !quant.uniform"));
  // quantization.md's constraints on the parameters themselves.
  for (size_t i = 0; i < q.scales.size(); ++i) {
    if (!(q.scales[i] > 0) || !std::isfinite(q.scales[i])) {
      return ErrorAt(loc, "scale " + std::to_string(q.scales[i]) +
                              " of !quant.uniform must be positive and finite");
    }
    if (q.zero_points[i] < q.storage_min || q.zero_points[i] > q.storage_max) {
      return ErrorAt(loc, "zero point " + std::to_string(q.zero_points[i]) +
                              " of !quant.uniform must lie in the storage range [" +
                              std::to_string(q.storage_min) + ", " + std::to_string(q.storage_max) + "]");
    }
  }
  return q;
}

StatusOr<Type> Parser::ParseType() {
  DepthGuard guard(this);
  JITD_RETURN_IF_ERROR(CheckDepth());
  if (IsKeyword("tensor")) {
    Advance();
    if (!Is(TokenKind::kLess)) return ErrorExpected("'<' after 'tensor'");
    return ParseTensorBody();
  }
  if (Is(TokenKind::kBangId)) {
    if (tok_.text == "stablehlo.token") {
      Advance();
      return Type::Token();
    }
    if (tok_.text == "stablehlo.future") {
      // spec.md: FutureType ::= 'future' '<' TensorType {',' TensorType} '>'
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after '!stablehlo.future'"));
      std::vector<Type> elements;
      JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kGreater, [&]() -> Status {
        if (!IsKeyword("tensor")) {
          return ErrorExpected("a tensor type in !stablehlo.future<...>");
        }
        JITD_ASSIGN_OR_RETURN(Type t, ParseType());
        elements.push_back(std::move(t));
        return Status::Ok();
      }));
      if (elements.empty()) return Error("!stablehlo.future<> needs at least one tensor type");
      return Type::Future(std::move(elements));
    }
    return Error("unsupported type " + Describe(tok_));
  }
  if (IsKeyword("tuple")) {
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'tuple'"));
    std::vector<Type> elements;
    JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kGreater, [&]() -> Status {
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      elements.push_back(std::move(t));
      return Status::Ok();
    }));
    return Type::Tuple(std::move(elements));
  }
  if (Is(TokenKind::kBareId) && ir::ParseDTypeName(tok_.text)) {
    return Error("expected a tensor type such as tensor<" + std::string(tok_.text) +
                 ">, got scalar type " + Describe(tok_));
  }
  return ErrorExpected("type");
}

StatusOr<std::vector<Type>> Parser::ParseTypeList() {
  std::vector<Type> types;
  do {
    JITD_ASSIGN_OR_RETURN(Type t, ParseType());
    types.push_back(std::move(t));
  } while (Consume(TokenKind::kComma));
  return types;
}

Status Parser::ParseResultTypes(std::vector<Type>& results) {
  if (Consume(TokenKind::kLParen)) {
    return ParseCommaSeparated(TokenKind::kRParen, [&]() -> Status {
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      results.push_back(std::move(t));
      return Status::Ok();
    });
  }
  JITD_ASSIGN_OR_RETURN(Type t, ParseType());
  results.push_back(std::move(t));
  return Status::Ok();
}

Status Parser::ParseFunctionType(std::vector<Type>& inputs, std::vector<Type>& results) {
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "starting a function type"));
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRParen, [&]() -> Status {
    JITD_ASSIGN_OR_RETURN(Type t, ParseType());
    inputs.push_back(std::move(t));
    return Status::Ok();
  }));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "in function type"));
  return ParseResultTypes(results);
}

// ===========================================================================
// Attributes

StatusOr<std::string_view> Parser::ScanBalanced(const char* start) {
  // `start` points at '<'. Returns the text from '<' through the matching
  // '>', skipping strings and '->' arrows, and moves the lexer past it.
  const char* p = start;
  const char* end = lex_.end();
  int level = 0;
  while (p < end) {
    const char c = *p;
    if (c == '"') {
      ++p;
      while (p < end && *p != '"') {
        if (*p == '\\') ++p;
        ++p;
      }
      if (p >= end) break;
    } else if (c == '<' || c == '(' || c == '[' || c == '{') {
      if (++level > kMaxNesting) return ErrorAt(tok_.loc, "attribute nested too deeply");
    } else if (c == '>' && !(p > start && p[-1] == '-')) {
      if (--level == 0) {
        ++p;
        lex_.ResetTo(p);
        Advance();
        return std::string_view(start, static_cast<size_t>(p - start));
      }
    } else if (c == ')' || c == ']' || c == '}') {
      --level;
    }
    ++p;
  }
  return ErrorAt(tok_.loc, "unterminated '<' in attribute");
}

Status Parser::ParseAttrDict(AttributeList& attrs) {
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace));
  DepthGuard guard(this);
  JITD_RETURN_IF_ERROR(CheckDepth());
  return ParseCommaSeparated(TokenKind::kRBrace, [&]() -> Status {
    std::string name;
    if (Is(TokenKind::kBareId)) {
      name = std::string(tok_.text);
    } else if (Is(TokenKind::kString)) {
      JITD_ASSIGN_OR_RETURN(name, DecodeString(tok_));
    } else {
      return ErrorExpected("attribute name");
    }
    Advance();
    if (Consume(TokenKind::kEqual)) {
      JITD_ASSIGN_OR_RETURN(Attribute value, ParseAttribute());
      attrs.Set(std::move(name), std::move(value));
    } else {
      attrs.Set(std::move(name), ir::UnitAttr{});
    }
    return Status::Ok();
  });
}

StatusOr<Attribute> Parser::ParseAttribute() {
  DepthGuard guard(this);
  JITD_RETURN_IF_ERROR(CheckDepth());
  switch (tok_.kind) {
    case TokenKind::kBareId: {
      if (tok_.text == "true" || tok_.text == "false") {
        const bool b = tok_.text == "true";
        Advance();
        return Attribute(b);
      }
      if (tok_.text == "unit") {
        Advance();
        return Attribute(ir::UnitAttr{});
      }
      if (tok_.text == "dense") return ParseDense();
      if (tok_.text == "dense_resource") {
        Advance();
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'dense_resource'"));
        if (!Is(TokenKind::kBareId) && !Is(TokenKind::kString)) {
          return ErrorExpected("resource name");
        }
        std::string handle(tok_.text);
        Advance();
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing 'dense_resource<'"));
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the type of 'dense_resource'"));
        JITD_ASSIGN_OR_RETURN(Type type, ParseType());
        if (!type.is_tensor()) return Error("dense_resource needs a tensor type");
        return Attribute(ir::DenseResourceAttr{std::move(handle), std::move(type)});
      }
      if (tok_.text == "array") return ParseDenseArray();
      if (tok_.text == "tensor" || tok_.text == "tuple") {
        JITD_ASSIGN_OR_RETURN(Type type, ParseType());
        return Attribute(ir::TypeAttr{std::move(type)});
      }
      if (tok_.text == "affine_map" || tok_.text == "affine_set" || tok_.text == "strided") {
        const char* start = tok_.begin;
        Advance();
        if (!Is(TokenKind::kLess)) return ErrorExpected("'<'");
        JITD_ASSIGN_OR_RETURN(std::string_view body, ScanBalanced(tok_.begin));
        return Attribute(ir::OpaqueAttr{std::string(start, body.data() + body.size())});
      }
      if (auto dt = ir::ParseDTypeName(tok_.text)) {
        // A bare element type as attribute (e.g. `type = f32`): keep as text.
        std::string text(tok_.text);
        Advance();
        return Attribute(ir::OpaqueAttr{std::move(text)});
      }
      return Error("unknown attribute " + Describe(tok_));
    }
    case TokenKind::kString: {
      JITD_ASSIGN_OR_RETURN(std::string s, DecodeString(tok_));
      Advance();
      return Attribute(ir::StringAttr{std::move(s)});
    }
    case TokenKind::kAtId: {
      JITD_ASSIGN_OR_RETURN(std::string name, SymbolName(tok_));
      Advance();
      return Attribute(ir::SymbolRefAttr{std::move(name)});
    }
    case TokenKind::kLSquare: {
      Advance();
      ir::ArrayAttr array;
      JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
        JITD_ASSIGN_OR_RETURN(Attribute a, ParseAttribute());
        array.elements.push_back(std::move(a));
        return Status::Ok();
      }));
      return Attribute(std::move(array));
    }
    case TokenKind::kLBrace: {
      AttributeList list;
      JITD_RETURN_IF_ERROR(ParseAttrDict(list));
      return Attribute(ir::DictionaryAttr{list.entries()});
    }
    case TokenKind::kHashId:
      return ParseHashAttribute();
    case TokenKind::kMinus:
    case TokenKind::kInteger:
    case TokenKind::kFloat: {
      const Location loc = tok_.loc;
      const bool negative = Consume(TokenKind::kMinus);
      if (Is(TokenKind::kFloat)) {
        double v = 0;
        auto r = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), v);
        if (r.ec == std::errc::result_out_of_range) {
          v = std::strtod(std::string(tok_.text).c_str(), nullptr);
        } else if (r.ec != std::errc()) {
          return Error("malformed float " + Describe(tok_));
        }
        Advance();
        DType dtype = DType::kF64;
        if (ConsumeColonBeforeElementType()) {
          JITD_ASSIGN_OR_RETURN(dtype, ParseElementType());
          if (!ir::IsFloat(dtype)) return ErrorAt(loc, "float attribute needs a float type");
        }
        return Attribute(ir::FloatAttr{negative ? -v : v, dtype});
      }
      if (!Is(TokenKind::kInteger)) return ErrorExpected("number");
      // Re-parse with the sign through ParseInt.
      uint64_t magnitude = 0;
      std::string_view t = tok_.text;
      const bool hex = t.size() > 2 && t[1] == 'x';
      auto r = hex ? std::from_chars(t.data() + 2, t.data() + t.size(), magnitude, 16)
                   : std::from_chars(t.data(), t.data() + t.size(), magnitude, 10);
      if (r.ec != std::errc()) return Error("integer " + Describe(tok_) + " is out of range");
      Advance();
      DType dtype = DType::kS64;
      if (ConsumeColonBeforeElementType()) {
        JITD_ASSIGN_OR_RETURN(dtype, ParseElementType());
      }
      if (ir::IsFloat(dtype)) {
        // `0x7FC00000 : f32` denotes bits; a decimal integer denotes a value.
        if (hex) {
          return Attribute(ir::FloatAttr{
              ir::DecodeFloat(magnitude, *ir::GetFloatFormat(dtype)), dtype});
        }
        const double v = static_cast<double>(magnitude);
        return Attribute(ir::FloatAttr{negative ? -v : v, dtype});
      }
      if (!ir::IsInteger(dtype) && !ir::IsPred(dtype)) {
        return ErrorAt(loc, "integer attribute needs an integer type");
      }
      if (!ir::IsUnsignedInt(dtype) && magnitude > (negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1)) {
        return ErrorAt(loc, "integer attribute is out of range");
      }
      if (ir::IsUnsignedInt(dtype) && negative && magnitude != 0) {
        return ErrorAt(loc, "negative value for unsigned integer attribute");
      }
      const int64_t v = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
      return Attribute(ir::IntegerAttr{v, dtype});
    }
    default:
      return ErrorExpected("attribute value");
  }
}

StatusOr<Attribute> Parser::ParseHashAttribute() {
  // #stablehlo<enum VALUE>, #stablehlo.gather<...>, #stablehlo.conv<...>,
  // anything else kept opaque.
  const std::string_view name = tok_.text;
  const char* start = tok_.begin;  // at '#'
  const Location loc = tok_.loc;
  const char* after = lex_.position();
  if (after >= lex_.end() || *after != '<') {
    // A bare alias such as #loc1: keep verbatim.
    Advance();
    return Attribute(ir::OpaqueAttr{"#" + std::string(name)});
  }
  if (name == "stablehlo" || name == "chlo") {
    Advance();  // now at '<'
    Advance();
    if (!Is(TokenKind::kBareId)) return ErrorExpected("enum name");
    std::string enum_name(tok_.text);
    Advance();
    if (!Is(TokenKind::kBareId)) return ErrorExpected("enum value of " + enum_name);
    std::string value(tok_.text);
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing the enum attribute"));
    return Attribute(ir::EnumAttr{std::string(name), std::move(enum_name), std::move(value)});
  }
  if (name == "stablehlo.conv") {
    Advance();  // '<'
    Advance();
    JITD_ASSIGN_OR_RETURN(ir::ConvDimensionNumbers dims, ParseConvDims());
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing '#stablehlo.conv<'"));
    return Attribute(std::move(dims));
  }
  if (name == "stablehlo.gather" || name == "stablehlo.scatter" || name == "stablehlo.dot" ||
      name == "stablehlo.output_operand_alias" || name == "chlo.ragged_dot") {
    Advance();  // '<'
    Advance();
    JITD_ASSIGN_OR_RETURN(ir::StructAttr s, ParseStructBody(std::string(name)));
    return Attribute(std::move(s));
  }
  (void)loc;
  lex_.ResetTo(after);
  JITD_ASSIGN_OR_RETURN(std::string_view body, ScanBalanced(after));
  return Attribute(ir::OpaqueAttr{std::string(start, body.data() + body.size())});
}

StatusOr<ir::StructAttr> Parser::ParseStructBody(std::string name) {
  ir::StructAttr s;
  s.name = std::move(name);
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kGreater, [&]() -> Status {
    if (!Is(TokenKind::kBareId)) return ErrorExpected("field name in #" + s.name);
    ir::StructField field;
    field.name = std::string(tok_.text);
    for (const auto& f : s.fields) {
      if (f.name == field.name) return Error("duplicate field '" + field.name + "' in #" + s.name);
    }
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after field name"));
    if (Is(TokenKind::kLSquare)) {
      JITD_ASSIGN_OR_RETURN(field.values, ParseIntList());
      field.is_list = true;
    } else {
      JITD_ASSIGN_OR_RETURN(int64_t v, ParseInt());
      field.values = {v};
      field.is_list = false;
    }
    s.fields.push_back(std::move(field));
    return Status::Ok();
  }));
  return s;
}

StatusOr<ir::ConvDimensionNumbers> Parser::ParseConvDims() {
  // [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]   (or `raw` key = value form)
  ir::ConvDimensionNumbers dims;
  if (ConsumeKeyword("raw")) {
    std::vector<int64_t> scalars(6, -1);
    static constexpr std::string_view kScalarNames[] = {
        "input_batch_dimension", "input_feature_dimension",
        "kernel_input_feature_dimension", "kernel_output_feature_dimension",
        "output_batch_dimension", "output_feature_dimension"};
    auto field_fn = [&]() -> Status {
      if (!Is(TokenKind::kBareId)) return ErrorExpected("convolution dimension field");
      std::string_view field = tok_.text;
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      for (size_t i = 0; i < 6; ++i) {
        if (field == kScalarNames[i]) {
          JITD_ASSIGN_OR_RETURN(scalars[i], ParseInt());
          return Status::Ok();
        }
      }
      if (field == "input_spatial_dimensions") {
        JITD_ASSIGN_OR_RETURN(dims.input_spatial_dimensions, ParseIntList());
      } else if (field == "kernel_spatial_dimensions") {
        JITD_ASSIGN_OR_RETURN(dims.kernel_spatial_dimensions, ParseIntList());
      } else if (field == "output_spatial_dimensions") {
        JITD_ASSIGN_OR_RETURN(dims.output_spatial_dimensions, ParseIntList());
      } else {
        return Error("unknown convolution dimension field '" + std::string(field) + "'");
      }
      return Status::Ok();
    };
    do {
      JITD_RETURN_IF_ERROR(field_fn());
    } while (Consume(TokenKind::kComma));
    dims.input_batch_dimension = scalars[0];
    dims.input_feature_dimension = scalars[1];
    dims.kernel_input_feature_dimension = scalars[2];
    dims.kernel_output_feature_dimension = scalars[3];
    dims.output_batch_dimension = scalars[4];
    dims.output_feature_dimension = scalars[5];
    return dims;
  }
  // One layout: '[' entries ']' where entries are letters or spatial indices.
  auto layout = [&](char a, char b, int64_t* a_dim, int64_t* b_dim,
                    std::vector<int64_t>* spatial) -> Status {
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, "starting a convolution layout"));
    int64_t position = 0;
    std::vector<std::pair<int64_t, int64_t>> spatial_pos;  // (spatial index, position)
    *a_dim = -1;
    *b_dim = -1;
    JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
      if (Is(TokenKind::kInteger)) {
        JITD_ASSIGN_OR_RETURN(int64_t s, ParseInt());
        if (s < 0 || s >= ir::kMaxRank) return Error("spatial dimension index out of range");
        spatial_pos.emplace_back(s, position);
      } else if (Is(TokenKind::kBareId) && tok_.text.size() == 1 &&
                 (tok_.text[0] == a || tok_.text[0] == b)) {
        int64_t* slot = tok_.text[0] == a ? a_dim : b_dim;
        if (*slot != -1) return Error("'" + std::string(tok_.text) + "' appears twice in a layout");
        *slot = position;
        Advance();
      } else {
        return Error(std::string("expected '") + a + "', '" + b +
                     "' or a spatial dimension index in a convolution layout, got " +
                     Describe(tok_));
      }
      if (++position > ir::kMaxRank) return Error("convolution layout too long");
      return Status::Ok();
    }));
    if (*a_dim < 0 || *b_dim < 0) {
      return Error(std::string("convolution layout needs both '") + a + "' and '" + b + "'");
    }
    spatial->assign(spatial_pos.size(), -1);
    for (auto [s, pos] : spatial_pos) {
      if (s >= static_cast<int64_t>(spatial_pos.size()) || (*spatial)[static_cast<size_t>(s)] != -1) {
        return Error("spatial dimension indices of a convolution layout must be 0..N-1, each once");
      }
      (*spatial)[static_cast<size_t>(s)] = pos;
    }
    return Status::Ok();
  };
  JITD_RETURN_IF_ERROR(layout('b', 'f', &dims.input_batch_dimension,
                              &dims.input_feature_dimension, &dims.input_spatial_dimensions));
  if (!IsKeyword("x")) return ErrorExpected("'x' between convolution layouts");
  Advance();
  JITD_RETURN_IF_ERROR(layout('i', 'o', &dims.kernel_input_feature_dimension,
                              &dims.kernel_output_feature_dimension,
                              &dims.kernel_spatial_dimensions));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kArrow, "before the output layout"));
  JITD_RETURN_IF_ERROR(layout('b', 'f', &dims.output_batch_dimension,
                              &dims.output_feature_dimension, &dims.output_spatial_dimensions));
  return dims;
}

StatusOr<Attribute> Parser::ParseDenseArray() {
  Advance();  // 'array'
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'array'"));
  JITD_ASSIGN_OR_RETURN(DType dtype, ParseElementType());
  ir::DenseArrayAttr array;
  array.dtype = dtype;
  if (ir::IsComplex(dtype)) return Error("array<> of complex values is not supported");
  if (Consume(TokenKind::kColon)) {
    do {
      if (dtype == DType::kPred) {
        if (IsKeyword("true") || IsKeyword("false")) {
          array.ints.push_back(tok_.text == "true");
          Advance();
        } else {
          return ErrorExpected("'true' or 'false' in array<i1>");
        }
      } else if (ir::IsFloat(dtype)) {
        const bool negative = Consume(TokenKind::kMinus);
        if (!Is(TokenKind::kFloat) && !Is(TokenKind::kInteger)) return ErrorExpected("number");
        double v = std::strtod(std::string(tok_.text).c_str(), nullptr);
        Advance();
        array.floats.push_back(negative ? -v : v);
      } else {
        JITD_ASSIGN_OR_RETURN(int64_t v, ParseInt());
        array.ints.push_back(v);
      }
    } while (Consume(TokenKind::kComma));
  }
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing 'array<'"));
  return Attribute(std::move(array));
}

Status Parser::ParseDenseScalar(DenseElement& e) {
  e.loc = tok_.loc;
  if (IsKeyword("true") || IsKeyword("false")) {
    e.kind = DenseElement::Kind::kBool;
    e.text = tok_.text;
    Advance();
    return Status::Ok();
  }
  e.negative = Consume(TokenKind::kMinus);
  if (Is(TokenKind::kFloat)) {
    e.kind = DenseElement::Kind::kFloat;
  } else if (Is(TokenKind::kInteger)) {
    const bool hex = tok_.text.size() > 2 && tok_.text[1] == 'x';
    e.kind = hex ? DenseElement::Kind::kHex : DenseElement::Kind::kInt;
  } else if (IsKeyword("inf") || IsKeyword("nan")) {
    e.kind = DenseElement::Kind::kFloat;
  } else {
    return ErrorExpected("element value");
  }
  e.text = tok_.text;
  Advance();
  return Status::Ok();
}

StatusOr<DenseElement> Parser::ParseDenseElement(DenseBody& body) {
  DenseElement e;
  if (Is(TokenKind::kLParen)) {
    e.loc = tok_.loc;
    Advance();
    DenseElement re, im;
    JITD_RETURN_IF_ERROR(ParseDenseScalar(re));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma, "between real and imaginary parts"));
    JITD_RETURN_IF_ERROR(ParseDenseScalar(im));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "closing a complex value"));
    e.kind = DenseElement::Kind::kComplex;
    e.real_index = static_cast<int>(body.complex_parts.size());
    body.complex_parts.push_back(re);
    body.complex_parts.push_back(im);
    return e;
  }
  JITD_RETURN_IF_ERROR(ParseDenseScalar(e));
  return e;
}

Status Parser::ParseDenseList(DenseBody& body, size_t level) {
  // At '['. body.shape[level] is -1 until the first list at this level ends.
  DepthGuard guard(this);
  JITD_RETURN_IF_ERROR(CheckDepth());
  const Location loc = tok_.loc;
  Advance();
  if (body.shape.size() <= level) body.shape.push_back(-1);
  int64_t count = 0;
  if (!Is(TokenKind::kRSquare)) {
    do {
      if (Is(TokenKind::kLSquare)) {
        if (body.shape.size() == level + 1 && !body.elements.empty()) {
          return Error("dense literal mixes nested lists and values at one level");
        }
        JITD_RETURN_IF_ERROR(ParseDenseList(body, level + 1));
      } else {
        if (body.shape.size() > level + 1) {
          return Error("dense literal mixes nested lists and values at one level");
        }
        JITD_ASSIGN_OR_RETURN(DenseElement e, ParseDenseElement(body));
        body.elements.push_back(e);
      }
      ++count;
    } while (Consume(TokenKind::kComma));
  }
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kRSquare, "closing a dense list"));
  if (body.shape[level] == -1) {
    body.shape[level] = count;
  } else if (body.shape[level] != count) {
    return ErrorAt(loc, "dense literal lists at one level have different lengths (" +
                            std::to_string(body.shape[level]) + " and " +
                            std::to_string(count) + ")");
  }
  return Status::Ok();
}

Status Parser::ParseDenseBody(DenseBody& body) {
  if (Is(TokenKind::kGreater)) {
    body.kind = DenseBody::Kind::kEmpty;
    return Status::Ok();
  }
  if (Is(TokenKind::kString)) {
    std::string_view s = tok_.text.substr(1, tok_.text.size() - 2);
    if (s.size() < 2 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) {
      return Error("expected a hex string \"0x...\" in dense<>; string tensors are not supported");
    }
    body.kind = DenseBody::Kind::kHex;
    body.hex = s.substr(2);
    body.hex_loc = tok_.loc;
    Advance();
    return Status::Ok();
  }
  body.kind = DenseBody::Kind::kElements;
  if (Is(TokenKind::kLSquare)) {
    body.nested = true;
    return ParseDenseList(body, 0);
  }
  JITD_ASSIGN_OR_RETURN(DenseElement e, ParseDenseElement(body));
  body.elements.push_back(e);
  return Status::Ok();
}

Status Parser::StoreScalar(const DenseElement& e, DType dtype, uint8_t* out) {
  const int width = ir::StorageBytes(dtype);
  auto fail = [&](const std::string& why) { return ErrorAt(e.loc, why); };
  if (e.kind == DenseElement::Kind::kComplex) {
    return fail("complex value for element type " + std::string(ir::DTypeName(dtype)));
  }
  if (dtype == DType::kPred) {
    if (e.kind == DenseElement::Kind::kBool) {
      *out = e.text == "true";
      return Status::Ok();
    }
    if (e.kind == DenseElement::Kind::kInt && !e.negative && (e.text == "0" || e.text == "1")) {
      *out = e.text == "1";
      return Status::Ok();
    }
    return fail("expected 'true' or 'false' for an i1 element");
  }
  if (e.kind == DenseElement::Kind::kBool) {
    return fail("boolean value for element type " + std::string(ir::DTypeName(dtype)));
  }
  if (ir::IsInteger(dtype)) {
    if (e.kind == DenseElement::Kind::kFloat) {
      return fail("float value " + std::string(e.text) + " for integer element type " +
                  std::string(ir::DTypeName(dtype)));
    }
    uint64_t magnitude = 0;
    const bool hex = e.kind == DenseElement::Kind::kHex;
    std::string_view t = hex ? e.text.substr(2) : e.text;
    auto r = std::from_chars(t.data(), t.data() + t.size(), magnitude, hex ? 16 : 10);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) {
      return fail("integer " + std::string(e.text.substr(0, 30)) + " is out of range");
    }
    const int bits = ir::BitWidth(dtype);
    const uint64_t umax = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    uint64_t value;
    if (e.negative) {
      if (ir::IsUnsignedInt(dtype) && magnitude != 0) {
        return fail("negative value for unsigned element type " + std::string(ir::DTypeName(dtype)));
      }
      if (magnitude > (uint64_t{1} << (bits - 1))) {
        return fail("integer -" + std::string(t) + " is out of range for " +
                    std::string(ir::DTypeName(dtype)));
      }
      value = (0 - magnitude) & umax;
    } else {
      // Signless integers accept the unsigned range too, as MLIR does.
      if (magnitude > umax) {
        return fail("integer " + std::string(t) + " is out of range for " +
                    std::string(ir::DTypeName(dtype)));
      }
      value = magnitude;
    }
    std::memcpy(out, &value, static_cast<size_t>(width));
    return Status::Ok();
  }
  // Floats.
  const ir::FloatFormat format = *ir::GetFloatFormat(dtype);
  uint64_t bits = 0;
  if (e.kind == DenseElement::Kind::kHex) {
    if (e.negative) return fail("a hex float bit pattern cannot have a sign");
    std::string_view t = e.text.substr(2);
    auto r = std::from_chars(t.data(), t.data() + t.size(), bits, 16);
    const int total = ir::BitWidth(dtype);
    if (r.ec != std::errc() || (total < 64 && bits >> total)) {
      return fail("hex bit pattern " + std::string(e.text.substr(0, 30)) + " is too wide for " +
                  std::string(ir::DTypeName(dtype)));
    }
  } else {
    double v;
    if (e.text == "inf") {
      v = INFINITY;
    } else if (e.text == "nan") {
      v = NAN;
    } else if (dtype == DType::kF32) {
      float f = 0;
      auto r = std::from_chars(e.text.data(), e.text.data() + e.text.size(), f);
      if (r.ec == std::errc::result_out_of_range) f = std::strtof(std::string(e.text).c_str(), nullptr);
      else if (r.ec != std::errc()) return fail("malformed number " + std::string(e.text));
      v = f;
    } else {
      auto r = std::from_chars(e.text.data(), e.text.data() + e.text.size(), v);
      if (r.ec == std::errc::result_out_of_range) v = std::strtod(std::string(e.text).c_str(), nullptr);
      else if (r.ec != std::errc()) return fail("malformed number " + std::string(e.text));
    }
    if (e.negative) v = -v;
    if (dtype == DType::kF32) {
      const float f = static_cast<float>(v);
      std::memcpy(out, &f, 4);
      return Status::Ok();
    }
    bits = ir::EncodeFloat(v, format);
  }
  std::memcpy(out, &bits, static_cast<size_t>(width));
  return Status::Ok();
}

Status Parser::StoreElement(const DenseBody& body, const DenseElement& e, DType dtype,
                            uint8_t* out) {
  if (ir::IsComplex(dtype)) {
    if (e.kind != DenseElement::Kind::kComplex) {
      return ErrorAt(e.loc, "expected a (real, imaginary) pair for element type " +
                                std::string(ir::DTypeName(dtype)));
    }
    const DType part = ir::ComplexComponent(dtype);
    const size_t half = static_cast<size_t>(ir::StorageBytes(part));
    JITD_RETURN_IF_ERROR(StoreScalar(body.complex_parts[static_cast<size_t>(e.real_index)], part, out));
    return StoreScalar(body.complex_parts[static_cast<size_t>(e.real_index) + 1], part, out + half);
  }
  return StoreScalar(e, dtype, out);
}

StatusOr<ir::DenseElementsAttr> Parser::BuildDense(const DenseBody& body, const Type& type,
                                                   Location loc) {
  if (!type.is_tensor()) return ErrorAt(loc, "dense<> needs a tensor type");
  const DType dtype = type.dtype();
  const int64_t n = type.num_elements();
  const size_t width = static_cast<size_t>(ir::StorageBytes(dtype));
  ir::DenseElementsAttr attr;
  attr.type = type;
  std::vector<uint8_t> data;
  switch (body.kind) {
    case DenseBody::Kind::kEmpty:
      if (n != 0) {
        return ErrorAt(loc, "dense<> is empty but " + type.ToString() + " has " +
                                std::to_string(n) + " elements");
      }
      attr.data = std::make_shared<const std::vector<uint8_t>>();
      return attr;
    case DenseBody::Kind::kHex: {
      if (body.hex.size() % 2) return ErrorAt(body.hex_loc, "hex literal has an odd number of digits");
      const size_t bytes = body.hex.size() / 2;
      const bool full = static_cast<int64_t>(bytes) == n * static_cast<int64_t>(width);
      if (!full && bytes != width) {
        return ErrorAt(body.hex_loc, "hex literal holds " + std::to_string(bytes) +
                                         " bytes but " + type.ToString() + " needs " +
                                         std::to_string(n * static_cast<int64_t>(width)) +
                                         " (or " + std::to_string(width) + " for a splat)");
      }
      data.resize(bytes);
      const char* h = body.hex.data();
      for (size_t i = 0; i < bytes; ++i) {
        const int hi = HexValue(h[2 * i]), lo = HexValue(h[2 * i + 1]);
        if ((hi | lo) < 0) return ErrorAt(body.hex_loc, "invalid hex digit in dense literal");
        data[i] = static_cast<uint8_t>(hi * 16 + lo);
      }
      if (dtype == DType::kPred) {
        for (uint8_t b : data) {
          if (b > 1) return ErrorAt(body.hex_loc, "i1 hex literal bytes must be 00 or 01");
        }
      }
      attr.splat = !full || n == 1;
      break;
    }
    case DenseBody::Kind::kElements: {
      if (!body.nested) {
        data.resize(width);
        JITD_RETURN_IF_ERROR(StoreElement(body, body.elements[0], dtype, data.data()));
        attr.splat = true;
        break;
      }
      if (body.shape != type.dims()) {
        std::string written = "[";
        for (size_t i = 0; i < body.shape.size(); ++i) {
          if (i) written += ", ";
          written += std::to_string(body.shape[i]);
        }
        written += "]";
        return ErrorAt(loc, "dense literal of shape " + written + " does not match " +
                                type.ToString());
      }
      data.resize(body.elements.size() * width);
      for (size_t i = 0; i < body.elements.size(); ++i) {
        JITD_RETURN_IF_ERROR(StoreElement(body, body.elements[i], dtype, data.data() + i * width));
      }
      attr.splat = n == 1;
      break;
    }
  }
  // Fold uniform data into a splat, as MLIR does.
  if (!attr.splat && data.size() >= width) {
    bool uniform = true;
    for (size_t off = width; off < data.size() && uniform; off += width) {
      uniform = std::memcmp(data.data(), data.data() + off, width) == 0;
    }
    if (uniform) {
      attr.splat = true;
      data.resize(width);
    }
  }
  attr.data = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  return attr;
}

StatusOr<Attribute> Parser::ParseDense() {
  const Location loc = tok_.loc;
  Advance();  // 'dense'
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLess, "after 'dense'"));
  DenseBody body;
  JITD_RETURN_IF_ERROR(ParseDenseBody(body));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing 'dense<'"));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the type of a dense literal"));
  JITD_ASSIGN_OR_RETURN(std::optional<Type> index_type, ParseIndexTensorType());
  Type type;
  if (index_type) {
    type = std::move(*index_type);
  } else {
    JITD_ASSIGN_OR_RETURN(type, ParseType());
  }
  JITD_ASSIGN_OR_RETURN(ir::DenseElementsAttr attr, BuildDense(body, type, loc));
  attr.index_elements = index_type.has_value();
  return Attribute(std::move(attr));
}

// `tensor<2xindex>`: MLIR's `index` element type, which only attributes use
// (jax.export's `operand_layouts` / `result_layouts` of custom calls). Read
// as i64; the attribute remembers it to print `index` back. nullopt (and
// nothing consumed) when the type ahead is not a static tensor of index.
StatusOr<std::optional<Type>> Parser::ParseIndexTensorType() {
  if (!IsKeyword("tensor")) return std::optional<Type>();
  const char* p = lex_.position();
  const char* end = lex_.end();
  if (p >= end || *p != '<') return std::optional<Type>();
  ++p;
  std::vector<int64_t> dims;
  while (p < end && *p >= '0' && *p <= '9') {
    int64_t d = 0;
    auto r = std::from_chars(p, end, d);
    if (r.ec != std::errc() || r.ptr >= end || *r.ptr != 'x') return std::optional<Type>();
    dims.push_back(d);
    p = r.ptr + 1;
  }
  constexpr std::string_view kIndex = "index>";
  if (std::string_view(p, static_cast<size_t>(end - p)).substr(0, kIndex.size()) != kIndex) {
    return std::optional<Type>();
  }
  const Location loc = tok_.loc;
  auto checked = Type::CheckedTensor(DType::kS64, std::move(dims));
  if (!checked.ok()) return ErrorAt(loc, checked.status().message());
  lex_.ResetTo(p + kIndex.size());
  Advance();
  return std::optional<Type>(std::move(checked).value());
}

// ===========================================================================
// Values

StatusOr<OperandRef> Parser::ParseOperandRef() {
  if (!Is(TokenKind::kPercentId)) return ErrorExpected("value such as %0");
  OperandRef ref;
  ref.name = tok_.text;
  ref.loc = tok_.loc;
  const char* name_end = tok_.text.data() + tok_.text.size();
  Advance();
  if (Is(TokenKind::kHashId) && tok_.begin == name_end) {  // `%0#1`, no space
    int64_t index = 0;
    auto r = std::from_chars(tok_.text.data(), tok_.text.data() + tok_.text.size(), index);
    if (r.ec != std::errc() || r.ptr != tok_.text.data() + tok_.text.size()) {
      return Error("expected a result number after '#', got " + Describe(tok_));
    }
    ref.index = index;
    Advance();
  }
  return ref;
}

StatusOr<std::vector<OperandRef>> Parser::ParseOperandRefs(TokenKind close) {
  std::vector<OperandRef> refs;
  if (Is(close)) return refs;
  do {
    JITD_ASSIGN_OR_RETURN(OperandRef r, ParseOperandRef());
    refs.push_back(r);
  } while (Consume(TokenKind::kComma));
  return refs;
}

StatusOr<std::vector<OperandRef>> Parser::ParseOperandRefList() {
  std::vector<OperandRef> refs;
  do {
    JITD_ASSIGN_OR_RETURN(OperandRef r, ParseOperandRef());
    refs.push_back(r);
  } while (Consume(TokenKind::kComma) && Is(TokenKind::kPercentId));
  return refs;
}

StatusOr<Value*> Parser::Lookup(const OperandRef& ref) {
  for (size_t i = scopes_.size(); i-- > 0;) {
    auto it = scopes_[i].values.find(ref.name);
    if (it != scopes_[i].values.end()) {
      const Definition& def = it->second;
      const int64_t index = ref.index < 0 ? 0 : ref.index;
      if (index >= static_cast<int64_t>(def.count)) {
        return ErrorAt(ref.loc, "%" + std::string(ref.name) + " has " +
                                    std::to_string(def.count) + " results, no #" +
                                    std::to_string(index));
      }
      return def.at(static_cast<uint32_t>(index));
    }
    if (scopes_[i].isolated) break;
  }
  return ErrorAt(ref.loc, "use of undefined value %" + std::string(ref.name));
}

StatusOr<Value*> Parser::Resolve(const OperandRef& ref, const Type& type) {
  JITD_ASSIGN_OR_RETURN(Value* v, Lookup(ref));
  if (v->type() != type) {
    return ErrorAt(ref.loc, "%" + std::string(ref.name) +
                                (ref.index >= 0 ? "#" + std::to_string(ref.index) : "") +
                                " has type " + v->type().ToString() + " but is used as " +
                                type.ToString());
  }
  return v;
}

Status Parser::ResolveAll(const std::vector<OperandRef>& refs, const std::vector<Type>& types,
                          ir::Op& op) {
  if (refs.size() != types.size()) {
    return ErrorAt(op.loc(), "'" + std::string(op.name()) + "' has " +
                                 std::to_string(refs.size()) + " operands but " +
                                 std::to_string(types.size()) + " operand types");
  }
  for (size_t i = 0; i < refs.size(); ++i) {
    JITD_ASSIGN_OR_RETURN(Value* v, Resolve(refs[i], types[i]));
    op.add_operand(v);
  }
  return Status::Ok();
}

Status Parser::Define(std::string_view name, Definition def, Location loc) {
  auto& scope = scopes_.back().values;
  if (!scope.emplace(name, def).second) {
    return ErrorAt(loc, "redefinition of value %" + std::string(name));
  }
  return Status::Ok();
}

// ===========================================================================
// Structure

StatusOr<std::unique_ptr<ir::Module>> Parser::ParseTopLevel() {
  auto module = std::make_unique<ir::Module>();
  module_ = module.get();
  bool have_module = false;
  bool implicit = false;
  while (!Is(TokenKind::kEof)) {
    if (Is(TokenKind::kHashId)) {
      // An alias definition such as `#loc1 = loc(...)`: not needed.
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "in an attribute alias definition"));
      if (IsKeyword("loc")) {
        JITD_RETURN_IF_ERROR(SkipLocation());
      } else {
        JITD_ASSIGN_OR_RETURN(Attribute unused, ParseAttribute());
        (void)unused;
      }
      continue;
    }
    if (Is(TokenKind::kFileMetadataBegin)) {
      JITD_RETURN_IF_ERROR(ParseFileMetadata(*module));
      continue;
    }
    if (IsKeyword("module") ||
        (Is(TokenKind::kString) && tok_.text == "\"builtin.module\"")) {
      if (have_module || implicit) return Error("a file piece holds one module; split modules with '// -----'");
      have_module = true;
      JITD_RETURN_IF_ERROR(ParseModuleInto(*module));
      continue;
    }
    if (IsKeyword("func.func") || (Is(TokenKind::kString) && tok_.text == "\"func.func\"")) {
      if (have_module) return Error("function outside the module");
      implicit = true;
      PushScope(true);
      Status s = IsKeyword("func.func") ? (Advance(), ParseFunction(*module))
                                        : (Advance(), ParseGenericFunction(*module));
      PopScope();
      JITD_RETURN_IF_ERROR(s);
      continue;
    }
    return ErrorExpected("'module' or 'func.func'");
  }
  if (!have_module && !implicit) return Error("no module in input");
  return module;
}

Status Parser::ParseFileMetadata(ir::Module& module) {
  // {-# section: { group: { key: value, ... }, ... }, ... #-}
  // e.g. dialect_resources: { builtin: { name: "0x04000000..." } }.
  Advance();  // '{-#'
  auto key_text = [&]() -> StatusOr<std::string> {
    if (Is(TokenKind::kBareId)) {
      std::string k(tok_.text);
      Advance();
      return k;
    }
    if (Is(TokenKind::kString)) {
      JITD_ASSIGN_OR_RETURN(std::string k, DecodeString(tok_));
      Advance();
      return k;
    }
    return ErrorExpected("a name in the file metadata");
  };
  while (!Consume(TokenKind::kFileMetadataEnd)) {
    JITD_ASSIGN_OR_RETURN(std::string section, key_text());
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace));
    JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRBrace, [&]() -> Status {
      JITD_ASSIGN_OR_RETURN(std::string group, key_text());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace));
      return ParseCommaSeparated(TokenKind::kRBrace, [&]() -> Status {
        JITD_ASSIGN_OR_RETURN(std::string key, key_text());
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
        if (!Is(TokenKind::kString) && !IsKeyword("true") && !IsKeyword("false") &&
            !Is(TokenKind::kInteger)) {
          return ErrorExpected("a resource value (string, hex blob or bool)");
        }
        module.resources().push_back({section, group, std::move(key), std::string(tok_.text)});
        Advance();
        return Status::Ok();
      });
    }));
    if (!Consume(TokenKind::kComma) && !Is(TokenKind::kFileMetadataEnd)) {
      return ErrorExpected("',' or '#-}' in the file metadata");
    }
  }
  return Status::Ok();
}

Status Parser::ParseModuleInto(ir::Module& module) {
  if (Is(TokenKind::kString)) {
    // Generic: "builtin.module"() <{sym_name = "x"}> ({ ... }) {attrs} : () -> ()
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(a module has no operands)"));
    if (Consume(TokenKind::kLess)) {
      AttributeList props;
      JITD_RETURN_IF_ERROR(ParseAttrDict(props));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater));
      for (const auto& [name, value] : props.entries()) {
        if (name == "sym_name" && value.is<ir::StringAttr>()) {
          module.set_name(value.as<ir::StringAttr>().value);
        } else {
          module.attrs().Set(name, value);
        }
      }
    }
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "before the module region"));
    JITD_RETURN_IF_ERROR(ParseModuleBody(module));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "after the module region"));
    if (Is(TokenKind::kLBrace)) JITD_RETURN_IF_ERROR(ParseAttrDict(module.attrs()));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    std::vector<Type> ins, outs;
    JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
    if (!ins.empty() || !outs.empty()) return Error("a module has type () -> ()");
    return SkipLocation();
  }
  Advance();  // 'module'
  if (Is(TokenKind::kAtId)) {
    JITD_ASSIGN_OR_RETURN(std::string name, SymbolName(tok_));
    module.set_name(std::move(name));
    Advance();
  }
  if (ConsumeKeyword("attributes")) {
    JITD_RETURN_IF_ERROR(ParseAttrDict(module.attrs()));
  }
  JITD_RETURN_IF_ERROR(ParseModuleBody(module));
  return SkipLocation();
}

Status Parser::ParseModuleBody(ir::Module& module) {
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "starting the module body"));
  // MLIR allows an explicit entry block header in the generic form.
  if (Is(TokenKind::kCaretId)) {
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
  }
  while (!Consume(TokenKind::kRBrace)) {
    PushScope(true);
    Status s;
    if (IsKeyword("func.func")) {
      Advance();
      s = ParseFunction(module);
    } else if (Is(TokenKind::kString) && tok_.text == "\"func.func\"") {
      Advance();
      s = ParseGenericFunction(module);
    } else {
      s = ErrorExpected("'func.func' or '}' in the module body");
    }
    PopScope();
    JITD_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

Status Parser::ParseFunction(ir::Module& module) {
  const Location loc = tok_.loc;
  std::string visibility = "public";
  if (IsKeyword("public") || IsKeyword("private") || IsKeyword("nested")) {
    visibility = std::string(tok_.text);
    Advance();
  }
  if (!Is(TokenKind::kAtId)) return ErrorExpected("function name such as @main");
  JITD_ASSIGN_OR_RETURN(std::string fn_name, SymbolName(tok_));
  auto fn = std::make_unique<ir::Function>(std::move(fn_name), loc);
  fn->set_visibility(visibility);
  Advance();
  // Arguments: `%name: type {attrs} loc(...)` or, for declarations, `type {attrs}`.
  std::vector<std::pair<OperandRef, Type>> args;
  bool named = false, unnamed = false;
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "starting the argument list"));
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRParen, [&]() -> Status {
    OperandRef ref;
    if (Is(TokenKind::kPercentId)) {
      named = true;
      ref.name = tok_.text;
      ref.loc = tok_.loc;
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the argument name"));
    } else {
      unnamed = true;
    }
    JITD_ASSIGN_OR_RETURN(Type t, ParseType());
    AttributeList attrs;
    JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(attrs));
    JITD_RETURN_IF_ERROR(SkipLocation());
    fn->arg_types().push_back(t);
    fn->arg_attrs().push_back(std::move(attrs));
    args.emplace_back(ref, std::move(t));
    return Status::Ok();
  }));
  if (named && unnamed) return ErrorAt(loc, "function arguments must all be named or all unnamed");
  if (Consume(TokenKind::kArrow)) {
    // Result attributes only appear inside a parenthesized result list; a
    // '{' after a lone result type starts the body.
    bool in_parens = false;
    auto parse_result = [&]() -> Status {
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      AttributeList attrs;
      if (in_parens) JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(attrs));
      fn->result_types().push_back(std::move(t));
      fn->result_attrs().push_back(std::move(attrs));
      return Status::Ok();
    };
    if (Consume(TokenKind::kLParen)) {
      in_parens = true;
      JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRParen, parse_result));
    } else {
      JITD_RETURN_IF_ERROR(parse_result());
    }
  }
  if (ConsumeKeyword("attributes")) JITD_RETURN_IF_ERROR(ParseAttrDict(fn->attrs()));
  if (Is(TokenKind::kLBrace)) {
    if (unnamed && !args.empty()) return ErrorAt(loc, "a function with a body needs named arguments");
    JITD_RETURN_IF_ERROR(ParseRegion(fn->body(), &args));
    if (fn->body().num_blocks() == 0) {
      return ErrorAt(loc, "function @" + fn->name() + " has an empty body");
    }
  }
  JITD_RETURN_IF_ERROR(SkipLocation());
  auto added = module.AddFunction(std::move(fn));
  if (!added.ok()) return ErrorAt(loc, added.status().message());
  return Status::Ok();
}

Status Parser::ParseGenericFunction(ir::Module& module) {
  // "func.func"() <{function_type = (...) -> ..., sym_name = "f", ...}> ({...}) : () -> ()
  const Location loc = tok_.loc;
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "(a function has no operands)"));
  std::vector<Type> ins, outs;
  bool have_type = false;
  AttributeList props;
  if (Consume(TokenKind::kLess)) {
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace));
    JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRBrace, [&]() -> Status {
      if (!Is(TokenKind::kBareId)) return ErrorExpected("property name");
      std::string name(tok_.text);
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      if (name == "function_type") {
        have_type = true;
        return ParseFunctionType(ins, outs);
      }
      JITD_ASSIGN_OR_RETURN(Attribute value, ParseAttribute());
      props.Set(std::move(name), std::move(value));
      return Status::Ok();
    }));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater));
  }
  const Attribute* name = props.Find("sym_name");
  if (!name || !name->is<ir::StringAttr>()) return ErrorAt(loc, "\"func.func\" needs a sym_name string");
  if (!have_type) return ErrorAt(loc, "\"func.func\" needs a function_type");
  auto fn = std::make_unique<ir::Function>(name->as<ir::StringAttr>().value, loc);
  if (const Attribute* v = props.Find("sym_visibility"); v && v->is<ir::StringAttr>()) {
    fn->set_visibility(v->as<ir::StringAttr>().value);
  }
  fn->arg_types() = ins;
  fn->result_types() = outs;
  fn->arg_attrs().resize(ins.size());
  fn->result_attrs().resize(outs.size());
  auto take_attr_list = [&](std::string_view key, std::vector<AttributeList>& into) -> Status {
    const Attribute* a = props.Find(key);
    if (!a) return Status::Ok();
    const auto* array = a->get_if<ir::ArrayAttr>();
    if (!array || array->elements.size() != into.size()) {
      return ErrorAt(loc, std::string(key) + " must be an array with one dictionary per entry");
    }
    for (size_t i = 0; i < into.size(); ++i) {
      const auto* dict = array->elements[i].get_if<ir::DictionaryAttr>();
      if (!dict) return ErrorAt(loc, std::string(key) + " entries must be dictionaries");
      for (const auto& e : dict->entries) into[i].Set(e.name, e.value);
    }
    return Status::Ok();
  };
  JITD_RETURN_IF_ERROR(take_attr_list("arg_attrs", fn->arg_attrs()));
  JITD_RETURN_IF_ERROR(take_attr_list("res_attrs", fn->result_attrs()));
  for (const auto& [key, value] : props.entries()) {
    if (key != "sym_name" && key != "sym_visibility" && key != "arg_attrs" && key != "res_attrs") {
      fn->attrs().Set(key, value);
    }
  }
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "before the function region"));
  if (!Is(TokenKind::kRParen)) {
    JITD_RETURN_IF_ERROR(ParseRegion(fn->body(), nullptr));
    if (!fn->body().empty()) {
      ir::Block& entry = fn->body().block(0);
      if (entry.num_args() != ins.size()) {
        return ErrorAt(loc, "entry block has " + std::to_string(entry.num_args()) +
                                " arguments but function_type has " + std::to_string(ins.size()));
      }
      for (size_t i = 0; i < ins.size(); ++i) {
        if (entry.arg(i)->type() != ins[i]) {
          return ErrorAt(loc, "entry block argument " + std::to_string(i) + " has type " +
                                  entry.arg(i)->type().ToString() + " but function_type says " +
                                  ins[i].ToString());
        }
      }
    }
  }
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "after the function region"));
  if (Is(TokenKind::kLBrace)) JITD_RETURN_IF_ERROR(ParseAttrDict(fn->attrs()));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
  std::vector<Type> op_ins, op_outs;
  JITD_RETURN_IF_ERROR(ParseFunctionType(op_ins, op_outs));
  JITD_RETURN_IF_ERROR(SkipLocation());
  auto added = module.AddFunction(std::move(fn));
  if (!added.ok()) return ErrorAt(loc, added.status().message());
  return Status::Ok();
}

Status Parser::ParseRegion(ir::Region& region,
                           const std::vector<std::pair<OperandRef, Type>>* args) {
  DepthGuard guard(this);
  JITD_RETURN_IF_ERROR(CheckDepth());
  const Location loc = tok_.loc;
  // A function's body is the outermost region; ops' regions nest inside.
  ++region_depth_;
  struct RegionDepthGuard {
    int& depth;
    ~RegionDepthGuard() { --depth; }
  } region_guard{region_depth_};
  if (region_depth_ > ir::kMaxRegionNesting + 1) {
    return ErrorAt(loc, "regions nested deeper than the limit of " +
                            std::to_string(ir::kMaxRegionNesting) + " levels");
  }
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "starting a region"));
  if (Consume(TokenKind::kRBrace)) {
    if (args && !args->empty()) return ErrorAt(loc, "region with arguments has no block");
    return Status::Ok();
  }
  PushScope(false);
  ir::Block& block = region.add_block();
  Status s = [&]() -> Status {
    if (Is(TokenKind::kCaretId)) {
      if (args && !args->empty()) return Error("block header where the arguments are already given");
      Advance();
      if (Consume(TokenKind::kLParen)) {
        JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRParen, [&]() -> Status {
          if (!Is(TokenKind::kPercentId)) return ErrorExpected("block argument");
          const std::string_view name = tok_.text;
          const Location arg_loc = tok_.loc;
          Advance();
          JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after block argument name"));
          JITD_ASSIGN_OR_RETURN(Type t, ParseType());
          JITD_RETURN_IF_ERROR(SkipLocation());
          Value* v = block.add_arg(std::move(t));
          return DefineValue(name, v, arg_loc);
        }));
      }
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "after the block header"));
    } else if (args) {
      for (const auto& [ref, type] : *args) {
        Value* v = block.add_arg(type);
        if (!ref.name.empty()) JITD_RETURN_IF_ERROR(DefineValue(ref.name, v, ref.loc));
      }
    }
    while (!Is(TokenKind::kRBrace)) {
      if (Is(TokenKind::kCaretId)) {
        return Error("regions with more than one block are not supported");
      }
      if (Is(TokenKind::kEof)) return ErrorExpected("'}' closing the region");
      JITD_RETURN_IF_ERROR(ParseOperation(block));
    }
    Advance();
    return Status::Ok();
  }();
  PopScope();
  return s;
}

Status Parser::ParseOperation(ir::Block& block) {
  const Location loc = tok_.loc;
  // Results: %a, %b:2 =
  std::vector<std::pair<std::string_view, int64_t>> groups;
  std::vector<Location> group_locs;
  if (Is(TokenKind::kPercentId)) {
    do {
      if (!Is(TokenKind::kPercentId)) return ErrorExpected("result name");
      std::string_view name = tok_.text;
      group_locs.push_back(tok_.loc);
      Advance();
      int64_t count = 1;
      if (Consume(TokenKind::kColon)) {
        JITD_ASSIGN_OR_RETURN(count, ParseInt());
        if (count < 1 || count > 1 << 16) return Error("result group size out of range");
      }
      groups.emplace_back(name, count);
    } while (Consume(TokenKind::kComma));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after the result names"));
  }
  std::unique_ptr<ir::Op> op;
  if (Is(TokenKind::kString)) {
    const std::string_view quoted = tok_.text.substr(1, tok_.text.size() - 2);
    auto code = ir::ParseOpName(quoted);
    if (!code) return Error(UnknownOpMessage(quoted));
    Advance();
    JITD_ASSIGN_OR_RETURN(op, ParseGenericOp(*code, loc));
  } else if (Is(TokenKind::kBareId)) {
    std::optional<OpCode> code;
    if (tok_.text == "return") code = OpCode::kFuncReturn;
    else if (tok_.text == "call") code = OpCode::kFuncCall;
    else code = ir::ParseOpName(tok_.text);
    if (!code) return Error(UnknownOpMessage(tok_.text));
    Advance();
    JITD_ASSIGN_OR_RETURN(op, ParsePrettyOp(*code, loc));
  } else {
    return ErrorExpected("an operation");
  }
  JITD_RETURN_IF_ERROR(SkipLocation());
  int64_t named = 0;
  for (const auto& g : groups) named += g.second;
  if (!groups.empty() && named != static_cast<int64_t>(op->num_results())) {
    return ErrorAt(loc, "'" + std::string(op->name()) + "' has " +
                            std::to_string(op->num_results()) + " results but " +
                            std::to_string(named) + " are named");
  }
  if (groups.empty() && op->num_results() != 0) {
    return ErrorAt(loc, "'" + std::string(op->name()) + "' results must be named");
  }
  std::vector<ir::ResultGroup> result_groups;
  uint32_t next = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    Definition def;
    def.op = op.get();
    def.start = next;
    def.count = static_cast<uint32_t>(groups[g].second);
    next += def.count;
    JITD_RETURN_IF_ERROR(Define(groups[g].first, def, group_locs[g]));
    result_groups.push_back({std::string(groups[g].first), static_cast<int>(groups[g].second)});
  }
  op->set_result_groups(std::move(result_groups));
  block.add_op(std::move(op));
  return Status::Ok();
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseGenericOp(OpCode code, Location loc) {
  auto op = std::make_unique<ir::Op>(code, loc);
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "starting the operand list"));
  JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefs(TokenKind::kRParen));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "closing the operand list"));
  if (Is(TokenKind::kLSquare)) return Error("successor blocks are not supported");
  if (Consume(TokenKind::kLess)) {
    JITD_RETURN_IF_ERROR(ParseAttrDict(op->attrs()));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kGreater, "closing '<{' properties"));
  }
  if (Consume(TokenKind::kLParen)) {
    do {
      JITD_RETURN_IF_ERROR(ParseRegion(op->add_region(), nullptr));
    } while (Consume(TokenKind::kComma));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "closing the region list"));
  }
  JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the op's type"));
  std::vector<Type> ins, outs;
  JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
  for (auto& t : outs) op->add_result(std::move(t));
  return op;
}

// ===========================================================================
// Pretty op forms

Status Parser::ParseSameOperandsAndResultType(size_t num_operands,
                                              std::vector<Type>& operand_types, Type& result) {
  if (Is(TokenKind::kLParen)) {
    std::vector<Type> outs;
    JITD_RETURN_IF_ERROR(ParseFunctionType(operand_types, outs));
    if (outs.size() != 1) return Error("expected exactly one result type");
    result = outs[0];
    return Status::Ok();
  }
  JITD_ASSIGN_OR_RETURN(result, ParseType());
  operand_types.assign(num_operands, result);
  return Status::Ok();
}

Status Parser::ParseNamedIntList(std::string_view keyword, std::vector<int64_t>& out) {
  JITD_RETURN_IF_ERROR(ExpectKeyword(keyword));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after '" + std::string(keyword) + "'"));
  JITD_ASSIGN_OR_RETURN(out, ParseIntList());
  return Status::Ok();
}

Status Parser::ParseEnumKeyword(std::string_view enum_name,
                                std::initializer_list<std::string_view> allowed, ir::Op& op,
                                std::string attr_name) {
  if (Is(TokenKind::kBareId)) {
    for (std::string_view a : allowed) {
      if (tok_.text == a) {
        op.attrs().Set(std::move(attr_name),
                       ir::EnumAttr{"stablehlo", std::string(enum_name), std::string(a)});
        Advance();
        return Status::Ok();
      }
    }
  }
  std::string list;
  for (std::string_view a : allowed) {
    if (!list.empty()) list += ", ";
    list += a;
  }
  return ErrorExpected(std::string(enum_name) + " (one of " + list + ")");
}

Status Parser::ParsePrecisionList(ir::Op& op) {
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after 'precision'"));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare));
  ir::ArrayAttr array;
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
    if (!IsKeyword("DEFAULT") && !IsKeyword("HIGH") && !IsKeyword("HIGHEST")) {
      return ErrorExpected("precision (DEFAULT, HIGH or HIGHEST)");
    }
    array.elements.push_back(ir::EnumAttr{"stablehlo", "precision", std::string(tok_.text)});
    Advance();
    return Status::Ok();
  }));
  op.attrs().Set("precision_config", std::move(array));
  return Status::Ok();
}

ir::DenseArrayAttr I64Array(std::vector<int64_t> v) {
  return ir::DenseArrayAttr{DType::kS64, std::move(v), {}};
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseSlice(Location loc) {
  auto op = std::make_unique<ir::Op>(OpCode::kSlice, loc);
  JITD_ASSIGN_OR_RETURN(OperandRef operand, ParseOperandRef());
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare, "starting the slice ranges"));
  std::vector<int64_t> start, limit, strides;
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
    JITD_ASSIGN_OR_RETURN(int64_t s, ParseInt());
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "in a slice range start:limit"));
    JITD_ASSIGN_OR_RETURN(int64_t l, ParseInt());
    int64_t stride = 1;
    if (Consume(TokenKind::kColon)) {
      JITD_ASSIGN_OR_RETURN(stride, ParseInt());
    }
    start.push_back(s);
    limit.push_back(l);
    strides.push_back(stride);
    return Status::Ok();
  }));
  op->attrs().Set("start_indices", I64Array(std::move(start)));
  op->attrs().Set("limit_indices", I64Array(std::move(limit)));
  op->attrs().Set("strides", I64Array(std::move(strides)));
  JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
  std::vector<Type> ins, outs;
  JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  JITD_RETURN_IF_ERROR(ResolveAll({operand}, ins, *op));
  for (auto& t : outs) op->add_result(std::move(t));
  return op;
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseDotGeneral(OpCode code, Location loc) {
  auto op = std::make_unique<ir::Op>(code, loc);
  JITD_ASSIGN_OR_RETURN(OperandRef lhs, ParseOperandRef());
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
  JITD_ASSIGN_OR_RETURN(OperandRef rhs, ParseOperandRef());
  if (code == OpCode::kDotGeneral) {
    ir::StructAttr dims;
    dims.name = "stablehlo.dot";
    auto pair = [&](std::string_view keyword, const char* lhs_name, const char* rhs_name) -> Status {
      JITD_RETURN_IF_ERROR(ExpectKeyword(keyword));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_ASSIGN_OR_RETURN(std::vector<int64_t> l, ParseIntList());
      JITD_RETURN_IF_ERROR(ExpectKeyword("x", "between lhs and rhs dimensions"));
      JITD_ASSIGN_OR_RETURN(std::vector<int64_t> r, ParseIntList());
      if (!l.empty()) dims.fields.push_back({lhs_name, true, std::move(l)});
      if (!r.empty()) dims.fields.push_back({rhs_name, true, std::move(r)});
      return Status::Ok();
    };
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
    if (IsKeyword("batching_dims")) {
      JITD_RETURN_IF_ERROR(pair("batching_dims", "lhs_batching_dimensions", "rhs_batching_dimensions"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
    }
    JITD_RETURN_IF_ERROR(pair("contracting_dims", "lhs_contracting_dimensions",
                              "rhs_contracting_dimensions"));
    op->attrs().Set("dot_dimension_numbers", std::move(dims));
  }
  while (Consume(TokenKind::kComma)) {
    if (ConsumeKeyword("precision")) {
      JITD_RETURN_IF_ERROR(ParsePrecisionList(*op));
    } else if (ConsumeKeyword("algorithm")) {
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      if (!Is(TokenKind::kLess)) return ErrorExpected("'<' starting the dot algorithm");
      JITD_ASSIGN_OR_RETURN(std::string_view body, ScanBalanced(tok_.begin));
      op->attrs().Set("algorithm", ir::OpaqueAttr{"#stablehlo.dot_algorithm" + std::string(body)});
    } else {
      return ErrorExpected("'precision' or 'algorithm'");
    }
  }
  JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
  std::vector<Type> ins, outs;
  JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  JITD_RETURN_IF_ERROR(ResolveAll({lhs, rhs}, ins, *op));
  for (auto& t : outs) op->add_result(std::move(t));
  return op;
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseConvolution(Location loc) {
  auto op = std::make_unique<ir::Op>(OpCode::kConvolution, loc);
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
  JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefs(TokenKind::kRParen));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
  JITD_RETURN_IF_ERROR(ExpectKeyword("dim_numbers"));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
  JITD_ASSIGN_OR_RETURN(ir::ConvDimensionNumbers dims, ParseConvDims());
  op->attrs().Set("dimension_numbers", std::move(dims));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
  JITD_RETURN_IF_ERROR(ExpectKeyword("window"));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLBrace, "starting the window"));
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRBrace, [&]() -> Status {
    if (!Is(TokenKind::kBareId)) return ErrorExpected("window field");
    const std::string_view key = tok_.text;
    const Location key_loc = tok_.loc;
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
    if (key == "pad") {
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare));
      std::vector<uint8_t> bytes;
      int64_t rows = 0;
      JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
        JITD_ASSIGN_OR_RETURN(std::vector<int64_t> pair, ParseIntList());
        if (pair.size() != 2) return Error("each pad entry is [low, high]");
        for (int64_t v : pair) {
          const auto* p = reinterpret_cast<const uint8_t*>(&v);
          bytes.insert(bytes.end(), p, p + 8);
        }
        ++rows;
        return Status::Ok();
      }));
      ir::DenseElementsAttr pad;
      pad.type = Type::Tensor(DType::kS64, {rows, 2});
      pad.data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
      op->attrs().Set("padding", std::move(pad));
      return Status::Ok();
    }
    if (key == "reverse") {
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare));
      ir::DenseArrayAttr rev{DType::kPred, {}, {}};
      JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRSquare, [&]() -> Status {
        if (IsKeyword("true") || IsKeyword("false")) {
          rev.ints.push_back(tok_.text == "true");
          Advance();
          return Status::Ok();
        }
        JITD_ASSIGN_OR_RETURN(int64_t v, ParseInt());
        if (v != 0 && v != 1) return Error("window reversal entries are 0/1 or false/true");
        rev.ints.push_back(v);
        return Status::Ok();
      }));
      op->attrs().Set("window_reversal", std::move(rev));
      return Status::Ok();
    }
    const char* attr_name = key == "stride" ? "window_strides"
                            : key == "lhs_dilate" ? "lhs_dilation"
                            : key == "rhs_dilate" ? "rhs_dilation"
                                                  : nullptr;
    if (!attr_name) {
      return ErrorAt(key_loc, "unknown window field '" + std::string(key) +
                                  "' (expected stride, pad, lhs_dilate, rhs_dilate, reverse)");
    }
    JITD_ASSIGN_OR_RETURN(std::vector<int64_t> values, ParseIntList());
    op->attrs().Set(attr_name, I64Array(std::move(values)));
    return Status::Ok();
  }));
  JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
  std::vector<Type> ins, outs;
  JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
  for (auto& t : outs) op->add_result(std::move(t));
  return op;
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseReduce(Location loc) {
  auto op = std::make_unique<ir::Op>(OpCode::kReduce, loc);
  std::vector<OperandRef> inputs, inits;
  do {
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen, "starting '(%input init: %init)'"));
    JITD_ASSIGN_OR_RETURN(OperandRef in, ParseOperandRef());
    JITD_RETURN_IF_ERROR(ExpectKeyword("init"));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    JITD_ASSIGN_OR_RETURN(OperandRef init, ParseOperandRef());
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
    inputs.push_back(in);
    inits.push_back(init);
  } while (Consume(TokenKind::kComma));
  std::optional<OpCode> body_op;
  Location body_loc = tok_.loc;
  if (ConsumeKeyword("applies")) {
    if (!Is(TokenKind::kBareId)) return ErrorExpected("op name after 'applies'");
    body_op = ir::ParseOpName(tok_.text);
    if (!body_op || !ir::IsElementwiseBinary(*body_op)) {
      return Error("'applies' needs a binary elementwise op, got " + Describe(tok_));
    }
    Advance();
  }
  JITD_RETURN_IF_ERROR(ExpectKeyword("across"));
  std::vector<int64_t> dims;
  JITD_RETURN_IF_ERROR(ParseNamedIntList("dimensions", dims));
  op->attrs().Set("dimensions", I64Array(std::move(dims)));
  JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
  std::vector<Type> ins, outs;
  JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
  std::vector<OperandRef> refs = inputs;
  refs.insert(refs.end(), inits.begin(), inits.end());
  JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
  for (auto& t : outs) op->add_result(std::move(t));
  ir::Region& region = op->add_region();
  if (body_op) {
    if (inputs.size() != 1) return ErrorAt(body_loc, "'applies' form needs exactly one input");
    if (!ins[0].is_tensor()) return ErrorAt(body_loc, "reduce input must be a tensor");
    const Type scalar = Type::Scalar(ins[0].dtype());
    ir::Block& block = region.add_block();
    Value* a = block.add_arg(scalar);
    Value* b = block.add_arg(scalar);
    auto inner = std::make_unique<ir::Op>(*body_op, body_loc);
    inner->add_operand(a);
    inner->add_operand(b);
    Value* r = inner->add_result(scalar);
    auto ret = std::make_unique<ir::Op>(OpCode::kReturn, body_loc);
    ret->add_operand(r);
    block.add_op(std::move(inner));
    block.add_op(std::move(ret));
    return op;
  }
  // reducer(%lhs0: T, %rhs0: T) (%lhs1: T, %rhs1: T) { ... }
  JITD_RETURN_IF_ERROR(ExpectKeyword("reducer"));
  std::vector<std::pair<OperandRef, Type>> lhs_args, rhs_args;
  while (Consume(TokenKind::kLParen)) {
    for (int side = 0; side < 2; ++side) {
      if (side) JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      if (!Is(TokenKind::kPercentId)) return ErrorExpected("reducer argument");
      OperandRef ref;
      ref.name = tok_.text;
      ref.loc = tok_.loc;
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      JITD_RETURN_IF_ERROR(SkipLocation());  // jax.export writes `loc(...)` on each argument
      (side ? rhs_args : lhs_args).emplace_back(ref, std::move(t));
    }
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
  }
  std::vector<std::pair<OperandRef, Type>> args = lhs_args;
  args.insert(args.end(), rhs_args.begin(), rhs_args.end());
  JITD_RETURN_IF_ERROR(ParseRegion(region, &args));
  return op;
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseWhile(Location loc) {
  auto op = std::make_unique<ir::Op>(OpCode::kWhile, loc);
  JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
  std::vector<OperandRef> iter_names, inits;
  JITD_RETURN_IF_ERROR(ParseCommaSeparated(TokenKind::kRParen, [&]() -> Status {
    if (!Is(TokenKind::kPercentId)) return ErrorExpected("loop variable such as %iterArg");
    OperandRef name;
    name.name = tok_.text;
    name.loc = tok_.loc;
    Advance();
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after the loop variable"));
    JITD_ASSIGN_OR_RETURN(OperandRef init, ParseOperandRef());
    iter_names.push_back(name);
    inits.push_back(init);
    return Status::Ok();
  }));
  std::vector<Type> types;
  if (Consume(TokenKind::kColon)) {
    JITD_ASSIGN_OR_RETURN(types, ParseTypeList());
  }
  JITD_RETURN_IF_ERROR(ResolveAll(inits, types, *op));
  for (const Type& t : types) op->add_result(t);
  if (ConsumeKeyword("attributes")) JITD_RETURN_IF_ERROR(ParseAttrDict(op->attrs()));
  std::vector<std::pair<OperandRef, Type>> args;
  for (size_t i = 0; i < types.size(); ++i) args.emplace_back(iter_names[i], types[i]);
  JITD_RETURN_IF_ERROR(ExpectKeyword("cond"));
  JITD_RETURN_IF_ERROR(ParseRegion(op->add_region(), &args));
  JITD_RETURN_IF_ERROR(ExpectKeyword("do"));
  JITD_RETURN_IF_ERROR(ParseRegion(op->add_region(), &args));
  return op;
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParseCheckOp(OpCode code, Location loc) {
  // check.expect_eq %a, %b : T            (stablehlo's check dialect)
  // check.expect_eq(%a, %b) : T           (IREE's spelling)
  // check.expect_eq_const %a, dense<...> : T
  // check.expect_almost_eq %a, %b, tolerance = 1.0e-3 : T
  auto op = std::make_unique<ir::Op>(code, loc);
  const bool paren = Consume(TokenKind::kLParen);
  std::vector<OperandRef> refs;
  JITD_ASSIGN_OR_RETURN(OperandRef first, ParseOperandRef());
  refs.push_back(first);
  std::optional<Type> value_type;
  while (Consume(TokenKind::kComma)) {
    if (Is(TokenKind::kPercentId)) {
      JITD_ASSIGN_OR_RETURN(OperandRef r, ParseOperandRef());
      refs.push_back(r);
    } else if (IsKeyword("dense")) {
      JITD_ASSIGN_OR_RETURN(Attribute value, ParseAttribute());
      value_type = value.as<ir::DenseElementsAttr>().type;
      op->attrs().Set("value", std::move(value));
    } else if (Is(TokenKind::kBareId)) {
      std::string key(tok_.text);
      Advance();
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual, "after '" + key + "'"));
      JITD_ASSIGN_OR_RETURN(Attribute value, ParseAttribute());
      op->attrs().Set(std::move(key), std::move(value));
    } else {
      return ErrorExpected("operand, dense literal, or 'name = value'");
    }
  }
  if (paren) JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
  JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
  std::vector<Type> types;
  if (Consume(TokenKind::kColon)) {
    JITD_ASSIGN_OR_RETURN(types, ParseTypeList());
  }
  if (IsCheckConstOp(code)) {
    if (!value_type) return ErrorAt(loc, "'" + std::string(ir::OpName(code)) + "' needs a dense<...> expected value");
    if (refs.size() != 1) return ErrorAt(loc, "'" + std::string(ir::OpName(code)) + "' takes one operand");
    if (types.empty()) types.push_back(*value_type);
  } else if (types.size() == 1 && refs.size() == 2) {
    types.push_back(types[0]);
  }
  if (types.empty()) return ErrorExpected("':' and the operand type");
  JITD_RETURN_IF_ERROR(ResolveAll(refs, types, *op));
  return op;
}

StatusOr<std::unique_ptr<ir::Op>> Parser::ParsePrettyOp(OpCode code, Location loc) {
  if (ir::IsElementwiseUnary(code) || ir::IsElementwiseBinary(code) || code == OpCode::kClamp ||
      code == OpCode::kReverse || code == OpCode::kReducePrecision) {
    auto op = std::make_unique<ir::Op>(code, loc);
    JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefList());
    if (code == OpCode::kReverse) {
      std::vector<int64_t> dims;
      JITD_RETURN_IF_ERROR(ParseNamedIntList("dims", dims));
      op->attrs().Set("dimensions", I64Array(std::move(dims)));
    } else if (code == OpCode::kReducePrecision) {
      JITD_RETURN_IF_ERROR(ExpectKeyword("format"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      // eXmY: exponent and mantissa bits.
      int exp = -1, man = -1;
      if (Is(TokenKind::kBareId) && tok_.text.size() >= 4 && tok_.text[0] == 'e') {
        std::string_view t = tok_.text.substr(1);
        const size_t m = t.find('m');
        if (m != std::string_view::npos) {
          auto r1 = std::from_chars(t.data(), t.data() + m, exp);
          auto r2 = std::from_chars(t.data() + m + 1, t.data() + t.size(), man);
          if (r1.ptr != t.data() + m || r2.ptr != t.data() + t.size()) exp = -1;
        }
      }
      if (exp < 0 || man < 0) return ErrorExpected("format such as e5m10");
      Advance();
      op->attrs().Set("exponent_bits", ir::IntegerAttr{exp, DType::kS32});
      op->attrs().Set("mantissa_bits", ir::IntegerAttr{man, DType::kS32});
    }
    JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    std::vector<Type> ins;
    Type result;
    JITD_RETURN_IF_ERROR(ParseSameOperandsAndResultType(refs.size(), ins, result));
    JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
    op->add_result(std::move(result));
    return op;
  }
  if (IsChloUnary(code) || IsChloBinary(code)) {
    // chlo.lgamma %x : T -> R ;  chlo.next_after %a, %b : T, T -> R
    auto op = std::make_unique<ir::Op>(code, loc);
    JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefList());
    JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    JITD_ASSIGN_OR_RETURN(std::vector<Type> ins, ParseTypeList());
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kArrow));
    JITD_ASSIGN_OR_RETURN(Type result, ParseType());
    JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
    op->add_result(std::move(result));
    return op;
  }
  if (IsCheckOp(code)) return ParseCheckOp(code, loc);
  if (code == OpCode::kInterpreterPrint || code == OpCode::kInterpreterProbe) {
    // interpreter.print %x : T ;  interpreter.probe %x, probe_id = "id" : T
    auto op = std::make_unique<ir::Op>(code, loc);
    JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
    if (code == OpCode::kInterpreterProbe) {
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ExpectKeyword("probe_id"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_ASSIGN_OR_RETURN(Attribute id, ParseAttribute());
      op->attrs().Set("probe_id", std::move(id));
    }
    JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    JITD_ASSIGN_OR_RETURN(Type t, ParseType());
    JITD_RETURN_IF_ERROR(ResolveAll({x}, {t}, *op));
    if (code == OpCode::kInterpreterProbe) op->add_result(std::move(t));
    return op;
  }

  auto op = std::make_unique<ir::Op>(code, loc);
  // Ops whose operands are `%a, %b, ...` followed by keyword clauses, then
  // attr-dict and a function type.
  auto finish_functional = [&](const std::vector<OperandRef>& refs) -> Status {
    JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
    JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
    std::vector<Type> ins, outs;
    JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
    JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
    for (auto& t : outs) op->add_result(std::move(t));
    return Status::Ok();
  };
  switch (code) {
    case OpCode::kComplex: {
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefList());
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      std::vector<Type> ins;
      Type result;
      if (Is(TokenKind::kLParen)) {
        JITD_RETURN_IF_ERROR(ParseSameOperandsAndResultType(refs.size(), ins, result));
      } else {
        JITD_ASSIGN_OR_RETURN(result, ParseType());
        if (!result.is_tensor() || !ir::IsComplex(result.dtype())) {
          return Error("stablehlo.complex result type must be a complex tensor");
        }
        ins.assign(refs.size(), result.WithDType(ir::ComplexComponent(result.dtype())));
      }
      JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
      op->add_result(std::move(result));
      return op;
    }
    case OpCode::kSelect: {
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefList());
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      std::vector<Type> ins;
      Type result;
      if (Is(TokenKind::kLParen)) {
        JITD_RETURN_IF_ERROR(ParseSameOperandsAndResultType(refs.size(), ins, result));
      } else {
        JITD_ASSIGN_OR_RETURN(Type pred, ParseType());
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma, "between predicate and result types"));
        JITD_ASSIGN_OR_RETURN(result, ParseType());
        ins = {pred, result, result};
      }
      JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
      op->add_result(std::move(result));
      return op;
    }
    case OpCode::kCompare: {
      JITD_RETURN_IF_ERROR(ParseEnumKeyword("comparison_direction", {"EQ", "NE", "GE", "GT", "LE", "LT"},
                                            *op, "comparison_direction"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_ASSIGN_OR_RETURN(OperandRef lhs, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_ASSIGN_OR_RETURN(OperandRef rhs, ParseOperandRef());
      if (Consume(TokenKind::kComma)) {
        JITD_RETURN_IF_ERROR(ParseEnumKeyword("comparison_type",
                                              {"NOTYPE", "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"},
                                              *op, "compare_type"));
      }
      JITD_RETURN_IF_ERROR(finish_functional({lhs, rhs}));
      return op;
    }
    case OpCode::kConstant: {
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      const Location value_loc = tok_.loc;
      JITD_ASSIGN_OR_RETURN(Attribute value, ParseAttribute());
      Type type;
      if (auto* d = value.get_if<ir::DenseElementsAttr>()) {
        type = d->type;
      } else if (auto* r = value.get_if<ir::DenseResourceAttr>()) {
        type = r->type;
      } else {
        return ErrorAt(value_loc, "stablehlo.constant needs a dense<...> or dense_resource<...> value");
      }
      op->attrs().Set("value", std::move(value));
      op->add_result(std::move(type));
      return op;
    }
    case OpCode::kIota: {
      JITD_RETURN_IF_ERROR(ExpectKeyword("dim"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_ASSIGN_OR_RETURN(int64_t dim, ParseInt());
      op->attrs().Set("iota_dimension", ir::IntegerAttr{dim, DType::kS64});
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      op->add_result(std::move(t));
      return op;
    }
    case OpCode::kBroadcastInDim:
    case OpCode::kBroadcast:
    case OpCode::kTranspose: {
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      std::vector<int64_t> dims;
      const bool sizes = code == OpCode::kBroadcast;
      JITD_RETURN_IF_ERROR(ParseNamedIntList(sizes ? "sizes" : "dims", dims));
      op->attrs().Set(code == OpCode::kBroadcastInDim ? "broadcast_dimensions"
                      : sizes                         ? "broadcast_sizes"
                                                      : "permutation",
                      I64Array(std::move(dims)));
      JITD_RETURN_IF_ERROR(finish_functional({x}));
      return op;
    }
    case OpCode::kAfterAll: {
      // stablehlo-opt: `after_all %a, %b : !stablehlo.token`; also the
      // functional form.
      std::vector<OperandRef> refs;
      if (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(refs, ParseOperandRefList());
      }
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      std::vector<Type> ins, outs;
      if (Is(TokenKind::kLParen)) {
        JITD_RETURN_IF_ERROR(ParseFunctionType(ins, outs));
      } else {
        JITD_ASSIGN_OR_RETURN(Type t, ParseType());
        ins.assign(refs.size(), t);
        outs.push_back(std::move(t));
      }
      JITD_RETURN_IF_ERROR(ResolveAll(refs, ins, *op));
      for (auto& t : outs) op->add_result(std::move(t));
      return op;
    }
    case OpCode::kOptimizationBarrier: {
      // `optimization_barrier %a, %b : T1, T2` (results typed as operands), or
      // `optimization_barrier()` with none.
      if (Consume(TokenKind::kLParen)) {
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen, "closing an empty optimization_barrier"));
        JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
        return op;
      }
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefList());
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_ASSIGN_OR_RETURN(std::vector<Type> types, ParseTypeList());
      JITD_RETURN_IF_ERROR(ResolveAll(refs, types, *op));
      for (auto& t : types) op->add_result(std::move(t));
      return op;
    }
    case OpCode::kComposite: {
      // composite "name" %a, %b {decomposition = @f, ...} : (T...) -> R
      const Location name_loc = tok_.loc;
      JITD_ASSIGN_OR_RETURN(Attribute name, ParseAttribute());
      if (!name.is<ir::StringAttr>()) return ErrorAt(name_loc, "expected the composite's \"name\"");
      op->attrs().Set("name", std::move(name));
      std::vector<OperandRef> refs;
      if (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(refs, ParseOperandRefList());
      }
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      return op;
    }
    case OpCode::kChloScan: {
      // chlo.scan(%in, ...) inits(%init, ...) dimension=N {body} {attrs} : (T...) -> (R...)
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefs(TokenKind::kRParen));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
      const int32_t num_inputs = static_cast<int32_t>(refs.size());
      JITD_RETURN_IF_ERROR(ExpectKeyword("inits"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> inits, ParseOperandRefs(TokenKind::kRParen));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
      refs.insert(refs.end(), inits.begin(), inits.end());
      JITD_RETURN_IF_ERROR(ExpectKeyword("dimension"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_ASSIGN_OR_RETURN(int64_t dim, ParseInt());
      op->attrs().Set("dimension", ir::IntegerAttr{dim, DType::kS64});
      // chlo's assembly format: `dimension=N attributes {is_reverse = true} {body}`.
      if (ConsumeKeyword("attributes")) JITD_RETURN_IF_ERROR(ParseAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(ParseRegion(op->add_region(), nullptr));
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      const int32_t num_inits = static_cast<int32_t>(inits.size());
      op->attrs().Set("operandSegmentSizes",
                      ir::DenseArrayAttr{DType::kS32, {num_inputs, num_inits}, {}});
      op->attrs().Set("resultSegmentSizes",
                      ir::DenseArrayAttr{DType::kS32,
                                         {static_cast<int64_t>(op->num_results()) - num_inits, num_inits},
                                         {}});
      return op;
    }
    case OpCode::kDynamicIota: {
      // dynamic_iota %shape, dim = N : (S) -> R
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ExpectKeyword("dim"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_ASSIGN_OR_RETURN(int64_t dim, ParseInt());
      op->attrs().Set("iota_dimension", ir::IntegerAttr{dim, DType::kS64});
      JITD_RETURN_IF_ERROR(finish_functional({x}));
      return op;
    }
    case OpCode::kDynamicBroadcastInDim: {
      // dynamic_broadcast_in_dim %x, %dims, dims = [..] : (T, S) -> R
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_ASSIGN_OR_RETURN(OperandRef shape, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      std::vector<int64_t> dims;
      JITD_RETURN_IF_ERROR(ParseNamedIntList("dims", dims));
      op->attrs().Set("broadcast_dimensions", I64Array(std::move(dims)));
      JITD_RETURN_IF_ERROR(finish_functional({x, shape}));
      return op;
    }
    case OpCode::kEinsum:
    case OpCode::kUnaryEinsum: {
      // einsum %a, %b, config = "ab,bc->ac" : (A, B) -> R
      std::vector<OperandRef> refs;
      while (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(OperandRef r, ParseOperandRef());
        refs.push_back(r);
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      }
      JITD_RETURN_IF_ERROR(ExpectKeyword("config"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      const Location config_loc = tok_.loc;
      JITD_ASSIGN_OR_RETURN(Attribute config, ParseAttribute());
      if (!config.is<ir::StringAttr>()) return ErrorAt(config_loc, "expected a \"config\" string");
      op->attrs().Set("einsum_config", std::move(config));
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      return op;
    }
    case OpCode::kChloConstant: {
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      const Location value_loc = tok_.loc;
      JITD_ASSIGN_OR_RETURN(Attribute value, ParseAttribute());
      const auto* d = value.get_if<ir::DenseElementsAttr>();
      if (!d) return ErrorAt(value_loc, "chlo.constant needs a dense<...> value");
      Type type = d->type;
      op->attrs().Set("value", std::move(value));
      op->add_result(std::move(type));
      return op;
    }
    case OpCode::kReshape:
    case OpCode::kBitcastConvert:
    case OpCode::kDynamicReshape:
    case OpCode::kDynamicPad:
    case OpCode::kRealDynamicSlice:
    case OpCode::kUniformQuantize:
    case OpCode::kUniformDequantize:
    case OpCode::kChloBroadcastAdd:
    case OpCode::kChloBroadcastAnd:
    case OpCode::kChloBroadcastAtan2:
    case OpCode::kChloBroadcastCompare:
    case OpCode::kChloBroadcastComplex:
    case OpCode::kChloBroadcastDivide:
    case OpCode::kChloBroadcastMaximum:
    case OpCode::kChloBroadcastMinimum:
    case OpCode::kChloBroadcastMultiply:
    case OpCode::kChloBroadcastNextAfter:
    case OpCode::kChloBroadcastOr:
    case OpCode::kChloBroadcastPolygamma:
    case OpCode::kChloBroadcastPower:
    case OpCode::kChloBroadcastRemainder:
    case OpCode::kChloBroadcastSelect:
    case OpCode::kChloBroadcastShiftLeft:
    case OpCode::kChloBroadcastShiftRightArithmetic:
    case OpCode::kChloBroadcastShiftRightLogical:
    case OpCode::kChloBroadcastSubtract:
    case OpCode::kChloBroadcastXor:
    case OpCode::kChloBroadcastZeta:
    case OpCode::kDynamicUpdateSlice: {
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs,
                            Is(TokenKind::kPercentId) ? ParseOperandRefList()
                                                      : StatusOr<std::vector<OperandRef>>(std::vector<OperandRef>{}));
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      return op;
    }
    case OpCode::kSlice:
      return ParseSlice(loc);
    case OpCode::kDynamicSlice:
    case OpCode::kConcatenate:
    case OpCode::kGetDimensionSize: {
      // %a, %b, ..., sizes = [..] | dim = N
      std::vector<OperandRef> refs;
      while (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(OperandRef r, ParseOperandRef());
        refs.push_back(r);
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      }
      if (code == OpCode::kDynamicSlice) {
        std::vector<int64_t> sizes;
        JITD_RETURN_IF_ERROR(ParseNamedIntList("sizes", sizes));
        op->attrs().Set("slice_sizes", I64Array(std::move(sizes)));
      } else {
        JITD_RETURN_IF_ERROR(ExpectKeyword("dim"));
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
        JITD_ASSIGN_OR_RETURN(int64_t dim, ParseInt());
        op->attrs().Set("dimension", ir::IntegerAttr{dim, DType::kS64});
      }
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      return op;
    }
    case OpCode::kPad: {
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_ASSIGN_OR_RETURN(OperandRef v, ParseOperandRef());
      std::vector<int64_t> low, high, interior;
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ParseNamedIntList("low", low));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ParseNamedIntList("high", high));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ParseNamedIntList("interior", interior));
      op->attrs().Set("edge_padding_low", I64Array(std::move(low)));
      op->attrs().Set("edge_padding_high", I64Array(std::move(high)));
      op->attrs().Set("interior_padding", I64Array(std::move(interior)));
      JITD_RETURN_IF_ERROR(finish_functional({x, v}));
      return op;
    }
    case OpCode::kDotGeneral:
    case OpCode::kDot:
      return ParseDotGeneral(code, loc);
    case OpCode::kConvolution:
      return ParseConvolution(loc);
    case OpCode::kReduce:
      return ParseReduce(loc);
    case OpCode::kWhile:
      return ParseWhile(loc);
    case OpCode::kFft: {
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ExpectKeyword("type"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_RETURN_IF_ERROR(ParseEnumKeyword("fft_type", {"FFT", "IFFT", "RFFT", "IRFFT"}, *op, "fft_type"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      std::vector<int64_t> length;
      JITD_RETURN_IF_ERROR(ParseNamedIntList("length", length));
      op->attrs().Set("fft_length", I64Array(std::move(length)));
      JITD_RETURN_IF_ERROR(finish_functional({x}));
      return op;
    }
    case OpCode::kRngBitGenerator: {
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ExpectKeyword("algorithm"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_RETURN_IF_ERROR(ParseEnumKeyword("rng_algorithm", {"DEFAULT", "THREE_FRY", "PHILOX"}, *op,
                                            "rng_algorithm"));
      JITD_RETURN_IF_ERROR(finish_functional({x}));
      return op;
    }
    case OpCode::kRng: {
      std::vector<OperandRef> refs;
      while (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(OperandRef r, ParseOperandRef());
        refs.push_back(r);
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      }
      JITD_RETURN_IF_ERROR(ExpectKeyword("distribution"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_RETURN_IF_ERROR(ParseEnumKeyword("rng_distribution", {"UNIFORM", "NORMAL"}, *op,
                                            "rng_distribution"));
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      return op;
    }
    case OpCode::kReturn:
    case OpCode::kFuncReturn: {
      std::vector<OperandRef> refs;
      if (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(refs, ParseOperandRefList());
      }
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      std::vector<Type> types;
      if (!refs.empty()) {
        JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon, "before the returned types"));
        JITD_ASSIGN_OR_RETURN(types, ParseTypeList());
      }
      JITD_RETURN_IF_ERROR(ResolveAll(refs, types, *op));
      return op;
    }
    case OpCode::kFuncCall:
    case OpCode::kCustomCall: {
      if (!Is(TokenKind::kAtId)) return ErrorExpected("'@' callee name");
      JITD_ASSIGN_OR_RETURN(std::string name, SymbolName(tok_));
      Advance();
      if (code == OpCode::kFuncCall) {
        op->attrs().Set("callee", ir::SymbolRefAttr{std::move(name)});
      } else {
        op->attrs().Set("call_target_name", ir::StringAttr{std::move(name)});
      }
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
      JITD_ASSIGN_OR_RETURN(std::vector<OperandRef> refs, ParseOperandRefs(TokenKind::kRParen));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
      JITD_RETURN_IF_ERROR(finish_functional(refs));
      return op;
    }
    case OpCode::kTuple: {
      std::vector<OperandRef> refs;
      if (Is(TokenKind::kPercentId)) {
        JITD_ASSIGN_OR_RETURN(refs, ParseOperandRefList());
      }
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      if (!t.is_tuple()) return Error("stablehlo.tuple needs a tuple<...> type");
      JITD_RETURN_IF_ERROR(ResolveAll(refs, t.elements(), *op));
      op->add_result(std::move(t));
      return op;
    }
    case OpCode::kGetTupleElement: {
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLSquare));
      JITD_ASSIGN_OR_RETURN(int64_t index, ParseInt());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kRSquare));
      op->attrs().Set("index", ir::IntegerAttr{index, DType::kS32});
      JITD_RETURN_IF_ERROR(finish_functional({x}));
      return op;
    }
    case OpCode::kCreateToken:
    case OpCode::kReplicaId:
    case OpCode::kPartitionId: {
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_ASSIGN_OR_RETURN(Type t, ParseType());
      op->add_result(std::move(t));
      return op;
    }
    case OpCode::kChloTopK: {
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kLParen));
      JITD_ASSIGN_OR_RETURN(OperandRef x, ParseOperandRef());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kComma));
      JITD_RETURN_IF_ERROR(ExpectKeyword("k"));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kEqual));
      JITD_ASSIGN_OR_RETURN(int64_t k, ParseInt());
      op->attrs().Set("k", ir::IntegerAttr{k, DType::kS64});
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kRParen));
      JITD_RETURN_IF_ERROR(ParseOptionalAttrDict(op->attrs()));
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kColon));
      JITD_ASSIGN_OR_RETURN(Type in, ParseType());
      JITD_RETURN_IF_ERROR(Expect(TokenKind::kArrow));
      std::vector<Type> outs;
      JITD_RETURN_IF_ERROR(ParseResultTypes(outs));
      JITD_RETURN_IF_ERROR(ResolveAll({x}, {in}, *op));
      for (auto& t : outs) op->add_result(std::move(t));
      return op;
    }
    default:
      break;
  }
  // Everything else has only the generic form, which also starts with '('
  // when written with the op name unquoted; accept that spelling too.
  if (Is(TokenKind::kLParen)) return ParseGenericOp(code, loc);
  return Error("'" + std::string(ir::OpName(code)) +
               "' has no pretty form; write it generically as \"" +
               std::string(ir::OpName(code)) + "\"(...)");
}

}  // namespace

// ===========================================================================
// Public API

StatusOr<std::unique_ptr<ir::Module>> ParseModule(std::string_view text) {
  return ParseModule(text, 1);
}

StatusOr<std::unique_ptr<ir::Module>> ParseModule(std::string_view text, int first_line) {
  Parser parser(text, first_line);
  return parser.ParseTopLevel();
}

std::vector<ModuleText> SplitModules(std::string_view file_text) {
  std::vector<ModuleText> pieces;
  size_t piece_start = 0;
  int piece_line = 1;
  int line = 1;
  size_t pos = 0;
  while (pos <= file_text.size()) {
    size_t eol = file_text.find('\n', pos);
    if (eol == std::string_view::npos) eol = file_text.size();
    std::string_view l = file_text.substr(pos, eol - pos);
    while (!l.empty() && (l.back() == ' ' || l.back() == '\t' || l.back() == '\r')) l.remove_suffix(1);
    if (l == "// -----") {
      pieces.push_back({file_text.substr(piece_start, pos - piece_start), piece_line});
      piece_start = eol + 1 > file_text.size() ? file_text.size() : eol + 1;
      piece_line = line + 1;
    }
    if (eol == file_text.size()) break;
    pos = eol + 1;
    ++line;
  }
  pieces.push_back({file_text.substr(piece_start), piece_line});
  return pieces;
}

StatusOr<std::vector<std::unique_ptr<ir::Module>>> ParseModules(std::string_view file_text) {
  std::vector<std::unique_ptr<ir::Module>> modules;
  for (const ModuleText& piece : SplitModules(file_text)) {
    JITD_ASSIGN_OR_RETURN(auto module, ParseModule(piece.text, piece.first_line));
    modules.push_back(std::move(module));
  }
  return modules;
}

}  // namespace jitd::frontend
