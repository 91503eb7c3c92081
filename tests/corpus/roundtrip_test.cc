// Round trip over the whole StableHLO corpus and the real models.
//
// For every file of ${JITD_SHARED_DIR}/conformance/stablehlo/*.mlir and
// ${JITD_SHARED_DIR}/models/*.mlir (listed when the test starts), each module
// must: parse, verify, print (P1); P1 must parse, verify and print to P1
// again (a fixpoint); and the generic form of P1's module must parse, verify
// and print back to P1. One test case per file, named after the file.

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <ostream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

#ifndef JITD_SHARED_DIR
#error "JITD_SHARED_DIR must name the shared/ folder"
#endif

namespace jitd {
namespace {

namespace fs = std::filesystem;

struct CorpusDir {
  const char* subdir;   // under JITD_SHARED_DIR
  const char* prefix;   // test-name prefix
  size_t min_files;     // the corpus as shipped
};
constexpr CorpusDir kCorpusDirs[] = {
    {"conformance/stablehlo", "", 2325},
    {"models", "model_", 3},
};

struct CorpusFile {
  std::string path;
  std::string test_name;  // [A-Za-z0-9_]+, unique
};
// gtest prints the parameter of a failing case with this.
void PrintTo(const CorpusFile& file, std::ostream* os) { *os << file.path; }

// The *.mlir files of `dir`, sorted; empty when the folder is missing.
std::vector<std::string> ListMlirFiles(const fs::path& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".mlir") files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<CorpusFile> ListCorpus() {
  std::vector<CorpusFile> files;
  std::set<std::string> names;
  for (const CorpusDir& dir : kCorpusDirs) {
    for (const std::string& path : ListMlirFiles(fs::path(JITD_SHARED_DIR) / dir.subdir)) {
      std::string name = dir.prefix + fs::path(path).stem().string();
      for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      std::string unique = name;
      for (int i = 2; !names.insert(unique).second; ++i) unique = name + "_" + std::to_string(i);
      files.push_back({path, unique});
    }
  }
  return files;
}

bool ReadFile(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  text->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return !in.bad();
}

// Shortens a long line (hex constants run to megabytes) to a window around
// column `col`.
std::string Window(std::string_view line, size_t col) {
  constexpr size_t kSpan = 80;
  size_t begin = col > kSpan ? col - kSpan : 0;
  size_t end = std::min(line.size(), col + kSpan);
  std::string out;
  if (begin > 0) out += "...";
  out += line.substr(begin, end - begin);
  if (end < line.size()) out += "...";
  return out;
}

// "" when equal; otherwise where `a` and `b` first differ, for a message.
std::string FirstDifference(std::string_view a, std::string_view b,
                            std::string_view a_name, std::string_view b_name) {
  if (a == b) return "";
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  size_t line_start = a.rfind('\n', i == 0 ? 0 : i - 1);
  line_start = (line_start == std::string_view::npos || i == 0) ? 0 : line_start + 1;
  size_t line_no = 1 + static_cast<size_t>(std::count(a.begin(), a.begin() + line_start, '\n'));
  auto line_at = [line_start](std::string_view s) {
    if (line_start >= s.size()) return std::string_view("<end of text>");
    size_t end = s.find('\n', line_start);
    return s.substr(line_start, end == std::string_view::npos ? end : end - line_start);
  };
  size_t col = i - line_start;
  std::ostringstream msg;
  msg << "first difference at line " << line_no << ", column " << col + 1 << ":\n"
      << "  " << a_name << ": " << Window(line_at(a), col) << "\n"
      << "  " << b_name << ": " << Window(line_at(b), col);
  return msg.str();
}

class CorpusRoundTrip : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(CorpusRoundTrip, ParsesVerifiesAndRoundTrips) {
  const std::string& path = GetParam().path;
  std::string text;
  ASSERT_TRUE(ReadFile(path, &text)) << "cannot read " << path;

  auto modules = frontend::ParseModules(text);
  ASSERT_TRUE(modules.ok()) << path << ":" << modules.status().message();
  ASSERT_FALSE(modules->empty()) << path << ": no module";

  for (size_t m = 0; m < modules->size(); ++m) {
    SCOPED_TRACE(path + " module #" + std::to_string(m));
    const ir::Module& module = *(*modules)[m];
    Status verified = ir::VerifyModule(module);
    ASSERT_TRUE(verified.ok()) << path << ":" << verified.message();

    const std::string p1 = ir::PrintModule(module);
    auto reparsed = frontend::ParseModule(p1);
    ASSERT_TRUE(reparsed.ok()) << "printed text (P1) does not parse: "
                               << reparsed.status().message();
    Status reverified = ir::VerifyModule(**reparsed);
    ASSERT_TRUE(reverified.ok()) << "printed text (P1) does not verify: "
                                 << reverified.message();
    const std::string p2 = ir::PrintModule(**reparsed);
    EXPECT_EQ(p1, p2) << "printing is not a fixpoint, "
                      << FirstDifference(p1, p2, "P1", "P2");

    ir::PrintOptions generic_options;
    generic_options.generic = true;
    const std::string generic = ir::PrintModule(**reparsed, generic_options);
    auto from_generic = frontend::ParseModule(generic);
    ASSERT_TRUE(from_generic.ok()) << "generic form does not parse: "
                                   << from_generic.status().message();
    Status generic_verified = ir::VerifyModule(**from_generic);
    ASSERT_TRUE(generic_verified.ok()) << "generic form does not verify: "
                                       << generic_verified.message();
    const std::string p3 = ir::PrintModule(**from_generic);
    EXPECT_EQ(p1, p3) << "generic form does not print back to P1, "
                      << FirstDifference(p1, p3, "P1", "from generic");
  }
}

// An empty corpus is reported by CorpusPresence below, not as an uninstantiated suite.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CorpusRoundTrip);

INSTANTIATE_TEST_SUITE_P(
    Corpus, CorpusRoundTrip, ::testing::ValuesIn(ListCorpus()),
    [](const ::testing::TestParamInfo<CorpusFile>& info) { return info.param.test_name; });

// Guards against an empty or partial corpus making the suite pass vacuously.
TEST(CorpusPresence, EveryFolderHasItsFiles) {
  for (const CorpusDir& dir : kCorpusDirs) {
    fs::path path = fs::path(JITD_SHARED_DIR) / dir.subdir;
    ASSERT_TRUE(fs::is_directory(path)) << path << " is missing (JITD_SHARED_DIR="
                                        << JITD_SHARED_DIR << ")";
    EXPECT_GE(ListMlirFiles(path).size(), dir.min_files) << "in " << path;
  }
}

// The diff helper itself: the message must point at the right place.
TEST(CorpusRoundTripHelpers, FirstDifferenceNamesLineAndColumn) {
  EXPECT_EQ(FirstDifference("a\nb\n", "a\nb\n", "x", "y"), "");
  std::string diff = FirstDifference("ab\ncd\nef\n", "ab\ncX\nef\n", "P1", "P2");
  EXPECT_NE(diff.find("line 2, column 2"), std::string::npos) << diff;
  EXPECT_NE(diff.find("P1: cd"), std::string::npos) << diff;
  EXPECT_NE(diff.find("P2: cX"), std::string::npos) << diff;
  diff = FirstDifference("ab\n", "ab\ncd\n", "P1", "P2");
  EXPECT_NE(diff.find("line 2"), std::string::npos) << diff;
  EXPECT_NE(diff.find("P1: <end of text>"), std::string::npos) << diff;
  std::string long_line(10000, '0');
  std::string other = long_line;
  other[5000] = '1';
  diff = FirstDifference(long_line, other, "P1", "P2");
  EXPECT_LT(diff.size(), 600u) << "long lines must be shortened";
}

}  // namespace
}  // namespace jitd
