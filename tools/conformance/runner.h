// The conformance runner behind `jitd conformance`: runs self-checking
// StableHLO programs on a device and reports, per case, whether it passed
// and if not, how it failed.
//
// Device-independent by construction: the checks in @main (custom_call
// @check.* or check.* ops) are removed from the program and their operands
// become extra results of @main; the device runs the rewritten program and
// the runner compares on the host (checks.h). A file holding several
// modules (`// -----`) is one case per module.
#ifndef JITD_TOOLS_CONFORMANCE_RUNNER_H_
#define JITD_TOOLS_CONFORMANCE_RUNNER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "devices/device.h"

namespace jitd::conformance {

enum class Outcome { kPassed, kParseError, kVerifyError, kUnsupported, kRuntimeError, kCheckFailed };
// "passed", "parse", "verify", "unsupported", "runtime", "check".
std::string_view OutcomeName(Outcome outcome);

struct CaseResult {
  std::string file;
  int module_index = 0;   // which `// -----` piece (0-based)
  int num_modules = 1;
  bool disabled = false;  // the file's first line is `// RUN-DISABLED...`
  Outcome outcome = Outcome::kPassed;
  std::string detail;     // why it failed; empty when passed
  double seconds = 0;     // parse + compile + run + checks

  bool passed() const { return outcome == Outcome::kPassed; }
  // "file" or "file#2" for a file of several modules.
  std::string name() const;
};

struct RunnerOptions {
  int jobs = 1;
  double timeout_seconds = 120;  // per case
  // The compiler passes to run (jit/passes AddPipeline spec: "default",
  // "inline,cse,...", or "" for none), with verification after each, on every
  // module after its checks are hoisted, as part of devices::CompileProgram;
  // unset = the device's own pipeline (what the daemon runs). A pass failure
  // is reported as a verify failure naming the pass.
  std::optional<std::string> pipeline;
};

// Files named directly, and every *.mlir below named directories, sorted.
// NOT_FOUND for a path that does not exist.
StatusOr<std::vector<std::string>> CollectFiles(const std::vector<std::string>& paths);

// Runs every module of one file's text on `device`.
std::vector<CaseResult> RunText(const std::string& file, std::string_view text,
                                const devices::Device& device, const RunnerOptions& options);

// Runs files on `jobs` threads; results in file order. `on_result` (may be
// empty) is called as each case finishes, from the worker threads, serialized.
std::vector<CaseResult> RunFiles(const std::vector<std::string>& files,
                                 const devices::Device& device, const RunnerOptions& options,
                                 const std::function<void(const CaseResult&)>& on_result);

// Machine-readable report: every case with result, detail and time.
std::string ToJson(const std::vector<CaseResult>& results, std::string_view device,
                   double wall_seconds);

// A docs/CONFORMANCE.md section for one device: pass counts by op family and
// by element type (both read from the corpus file names), then every
// failing file with its reason.
// `known_causes` maps a case key (file name, or file#module) to the cause
// recorded for a known failure, shown beside it.
std::string ToMarkdown(const std::vector<CaseResult>& results, std::string_view device,
                       const std::map<std::string, std::string>& known_causes = {});

// An expected-failures list: one case key (file name, or file#module) per
// line, optionally followed by " # cause"; blank lines and lines starting
// with '#' are skipped. Maps each key to its cause. NOT_FOUND when the file
// cannot be read.
StatusOr<std::map<std::string, std::string>> ReadExpectedFailures(const std::string& path);

// The key a case has in an expected-failures list: the file's base name,
// with "#module" for files of several modules.
std::string CaseKey(const CaseResult& result);

}  // namespace jitd::conformance

#endif  // JITD_TOOLS_CONFORMANCE_RUNNER_H_
