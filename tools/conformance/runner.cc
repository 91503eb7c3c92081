#include "tools/conformance/runner.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <thread>

#include "devices/compile.h"
#include "devices/replicated.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"
#include "tools/conformance/checks.h"

namespace jitd::conformance {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

Outcome OutcomeForStatus(const Status& status, Outcome otherwise) {
  return status.code() == StatusCode::kUnimplemented ? Outcome::kUnsupported : otherwise;
}

StatusOr<std::vector<HoistedCheck>> ExtractChecks(ir::Module& module, ir::Function& fn) {
  // Checks nested in regions or other functions are not supported.
  std::function<Status(const ir::Block&, bool)> scan = [&](const ir::Block& block,
                                                         bool top) -> Status {
    for (const auto& op : block.ops()) {
      if (!top && ParseCheck(*op)) {
        return Unimplemented(op->loc().ToString() + ": a check outside @" + fn.name() +
                             "'s top level cannot be observed by the runner");
      }
      for (size_t r = 0; r < op->num_regions(); ++r) {
        for (size_t b = 0; b < op->region(r).num_blocks(); ++b) {
          JITD_RETURN_IF_ERROR(scan(op->region(r).block(b), false));
        }
      }
    }
    return Status::Ok();
  };
  for (const auto& other : module.functions()) {
    if (other->entry()) JITD_RETURN_IF_ERROR(scan(*other->entry(), other.get() == &fn));
  }

  return HoistChecks(fn);
}

// Whether `fn`'s top level runs interpreter.run_parallel.
bool RunsParallel(const ir::Function& fn) {
  for (const auto& op : fn.entry()->ops()) {
    if (op->code() == ir::OpCode::kInterpreterRunParallel) return true;
  }
  return false;
}

// The symbols of an ArrayAttr of SymbolRefAttr.
std::vector<std::string> Symbols(const ir::Attribute& list) {
  std::vector<std::string> names;
  for (const ir::Attribute& a : list.as<ir::ArrayAttr>().elements) {
    names.push_back(a.as<ir::SymbolRefAttr>().name);
  }
  return names;
}

// A program written for the reference interpreter's multi-process driver:
// @main (checks hoisted) runs on the host evaluator, and each
// interpreter.run_parallel in it runs its grid of functions as processes on
// `device` (devices::ExecuteProcesses: one thread each, collectives meeting
// in memory). Each function is compiled as the entry of its own copy of the
// module. The operands are the processes' arguments in process order (0, 0),
// (0, 1), ..., and the results likewise; `infeed` lists functions whose
// results feed the processes' infeed ops, one call per infeed, in the order
// the infeeds run.
StatusOr<std::vector<eval::RuntimeValue>> RunParallelMain(const frontend::ModuleText& piece,
                                                          const ir::Module& module, const ir::Function& entry,
                                                          const devices::Device& device,
                                                          const RunnerOptions& options,
                                                          Clock::time_point deadline,
                                                          decltype(devices::ExecuteOptions::probe) probe) {
  std::map<std::string, std::unique_ptr<devices::Executable>> compiled;
  auto compile = [&](const std::string& name) -> StatusOr<const devices::Executable*> {
    if (auto it = compiled.find(name); it != compiled.end()) return it->second.get();
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> copy, frontend::ParseProgram(piece));
    if (!copy->FindFunction(name)) {
      return InvalidArgument("interpreter.run_parallel names @" + name + ", which the module does not define");
    }
    copy->RemoveFunction(entry.name());
    for (const auto& fn : copy->functions()) fn->set_visibility(fn->name() == name ? "public" : "private");
    devices::ProgramCompileOptions compile_options;
    compile_options.pipeline = options.pipeline;
    compile_options.verify_each = true;
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<devices::Executable> exe,
                          devices::CompileProgram(device, std::shared_ptr<ir::Module>(std::move(copy)),
                                                  compile_options));
    return (compiled[name] = std::move(exe)).get();
  };
  eval::EvalOptions eval_options;
  eval_options.deadline = deadline;
  eval_options.probe = probe;
  eval_options.run_parallel = [&](const ir::Op& op, std::vector<eval::RuntimeValue> operands)
      -> StatusOr<std::vector<eval::RuntimeValue>> {
    const auto& rows = op.attr("programs")->as<ir::ArrayAttr>().elements;
    devices::ProcessGrid grid;
    grid.num_replicas = static_cast<int64_t>(rows.size());
    grid.num_partitions = static_cast<int64_t>(rows[0].as<ir::ArrayAttr>().elements.size());
    std::vector<const devices::Executable*> executables;
    std::vector<std::vector<eval::RuntimeValue>> args;
    size_t next = 0;
    for (const ir::Attribute& row : rows) {
      for (const std::string& name : Symbols(row)) {
        JITD_ASSIGN_OR_RETURN(const devices::Executable* exe, compile(name));
        const size_t n = exe->argument_types().size();
        if (next + n > operands.size()) {
          return InvalidArgument(op.loc().ToString() + ": interpreter.run_parallel has " +
                                 std::to_string(operands.size()) + " operands, fewer than its programs take");
        }
        args.emplace_back(operands.begin() + static_cast<std::ptrdiff_t>(next),
                          operands.begin() + static_cast<std::ptrdiff_t>(next + n));
        next += n;
        executables.push_back(exe);
      }
    }
    if (next != operands.size()) {
      return InvalidArgument(op.loc().ToString() + ": interpreter.run_parallel has " +
                             std::to_string(operands.size()) + " operands; its programs take " +
                             std::to_string(next));
    }
    // The infeed queue: functions of the module, evaluated on the host as
    // each infeed op asks for its next value.
    std::vector<std::string> queue;
    if (const ir::Attribute* infeed = op.attr("infeed")) queue = Symbols(*infeed);
    auto queue_mu = std::make_shared<std::mutex>();
    auto queue_next = std::make_shared<size_t>(0);
    auto infeed = [&module, queue, queue_mu, queue_next](const std::vector<ir::Type>& types, auto)
        -> StatusOr<std::vector<ir::Literal>> {
      std::string name;
      {
        std::lock_guard<std::mutex> lock(*queue_mu);
        if (*queue_next >= queue.size()) {
          return InvalidArgument("infeed: the run_parallel infeed queue of " + std::to_string(queue.size()) +
                                 " values is empty");
        }
        name = queue[(*queue_next)++];
      }
      const ir::Function* fn = module.FindFunction(name);
      if (!fn) return InvalidArgument("infeed: run_parallel's infeed names @" + name + ", which is not defined");
      JITD_ASSIGN_OR_RETURN(std::vector<eval::RuntimeValue> values, eval::EvaluateFunction(module, *fn, {}));
      std::vector<ir::Literal> out;
      for (auto& v : values) {
        if (!v.is_tensor()) return InvalidArgument("infeed: @" + name + " returns a value that is not a tensor");
        out.push_back(std::move(v.literal()));
      }
      if (out.size() != types.size()) {
        return InvalidArgument("infeed: @" + name + " gives " + std::to_string(out.size()) + " values for " +
                               std::to_string(types.size()) + " infeed results");
      }
      return out;
    };
    JITD_ASSIGN_OR_RETURN(auto per_process,
                          devices::ExecuteProcesses(executables, grid, args, [&](int64_t) {
                            devices::ExecuteOptions o;
                            o.deadline = deadline;
                            o.infeed = infeed;
                            o.probe = probe;
                            return o;
                          }));
    std::vector<eval::RuntimeValue> results;
    for (auto& values : per_process) {
      for (auto& v : values) results.push_back(std::move(v));
    }
    if (results.size() != op.num_results()) {
      return InvalidArgument(op.loc().ToString() + ": interpreter.run_parallel's programs return " +
                             std::to_string(results.size()) + " values for its " +
                             std::to_string(op.num_results()) + " results");
    }
    return results;
  };
  return eval::EvaluateFunction(module, entry, {}, eval_options);
}

CaseResult RunEntry(const std::string& file, const frontend::ModuleText& piece,
                    std::shared_ptr<ir::Module> module, const devices::Device& device,
                    const RunnerOptions& options);

// The values of an argument list as the reference interpreter's --args
// takes it: `[dense<1> : tensor<2xi32>, dense<...> : tensor<...>]`.
StatusOr<std::vector<eval::RuntimeValue>> ParseArgumentList(std::string_view text, const std::string& where) {
  const size_t open = text.find('['), close = text.rfind(']');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return InvalidArgument(where + ": expected an array of dense elements, [dense<...> : tensor<...>, ...]");
  }
  // Split at the commas outside <...>, [...] and (...).
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : text.substr(open + 1, close - open - 1)) {
    if (c == '<' || c == '[' || c == '(') ++depth;
    if (c == '>' || c == ']' || c == ')') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (cur.find_first_not_of(" \t\r\n") != std::string::npos) items.push_back(cur);
  std::string program = "func.func @args() -> (";
  std::string body, types, names;
  for (size_t i = 0; i < items.size(); ++i) {
    const size_t colon = items[i].rfind(" : ");
    if (items[i].find("dense") == std::string::npos || colon == std::string::npos) {
      return InvalidArgument(where + ": argument " + std::to_string(i) +
                             " is not a dense elements attribute with its type (dense<...> : tensor<...>)");
    }
    const std::string type = items[i].substr(colon + 3);
    body += "  %a" + std::to_string(i) + " = stablehlo.constant " + items[i] + "\n";
    types += (i ? ", " : "") + type;
    names += (i ? ", %a" : "%a") + std::to_string(i);
  }
  program += types + ") {\n" + body + "  return " + names + (items.empty() ? "" : " : " + types) + "\n}\n";
  auto m = frontend::ParseModule(program);
  if (!m.ok()) return InvalidArgument(where + ": " + m.status().message());
  return eval::EvaluateFunction(**m, *(*m)->FindFunction("args"), {});
}

// The arguments of a program whose @main takes some: the file's own RUN
// line (`--args="[...]"`, as the reference interpreter takes them) or a
// companion file `<file>.args` holding the same list. NOT_FOUND when there
// are none.
StatusOr<std::vector<eval::RuntimeValue>> ProgramArguments(const std::string& file, std::string_view text) {
  for (size_t at = text.find("// RUN:"); at != std::string_view::npos; at = text.find("// RUN:", at + 1)) {
    const std::string_view line = text.substr(at, text.find('\n', at) - at);
    const size_t a = line.find("--args=\"[");
    if (a != std::string_view::npos) {
      const size_t end = line.find("]\"", a);
      if (end != std::string_view::npos) return ParseArgumentList(line.substr(a + 8, end - a - 7), file + " (RUN line)");
    }
  }
  std::ifstream in(file + ".args");
  if (in) {
    std::string list((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return ParseArgumentList(list, file + ".args");
  }
  return NotFound("");
}

CaseResult RunModule(const std::string& file, const frontend::ModuleText& piece,
                     const devices::Device& device, const RunnerOptions& options) {
  CaseResult result;
  result.file = file;
  auto fail = [&](Outcome outcome, std::string detail) {
    result.outcome = outcome;
    result.detail = std::move(detail);
    return result;
  };
  auto parsed = frontend::ParseProgram(piece);
  if (!parsed.ok()) return fail(Outcome::kParseError, parsed.status().message());
  std::shared_ptr<ir::Module> module = std::move(parsed).value();
  if (Status s = ir::VerifyModule(*module); !s.ok()) {
    return fail(Outcome::kVerifyError, s.message());
  }
  if (module->EntryFunction()) return RunEntry(file, piece, module, device, options);
  // No @main and several public functions: each that takes no arguments is
  // a self-checking test of its own (a file of test functions, as the
  // reference interpreter's tests write them), run as the entry of its own
  // copy of the module; the case passes when all of them do.
  std::vector<std::string> tests;
  for (const auto& fn : module->functions()) {
    if (fn->visibility() != "private" && fn->arg_types().empty() && fn->entry()) tests.push_back(fn->name());
  }
  if (tests.empty()) return fail(Outcome::kVerifyError, "no entry function (@main, or one public function)");
  for (const std::string& name : tests) {
    auto copy = frontend::ParseProgram(piece);
    if (!copy.ok()) return fail(Outcome::kParseError, copy.status().message());
    // The other test functions go (they hold checks of their own); helpers stay, private.
    for (const std::string& other : tests) {
      if (other != name) (*copy)->RemoveFunction(other);
    }
    for (const auto& fn : (*copy)->functions()) {
      if (fn->name() != name) fn->set_visibility("private");
    }
    CaseResult one = RunEntry(file, piece, std::shared_ptr<ir::Module>(std::move(copy).value()), device, options);
    if (!one.passed()) {
      one.detail = "@" + name + " (of " + std::to_string(tests.size()) + " test functions): " + one.detail;
      return one;
    }
  }
  return result;
}

CaseResult RunEntry(const std::string& file, const frontend::ModuleText& piece,
                    std::shared_ptr<ir::Module> module, const devices::Device& device,
                    const RunnerOptions& options) {
  CaseResult result;
  result.file = file;
  auto fail = [&](Outcome outcome, std::string detail) {
    result.outcome = outcome;
    result.detail = std::move(detail);
    return result;
  };
  ir::Function* entry = module->EntryFunction();
  if (!entry || !entry->entry()) {
    return fail(Outcome::kVerifyError, "no entry function (@main, or one public function)");
  }
  std::vector<eval::RuntimeValue> arguments;
  if (!entry->arg_types().empty()) {
    auto args = ProgramArguments(file, piece.text);
    if (!args.ok() && args.status().code() == StatusCode::kNotFound) {
      return fail(Outcome::kUnsupported, "@" + entry->name() +
                                             " takes arguments, and neither a RUN line's --args=\"[...]\" nor a "
                                             "companion " + std::string(std::filesystem::path(file).filename()) +
                                             ".args gives them");
    }
    if (!args.ok()) return fail(Outcome::kVerifyError, args.status().message());
    if (args->size() != entry->arg_types().size()) {
      return fail(Outcome::kVerifyError, "@" + entry->name() + " takes " + std::to_string(entry->arg_types().size()) +
                                             " arguments, given " + std::to_string(args->size()));
    }
    for (size_t i = 0; i < args->size(); ++i) {
      if ((*args)[i].type() != entry->arg_types()[i]) {
        return fail(Outcome::kVerifyError, "argument " + std::to_string(i) + " is a " + (*args)[i].type().ToString() +
                                               ", @" + entry->name() + " takes a " + entry->arg_types()[i].ToString());
      }
    }
    arguments = std::move(args).value();
  }
  auto checks = ExtractChecks(*module, *entry);
  if (!checks.ok()) {
    return fail(OutcomeForStatus(checks.status(), Outcome::kVerifyError),
                checks.status().message());
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::microseconds(static_cast<int64_t>(options.timeout_seconds * 1e6));
  // interpreter.probe values, for check.expect_serialized_eq.
  ProbeLog probes;
  auto probe_hook = [&probes](const std::string& id, const ir::Literal& value) {
    return probes.Record(id, value);
  };
  // stablehlo.outfeed with no daemon behind it: the runner is the host
  // that takes the values (and drops them; nothing in the program reads
  // them back).
  int64_t outfed = 0;
  std::mutex outfeed_mu;
  auto outfeed_hook = [&](std::vector<ir::Literal> values, auto) -> Status {
    std::lock_guard<std::mutex> lock(outfeed_mu);
    outfed += static_cast<int64_t>(values.size());
    return Status::Ok();
  };
  StatusOr<std::vector<eval::RuntimeValue>> outputs = Status(StatusCode::kInternal, "not run");
  if (RunsParallel(*entry)) {
    outputs = RunParallelMain(piece, *module, *entry, device, options, deadline, probe_hook);
  } else {
    devices::ProgramCompileOptions compile_options;
    compile_options.pipeline = options.pipeline;
    compile_options.verify_each = true;
    auto executable = devices::CompileProgram(device, module, compile_options);
    if (!executable.ok()) {
      return fail(OutcomeForStatus(executable.status(), Outcome::kVerifyError),
                  executable.status().message());
    }
    devices::ExecuteOptions execute_options;
    execute_options.deadline = deadline;
    execute_options.probe = probe_hook;
    execute_options.outfeed = outfeed_hook;
    outputs = (*executable)->Execute(arguments, execute_options);
  }
  if (!outputs.ok()) {
    return fail(OutcomeForStatus(outputs.status(), Outcome::kRuntimeError),
                outputs.status().message());
  }
  int failed = 0;
  std::string first;
  for (const HoistedCheck& check : *checks) {
    Status s = CompareHoisted(check, *outputs, &probes);
    if (!s.ok() && failed++ == 0) first = s.message();
  }
  if (failed) {
    if (checks->size() > 1) {
      first = std::to_string(failed) + " of " + std::to_string(checks->size()) +
              " checks failed; first: " + first;
    }
    return fail(Outcome::kCheckFailed, first);
  }
  return result;
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// Splits a corpus file name ("scatter_add_bfloat16_1_125.mlir") into its
// op family ("scatter_add") and first element type ("bfloat16").
std::pair<std::string, std::string> FamilyAndType(const std::string& file) {
  static const char* const kTypes[] = {"bool", "int8", "int16", "int32", "int64", "uint8",
                                       "uint16", "uint32", "uint64", "float16", "bfloat16",
                                       "float32", "float64", "complex64", "complex128"};
  std::string base = fs::path(file).stem().string();
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= base.size()) {
    size_t end = base.find('_', start);
    if (end == std::string::npos) end = base.size();
    parts.push_back(base.substr(start, end - start));
    start = end + 1;
  }
  for (size_t i = 0; i < parts.size(); ++i) {
    for (const char* t : kTypes) {
      if (parts[i] == t) {
        std::string family;
        for (size_t k = 0; k < i; ++k) family += (k ? "_" : "") + parts[k];
        return {family.empty() ? base : family, t};
      }
    }
  }
  return {base, "(none)"};
}

}  // namespace

std::string_view OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kPassed: return "passed";
    case Outcome::kParseError: return "parse";
    case Outcome::kVerifyError: return "verify";
    case Outcome::kUnsupported: return "unsupported";
    case Outcome::kRuntimeError: return "runtime";
    case Outcome::kCheckFailed: return "check";
  }
  return "?";
}

std::string CaseResult::name() const {
  return num_modules > 1 ? file + "#" + std::to_string(module_index) : file;
}

StatusOr<std::vector<std::string>> CollectFiles(const std::vector<std::string>& paths) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return NotFound("no such file or directory: '" + path + "'");
    if (fs::is_directory(st)) {
      std::vector<std::string> found;
      for (auto it = fs::recursive_directory_iterator(path, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file() && (it->path().extension() == ".mlir" ||
                                        it->path().string().ends_with(".mlir.bc"))) {
          found.push_back(it->path().string());
        }
      }
      if (ec) return InvalidArgument("cannot list '" + path + "': " + ec.message());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      files.push_back(path);
    }
  }
  return files;
}

std::vector<CaseResult> RunText(const std::string& file, std::string_view text,
                                const devices::Device& device, const RunnerOptions& options) {
  const bool disabled = StartsWith(text, "// RUN-DISABLED");
  const std::vector<frontend::ModuleText> pieces = frontend::SplitProgram(text);
  std::vector<CaseResult> results;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto start = Clock::now();
    CaseResult r = RunModule(file, pieces[i], device, options);
    r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r.module_index = static_cast<int>(i);
    r.num_modules = static_cast<int>(pieces.size());
    r.disabled = disabled;
    results.push_back(std::move(r));
  }
  return results;
}

std::vector<CaseResult> RunFiles(const std::vector<std::string>& files,
                                 const devices::Device& device, const RunnerOptions& options,
                                 const std::function<void(const CaseResult&)>& on_result) {
  std::vector<std::vector<CaseResult>> per_file(files.size());
  std::atomic<size_t> next{0};
  std::mutex report_mutex;
  auto worker = [&] {
    for (size_t i; (i = next.fetch_add(1)) < files.size();) {
      std::ifstream in(files[i], std::ios::binary);
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (!in.good() && !in.eof()) {
        CaseResult r;
        r.file = files[i];
        r.outcome = Outcome::kParseError;
        r.detail = "cannot read the file";
        per_file[i] = {r};
      } else {
        per_file[i] = RunText(files[i], text, device, options);
      }
      if (on_result) {
        std::lock_guard<std::mutex> lock(report_mutex);
        for (const CaseResult& r : per_file[i]) on_result(r);
      }
    }
  };
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(files.size())));
  std::vector<std::thread> threads;
  for (int j = 1; j < jobs; ++j) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  std::vector<CaseResult> results;
  for (auto& v : per_file) {
    for (auto& r : v) results.push_back(std::move(r));
  }
  return results;
}

std::string ToJson(const std::vector<CaseResult>& results, std::string_view device,
                   double wall_seconds) {
  size_t passed = 0;
  for (const auto& r : results) passed += r.passed();
  std::string out = "{\n  \"device\": \"" + JsonEscape(device) + "\",\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", wall_seconds);
  out += "  \"wall_seconds\": " + std::string(buf) + ",\n";
  out += "  \"passed\": " + std::to_string(passed) + ",\n";
  out += "  \"failed\": " + std::to_string(results.size() - passed) + ",\n";
  out += "  \"skipped\": 0,\n  \"cases\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const CaseResult& r = results[i];
    std::snprintf(buf, sizeof buf, "%.6f", r.seconds);
    out += "    {\"file\": \"" + JsonEscape(r.file) + "\", \"module\": " +
           std::to_string(r.module_index) + ", \"result\": \"" + std::string(OutcomeName(r.outcome)) +
           "\", \"run_disabled\": " + (r.disabled ? "true" : "false") + ", \"seconds\": " + buf;
    if (!r.detail.empty()) out += ", \"detail\": \"" + JsonEscape(r.detail) + "\"";
    out += i + 1 < results.size() ? "},\n" : "}\n";
  }
  out += "  ]\n}\n";
  return out;
}

std::string CaseKey(const CaseResult& r) {
  std::string base = fs::path(r.file).filename().string();
  return r.num_modules > 1 ? base + "#" + std::to_string(r.module_index) : base;
}

std::string ToMarkdown(const std::vector<CaseResult>& results, std::string_view device,
                       const std::map<std::string, std::string>& known_causes) {
  struct Count {
    int passed = 0;
    int total = 0;
  };
  std::map<std::string, Count> by_family, by_type;
  Count all, disabled;
  for (const CaseResult& r : results) {
    auto [family, type] = FamilyAndType(r.file);
    for (Count* c : {&by_family[family], &by_type[type], &all}) {
      c->total++;
      c->passed += r.passed();
    }
    if (r.disabled) {
      disabled.total++;
      disabled.passed += r.passed();
    }
  }
  std::string out = "## Device `" + std::string(device) + "`\n\n";
  out += std::to_string(all.passed) + " of " + std::to_string(all.total) + " cases pass (" +
         std::to_string(all.total - all.passed) + " fail). Of the " +
         std::to_string(disabled.total) + " RUN-DISABLED files, " +
         std::to_string(disabled.passed) + " pass.\n\n";
  auto table = [&](const char* title, const char* key, const std::map<std::string, Count>& m) {
    out += "### By " + std::string(title) + "\n\n| " + key + " | passed | failed | total |\n|---|---:|---:|---:|\n";
    for (const auto& [name, c] : m) {
      out += "| " + name + " | " + std::to_string(c.passed) + " | " +
             std::to_string(c.total - c.passed) + " | " + std::to_string(c.total) + " |\n";
    }
    out += "\n";
  };
  table("element type", "element type (from the file name)", by_type);
  table("op family", "op family (from the file name)", by_family);
  out += "### Failing cases\n\n";
  bool any = false;
  for (const CaseResult& r : results) {
    if (r.passed()) continue;
    any = true;
    std::string detail = r.detail;
    std::replace(detail.begin(), detail.end(), '\n', ' ');
    std::replace(detail.begin(), detail.end(), '|', '/');
    if (detail.size() > 300) detail = detail.substr(0, 300) + "...";
    out += "- `" + CaseKey(r) + "`" + (r.disabled ? " (RUN-DISABLED)" : "") + " — ";
    if (auto it = known_causes.find(CaseKey(r)); it != known_causes.end() && !it->second.empty()) {
      out += "**cause:** " + it->second + ". **Observed:** ";
    }
    out += std::string(OutcomeName(r.outcome)) + ": " + detail + "\n";
  }
  if (!any) out += "None.\n";
  return out + "\n";
}

namespace {

std::string Trim(const std::string& s) {
  const size_t start = s.find_first_not_of(" \t\r");
  if (start == std::string::npos) return "";
  const size_t end = s.find_last_not_of(" \t\r");
  return s.substr(start, end - start + 1);
}

}  // namespace

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

}  // namespace jitd::conformance
