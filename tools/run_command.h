// `jitd run`: compiles a StableHLO program on a device and runs it once, with
// arguments from .npy files or seeded random data, printing the results and a
// timing breakdown (and writing them as .npy files with --output).
//
// By default it goes through the daemon (libclient): the program text (with
// its self-checks hoisted into results, as in process) is compiled by the
// daemon and cached there, arguments are written into shared-memory buffers
// in place, and the checks are compared here. When no daemon answers at the
// socket, one is started in the background (`jitd serve --socket PATH`; log
// and pid files beside the socket) unless --no-start-daemon. --in-process
// compiles and runs in this process instead.
//
// Exit status: 0 ran; 1 the program is invalid (parse, verify, compile) or
// failed while running (including --timeout); 2 usage or I/O error (missing,
// unreadable or mismatched inputs, unwritable output, no daemon).
#ifndef JITD_TOOLS_RUN_COMMAND_H_
#define JITD_TOOLS_RUN_COMMAND_H_

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace jitd::tools {

// The options of `jitd run`, bound by AddRunCommand. Plain data.
struct RunArgs {
  std::string path;                  // FILE.mlir, or - for standard input
  std::string device = "cpu";  // the CPU JIT; "interpreter" is the reference
  bool in_process = false;
  std::string socket_path;           // --socket; empty = daemon::DefaultSocketPath()
  bool no_start_daemon = false;      // fail instead of starting a daemon
  int module_index = -1;             // --module=N for files of several modules
  std::vector<std::string> inputs;   // NAME=FILE.npy; NAME: 0, 1, ... or %arg0
  std::string arg_shapes;            // --arg-shapes "tensor<8x4xf32>, ...": refine `?` dims
  bool random_inputs = false;        // fill arguments not given by --input
  uint64_t seed = 0;                 // --seed for --random-inputs
  uint64_t resource_seed = 0;        // fill of dense_resource placeholders
  std::string resource_fill = "weights";  // their distribution (eval::RandomFill)
  std::string output_dir;            // write result_<i>.npy there
  double timeout_seconds = 0;        // execution deadline; 0 = none
  std::string dump_dir;              // write the compile's dumps there
  bool profile = false;              // print where the execution's time went
  std::string trace_path;            // --trace: write a Chrome trace there (runs in process)
  std::string pipeline;              // --in-process: passes instead of the device's
  int repeat = 1;                    // timed executes (min/p50/p90 when more than one)
  int warmup = 0;                    // untimed executes before them
};

// Adds the subcommand to `app`, binding its options to `args`.
CLI::App* AddRunCommand(CLI::App& app, RunArgs& args);
// Runs it; returns the process exit status (see the top of this file).
int RunRun(const RunArgs& args);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_RUN_COMMAND_H_
