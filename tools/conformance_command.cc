#include "tools/conformance_command.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "devices/compile.h"
#include "devices/device.h"
#include "tools/conformance/runner.h"

namespace jitd::tools {

namespace {

bool WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

std::string Trim(std::string s) {
  const size_t start = s.find_first_not_of(" \t\r");
  if (start == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(start, end - start + 1);
}

// One file name (or file#module) per line, optionally followed by " # cause";
// lines starting with '#' are comments. Maps each name to its cause.
StatusOr<std::map<std::string, std::string>> ReadExpectedFailures(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read expected failures '" + path + "'");
  std::map<std::string, std::string> causes;
  std::string line;
  while (std::getline(in, line)) {
    if (Trim(line).empty() || Trim(line)[0] == '#') continue;
    const size_t hash = line.find(" #");
    std::string name = Trim(line.substr(0, hash));
    std::string cause = hash == std::string::npos ? "" : Trim(line.substr(hash + 2));
    causes[name] = cause;
  }
  return causes;
}

}  // namespace

CLI::App* AddConformanceCommand(CLI::App& app, ConformanceArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "conformance", "Run self-checking StableHLO programs on a device and report failures");
  cmd->footer(
      "Each module of each file is a case: it passes when it parses, verifies,\n"
      "runs, and every check in @main holds (custom_call @check.* or check.* ops,\n"
      "semantics of ../shared/conformance/README.md). Prints one line per failing\n"
      "case (file, kind: parse, verify, unsupported, runtime, check; for a check\n"
      "the element, actual, expected, and ULP distance or tolerance), then\n"
      "`N passed, M failed, K skipped`. Files whose first line is RUN-DISABLED\n"
      "run like the others and are counted apart. Exit status: 0 all passed (or\n"
      "every failure is listed in --expected-failures), 1 failures, 2 usage/I/O.");
  std::string devices;
  for (const std::string& n : devices::DeviceNames()) devices += (devices.empty() ? "" : ", ") + n;
  cmd->add_option("--device", args.device, "Device to run on (" + devices + ")")
      ->capture_default_str();
  cmd->add_option("-j,--jobs", args.jobs, "Files run in parallel")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--timeout", args.timeout_seconds, "Seconds one case may run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--report", args.report_path, "Write every case as JSON to FILE")
      ->type_name("FILE");
  cmd->add_option("--markdown", args.markdown_path,
                  "Write a docs/CONFORMANCE.md section (counts by family and type, failures)")
      ->type_name("FILE");
  cmd->add_option("--expected-failures", args.expected_failures_path,
                  "Known failures, one file name per line: only others fail the run")
      ->type_name("FILE");
  cmd->add_option("--pipeline", args.pipeline,
                  "Compiler passes (`default`, PASS,PASS,..., or `none`) run on every module, "
                  "verifying after each, before the device compiles it; default: the device's "
                  "own (none for the interpreter, `default` for cpu)")
      ->type_name("PASSES");
  cmd->add_option("PATH", args.paths, "Files, or directories searched for *.mlir")
      ->required();
  return cmd;
}

int RunConformance(const ConformanceArgs& args) {
  auto device = devices::CreateDevice(args.device);
  if (!device.ok()) {
    std::fprintf(stderr, "jitd conformance: %s\n", device.status().message().c_str());
    return 2;
  }
  auto files = conformance::CollectFiles(args.paths);
  if (!files.ok()) {
    std::fprintf(stderr, "jitd conformance: %s\n", files.status().message().c_str());
    return 2;
  }
  std::map<std::string, std::string> expected;
  if (!args.expected_failures_path.empty()) {
    auto read = ReadExpectedFailures(args.expected_failures_path);
    if (!read.ok()) {
      std::fprintf(stderr, "jitd conformance: %s\n", read.status().message().c_str());
      return 2;
    }
    expected = std::move(read).value();
  }
  conformance::RunnerOptions options;
  options.jobs = args.jobs;
  if (args.pipeline == "none") {
    options.pipeline = "";
  } else if (!args.pipeline.empty()) {
    options.pipeline = args.pipeline;
  }
  const std::string pipeline = devices::EffectivePipeline(**device, {.pipeline = options.pipeline});
  if (Status s = devices::CheckPipeline(**device, pipeline); !s.ok()) {
    std::fprintf(stderr, "jitd conformance: --pipeline: %s\n", s.message().c_str());
    return 2;
  }
  options.timeout_seconds = args.timeout_seconds;
  const auto start = std::chrono::steady_clock::now();
  auto results = conformance::RunFiles(*files, **device, options,
                                       [](const conformance::CaseResult& r) {
                                         if (r.passed()) return;
                                         std::printf("%s: %s: %s\n", r.name().c_str(),
                                                     std::string(OutcomeName(r.outcome)).c_str(),
                                                     r.detail.c_str());
                                         std::fflush(stdout);
                                       });
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  size_t passed = 0, disabled = 0, disabled_passed = 0, unexpected = 0;
  std::vector<std::string> fixed;
  for (const auto& r : results) {
    passed += r.passed();
    disabled += r.disabled;
    disabled_passed += r.disabled && r.passed();
    const bool listed = expected.count(conformance::CaseKey(r)) > 0;
    if (!r.passed() && !listed) ++unexpected;
    if (r.passed() && listed) fixed.push_back(conformance::CaseKey(r));
  }
  int status = 0;
  if (!args.report_path.empty() &&
      !WriteFile(args.report_path, conformance::ToJson(results, args.device, wall))) {
    std::fprintf(stderr, "jitd conformance: cannot write '%s'\n", args.report_path.c_str());
    status = 2;
  }
  if (!args.markdown_path.empty() &&
      !WriteFile(args.markdown_path, conformance::ToMarkdown(results, args.device, expected))) {
    std::fprintf(stderr, "jitd conformance: cannot write '%s'\n", args.markdown_path.c_str());
    status = 2;
  }
  if (disabled) {
    std::printf("RUN-DISABLED files: %zu passed, %zu failed\n", disabled_passed,
                disabled - disabled_passed);
  }
  if (!args.expected_failures_path.empty()) {
    for (const std::string& f : fixed) {
      std::printf("%s: passes now; remove it from %s\n", f.c_str(),
                  args.expected_failures_path.c_str());
    }
    std::printf("%zu failures not in %s\n", unexpected, args.expected_failures_path.c_str());
  }
  std::printf("device %s%s%s, %zu files, %.1f s wall with %d jobs\n", args.device.c_str(),
              pipeline.empty() ? "" : " after passes ", pipeline.c_str(), files->size(),
              wall, args.jobs);
  std::printf("%zu passed, %zu failed, 0 skipped\n", passed, results.size() - passed);
  std::fflush(stdout);
  if (status) return status;
  const bool failed = args.expected_failures_path.empty() ? passed != results.size() : unexpected > 0;
  return failed ? 1 : 0;
}

}  // namespace jitd::tools
