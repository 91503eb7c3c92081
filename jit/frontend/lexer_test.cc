#include "jit/frontend/lexer.h"

#include <vector>

#include <gtest/gtest.h>

namespace jitd::frontend {
namespace {

std::vector<Token> LexAll(std::string_view text) {
  Lexer lexer(text);
  std::vector<Token> tokens;
  while (true) {
    Token t = lexer.Next();
    tokens.push_back(t);
    if (t.kind == TokenKind::kEof || t.kind == TokenKind::kError) break;
  }
  return tokens;
}

TEST(LexerTest, SigilsNumbersAndPunctuation) {
  auto t = LexAll("%0:2 = \"stablehlo.add\"(%a#1) -> @f ^bb0 #stablehlo !tok 1.5e-3 0x7FC0 -3");
  ASSERT_EQ(t.size(), 19u);
  EXPECT_EQ(t[0].kind, TokenKind::kPercentId);
  EXPECT_EQ(t[0].text, "0");
  EXPECT_EQ(t[1].kind, TokenKind::kColon);
  EXPECT_EQ(t[2].kind, TokenKind::kInteger);
  EXPECT_EQ(t[4].kind, TokenKind::kString);
  EXPECT_EQ(t[4].text, "\"stablehlo.add\"");
  EXPECT_EQ(t[6].text, "a");
  EXPECT_EQ(t[7].kind, TokenKind::kHashId);  // #1 right after %a
  EXPECT_EQ(t[7].text, "1");
  EXPECT_EQ(t[9].kind, TokenKind::kArrow);
  EXPECT_EQ(t[10].kind, TokenKind::kAtId);
  EXPECT_EQ(t[11].kind, TokenKind::kCaretId);
  EXPECT_EQ(t[12].kind, TokenKind::kHashId);
  EXPECT_EQ(t[13].kind, TokenKind::kBangId);
  EXPECT_EQ(t[14].kind, TokenKind::kFloat);
  EXPECT_EQ(t[15].kind, TokenKind::kInteger);
  EXPECT_EQ(t[15].text, "0x7FC0");
  EXPECT_EQ(t[16].kind, TokenKind::kMinus);
  EXPECT_EQ(t[18].kind, TokenKind::kEof);
}

TEST(LexerTest, LocationsAndComments) {
  auto t = LexAll("// comment\n  foo // trailing\n\tbar");
  ASSERT_GE(t.size(), 3u);
  EXPECT_EQ(t[0].text, "foo");
  EXPECT_EQ(t[0].loc.line, 2u);
  EXPECT_EQ(t[0].loc.column, 3u);
  EXPECT_EQ(t[1].text, "bar");
  EXPECT_EQ(t[1].loc.line, 3u);
  EXPECT_EQ(t[1].loc.column, 2u);
}

TEST(LexerTest, ErrorsAreTokensNotCrashes) {
  EXPECT_EQ(LexAll("\"unterminated").back().kind, TokenKind::kError);
  EXPECT_EQ(LexAll("\"a\\").back().kind, TokenKind::kError);
  EXPECT_EQ(LexAll("%").back().kind, TokenKind::kError);
  EXPECT_EQ(LexAll("`").back().kind, TokenKind::kError);
  EXPECT_EQ(LexAll(std::string_view("a\0b", 3))[1].kind, TokenKind::kError);
  // A string may not span lines.
  EXPECT_EQ(LexAll("\"a\nb\"")[0].kind, TokenKind::kError);
}

TEST(LexerTest, FloatNeedsDigitsAfterExponent) {
  auto t = LexAll("1.0e");
  EXPECT_EQ(t[0].kind, TokenKind::kFloat);
  EXPECT_EQ(t[0].text, "1.0");
  EXPECT_EQ(t[1].kind, TokenKind::kBareId);
}

}  // namespace
}  // namespace jitd::frontend
