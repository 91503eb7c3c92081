// libFuzzer target for the VHLO bytecode reader (jit/frontend/
// bytecode_reader), and behind it the parser, verifier and printer that the
// decoded program goes through.
//
// Contract checked on every input:
//   - ReadBytecode never crashes, hangs or allocates without bound (the
//     sanitizers and libFuzzer's -timeout / -rss_limit_mb enforce this);
//   - every error message names the byte offset ("bytecode offset N: ") or,
//     for a decoded program the parser refuses, says so ("bytecode: ");
//   - a module that decodes can be verified and printed without crashing.
// A broken contract ends in __builtin_trap(), which libFuzzer reports with
// the input saved as a crash artifact.
//
// Built and run by tests/CMakeLists.txt (ctest: jitd_bytecode_fuzz), seeded
// with the portable artifacts of ../shared/models.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "jit/frontend/bytecode_reader.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "bytecode_fuzz: %s\n%.*s\n", what,
               static_cast<int>(std::min<size_t>(detail.size(), 4000)), detail.data());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto module = jitd::frontend::ReadBytecode(bytes);
  if (!module.ok()) {
    const std::string& m = module.status().message();
    if (m.rfind("bytecode offset ", 0) != 0 && m.rfind("bytecode: ", 0) != 0) {
      Fail("error without a byte offset", m);
    }
    return 0;
  }
  if (jitd::ir::VerifyModule(**module).ok()) {
    std::string printed = jitd::ir::PrintModule(**module);
    if (printed.empty()) Fail("a verified module printed as nothing", "");
  }
  return 0;
}
