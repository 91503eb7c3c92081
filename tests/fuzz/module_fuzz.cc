// libFuzzer target for the FlatBuffers module reader
// (jit/frontend/flatbuffer_module.h), the daemon's entry for
// ProgramFormat.FLATBUFFER_MODULE programs.
//
// Contract checked on every input:
//   - ModuleFromFlatBuffer never crashes, hangs or allocates without bound;
//   - an error is INVALID_ARGUMENT with a message starting "flatbuffer module: ";
//   - a module it accepts verifies, prints, and writes back to bytes that
//     read again and print identically (the FlatBuffers round trip is a
//     fixpoint).
// A broken contract ends in __builtin_trap().
//
// Seeds: `jitd_module_fuzz --write-seeds=DIR` parses the parser fuzzer's
// seed programs (tests/fuzz/seeds/*.mlir) and writes each module's
// FlatBuffers form to DIR, then exits; ctest does that before its short run.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

#ifndef JITD_FUZZ_SEEDS_DIR
#error "JITD_FUZZ_SEEDS_DIR must name tests/fuzz/seeds"
#endif

namespace {

[[noreturn]] void Fail(const char* what, std::string_view detail) {
  std::fprintf(stderr, "module_fuzz: %s\n%.*s\n", what,
               static_cast<int>(std::min<size_t>(detail.size(), 4000)), detail.data());
  __builtin_trap();
}

void WriteSeeds(const std::string& dir) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  int written = 0;
  for (const auto& entry : fs::directory_iterator(JITD_FUZZ_SEEDS_DIR)) {
    if (entry.path().extension() != ".mlir") continue;
    std::ifstream in(entry.path(), std::ios::binary);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto modules = jitd::frontend::ParseModules(text);
    if (!modules.ok()) continue;
    for (size_t i = 0; i < modules->size(); ++i) {
      auto bytes = jitd::frontend::ModuleToFlatBuffer(*(*modules)[i]);
      if (!bytes.ok()) continue;
      std::ofstream out(fs::path(dir) / (entry.path().stem().string() + "_" +
                                         std::to_string(i) + ".fb"),
                        std::ios::binary);
      out.write(reinterpret_cast<const char*>(bytes->data()),
                static_cast<std::streamsize>(bytes->size()));
      ++written;
    }
  }
  std::fprintf(stderr, "module_fuzz: wrote %d seeds to %s\n", written, dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  for (int i = 1; i < *argc; ++i) {
    std::string_view arg = (*argv)[i];
    constexpr std::string_view kFlag = "--write-seeds=";
    if (arg.substr(0, kFlag.size()) == kFlag) {
      WriteSeeds(std::string(arg.substr(kFlag.size())));
      std::exit(0);
    }
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto module = jitd::frontend::ModuleFromFlatBuffer({data, size});
  if (!module.ok()) {
    if (module.status().code() != jitd::StatusCode::kInvalidArgument ||
        module.status().message().rfind("flatbuffer module: ", 0) != 0) {
      Fail("error without the 'flatbuffer module: ' prefix", module.status().message());
    }
    return 0;
  }
  jitd::Status verified = jitd::ir::VerifyModule(**module);
  if (!verified.ok()) Fail("accepted module does not verify", verified.message());
  const std::string printed = jitd::ir::PrintModule(**module);
  auto bytes = jitd::frontend::ModuleToFlatBuffer(**module);
  if (!bytes.ok()) Fail("accepted module does not write", bytes.status().message());
  auto again = jitd::frontend::ModuleFromFlatBuffer(*bytes);
  if (!again.ok()) Fail("written module does not read", again.status().message());
  if (jitd::ir::PrintModule(**again) != printed) {
    Fail("round trip prints differently", printed);
  }
  return 0;
}
