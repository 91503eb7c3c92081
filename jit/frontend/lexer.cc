#include "jit/frontend/lexer.h"

#include <cstring>

namespace jitd::frontend {

namespace {

inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsHexDigit(char c) {
  return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
inline bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool IsIdStart(char c) { return IsAlpha(c) || c == '_'; }
// Characters allowed after the first in bare identifiers.
inline bool IsIdChar(char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == '$' || c == '.'; }
// Characters allowed in %name, @name, ^name, #name suffixes.
inline bool IsSuffixChar(char c) {
  return IsAlpha(c) || IsDigit(c) || c == '_' || c == '$' || c == '.' || c == '-';
}

}  // namespace

std::string_view TokenKindName(TokenKind kind) {
  switch (kind) {
    case TokenKind::kEof: return "end of input";
    case TokenKind::kError: return "invalid character";
    case TokenKind::kBareId: return "identifier";
    case TokenKind::kPercentId: return "'%' value name";
    case TokenKind::kAtId: return "'@' symbol";
    case TokenKind::kHashId: return "'#' attribute";
    case TokenKind::kCaretId: return "'^' block name";
    case TokenKind::kBangId: return "'!' type";
    case TokenKind::kInteger: return "integer";
    case TokenKind::kFloat: return "float";
    case TokenKind::kString: return "string";
    case TokenKind::kLParen: return "'('";
    case TokenKind::kRParen: return "')'";
    case TokenKind::kLSquare: return "'['";
    case TokenKind::kRSquare: return "']'";
    case TokenKind::kLBrace: return "'{'";
    case TokenKind::kRBrace: return "'}'";
    case TokenKind::kLess: return "'<'";
    case TokenKind::kGreater: return "'>'";
    case TokenKind::kComma: return "','";
    case TokenKind::kColon: return "':'";
    case TokenKind::kEqual: return "'='";
    case TokenKind::kArrow: return "'->'";
    case TokenKind::kMinus: return "'-'";
    case TokenKind::kPlus: return "'+'";
    case TokenKind::kQuestion: return "'?'";
    case TokenKind::kStar: return "'*'";
    case TokenKind::kFileMetadataBegin: return "'{-#'";
    case TokenKind::kFileMetadataEnd: return "'#-}'";
  }
  return "token";
}

Lexer::Lexer(std::string_view text, int first_line)
    : begin_(text.data()), cur_(text.data()), end_(text.data() + text.size()),
      line_(static_cast<uint32_t>(first_line)), line_start_(text.data()) {}

ir::Location Lexer::LocationOf(const char* pos) const {
  // Positions handed out are on the current line or earlier; the parser
  // only asks about the start of the current token.
  return ir::Location{line_, static_cast<uint32_t>(pos - line_start_ + 1)};
}

void Lexer::ResetTo(const char* pos) {
  // Moving forward: count the newlines crossed.
  while (cur_ < pos) {
    const char* nl = static_cast<const char*>(std::memchr(cur_, '\n', static_cast<size_t>(pos - cur_)));
    if (!nl) {
      cur_ = pos;
      break;
    }
    ++line_;
    line_start_ = nl + 1;
    cur_ = nl + 1;
  }
  cur_ = pos;
}

void Lexer::SkipSpaceAndComments() {
  while (cur_ < end_) {
    const char c = *cur_;
    if (c == '\n') {
      ++cur_;
      ++line_;
      line_start_ = cur_;
    } else if (c == ' ' || c == '\t' || c == '\r') {
      ++cur_;
    } else if (c == '/' && cur_ + 1 < end_ && cur_[1] == '/') {
      const char* nl = static_cast<const char*>(std::memchr(cur_, '\n', static_cast<size_t>(end_ - cur_)));
      cur_ = nl ? nl : end_;
    } else {
      return;
    }
  }
}

Token Lexer::Make(TokenKind kind, const char* start, const char* stop, ir::Location loc) {
  Token t;
  t.kind = kind;
  t.text = std::string_view(start, static_cast<size_t>(stop - start));
  t.loc = loc;
  t.begin = start;
  return t;
}

Token Lexer::Next() {
  SkipSpaceAndComments();
  const char* start = cur_;
  const ir::Location loc{line_, static_cast<uint32_t>(cur_ - line_start_ + 1)};
  if (cur_ >= end_) return Make(TokenKind::kEof, cur_, cur_, loc);
  const char c = *cur_;
  auto single = [&](TokenKind kind) {
    ++cur_;
    return Make(kind, start, cur_, loc);
  };
  switch (c) {
    case '(': return single(TokenKind::kLParen);
    case ')': return single(TokenKind::kRParen);
    case '[': return single(TokenKind::kLSquare);
    case ']': return single(TokenKind::kRSquare);
    case '{':
      if (end_ - cur_ >= 3 && cur_[1] == '-' && cur_[2] == '#') {
        cur_ += 3;
        return Make(TokenKind::kFileMetadataBegin, start, cur_, loc);
      }
      return single(TokenKind::kLBrace);
    case '}': return single(TokenKind::kRBrace);
    case '<': return single(TokenKind::kLess);
    case '>': return single(TokenKind::kGreater);
    case ',': return single(TokenKind::kComma);
    case ':': return single(TokenKind::kColon);
    case '=': return single(TokenKind::kEqual);
    case '+': return single(TokenKind::kPlus);
    case '?': return single(TokenKind::kQuestion);
    case '*': return single(TokenKind::kStar);
    case '-':
      if (cur_ + 1 < end_ && cur_[1] == '>') {
        cur_ += 2;
        return Make(TokenKind::kArrow, start, cur_, loc);
      }
      return single(TokenKind::kMinus);
    case '"': return LexString(start, loc);
    case '%': return LexPrefixed(TokenKind::kPercentId, start, loc);
    case '^': return LexPrefixed(TokenKind::kCaretId, start, loc);
    case '!': return LexPrefixed(TokenKind::kBangId, start, loc);
    case '#':
      if (end_ - cur_ >= 3 && cur_[1] == '-' && cur_[2] == '}') {
        cur_ += 3;
        return Make(TokenKind::kFileMetadataEnd, start, cur_, loc);
      }
      return LexPrefixed(TokenKind::kHashId, start, loc);
    case '@': {
      if (cur_ + 1 < end_ && cur_[1] == '"') {
        ++cur_;
        Token s = LexString(cur_, loc);
        if (s.kind == TokenKind::kError) return s;
        Token t = Make(TokenKind::kAtId, start + 1, cur_, loc);
        t.begin = start;
        return t;
      }
      return LexPrefixed(TokenKind::kAtId, start, loc);
    }
    default:
      break;
  }
  if (IsDigit(c)) return LexNumber(start, loc);
  if (IsIdStart(c)) {
    ++cur_;
    while (cur_ < end_ && IsIdChar(*cur_)) ++cur_;
    return Make(TokenKind::kBareId, start, cur_, loc);
  }
  ++cur_;
  return Make(TokenKind::kError, start, cur_, loc);
}

Token Lexer::LexPrefixed(TokenKind kind, const char* start, ir::Location loc) {
  ++cur_;  // the sigil
  const char* name = cur_;
  while (cur_ < end_ && IsSuffixChar(*cur_)) ++cur_;
  if (cur_ == name) return Make(TokenKind::kError, start, cur_, loc);
  Token t = Make(kind, name, cur_, loc);
  t.begin = start;  // the sigil
  return t;
}

Token Lexer::LexNumber(const char* start, ir::Location loc) {
  if (*cur_ == '0' && cur_ + 2 <= end_ && cur_ + 1 < end_ && cur_[1] == 'x' &&
      cur_ + 2 < end_ && IsHexDigit(cur_[2])) {
    cur_ += 2;
    while (cur_ < end_ && IsHexDigit(*cur_)) ++cur_;
    return Make(TokenKind::kInteger, start, cur_, loc);
  }
  while (cur_ < end_ && IsDigit(*cur_)) ++cur_;
  if (cur_ < end_ && *cur_ == '.') {
    ++cur_;
    while (cur_ < end_ && IsDigit(*cur_)) ++cur_;
    if (cur_ < end_ && (*cur_ == 'e' || *cur_ == 'E')) {
      const char* save = cur_;
      ++cur_;
      if (cur_ < end_ && (*cur_ == '+' || *cur_ == '-')) ++cur_;
      if (cur_ < end_ && IsDigit(*cur_)) {
        while (cur_ < end_ && IsDigit(*cur_)) ++cur_;
      } else {
        cur_ = save;  // not an exponent after all
      }
    }
    return Make(TokenKind::kFloat, start, cur_, loc);
  }
  return Make(TokenKind::kInteger, start, cur_, loc);
}

Token Lexer::LexString(const char* start, ir::Location loc) {
  ++cur_;  // opening quote
  while (cur_ < end_) {
    const char* stop = cur_;
    // Fast scan to the next quote, backslash or newline.
    while (stop < end_ && *stop != '"' && *stop != '\\' && *stop != '\n') ++stop;
    cur_ = stop;
    if (cur_ >= end_) break;
    if (*cur_ == '"') {
      ++cur_;
      return Make(TokenKind::kString, start, cur_, loc);
    }
    if (*cur_ == '\n') break;  // strings do not span lines
    // Backslash: skip it and the escaped character.
    cur_ += 2;
  }
  if (cur_ > end_) cur_ = end_;
  return Make(TokenKind::kError, start, cur_, loc);
}

}  // namespace jitd::frontend
