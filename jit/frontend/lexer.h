// The lexer for MLIR's textual syntax: turns source text into tokens that
// point into it (no copies). Tracks line and column for error messages.
// Internal to jit/frontend.
#ifndef JITD_JIT_FRONTEND_LEXER_H_
#define JITD_JIT_FRONTEND_LEXER_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "jit/ir/module.h"

namespace jitd::frontend {

enum class TokenKind : uint8_t {
  kEof,
  kError,        // text = the offending character(s)
  kBareId,       // foo, stablehlo.add, tensor, x, f32, dense
  kPercentId,    // %name  (text excludes '%')
  kAtId,         // @name or @"quoted" (text excludes '@', quotes kept)
  kHashId,       // #name  (text excludes '#')
  kCaretId,      // ^bb0   (text excludes '^')
  kBangId,       // !stablehlo.token (text excludes '!')
  kInteger,      // 42, 0x2A (no sign)
  kFloat,        // 1.5, 2.0e-3 (no sign)
  kString,       // "..." (text includes the quotes, escapes not decoded)
  kLParen, kRParen, kLSquare, kRSquare, kLBrace, kRBrace, kLess, kGreater,
  kComma, kColon, kEqual, kArrow, kMinus, kPlus, kQuestion, kStar,
  kFileMetadataBegin,  // {-#
  kFileMetadataEnd,    // #-}
};

std::string_view TokenKindName(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::kEof;
  std::string_view text;
  ir::Location loc;
  const char* begin = nullptr;  // start in the source, sigil included
};

class Lexer {
 public:
  // `first_line` numbers the first line of `text` (for split files).
  Lexer(std::string_view text, int first_line = 1);

  Token Next();

  // The raw position, for scanners that read characters directly (tensor
  // dimension lists, opaque attribute bodies). Reset moves the lexer to a
  // position within the text, keeping line/column right.
  const char* position() const { return cur_; }
  const char* end() const { return end_; }
  void ResetTo(const char* pos);
  // Saves and restores the whole position, for one-token lookahead.
  struct State {
    const char* cur;
    uint32_t line;
    const char* line_start;
  };
  State Save() const { return State{cur_, line_, line_start_}; }
  void Restore(const State& s) {
    cur_ = s.cur;
    line_ = s.line;
    line_start_ = s.line_start;
  }
  ir::Location LocationOf(const char* pos) const;

 private:
  void SkipSpaceAndComments();
  Token Make(TokenKind kind, const char* start, const char* stop, ir::Location loc);
  Token LexNumber(const char* start, ir::Location loc);
  Token LexString(const char* start, ir::Location loc);
  Token LexPrefixed(TokenKind kind, const char* start, ir::Location loc);

  const char* begin_;
  const char* cur_;
  const char* end_;
  // Line bookkeeping: the line number of cur_ and where that line starts.
  uint32_t line_;
  const char* line_start_;
};

}  // namespace jitd::frontend

#endif  // JITD_JIT_FRONTEND_LEXER_H_
