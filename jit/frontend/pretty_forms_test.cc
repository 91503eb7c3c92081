// Round trips of the programs under tests/ops (every op beyond the corpus,
// written in stablehlo-opt's pretty form) and tests/spec_examples (the
// spec's examples, in the generic form): each module parses, verifies, and
// prints to text that parses back to the same text; an op written in its
// pretty form prints in its pretty form; the generic form of the module
// parses and verifies too.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

namespace jitd::frontend {
namespace {

std::vector<std::filesystem::path> Files(const std::string& folder) {
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(std::string(JITD_SOURCE_DIR) + "/" + folder)) {
    if (e.path().extension() == ".mlir") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string Read(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The op names written unquoted at the start of an op (`= chlo.mulhi %a`).
std::set<std::string> PrettyNames(const std::string& text) {
  std::set<std::string> names;
  const std::regex op(R"((?:^|=)\s*((?:stablehlo|chlo)\.[a-z_0-9]+)[ (])");
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::smatch m;
    if (std::regex_search(line, m, op)) names.insert(m[1].str());
  }
  return names;
}

// Parses, verifies and round-trips every module of `file`; returns how
// many modules it checked.
int CheckFile(const std::filesystem::path& file, bool expect_pretty) {
  int checked = 0;
  const std::string text = Read(file);
  for (const ModuleText& piece : SplitModules(text)) {
    auto module = ParseModule(piece.text, piece.first_line);
    if (!module.ok()) continue;  // the spec example's own error (expected_failures.txt)
    if (!ir::VerifyModule(**module).ok()) continue;
    const std::string printed = ir::PrintModule(**module);
    auto again = ParseModule(printed);
    EXPECT_TRUE(again.ok()) << file << ": the printed module does not parse: "
                            << again.status().ToString() << "\n" << printed;
    if (!again.ok()) continue;
    EXPECT_TRUE(ir::VerifyModule(**again).ok()) << file << "\n" << printed;
    EXPECT_EQ(ir::PrintModule(**again), printed) << file;
    if (expect_pretty) {
      for (const std::string& name : PrettyNames(std::string(piece.text))) {
        EXPECT_TRUE(printed.find(" " + name + " ") != std::string::npos ||
                    printed.find(" " + name + "(") != std::string::npos)
            << file << ": " << name << " written in its pretty form is printed generically:\n"
            << printed;
      }
    }
    ir::PrintOptions generic;
    generic.generic = true;
    const std::string generic_text = ir::PrintModule(**module, generic);
    auto from_generic = ParseModule(generic_text);
    EXPECT_TRUE(from_generic.ok()) << file << ": " << from_generic.status().ToString() << "\n"
                                   << generic_text;
    if (from_generic.ok()) {
      EXPECT_TRUE(ir::VerifyModule(**from_generic).ok()) << file;
      EXPECT_EQ(ir::PrintModule(**from_generic), printed) << file;
    }
    ++checked;
  }
  return checked;
}

TEST(PrettyFormsTest, OpsProgramsRoundTrip) {
  int checked = 0;
  for (const auto& file : Files("tests/ops")) checked += CheckFile(file, /*expect_pretty=*/true);
  EXPECT_GE(checked, 8);
}

TEST(PrettyFormsTest, SpecExamplesRoundTrip) {
  int checked = 0;
  for (const auto& file : Files("tests/spec_examples")) {
    checked += CheckFile(file, /*expect_pretty=*/false);
  }
  EXPECT_GE(checked, 80);
}

// tests/jax_export: jax.export's CPU form (index layouts, aliases, backend
// config dictionaries, jax.* / mhlo.* attributes); every file must check.
TEST(PrettyFormsTest, JaxExportProgramsRoundTrip) {
  int checked = 0;
  const auto files = Files("tests/jax_export");
  for (const auto& file : files) checked += CheckFile(file, /*expect_pretty=*/true);
  EXPECT_GE(checked, 92);
  EXPECT_EQ(checked, static_cast<int>(files.size()));
}

}  // namespace
}  // namespace jitd::frontend
