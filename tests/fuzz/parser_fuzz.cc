// libFuzzer target for the StableHLO text parser (and, behind it, the
// verifier and the printer).
//
// Contract checked on every input:
//   - ParseModules never crashes, hangs or allocates without bound (the
//     sanitizers and libFuzzer's -timeout / -rss_limit_mb enforce this);
//   - a parse error is a message that starts with "line:col: ";
//   - a module that parses can be verified and printed without crashing;
//   - the printed text of a module that verifies parses again, verifies,
//     and prints identically (the round-trip fixpoint), and so does its
//     generic form.
// A broken contract ends in __builtin_trap(), which libFuzzer reports with
// the input saved as a crash artifact.
//
// Built and run by tests/CMakeLists.txt (ctest: jitd_parser_fuzz) and
// scripts/fuzz.sh (long runs by hand).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "parser_fuzz: %s\n%.*s\n", what,
               static_cast<int>(std::min<size_t>(detail.size(), 4000)), detail.data());
  __builtin_trap();
}

// "12:5: ..." — the location prefix every parser error must carry.
bool StartsWithLineCol(std::string_view message) {
  size_t i = 0;
  auto digits = [&] {
    size_t start = i;
    while (i < message.size() && message[i] >= '0' && message[i] <= '9') ++i;
    return i > start;
  };
  if (!digits() || i >= message.size() || message[i++] != ':') return false;
  if (!digits() || i >= message.size() || message[i] != ':') return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto modules = jitd::frontend::ParseModules(text);
  if (!modules.ok()) {
    if (!StartsWithLineCol(modules.status().message())) {
      Fail("parse error without a line:col prefix", modules.status().message());
    }
    return 0;
  }
  for (const auto& module : *modules) {
    jitd::Status verified = jitd::ir::VerifyModule(*module);
    // Printing must not crash even for a module that does not verify (dumps
    // and error messages print such modules).
    std::string printed = jitd::ir::PrintModule(*module);
    if (!verified.ok()) continue;

    auto reparsed = jitd::frontend::ParseModule(printed);
    if (!reparsed.ok()) {
      Fail("printed text does not parse", reparsed.status().message() + "\n" + printed);
    }
    jitd::Status reverified = jitd::ir::VerifyModule(**reparsed);
    if (!reverified.ok()) {
      Fail("printed text does not verify", reverified.message() + "\n" + printed);
    }
    std::string printed_again = jitd::ir::PrintModule(**reparsed);
    if (printed_again != printed) {
      Fail("printing is not a fixpoint", printed + "\n--- printed again ---\n" + printed_again);
    }
    // The generic form must describe the same module.
    std::string generic = jitd::ir::PrintModule(**reparsed, {.generic = true});
    auto from_generic = jitd::frontend::ParseModule(generic);
    if (!from_generic.ok()) {
      Fail("generic form does not parse", from_generic.status().message() + "\n" + generic);
    }
    if (jitd::ir::PrintModule(**from_generic) != printed) {
      Fail("generic form prints back differently", generic);
    }
  }
  return 0;
}
