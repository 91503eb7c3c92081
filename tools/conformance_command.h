// `jitd conformance`: runs self-checking StableHLO programs on a device.
#ifndef JITD_TOOLS_CONFORMANCE_COMMAND_H_
#define JITD_TOOLS_CONFORMANCE_COMMAND_H_

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace jitd::tools {

struct ConformanceArgs {
  std::string device = "interpreter";
  int jobs = 1;
  double timeout_seconds = 120;
  std::string report_path;             // --report=FILE.json
  std::string markdown_path;           // --markdown=FILE.md
  std::string expected_failures_path;  // --expected-failures=FILE
  std::string pipeline;                // --pipeline=default|PASS,...
  bool compile_only = false;           // --compile-only (--device=cuda): compile to a cubin, run nothing
  std::string cuda_arch = "sm_90";     // --cuda-arch
  std::string ptx_assembler = "auto";  // --ptx-assembler=auto|nvjitlink|ptxas
  bool cuda_no_libraries = false;      // --cuda-no-libraries: jit's own kernels only
  bool cuda_no_cudnn = false;          // --cuda-no-cudnn: convolutions as without cuDNN (im2col + cuBLASLt)
  std::vector<std::string> paths;
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddConformanceCommand(CLI::App& app, ConformanceArgs& args);
// Runs it; returns the process exit status (0: every case passed, or every
// failure is listed in --expected-failures; 1: failures; 2: usage/I/O).
int RunConformance(const ConformanceArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_CONFORMANCE_COMMAND_H_
