// `jitd opt`: runs jit/passes on a StableHLO file and prints the result.
//
//   jitd opt FILE [--passes=default|NAME,NAME,...] [--dump-dir=DIR]
//                 [--verify-each] [--no-decompose-chlo] [--max-folded-bytes=N]
//                 [--stats]
//
// Every module of FILE (`// -----` separated) is parsed, verified, run
// through the pipeline and printed to standard output. --dump-dir writes the
// module before the first pass and after each pass as DIR/000-input.mlir,
// DIR/001-inline.mlir, ... (a file of several modules gets DIR/module<i>/).
// --stats prints, per module, the op count before and after and the time the
// pipeline took to standard error.
//
// Exit status: 0 ok; 1 the program is invalid or a pass failed (including
// --verify-each finding an invalid module); 2 usage or I/O error.
#ifndef JITD_TOOLS_OPT_COMMAND_H_
#define JITD_TOOLS_OPT_COMMAND_H_

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The options of `jitd opt`, bound by AddOptCommand. Plain data.
struct OptArgs {
  std::string path;                  // FILE.mlir, or - for standard input
  std::string passes = "default";    // "default" or comma-separated pass names
  std::string dump_dir;              // empty: no dumps
  bool verify_each = false;
  bool no_decompose_chlo = false;
  int64_t max_folded_bytes = int64_t{1} << 16;
  bool stats = false;
  std::string arg_shapes;            // refine `?` dims for these argument types first
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddOptCommand(CLI::App& app, OptArgs& args);
// Runs it; returns the process exit status (see the top of this file).
int RunOpt(const OptArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_OPT_COMMAND_H_
