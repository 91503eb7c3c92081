#include "tools/progress_line.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

namespace jitd::tools {
namespace {

// What was written to `file` so far.
std::string Contents(std::FILE* file) {
  std::fflush(file);
  std::rewind(file);
  std::string text;
  char buffer[256];
  for (size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) text.append(buffer, n);
  return text;
}

ProgressOptions Fast(std::FILE* file, bool enabled) {
  ProgressOptions options;
  options.out = file;
  options.enabled = enabled;
  options.show_after = std::chrono::milliseconds(20);
  options.redraw_every = std::chrono::milliseconds(5);
  return options;
}

TEST(ProgressLine, ASlowStepIsDrawnInPlaceAndCleared) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressLine line(Fast(file, true));
    line.Start("compiling model.mlir on cpu");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    line.Stop();
  }
  const std::string text = Contents(file);
  EXPECT_EQ(text.rfind("\r\033[Kjitd run: compiling model.mlir on cpu ... ", 0), 0u) << text;
  EXPECT_NE(text.find(" s\r\033[Kjitd run: compiling"), std::string::npos) << "redrawn: " << text;
  EXPECT_EQ(text.find('\n'), std::string::npos) << "one line only";
  const std::string clear = "\r\033[K";
  EXPECT_EQ(text.substr(text.size() - clear.size()), clear) << "cleared at the end";
  std::fclose(file);
}

TEST(ProgressLine, AQuickStepDrawsNothing) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ProgressOptions options = Fast(file, true);
  options.show_after = std::chrono::milliseconds(10'000);
  {
    ProgressLine line(options);
    line.Start("executing");
    line.Start("executing again");  // ends the first
    line.Stop();
  }
  EXPECT_EQ(Contents(file), "");
  std::fclose(file);
}

TEST(ProgressLine, DisabledDrawsNothingHoweverSlow) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressLine line(Fast(file, false));
    line.Start("uploading arguments");
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
  }  // the destructor stops it
  EXPECT_EQ(Contents(file), "");
  std::fclose(file);
}

}  // namespace
}  // namespace jitd::tools
