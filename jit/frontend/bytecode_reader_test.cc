// Tests of the VHLO bytecode reader: the two portable artifacts of
// ../shared/models decode to the same program as their text twins, and bad
// bytes give errors that name the byte offset.
#include "jit/frontend/bytecode_reader.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"

namespace jitd::frontend {
namespace {

std::string ModelPath(const std::string& name) {
  return std::string(JITD_SHARED_DIR) + "/models/" + name;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ExpectSameProgram(const std::string& model) {
  std::string bc = ReadFile(ModelPath(model + ".mlir.bc"));
  std::string text = ReadFile(ModelPath(model + ".mlir"));
  ASSERT_FALSE(bc.empty()) << model;
  ASSERT_TRUE(IsMlirBytecode(bc));
  ASSERT_FALSE(IsMlirBytecode(text));
  auto from_bc = ParseProgram(bc);
  ASSERT_TRUE(from_bc.ok()) << from_bc.status().message();
  auto from_text = ParseProgram(text);
  ASSERT_TRUE(from_text.ok()) << from_text.status().message();
  ir::PrintOptions canon;
  canon.canonical = true;
  std::string a = ir::PrintModule(**from_bc, canon);
  std::string b = ir::PrintModule(**from_text, canon);
  if (a != b) {
    size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    size_t from = i > 200 ? i - 200 : 0;
    FAIL() << model << " differs at " << i << "\nbytecode: " << a.substr(from, 400) << "\ntext:     "
           << b.substr(from, 400);
  }
  EXPECT_EQ((*from_bc)->name(), (*from_text)->name());
}

TEST(BytecodeReaderTest, BertMatchesItsTextTwin) { ExpectSameProgram("pt_bert"); }
TEST(BytecodeReaderTest, ChessMatchesItsTextTwin) { ExpectSameProgram("searchless_chess_9m"); }

TEST(BytecodeReaderTest, RefusesWrongMagicAndVersions) {
  auto r = ReadBytecode("MLIR");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bytecode offset 0"), std::string::npos) << r.status().message();
  std::string bc = ReadFile(ModelPath("pt_bert.mlir.bc"));
  std::string v7 = bc;
  v7[4] = static_cast<char>((7 << 1) | 1);
  r = ReadBytecode(v7);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bytecode version 7 is not supported"), std::string::npos)
      << r.status().message();
  std::string newer = bc;
  size_t p = newer.find("StableHLO_v1.0.0");
  ASSERT_NE(p, std::string::npos);
  newer[p + 11] = '9';
  r = ReadBytecode(newer);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("version 9.0.0"), std::string::npos) << r.status().message();
}

TEST(BytecodeReaderTest, TruncationsAreErrorsWithOffsets) {
  std::string bc = ReadFile(ModelPath("searchless_chess_9m.mlir.bc"));
  for (size_t n : {size_t{4}, size_t{5}, size_t{20}, size_t{100}, bc.size() / 2, bc.size() - 1}) {
    auto r = ReadBytecode(std::string_view(bc).substr(0, n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.status().message().rfind("bytecode offset ", 0), 0u) << r.status().message();
  }
}

TEST(BytecodeReaderTest, MutatedBytesNeverCrash) {
  std::string bc = ReadFile(ModelPath("searchless_chess_9m.mlir.bc"));
  std::mt19937 rng(16);
  for (int i = 0; i < 300; ++i) {
    std::string m = bc;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) m[rng() % m.size()] = static_cast<char>(rng());
    (void)ReadBytecode(m);  // ok or an error; must not crash or hang
  }
}

}  // namespace
}  // namespace jitd::frontend
