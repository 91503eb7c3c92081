// The `jitd` command: the user-facing entry point of jitd.
//
// Subcommands, in the order `jitd --help` lists them:
//   jitd run FILE               run a program through the daemon (started if
//                               none runs) or --in-process (run_command.cc)
//   jitd serve                  run the daemon (serve_command.cc)
//   jitd stop                   stop a running daemon (stop_command.cc)
//   jitd ps                     a running daemon's clients (ps_command.cc)
//   jitd stats                  a running daemon's statistics (stats_command.cc)
//   jitd check FILE...          parse and verify, one line per file
//   jitd fmt FILE [--generic]   parse, verify and print a StableHLO file
//   jitd opt FILE               run compiler passes and print the result
//                               (opt_command.cc)
//   jitd conformance PATH...    run self-checking programs on a device
//
// Exit status: 0 success, 1 a program is invalid (parse or verify error),
// 2 usage or I/O error, 3 internal error. No exception leaves main().

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/status.h"
#include "devices/cpu/runtime/blas_core.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/frontend/parser.h"
#include "jit/ir/module.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/refine_shapes.h"
#include "tools/cli_util.h"
#include "tools/conformance_command.h"
#include "tools/opt_command.h"
#include "tools/ps_command.h"
#include "tools/run_command.h"
#include "tools/serve_command.h"
#include "tools/stats_command.h"
#include "tools/stop_command.h"

#ifndef JITD_VERSION
#define JITD_VERSION "0.0.0"
#endif

namespace jitd::tools {
namespace {

constexpr std::string_view kModuleSeparator = "// -----\n";

// Reads all of `path` ("-" = standard input). A directory, a missing file or
// an unreadable one is an error whose message says which and why.
StatusOr<std::string> ReadFile(const std::string& path) {
  const bool is_stdin = path == "-";
  int fd = is_stdin ? STDIN_FILENO : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return NotFound("cannot read '" + path + "': " + std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    if (!is_stdin) ::close(fd);
    return InvalidArgument("cannot read '" + path + "': is a directory");
  }
  std::string text;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    text.reserve(static_cast<size_t>(st.st_size));
  }
  char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      int error = errno;
      if (!is_stdin) ::close(fd);
      return InvalidArgument("cannot read '" + DisplayName(path) +
                             "': " + std::strerror(error));
    }
    text.append(buffer, static_cast<size_t>(n));
  }
  if (!is_stdin) ::close(fd);
  return text;
}

void PrintError(const std::string& line) {
  std::fputs(line.c_str(), stderr);
  std::fputc('\n', stderr);
}

// The outcome of loading one file: the verified modules, or the exit code
// and the message to show.
struct LoadResult {
  int exit_code = kExitOk;
  std::string error;
  std::vector<std::unique_ptr<ir::Module>> modules;
};

// Reads, parses and verifies every module of `path`.
LoadResult LoadAndVerify(const std::string& path) {
  LoadResult result;
  StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    result.exit_code = kExitUsageOrIo;
    result.error = "jitd: " + text.status().message();
    return result;
  }
  auto modules = frontend::ParsePrograms(*text);
  if (!modules.ok()) {
    result.exit_code = kExitInvalidProgram;
    result.error = WithFileName(path, modules.status().message());
    return result;
  }
  for (const auto& module : *modules) {
    Status status = ir::VerifyModule(*module);
    if (!status.ok()) {
      result.exit_code = kExitInvalidProgram;
      result.error = WithFileName(path, status.message());
      return result;
    }
  }
  result.modules = std::move(modules).value();
  return result;
}

int RunFmt(const std::string& path, bool generic) {
  LoadResult loaded = LoadAndVerify(path);
  if (loaded.exit_code != kExitOk) {
    PrintError(loaded.error);
    return loaded.exit_code;
  }
  ir::PrintOptions options;
  options.generic = generic;
  std::string out;
  for (size_t i = 0; i < loaded.modules.size(); ++i) {
    if (i > 0) out += kModuleSeparator;
    out += ir::PrintModule(*loaded.modules[i], options);
    if (!out.empty() && out.back() != '\n') out += '\n';
  }
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size() ||
      std::fflush(stdout) != 0) {
    PrintError(std::string("jitd: cannot write to standard output: ") +
               std::strerror(errno));
    return kExitUsageOrIo;
  }
  return kExitOk;
}

// With `arg_shapes` ("tensor<8x4xf32>, ..."), every module is also refined
// for those argument types (jit/passes/refine_shapes.h) and verified again.
int RunCheck(const std::vector<std::string>& paths, const std::string& arg_shapes) {
  int exit_code = kExitOk;
  std::vector<ir::Type> types;
  if (!arg_shapes.empty()) {
    StatusOr<std::vector<ir::Type>> parsed = passes::ParseArgumentTypes(arg_shapes);
    if (!parsed.ok()) {
      PrintError("jitd: --arg-shapes: " + parsed.status().message());
      return kExitUsageOrIo;
    }
    types = std::move(parsed).value();
  }
  for (const std::string& path : paths) {
    LoadResult loaded = LoadAndVerify(path);
    bool dynamic = false;
    for (auto& module : loaded.modules) {
      if (loaded.exit_code != kExitOk) break;
      dynamic |= passes::HasDynamicShapes(*module);
      if (arg_shapes.empty()) continue;
      if (Status s = passes::RefineShapes(*module, types); !s.ok()) {
        loaded.exit_code = kExitInvalidProgram;
        loaded.error = WithFileName(path, s.message());
      }
    }
    if (loaded.exit_code == kExitOk) {
      PrintError(DisplayName(path) + ": ok" +
                 (!arg_shapes.empty() ? " (refined for --arg-shapes)"
                  : dynamic           ? " (dynamic shapes: refined when compiled)"
                                      : ""));
    } else {
      PrintError(loaded.error);
      exit_code = std::max(exit_code, loaded.exit_code);
    }
  }
  return exit_code;
}

int Main(int argc, char** argv) {
  CLI::App app(
      "jitd: a per-machine JIT runtime daemon for StableHLO programs.\n"
      "Programs (StableHLO text as JAX, PyTorch/XLA and stablehlo-opt print it)\n"
      "are compiled once by the daemon, on the `cpu` device (an LLVM JIT), the\n"
      "`cuda` device (PTX for NVIDIA GPUs, where a driver is found at run time) or\n"
      "the reference `interpreter`, cached in memory and on disk for every process\n"
      "of the machine, and run with their arguments in shared memory. `jitd run`\n"
      "starts a daemon when none runs; Python and C programs use the same one.",
      "jitd");
  app.set_version_flag("--version", "jitd " JITD_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Files may hold several modules separated by lines `// -----`; `-` reads\n"
      "standard input.\n"
      "Environment: JITD_SOCKET (the daemon's socket; default\n"
      "$XDG_RUNTIME_DIR/jitd/jitd.sock), JITD_NO_AUTOSTART=1 (never start a\n"
      "daemon), JITD_CPU_THREADS (the cpu device's threads; default one per CPU).\n"
      "Exit status: 0 ok, 1 invalid program, 2 usage or I/O error, 3 internal error.\n"
      "Run `jitd SUBCOMMAND --help` for a subcommand's options; docs/USING.md\n"
      "covers the CLI, Python, C and running jitd as a service.");

  // Registered in the order `jitd --help` lists them.
  RunArgs run_args;
  CLI::App* run = AddRunCommand(app, run_args);

  ServeArgs serve_args;
  CLI::App* serve = AddServeCommand(app, serve_args);

  StopArgs stop_args;
  CLI::App* stop = AddStopCommand(app, stop_args);

  PsArgs ps_args;
  CLI::App* ps = AddPsCommand(app, ps_args);

  StatsArgs stats_args;
  CLI::App* stats = AddStatsCommand(app, stats_args);

  std::vector<std::string> check_paths;
  CLI::App* check = app.add_subcommand(
      "check", "Parse and verify StableHLO files, one line per file");
  check->footer(
      "Prints `FILE: ok` or `FILE:LINE:COL: message` to standard error for each\n"
      "FILE. Exit status: 0 when every file is valid, 1 when one is not, 2 when\n"
      "one cannot be read.");
  check->add_option("FILE", check_paths,
                    "StableHLO text files (.mlir), or - for standard input")
      ->type_name("PATH")
      ->required();
  std::string check_arg_shapes;
  check->add_option("--arg-shapes", check_arg_shapes,
                    "Also refine programs with dynamic shapes (`?`) for these argument types, "
                    "e.g. \"tensor<8x4xf32>, tensor<4x3xf32>\"")
      ->type_name("TYPES");

  std::string fmt_path;
  bool fmt_generic = false;
  CLI::App* fmt = app.add_subcommand(
      "fmt", "Parse, verify and print a StableHLO file to standard output");
  fmt->footer(
      "Prints every module of FILE in the pretty form stablehlo-opt uses (or\n"
      "the generic form with --generic), modules separated by `// -----`.\n"
      "On an invalid program nothing is printed; the error goes to standard\n"
      "error as FILE:LINE:COL: message and the exit status is 1.");
  fmt->add_option("FILE", fmt_path, "StableHLO text file (.mlir), or - for standard input")
      ->type_name("PATH")
      ->required();
  fmt->add_flag("-g,--generic", fmt_generic,
                "Print every op in MLIR's generic form \"dialect.op\"(...) : (...) -> ...");

  OptArgs opt_args;
  CLI::App* opt = AddOptCommand(app, opt_args);

  ConformanceArgs conformance_args;
  CLI::App* conformance = AddConformanceCommand(app, conformance_args);

  // `jitd --help` lists subcommands by group, groups in the order of their
  // first member: running programs first, then tools for program text.
  for (CLI::App* sub : {run, serve, stop, ps, stats}) sub->group("Running programs");
  for (CLI::App* sub : {check, fmt, opt, conformance}) sub->group("Program text and testing");
  if (argc <= 1) {
    std::fputs(app.help().c_str(), stderr);
    return kExitUsageOrIo;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);  // prints help, version, or the usage error
    return code == 0 ? kExitOk : kExitUsageOrIo;
  }

  if (fmt->parsed()) return RunFmt(fmt_path, fmt_generic);
  if (check->parsed()) return RunCheck(check_paths, check_arg_shapes);
  if (conformance->parsed()) return RunConformance(conformance_args);
  if (run->parsed()) return RunRun(run_args);
  if (serve->parsed()) return RunServe(serve_args);
  if (stats->parsed()) return RunStats(stats_args);
  if (opt->parsed()) return RunOpt(opt_args);
  if (stop->parsed()) return RunStop(stop_args);
  if (ps->parsed()) return RunPs(ps_args);
  std::fputs(app.help().c_str(), stderr);
  return kExitUsageOrIo;
}

}  // namespace
}  // namespace jitd::tools

int main(int argc, char** argv) {
  // Before anything else (no threads yet): OpenBLAS picked its kernels when
  // it loaded; restart with better ones when it fell back to generic SSE3
  // kernels on this CPU (devices/cpu/runtime/blas_core.h).
  jitd::cpu::RestartWithBetterBlasCore(argv);
  try {
    return jitd::tools::Main(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fputs("jitd: out of memory\n", stderr);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "jitd: internal error: %s\n", e.what());
  } catch (...) {
    std::fputs("jitd: internal error: unknown exception\n", stderr);
  }
  return jitd::tools::kExitInternal;
}
