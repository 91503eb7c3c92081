#include "tools/run_command.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <span>
#include <sstream>
#include <thread>

#include "base/duration_text.h"
#include "base/status.h"
#include "daemon/server.h"
#include "daemon/value_tree.h"
#include "daemon/wire_types.h"
#include "devices/compile.h"
#include "devices/device.h"
#include "jit/eval/eval.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/frontend/parser.h"
#include "jit/ir/module.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/refine_shapes.h"
#include "libclient/client.h"
#include "devices/cpu/cpu_device.h"
#include "libclient/launcher.h"
#include "tools/conformance/checks.h"
#include "tools/cli_util.h"
#include "tools/npy.h"
#include "tools/progress_line.h"
#include "tools/random_inputs.h"
#include "tools/trace_json.h"

namespace jitd::tools {

namespace {

constexpr int kExitProgram = kExitInvalidProgram;

// Tensors up to this many elements print in full; larger ones as a summary.
constexpr int64_t kPrintInFull = 100;
// Values shown in a summary.
constexpr int64_t kSummaryValues = 8;

using Clock = std::chrono::steady_clock;

void PrintError(const std::string& message) {
  std::fputs(("jitd run: " + message + "\n").c_str(), stderr);
}

StatusOr<std::string> ReadText(const std::string& path) {
  if (path == "-") {
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument("cannot read '" + path + "': is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read '" + path + "': " + std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return InvalidArgument("cannot read '" + path + "'");
  return text;
}

// SplitMix64: distinct, well-mixed seeds per argument from one --seed.
uint64_t MixSeed(uint64_t seed, uint64_t index) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * (index + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// How an argument is named in messages: "argument 1 (%arg1)".
std::string ArgLabel(const ir::Function& entry, size_t i) {
  std::string label = "argument " + std::to_string(i);
  if (entry.entry() && i < entry.entry()->num_args() && !entry.entry()->arg(i)->name().empty()) {
    label += " (%" + entry.entry()->arg(i)->name() + ")";
  }
  return label;
}

// Resolves NAME of --input NAME=FILE: an index, "%name" or "name".
StatusOr<size_t> ResolveArgName(const ir::Function& entry, const std::string& name) {
  const size_t num_args = entry.arg_types().size();
  if (!name.empty() && std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    size_t index = 0;
    auto [ptr, ec] = std::from_chars(name.data(), name.data() + name.size(), index);
    if (ec == std::errc() && index < num_args) return index;
    return InvalidArgument("--input " + name + ": the entry function @" + entry.name() +
                           " has " + std::to_string(num_args) + " argument(s)" +
                           (num_args ? " (0.." + std::to_string(num_args - 1) + ")" : ""));
  }
  std::string bare = name.size() > 1 && name[0] == '%' ? name.substr(1) : name;
  std::string known;
  for (size_t i = 0; entry.entry() && i < entry.entry()->num_args(); ++i) {
    const std::string& arg_name = entry.entry()->arg(i)->name();
    if (!arg_name.empty() && arg_name == bare) return i;
    if (i < 6) known += (known.empty() ? "" : ", ") + std::string("%") + arg_name;
    if (i == 6) known += ", ...";
  }
  return InvalidArgument("--input " + name + ": @" + entry.name() + " has no argument named '" +
                         name + "'" + (known.empty() ? "" : " (it has " + known + ")") +
                         "; name an argument by its index 0, 1, ... or its %name");
}

// numpy-like text for one element.
std::string FormatElement(const ir::Literal& literal, int64_t i) {
  const ir::DType dtype = literal.dtype();
  auto format_real = [dtype](double v) {
    if (std::isnan(v)) return std::string("nan");
    if (std::isinf(v)) return std::string(v < 0 ? "-inf" : "inf");
    char buffer[64];
    auto result = dtype == ir::DType::kF64 || dtype == ir::DType::kC128
                      ? std::to_chars(buffer, buffer + sizeof(buffer), v)
                      : std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(v));
    std::string s(buffer, result.ptr);
    if (s.find_first_of(".e") == std::string::npos) s += '.';
    return s;
  };
  if (ir::IsPred(dtype)) return literal.GetPred(i) ? "True" : "False";
  if (ir::IsSignedInt(dtype)) return std::to_string(literal.GetInt(i));
  if (ir::IsUnsignedInt(dtype)) return std::to_string(literal.GetUInt(i));
  if (ir::IsComplex(dtype)) {
    std::complex<double> c = literal.GetComplex(i);
    std::string imag = format_real(c.imag());
    if (imag[0] != '-') imag = "+" + imag;
    return format_real(c.real()) + imag + "j";
  }
  return format_real(literal.GetDouble(i));
}

// Nested brackets as numpy prints arrays: "[[1 2]\n [3 4]]".
void AppendNested(const std::vector<std::string>& cells, const std::vector<int64_t>& dims,
                  size_t axis, int64_t& next, size_t width, bool left_align, std::string& out) {
  if (axis == dims.size()) {
    const std::string& s = cells[static_cast<size_t>(next++)];
    std::string pad(width - s.size(), ' ');
    out += left_align ? s + pad : pad + s;
    return;
  }
  out += '[';
  for (int64_t k = 0; k < dims[axis]; ++k) {
    if (k > 0) {
      if (axis + 1 == dims.size()) {
        out += ' ';
      } else {
        out += std::string(dims.size() - axis - 1, '\n');
        out += std::string(axis + 1, ' ');
      }
    }
    AppendNested(cells, dims, axis + 1, next, width, left_align, out);
  }
  out += ']';
}

std::string FormatLiteral(const ir::Literal& literal) {
  const int64_t n = literal.num_elements();
  const ir::Type& type = literal.type();
  if (n <= kPrintInFull) {
    std::vector<std::string> cells;
    size_t width = 0;
    for (int64_t i = 0; i < n; ++i) {
      cells.push_back(FormatElement(literal, i));
      width = std::max(width, cells.back().size());
    }
    if (type.rank() == 0) return cells[0];
    const bool left_align = ir::IsFloat(literal.dtype()) || ir::IsComplex(literal.dtype());
    std::string out;
    int64_t next = 0;
    AppendNested(cells, type.dims(), 0, next, width, left_align, out);
    return out;
  }
  // Summary: range and mean of the finite values, then the first few.
  std::ostringstream out;
  out << "  ";
  const ir::DType dtype = literal.dtype();
  if (ir::IsPred(dtype)) {
    int64_t count = 0;
    for (int64_t i = 0; i < n; ++i) count += literal.GetPred(i) ? 1 : 0;
    out << "true: " << count << " of " << n;
  } else if (ir::IsComplex(dtype)) {
    std::complex<double> sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += literal.GetComplex(i);
    out << "mean " << sum.real() / static_cast<double>(n) << (sum.imag() < 0 ? "" : "+")
        << sum.imag() / static_cast<double>(n) << "j";
  } else {
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t finite = 0, nans = 0, infs = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double v = ir::IsSignedInt(dtype)     ? static_cast<double>(literal.GetInt(i))
                       : ir::IsUnsignedInt(dtype) ? static_cast<double>(literal.GetUInt(i))
                                                  : literal.GetDouble(i);
      if (std::isnan(v)) {
        ++nans;
      } else if (std::isinf(v)) {
        ++infs;
      } else {
        lo = std::min(lo, v);
        hi = std::max(hi, v);
        sum += v;
        ++finite;
      }
    }
    out.precision(7);
    if (finite > 0) {
      out << "min " << lo << "  max " << hi << "  mean " << sum / static_cast<double>(finite);
    } else {
      out << "no finite values";
    }
    if (nans || infs) out << "  (nan: " << nans << ", inf: " << infs << ")";
  }
  out << "\n  first " << kSummaryValues << " of " << n << ": [";
  for (int64_t i = 0; i < kSummaryValues; ++i) out << (i ? " " : "") << FormatElement(literal, i);
  out << " ...]";
  return out.str();
}

void PrintValue(const std::string& label, const eval::RuntimeValue& value) {
  if (value.is_tuple()) {
    std::printf("%s: %s\n", label.c_str(), value.type().ToString().c_str());
    for (size_t i = 0; i < value.elements().size(); ++i) {
      PrintValue(label + "." + std::to_string(i), value.elements()[i]);
    }
    return;
  }
  if (value.is_token()) {
    std::printf("%s: !stablehlo.token\n", label.c_str());
    return;
  }
  const ir::Literal& literal = value.literal();
  std::string text = FormatLiteral(literal);
  const bool multiline = text.find('\n') != std::string::npos || literal.num_elements() > kPrintInFull;
  std::printf("%s: %s%s%s\n", label.c_str(), literal.type().ToString().c_str(),
              multiline ? "\n" : " = ", text.c_str());
}

std::string TypeWithNumpy(const ir::Type& type) {
  std::string s = type.ToString();
  if (!type.is_tensor()) return s;
  StatusOr<std::string> descr = NpyDescr(type.dtype());
  s += " (numpy shape (";
  for (size_t i = 0; i < type.dims().size(); ++i) {
    s += (i ? ", " : "") + std::to_string(type.dims()[i]);
  }
  if (type.dims().size() == 1) s += ',';
  s += "), dtype " + (descr.ok() ? *descr : "none") + ")";
  return s;
}

// The concrete argument types for a program with dynamic shapes: those of
// --arg-shapes, else each argument's declared type when static and the
// shape of its --input file when not. Errors are usage errors.
StatusOr<std::vector<ir::Type>> ConcreteArgumentTypes(const RunArgs& args,
                                                      const ir::Function& entry) {
  if (!args.arg_shapes.empty()) {
    StatusOr<std::vector<ir::Type>> types = passes::ParseArgumentTypes(args.arg_shapes);
    if (!types.ok()) return InvalidArgument("--arg-shapes: " + types.status().message());
    if (types->size() != entry.arg_types().size()) {
      return InvalidArgument("--arg-shapes gives " + std::to_string(types->size()) +
                             " types, @" + entry.name() + " takes " +
                             std::to_string(entry.arg_types().size()) + " arguments");
    }
    return types;
  }
  std::vector<ir::Type> types = entry.arg_types();
  for (const std::string& spec : args.inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) continue;  // reported later
    StatusOr<size_t> index = ResolveArgName(entry, spec.substr(0, eq));
    if (!index.ok() || !types[*index].is_dynamic()) continue;
    JITD_ASSIGN_OR_RETURN(ir::Literal literal, ReadNpyFile(spec.substr(eq + 1)));
    types[*index] = literal.type();
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (types[i].is_dynamic()) {
      return InvalidArgument(ArgLabel(entry, i) + " of @" + entry.name() + " has the dynamic type " +
                             types[i].ToString() +
                             ": give its shape with --input NAME=FILE.npy or all argument "
                             "types with --arg-shapes");
    }
  }
  return types;
}

// Builds the argument list from --input files and, with --random-inputs,
// seeded random values for the rest, shaped by how the program uses each
// (tools/random_inputs.h). Errors are usage errors.
StatusOr<std::vector<eval::RuntimeValue>> BuildArguments(const RunArgs& args,
                                                         const ir::Module& module,
                                                         const ir::Function& entry) {
  const std::vector<ir::Type>& types = entry.arg_types();
  std::vector<std::optional<eval::RuntimeValue>> values(types.size());
  for (const std::string& spec : args.inputs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
      return InvalidArgument("--input " + spec + ": expected NAME=FILE.npy");
    }
    const std::string name = spec.substr(0, eq);
    const std::string file = spec.substr(eq + 1);
    JITD_ASSIGN_OR_RETURN(size_t index, ResolveArgName(entry, name));
    if (values[index]) {
      return InvalidArgument("--input " + spec + ": " + ArgLabel(entry, index) +
                             " is given more than once");
    }
    const ir::Type& want = types[index];
    if (!want.is_tensor()) {
      return InvalidArgument("--input " + spec + ": " + ArgLabel(entry, index) + " is a " +
                             want.ToString() + ", which no .npy file holds");
    }
    JITD_ASSIGN_OR_RETURN(ir::Literal literal, ReadNpyFile(file));
    if (literal.type() != want) {
      return InvalidArgument(file + ": " + ArgLabel(entry, index) + " of @" + entry.name() +
                             " is " + TypeWithNumpy(want) + ", the file holds " +
                             TypeWithNumpy(literal.type()));
    }
    values[index] = eval::RuntimeValue(std::move(literal));
  }
  std::vector<eval::RuntimeValue> out;
  std::string missing;
  int num_missing = 0;
  std::vector<ArgumentRole> roles;
  if (args.random_inputs) roles = InferArgumentRoles(module, entry);
  for (size_t i = 0; i < types.size(); ++i) {
    if (values[i]) {
      out.push_back(std::move(*values[i]));
      continue;
    }
    if (types[i].is_token()) {
      out.push_back(eval::RuntimeValue::Token());
      continue;
    }
    if (args.random_inputs) {
      const ArgumentRole role = i < roles.size() ? roles[i] : ArgumentRole{};
      StatusOr<eval::RuntimeValue> v = RandomArgument(types[i], role, MixSeed(args.seed, i));
      if (!v.ok()) {
        return InvalidArgument("cannot make a random " + ArgLabel(entry, i) + ": " +
                               v.status().message());
      }
      out.push_back(std::move(v).value());
      continue;
    }
    if (++num_missing <= 5) {
      missing += "\n  " + ArgLabel(entry, i) + ": " + TypeWithNumpy(types[i]);
    }
  }
  if (num_missing > 0) {
    if (num_missing > 5) missing += "\n  ... and " + std::to_string(num_missing - 5) + " more";
    return InvalidArgument("@" + entry.name() + " needs " + std::to_string(num_missing) +
                           " more argument(s); give each with --input NAME=FILE.npy or "
                           "fill them with --random-inputs:" + missing);
  }
  return out;
}

// Checks that every result can be written, then writes result_<i>.npy.
Status WriteOutputs(const std::string& dir, const std::vector<eval::RuntimeValue>& results) {
  std::vector<std::vector<uint8_t>> encoded;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].is_tensor()) {
      return InvalidArgument("--output: result " + std::to_string(i) + " is a " +
                             results[i].type().ToString() +
                             "; tuples and tokens have no .npy form, nothing was written");
    }
    StatusOr<std::vector<uint8_t>> bytes = SerializeNpy(results[i].literal());
    if (!bytes.ok()) {
      return InvalidArgument("--output: result " + std::to_string(i) + ": " +
                             bytes.status().message() + "; nothing was written");
    }
    encoded.push_back(std::move(bytes).value());
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    return InvalidArgument("--output: cannot create directory '" + dir + "'" +
                           (ec ? ": " + ec.message() : ""));
  }
  for (size_t i = 0; i < encoded.size(); ++i) {
    const std::string path =
        (std::filesystem::path(dir) / ("result_" + std::to_string(i) + ".npy")).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(encoded[i].data()),
              static_cast<std::streamsize>(encoded[i].size()));
    out.close();
    if (!out) return InvalidArgument("--output: cannot write '" + path + "'");
  }
  return Status::Ok();
}

double Millis(Clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, RunArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Compile a StableHLO program and run it once, printing its results");
  cmd->footer(
      "Arguments of the entry function (@main, or the only public function) come\n"
      "from .npy files (--input NAME=FILE.npy; NAME is the index 0, 1, ... or the\n"
      "argument's %name) or, with --random-inputs, from seeded random data;\n"
      "dense_resource<...> placeholders are filled with seeded random data.\n"
      "Small results print in full, large ones as a summary; --output=DIR writes\n"
      "result_0.npy, result_1.npy, ...\n"
      "Self-checks at the top level of the entry function (custom_call @check.*,\n"
      "as in the conformance corpus) are compared after the run and reported.\n"
      "By default the program goes through the jitd daemon at --socket (else\n"
      "$JITD_SOCKET, else $XDG_RUNTIME_DIR/jitd/jitd.sock, else\n"
      "/tmp/jitd-$UID/jitd.sock), which compiles it once and caches it for every\n"
      "process; when none answers, one is started in the background (`jitd serve\n"
      "--socket PATH`, logging to jitd.log and writing its pid to jitd.pid beside\n"
      "the socket) unless --no-start-daemon. --in-process compiles and runs here.\n"
      "On a terminal, steps that take over a second (compile, random inputs,\n"
      "upload, execute) show a progress line on stderr, erased when they end.\n"
      "Exit status: 0 ran, 1 invalid program or failure while running, 2 usage\n"
      "or I/O error.");
  std::string devices;
  for (const std::string& n : devices::DeviceNames()) devices += (devices.empty() ? "" : ", ") + n;
  cmd->add_option("FILE", args.path, "StableHLO text file (.mlir), or - for standard input")
      ->type_name("PATH")
      ->required();
  cmd->add_option("--device", args.device, "Device to run on (" + devices + ")")
      ->capture_default_str();
  cmd->add_flag("--in-process", args.in_process,
                "Compile and run in this process instead of through the daemon");
  cmd->add_option("--socket", args.socket_path, "The daemon's Unix socket")->type_name("PATH");
  cmd->add_flag("--no-start-daemon", args.no_start_daemon,
                "Fail (exit 2) instead of starting a daemon when none answers");
  cmd->add_option("--module", args.module_index,
                  "Which module of a file of several (`// -----`), counting from 0")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-i,--input", args.inputs, "An argument from a .npy file (repeatable)")
      ->type_name("NAME=FILE")
      ->allow_extra_args(false);
  cmd->add_option("--arg-shapes", args.arg_shapes,
                  "The argument types to compile a program with dynamic shapes (`?`) for, "
                  "e.g. \"tensor<8x4xf32>, tensor<4x3xf32>\" (default: the shapes of the "
                  "--input files)")
      ->type_name("TYPES");
  cmd->add_flag("--random-inputs", args.random_inputs,
                "Fill the arguments not given by --input with seeded random data, shaped by "
                "use: weights of a dot or convolution scaled by their fan-in, indices of a "
                "gather or dynamic_slice within the indexed extent, other integers 0 or 1, "
                "other floats in [-1, 1)");
  cmd->add_option("--seed", args.seed, "Seed for --random-inputs")->capture_default_str();
  cmd->add_option("--resource-seed", args.resource_seed,
                  "Seed for the data of dense_resource placeholders")
      ->capture_default_str();
  cmd->add_option("--resource-fill", args.resource_fill,
                  "Distribution of that data: weights (kernels scaled by fan-in, vectors in "
                  "[0.5, 1.5): valid batch-norm variances) or uniform ([-1, 1))")
      ->check(CLI::IsMember({"uniform", "weights"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", args.output_dir, "Write result_<i>.npy files to DIR")
      ->type_name("DIR");
  cmd->add_option("--dump-dir", args.dump_dir,
                  "Write the compile's dumps to DIR: the program before (000-input.mlir) and "
                  "after each compiler pass, optimized.mlir, and the device's LLVM IR and "
                  "assembly (a compile for dumps always compiles)")
      ->type_name("DIR");
  cmd->add_option("--pipeline", args.pipeline,
                  "With --in-process: the compiler passes to run (`default`, PASS,PASS,..., or "
                  "`none`) instead of the device's own")
      ->type_name("PASSES");
  cmd->add_flag("--profile", args.profile,
                "Print where the execution's time went: per op (interpreter) or per kernel / "
                "library call (cpu) and call site (FILE:line:col of its op), with its share of "
                "the execute's time");
  cmd->add_option("--trace", args.trace_path,
                  "Write a timeline to FILE.json (Chrome's Trace Event Format; open it in "
                  "ui.perfetto.dev or chrome://tracing): parse, each compiler pass, the "
                  "device's compile, and every op / kernel / library call of each execute "
                  "with its call site. Compiles and runs in this process, as --in-process")
      ->type_name("FILE.json");
  cmd->add_option("--timeout", args.timeout_seconds, "Seconds the execution may take (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--repeat", args.repeat,
                  "Execute N times and print the execute time's min, p50 and p90 (the results "
                  "shown are the last run's)")
      ->type_name("N")
      ->check(CLI::Range(1, 1000000))
      ->capture_default_str();
  cmd->add_option("--warmup", args.warmup, "Untimed executes before the --repeat ones")
      ->type_name("K")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  return cmd;
}

namespace {

// What every form of `jitd run` prints after execution: the results, the
// program's checks, `timing_line`, then --output. Returns the exit status.
int Report(const RunArgs& args, std::vector<eval::RuntimeValue>& results, size_t num_results,
           const std::vector<conformance::HoistedCheck>& checks, const std::string& timing_line) {
  for (size_t i = 0; i < num_results; ++i) {
    PrintValue("result " + std::to_string(i), results[i]);
  }
  if (AllFloatResultsNonFinite(std::vector<eval::RuntimeValue>(
          results.begin(), results.begin() + static_cast<std::ptrdiff_t>(num_results)))) {
    std::fprintf(stderr, "%s\n", NonFiniteHint(args.random_inputs).c_str());
  }
  int failed_checks = 0;
  for (const conformance::HoistedCheck& check : checks) {
    Status compared = conformance::CompareHoisted(check, results);
    if (!compared.ok()) {
      ++failed_checks;
      std::printf("check failed: %s\n", compared.message().c_str());
    }
  }
  if (!checks.empty()) {
    std::printf("checks: %zu passed, %d failed\n", checks.size() - failed_checks, failed_checks);
  }
  std::printf("%s\n", timing_line.c_str());
  std::fflush(stdout);
  results.resize(num_results);  // the check operands are not outputs
  if (!args.output_dir.empty()) {
    Status written = WriteOutputs(args.output_dir, results);
    if (!written.ok()) {
      PrintError(written.message());
      return kExitUsageOrIo;
    }
  }
  if (failed_checks > 0) {
    PrintError(DisplayName(args.path) + ": " + std::to_string(failed_checks) +
               " check(s) in the program failed");
    return kExitProgram;
  }
  return kExitOk;
}

// A DEADLINE_EXCEEDED message that names the limit that fired: the
// daemon's own (its message names max_execute_time or max_compile_time),
// the client library's wait for a reply, or --timeout.
std::string TimeoutMessage(const RunArgs& args, const Status& status) {
  const std::string& message = status.message();
  if (status.code() != StatusCode::kDeadlineExceeded) return message;
  if (message.find("max_execute_time") != std::string::npos) {
    return std::string("stopped by the daemon's execution time limit (jitd serve "
                       "--max-execute-time-ms") +
           (args.timeout_seconds > 0 ? ", shorter than --timeout" : "") + "): " + message;
  }
  if (message.find("max_compile_time") != std::string::npos) {
    return "stopped by the daemon's compile time limit (jitd serve --max-compile-time-ms): " +
           message;
  }
  if (message.find("no reply from the jitd daemon") != std::string::npos) {
    return "gave up waiting for the daemon's reply: " + message;
  }
  if (args.timeout_seconds > 0) {
    char limit[32];
    std::snprintf(limit, sizeof(limit), "%g", args.timeout_seconds);
    return std::string("timed out after ") + limit + " s (--timeout): " + message;
  }
  return "timed out (a deadline of the daemon; no --timeout was given): " + message;
}

std::string MicrosText(double micros) { return DurationText(micros); }

// "repeat: 10 executes (after 2 warmup), execute min 8.00 us, p50 9.00 us,
// p90 12.0 us[; round trip ...]" for --repeat; "" for one execute.
std::string RepeatLine(const RunArgs& args, std::vector<double> execute_us,
                       std::vector<double> round_trip_us) {
  if (execute_us.size() < 2) return "";
  auto stats = [](std::vector<double>& v) {
    std::sort(v.begin(), v.end());
    auto at = [&](double q) {
      return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
    };
    return "min " + MicrosText(v.front()) + ", p50 " + MicrosText(at(0.5)) + ", p90 " +
           MicrosText(at(0.9));
  };
  std::string line = "repeat: " + std::to_string(execute_us.size()) + " executes";
  if (args.warmup > 0) line += " (after " + std::to_string(args.warmup) + " warmup)";
  line += ", execute " + stats(execute_us);
  if (!round_trip_us.empty()) line += "; round trip " + stats(round_trip_us);
  return line;
}

// The profile rows, slowest first, to stderr: each row's time, its share of
// the execute's `total_nanos`, its runs, what ran, and where (`where` and
// the row's line:col: the op's place in the program text).
void PrintProfile(std::span<const devices::ProfileEntry> rows, uint64_t omitted,
                  int64_t total_nanos, const std::string& where) {
  constexpr size_t kShown = 40;
  std::fprintf(stderr,
               "profile: %zu rows, slowest first; share of the execute's %s (rows of "
               "while/if/case/call include their bodies' rows):\n",
               rows.size() + static_cast<size_t>(omitted),
               MicrosText(static_cast<double>(total_nanos) / 1e3).c_str());
  size_t what_width = 4;
  for (size_t i = 0; i < rows.size() && i < kShown; ++i) {
    what_width = std::max(what_width, devices::SplitCallSite(rows[i].name).first.size());
  }
  what_width = std::min<size_t>(what_width, 60);
  std::fprintf(stderr, "  %12s  %6s  %-8s  %-*s  %s\n", "time", "share", "runs",
               static_cast<int>(what_width), "what", "where");
  for (size_t i = 0; i < rows.size() && i < kShown; ++i) {
    const auto [what, site] = devices::SplitCallSite(rows[i].name);
    const double share =
        total_nanos > 0 ? 100.0 * static_cast<double>(rows[i].nanos) / static_cast<double>(total_nanos)
                        : 0.0;
    const std::string runs = "x" + std::to_string(rows[i].count);
    std::fprintf(stderr, "  %12s  %5.1f%%  %-8s  %-*.*s  %s\n",
                 MicrosText(static_cast<double>(rows[i].nanos) / 1e3).c_str(), share, runs.c_str(),
                 static_cast<int>(what_width), static_cast<int>(what.size()), what.data(),
                 site.empty() ? "-" : (where + std::string(site)).c_str());
  }
  const uint64_t more = omitted + (rows.size() > kShown ? rows.size() - kShown : 0);
  if (more > 0) std::fprintf(stderr, "  (%llu more rows)\n", static_cast<unsigned long long>(more));
}

Status WriteDumpFiles(const std::string& dir, const std::vector<devices::CompileDump>& dumps) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument("--dump-dir '" + dir + "': " + ec.message());
  for (const devices::CompileDump& dump : dumps) {
    const std::string path = dir + "/" + dump.name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << dump.text;
    out.close();
    if (!out) return InvalidArgument("--dump-dir: cannot write '" + path + "'");
  }
  return Status::Ok();
}

int64_t SteadyNanos(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// --trace: the spans of one `jitd run --in-process` (parse, the compile's
// steps, each execute and what ran in it) written as FILE.json.
Status WriteTrace(const RunArgs& args, const std::string& device_name,
                  Clock::time_point parse_start, Clock::duration parse_time,
                  const std::vector<devices::CompileStep>& steps,
                  const std::vector<std::pair<Clock::time_point, Clock::duration>>& executes,
                  const devices::ExecutionTrace& execution) {
  const uint64_t tid = static_cast<uint64_t>(::gettid());
  TraceDocument document;
  document.pid = static_cast<uint64_t>(::getpid());
  document.process_name = "jitd run " + DisplayName(args.path) + " (device " + device_name + ")";
  document.thread_names = {{tid, "compile and execute"}};
  document.dropped = execution.dropped;
  document.spans.push_back({"parse+verify", "compile", SteadyNanos(parse_start),
                            std::chrono::duration_cast<std::chrono::nanoseconds>(parse_time).count(),
                            tid, {{"file", DisplayName(args.path)}}});
  for (const devices::CompileStep& step : steps) {
    document.spans.push_back({step.name, "compile", step.start_nanos, step.duration_nanos, tid,
                              {{"step", step.name.rfind("device compile", 0) == 0 || step.name == "verify"
                                            ? step.name
                                            : "pass " + step.name}}});
  }
  for (size_t i = 0; i < executes.size(); ++i) {
    const bool warmup = static_cast<int>(i) < args.warmup;
    document.spans.push_back(
        {"execute" + (executes.size() > 1 ? " " + std::to_string(i + 1) : std::string()) +
             (warmup ? " (warmup)" : ""),
         "execute", SteadyNanos(executes[i].first),
         std::chrono::duration_cast<std::chrono::nanoseconds>(executes[i].second).count(), tid,
         {}});
  }
  for (const devices::TraceEvent& event : execution.events) {
    const auto [what, site] = devices::SplitCallSite(event.name);
    TraceSpan span{std::string(what),
                   what.rfind("kernel ", 0) == 0    ? "kernel"
                   : what.rfind("library ", 0) == 0 ? "library"
                                                    : "op",
                   event.start_nanos, event.duration_nanos, event.thread, {}};
    if (!site.empty()) span.args.push_back({"call_site", DisplayName(args.path) + ":" + std::string(site)});
    span.args.push_back({"op", event.name});
    document.spans.push_back(std::move(span));
  }
  std::ofstream out(args.trace_path, std::ios::binary | std::ios::trunc);
  out << ChromeTraceJson(document);
  out.close();
  if (!out) return InvalidArgument("--trace: cannot write '" + args.trace_path + "'");
  std::fprintf(stderr,
               "trace: %zu spans%s in %s (open it in https://ui.perfetto.dev or "
               "chrome://tracing)\n",
               document.spans.size(),
               execution.dropped > 0
                   ? (" (" + std::to_string(execution.dropped) + " more not recorded)").c_str()
                   : "",
               args.trace_path.c_str());
  return Status::Ok();
}

int RunInProcess(const RunArgs& args, const devices::Device& device,
                 const std::shared_ptr<ir::Module>& module, const ir::Function& entry,
                 size_t num_results, const std::vector<conformance::HoistedCheck>& checks,
                 Clock::time_point parse_start, Clock::duration parse_time) {
  ProgressLine progress(ProgressLine::ForStderr());
  // Arguments first: the compiler's passes rewrite the module in place.
  if (args.random_inputs) progress.Start("making random inputs");
  StatusOr<std::vector<eval::RuntimeValue>> arguments = BuildArguments(args, *module, entry);
  progress.Stop();
  if (!arguments.ok()) {
    PrintError(arguments.status().message());
    return kExitUsageOrIo;
  }
  const bool tracing = !args.trace_path.empty();

  // 2. Compile.
  progress.Start("compiling " + DisplayName(args.path) + " on " + std::string(device.name()));
  const Clock::time_point compile_start = Clock::now();
  std::vector<devices::CompileDump> dumps;
  std::vector<devices::CompileStep> steps;
  devices::ProgramCompileOptions compile_options;
  if (!args.dump_dir.empty()) compile_options.dumps = &dumps;
  if (tracing) compile_options.steps = &steps;
  if (args.pipeline == "none") {
    compile_options.pipeline = "";
  } else if (!args.pipeline.empty()) {
    compile_options.pipeline = args.pipeline;
  }
  StatusOr<std::unique_ptr<devices::Executable>> executable =
      devices::CompileProgram(device, module, compile_options);
  progress.Stop();
  if (!executable.ok()) {
    PrintError(WithFileName(args.path, executable.status().message()));
    return kExitProgram;
  }
  const Clock::duration compile_time = Clock::now() - compile_start;
  if (!args.dump_dir.empty()) {
    if (Status written = WriteDumpFiles(args.dump_dir, dumps); !written.ok()) {
      PrintError(written.message());
      return kExitUsageOrIo;
    }
    std::fprintf(stderr, "dumps: %zu files in %s\n", dumps.size(), args.dump_dir.c_str());
  }
  if (const auto* cpu = dynamic_cast<const cpu::CpuExecutable*>(executable->get())) {
    const cpu::CpuProgramStats& s = cpu->stats();
    std::fprintf(stderr,
                 "cpu: %lld ops in %lld kernels (%lld distinct), %lld library ops, %lld fallback ops, %lld control "
                 "ops; arena %lld bytes (%lld without reuse); plan+codegen %.1f ms, LLVM %.1f ms\n",
                 static_cast<long long>(s.kernel_ops), static_cast<long long>(s.kernels),
                 static_cast<long long>(s.unique_kernels), static_cast<long long>(s.library_ops), static_cast<long long>(s.fallback_ops),
                 static_cast<long long>(s.control_ops), static_cast<long long>(s.arena_bytes),
                 static_cast<long long>(s.unshared_bytes), s.codegen_seconds * 1e3,
                 s.llvm_seconds * 1e3);
    for (const auto& [name, count] : s.fallback_by_op) {
      std::fprintf(stderr, "cpu: fallback %s x%lld\n", name.c_str(), static_cast<long long>(count));
    }
  }

  // 3. Execute.
  devices::ExecuteOptions options;
  options.resource_fill_seed = args.resource_seed;
  StatusOr<eval::RandomFill> fill = eval::ParseRandomFill(args.resource_fill);
  if (!fill.ok()) {
    PrintError(fill.status().message());
    return kExitUsageOrIo;
  }
  options.resource_fill = *fill;
  std::vector<devices::ProfileEntry> profile;
  if (args.profile) options.profile = &profile;
  devices::ExecutionTrace execution_trace;
  std::vector<std::pair<Clock::time_point, Clock::duration>> executes;  // --trace
  if (tracing) options.trace = &execution_trace;
  StatusOr<std::vector<eval::RuntimeValue>> results = std::vector<eval::RuntimeValue>{};
  Clock::duration execute_time{};
  std::vector<double> repeat_us;  // --repeat: every timed execute
  const int runs = args.warmup + args.repeat;
  for (int run = 0; run < runs; ++run) {
    profile.clear();
    progress.Start(runs > 1 ? "executing (" + std::to_string(run + 1) + " of " +
                                  std::to_string(runs) + ")"
                            : std::string("executing"));
    const Clock::time_point execute_start = Clock::now();
    if (args.timeout_seconds > 0) {
      options.deadline = execute_start + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(args.timeout_seconds));
    }
    results = (*executable)->Execute(*arguments, options);
    execute_time = Clock::now() - execute_start;
    progress.Stop();
    if (tracing) executes.emplace_back(execute_start, execute_time);
    if (!results.ok()) {
      PrintError(WithFileName(args.path, TimeoutMessage(args, results.status())));
      return kExitProgram;
    }
    if (run >= args.warmup) {
      repeat_us.push_back(std::chrono::duration<double, std::micro>(execute_time).count());
    }
  }
  if (args.profile) {
    PrintProfile(profile, 0, std::chrono::duration_cast<std::chrono::nanoseconds>(execute_time).count(),
                 DisplayName(args.path) + ":");
  }
  if (tracing) {
    if (Status written = WriteTrace(args, std::string(device.name()), parse_start, parse_time,
                                    steps, executes, execution_trace);
        !written.ok()) {
      PrintError(written.message());
      return kExitUsageOrIo;
    }
  }

  // 5. Report: the program's own results, then its checks.
  const double execute_us = std::chrono::duration<double, std::micro>(execute_time).count();
  char timing[256];
  std::snprintf(timing, sizeof(timing),
                "timing: parse+verify %s, compile %s, execute %s (device %s, in process)",
                MicrosText(Millis(parse_time) * 1e3).c_str(),
                MicrosText(Millis(compile_time) * 1e3).c_str(), MicrosText(execute_us).c_str(),
                std::string(device.name()).c_str());
  std::string timing_line = timing;
  if (std::string repeat = RepeatLine(args, repeat_us, {}); !repeat.empty()) {
    timing_line += "\n" + repeat;
  }
  return Report(args, *results, num_results, checks, timing_line);
}

// Connects to the daemon at `socket_path`; when none answers and `start`,
// starts this jitd binary as one (libclient/launcher.h) and waits for it.
StatusOr<std::unique_ptr<client::Client>> ConnectOrStart(const std::string& socket_path,
                                                        bool start) {
  client::ClientOptions options;
  options.client_name = "jitd run";
  client::LaunchOptions launch;
  launch.start = start;
  std::string self(4096, '\0');
  const ssize_t n = ::readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n > 0) {
    self.resize(static_cast<size_t>(n));
    launch.jitd_binary = self;
  }
  StatusOr<std::unique_ptr<client::Client>> client =
      client::ConnectOrStart(socket_path, options, launch);
  if (!start && !client.ok() && client.status().code() == StatusCode::kUnavailable) {
    return Status(StatusCode::kUnavailable,
                  client.status().message() +
                      " (--no-start-daemon: none was started; or run with --in-process)");
  }
  return client;
}

int RunThroughDaemon(const RunArgs& args, const std::string& source_text,
                     const ir::Module& module, const ir::Function& entry,
                     size_t num_results, const std::vector<conformance::HoistedCheck>& checks,
                     Clock::duration parse_time) {
  ProgressLine progress(ProgressLine::ForStderr());
  // Arguments first: a usage error should not start a daemon.
  if (args.random_inputs) progress.Start("making random inputs");
  StatusOr<std::vector<eval::RuntimeValue>> arguments = BuildArguments(args, module, entry);
  progress.Stop();
  if (!arguments.ok()) {
    PrintError(arguments.status().message());
    return kExitUsageOrIo;
  }
  client::CompileOptions compile_options;
  compile_options.device = args.device;
  compile_options.dump_dir = args.dump_dir;
  compile_options.profile = args.profile;
  // Tuples and tokens travel as their tensor leaves (daemon/value_tree.h);
  // the daemon knows the tree from the program, so only plain tensor
  // arguments are declared.
  bool structured_arguments = false;
  for (const eval::RuntimeValue& value : *arguments) structured_arguments |= !value.is_tensor();
  const std::vector<const ir::Literal*> argument_leaves = daemon::ValueLeaves(*arguments);
  for (size_t i = 0; i < arguments->size() && !structured_arguments; ++i) {
    const ir::Type& type = (*arguments)[i].literal().type();
    compile_options.argument_shapes.push_back(
        client::TensorShape{daemon::ToWireElementType(type.dtype()), type.dims()});
  }

  const std::string socket_path =
      args.socket_path.empty() ? daemon::DefaultSocketPath() : args.socket_path;
  StatusOr<std::unique_ptr<client::Client>> connected =
      ConnectOrStart(socket_path, !args.no_start_daemon);
  if (!connected.ok()) {
    PrintError(connected.status().message());
    return kExitUsageOrIo;
  }
  client::Client& client = **connected;

  // 2. Compile: the module as rewritten (checks hoisted), printed back.
  // Without hoisted checks the module is the source as written: send that,
  // so that the daemon's messages name the file's own lines.
  const std::string text = checks.empty() ? source_text : ir::PrintModule(module);
  progress.Start("compiling " + DisplayName(args.path) + " on " + args.device + " (daemon)");
  const Clock::time_point compile_start = Clock::now();
  StatusOr<client::Executable> executable = client.Compile(text, compile_options);
  const Clock::duration compile_round_trip = Clock::now() - compile_start;
  progress.Stop();
  if (!executable.ok()) {
    const bool program_error = executable.status().code() == StatusCode::kInvalidArgument ||
                               executable.status().code() == StatusCode::kUnimplemented;
    PrintError(WithFileName(args.path,
                            executable.status().code() == StatusCode::kDeadlineExceeded
                                ? TimeoutMessage(args, executable.status())
                                : executable.status().ToString()));
    return program_error ? kExitProgram : kExitUsageOrIo;
  }

  // 3. Arguments into shared memory, result buffers of the result shapes.
  uint64_t argument_bytes = 0;
  for (const ir::Literal* leaf : argument_leaves) argument_bytes += leaf->bytes().size();
  char upload[96];
  std::snprintf(upload, sizeof upload, "uploading %zu arguments (%.1f MB)", argument_leaves.size(),
                static_cast<double>(argument_bytes) / 1e6);
  progress.Start(upload);
  std::vector<uint64_t> argument_handles;
  auto leaf_label = [&](size_t i) {
    return structured_arguments ? "argument leaf " + std::to_string(i) : ArgLabel(entry, i);
  };
  for (size_t i = 0; i < argument_leaves.size(); ++i) {
    const ir::Literal& literal = *argument_leaves[i];
    const ir::Type& type = literal.type();
    StatusOr<client::Buffer> buffer = client.AllocateBuffer(
        client::TensorShape{daemon::ToWireElementType(type.dtype()), type.dims()});
    if (!buffer.ok()) {
      progress.Stop();
      PrintError(leaf_label(i) + ": " + buffer.status().ToString());
      return kExitUsageOrIo;
    }
    if (buffer->data.size() != literal.bytes().size()) {
      progress.Stop();
      PrintError(leaf_label(i) + ": the daemon's buffer holds " +
                 std::to_string(buffer->data.size()) + " bytes, the value " +
                 std::to_string(literal.bytes().size()));
      return kExitInternal;
    }
    if (!literal.bytes().empty()) {
      std::memcpy(buffer->data.data(), literal.bytes().data(), literal.bytes().size());
    }
    argument_handles.push_back(buffer->handle);
  }
  progress.Stop();
  std::vector<client::Buffer> result_buffers;
  std::vector<uint64_t> result_handles;
  for (const client::TensorShape& shape : executable->results) {
    StatusOr<client::Buffer> buffer = client.AllocateBuffer(shape);
    if (!buffer.ok()) {
      PrintError("result " + std::to_string(result_buffers.size()) + " (" + shape.ToString() +
                 "): " + buffer.status().ToString());
      return kExitUsageOrIo;
    }
    result_handles.push_back(buffer->handle);
    result_buffers.push_back(std::move(buffer).value());
  }

  // 4. Execute.
  const auto deadline = std::chrono::microseconds(
      static_cast<int64_t>(std::ceil(args.timeout_seconds * 1e6)));
  client::ExecuteOptions execute_options;
  execute_options.deadline = deadline;
  // The same dense_resource fill as --in-process for the same seed.
  execute_options.resource_seed = args.resource_seed;
  execute_options.resource_fill = args.resource_fill == "uniform"
                                      ? client::ExecuteOptions::ResourceFill::kUniform
                                      : client::ExecuteOptions::ResourceFill::kWeights;
  StatusOr<client::Timing> timing = client::Timing{};
  Clock::duration round_trip{};
  std::vector<double> repeat_us, repeat_round_trip_us;  // --repeat: every timed execute
  const int runs = args.warmup + args.repeat;
  for (int run = 0; run < runs; ++run) {
    progress.Start(runs > 1 ? "executing (" + std::to_string(run + 1) + " of " +
                                  std::to_string(runs) + ", daemon)"
                            : std::string("executing (daemon)"));
    const Clock::time_point execute_start = Clock::now();
    timing = client.Execute(executable->handle, argument_handles, result_handles, execute_options);
    round_trip = Clock::now() - execute_start;
    progress.Stop();
    if (!timing.ok()) {
      PrintError(WithFileName(args.path, TimeoutMessage(args, timing.status())));
      return kExitProgram;
    }
    if (run >= args.warmup) {
      repeat_us.push_back(static_cast<double>(timing->execute_micros));
      repeat_round_trip_us.push_back(std::chrono::duration<double, std::micro>(round_trip).count());
    }
  }
  if (!args.dump_dir.empty()) {
    std::fprintf(stderr, "dumps: %zu files in %s\n", executable->dumps.size(),
                 args.dump_dir.c_str());
  }
  if (args.profile) {
    std::vector<devices::ProfileEntry> rows;
    for (const client::Timing::ProfileRow& row : timing->profile) {
      rows.push_back({row.name, static_cast<int64_t>(row.count), static_cast<int64_t>(row.nanos)});
    }
    // Call sites are lines of the text sent: the file's own, unless its
    // checks were hoisted (then the program was printed again).
    PrintProfile(rows, timing->profile_omitted,
                 static_cast<int64_t>(timing->execute_micros) * 1000,
                 checks.empty() ? DisplayName(args.path) + ":" : std::string("(program as sent):"));
  }
  std::vector<eval::RuntimeValue> results;
  for (const client::Buffer& buffer : result_buffers) {
    std::optional<ir::DType> dtype = daemon::FromWireElementType(buffer.shape.element_type);
    if (!dtype) {
      PrintError("the daemon returned a result of an unknown element type");
      return kExitInternal;
    }
    StatusOr<ir::Literal> literal =
        ir::Literal::FromBytes(ir::Type::Tensor(*dtype, buffer.shape.dims),
                               std::vector<uint8_t>(buffer.data.begin(), buffer.data.end()));
    if (!literal.ok()) {
      PrintError("result " + std::to_string(results.size()) + ": " + literal.status().message());
      return kExitInternal;
    }
    results.emplace_back(std::move(literal).value());
  }
  if (!executable->result_structure.empty()) {
    // Tuples and tokens: rebuild the results' trees from their leaves.
    std::vector<ir::Type> leaf_types;
    std::vector<ir::Literal> leaves;
    for (eval::RuntimeValue& leaf : results) {
      leaf_types.push_back(leaf.literal().type());
      leaves.push_back(std::move(leaf.literal()));
    }
    StatusOr<std::vector<ir::Type>> types =
        daemon::TypesFromStructure(executable->result_structure, leaf_types);
    StatusOr<std::vector<eval::RuntimeValue>> values =
        types.ok() ? daemon::AssembleValues(*types, std::move(leaves))
                   : StatusOr<std::vector<eval::RuntimeValue>>(types.status());
    if (!values.ok()) {
      PrintError("the daemon's results: " + values.status().message());
      return kExitInternal;
    }
    results = std::move(values).value();
  }

  // 5. Report.
  char line[512];
  std::snprintf(line, sizeof(line),
                "timing: parse+verify %s, compile %s %s (round trip %s), execute %s "
                "(round trip %s) (device %s, daemon %s)",
                MicrosText(Millis(parse_time) * 1e3).c_str(),
                executable->cache_hit ? "hit" : "miss",
                MicrosText(static_cast<double>(executable->compile_micros)).c_str(),
                MicrosText(Millis(compile_round_trip) * 1e3).c_str(),
                MicrosText(static_cast<double>(timing->execute_micros)).c_str(),
                MicrosText(std::chrono::duration<double, std::micro>(round_trip).count()).c_str(),
                args.device.c_str(), socket_path.c_str());
  std::string timing_line = line;
  if (!executable->cache_hit && !executable->explain.empty()) {
    timing_line += "\ncache miss: " + executable->explain;
  }
  if (std::string repeat = RepeatLine(args, repeat_us, repeat_round_trip_us); !repeat.empty()) {
    timing_line += "\n" + repeat;
  }
  return Report(args, results, num_results, checks, timing_line);
}

}  // namespace

int RunRun(const RunArgs& given) {
  RunArgs args = given;
  // The timeline needs the compile's steps and every span of the execution,
  // which the daemon does not send back: --trace runs here.
  if (!args.trace_path.empty()) args.in_process = true;
  if (!args.pipeline.empty() && !args.in_process) {
    PrintError("--pipeline needs --in-process (the daemon runs each device's own pipeline)");
    return kExitUsageOrIo;
  }
  std::unique_ptr<devices::Device> device;  // --in-process only
  if (args.in_process) {
    StatusOr<std::unique_ptr<devices::Device>> created = devices::CreateDevice(args.device);
    if (!created.ok()) {
      PrintError(created.status().message());
      return kExitUsageOrIo;
    }
    device = std::move(created).value();
    if (args.pipeline != "none") {
      if (Status s = devices::CheckPipeline(*device, args.pipeline); !s.ok()) {
        PrintError("--pipeline: " + s.message());
        return kExitUsageOrIo;
      }
    }
  }
  // 1. Read, pick the module, parse, verify.
  const Clock::time_point parse_start = Clock::now();
  StatusOr<std::string> text = ReadText(args.path);
  if (!text.ok()) {
    PrintError(text.status().message());
    return kExitUsageOrIo;
  }
  std::vector<frontend::ModuleText> pieces = frontend::SplitProgram(*text);
  size_t module_index = 0;
  if (args.module_index >= 0) {
    if (static_cast<size_t>(args.module_index) >= pieces.size()) {
      PrintError(DisplayName(args.path) + " has " + std::to_string(pieces.size()) +
                 " module(s); --module=" + std::to_string(args.module_index) + " is out of range");
      return kExitUsageOrIo;
    }
    module_index = static_cast<size_t>(args.module_index);
  } else if (pieces.size() > 1) {
    PrintError(DisplayName(args.path) + " has " + std::to_string(pieces.size()) +
               " modules (separated by `// -----`); pick one with --module=N (0.." +
               std::to_string(pieces.size() - 1) + ")");
    return kExitUsageOrIo;
  }
  StatusOr<std::unique_ptr<ir::Module>> parsed = frontend::ParseProgram(pieces[module_index]);
  if (!parsed.ok()) {
    std::fputs((WithFileName(args.path, parsed.status().message()) + "\n").c_str(), stderr);
    return kExitProgram;
  }
  std::shared_ptr<ir::Module> mutable_module = std::move(parsed).value();
  Status verified = ir::VerifyModule(*mutable_module);
  if (!verified.ok()) {
    std::fputs((WithFileName(args.path, verified.message()) + "\n").c_str(), stderr);
    return kExitProgram;
  }
  ir::Function* entry = mutable_module->EntryFunction();
  if (!entry) {
    PrintError(DisplayName(args.path) +
               ": no entry function (@main, or exactly one public function)");
    return kExitProgram;
  }
  // A program with dynamic shapes (`?`) runs refined for concrete argument
  // types (jit/passes/refine_shapes.h); the daemon gets the refined program.
  bool refined = false;
  if (!args.arg_shapes.empty() || passes::HasDynamicShapes(*mutable_module)) {
    StatusOr<std::vector<ir::Type>> types = ConcreteArgumentTypes(args, *entry);
    if (!types.ok()) {
      PrintError(WithFileName(args.path, types.status().message()));
      return kExitUsageOrIo;
    }
    if (Status s = passes::RefineShapes(*mutable_module, *types); !s.ok()) {
      PrintError(WithFileName(args.path, s.message()));
      return kExitProgram;
    }
    entry = mutable_module->EntryFunction();
    refined = true;
  }
  const size_t num_results = entry->result_types().size();
  // The program's self-checks (as in examples/softmax.mlir) run on the
  // host after execution, the same rewrite `jitd conformance` does.
  StatusOr<std::vector<conformance::HoistedCheck>> checks = conformance::HoistChecks(*entry);
  if (!checks.ok()) {
    PrintError(WithFileName(args.path, checks.status().message()));
    return kExitProgram;
  }
  const Clock::duration parse_time = Clock::now() - parse_start;

  if (args.in_process) {
    return RunInProcess(args, *device, mutable_module, *entry, num_results, *checks, parse_start,
                        parse_time);
  }
  std::shared_ptr<const ir::Module> module = std::move(mutable_module);
  // The source padded with newlines so its lines keep their numbers.
  const int first_line = pieces[module_index].first_line;
  const std::string source_text =
      refined ? ir::PrintModule(*module)
              : std::string(static_cast<size_t>(std::max(first_line - 1, 0)), '\n') +
                    std::string(pieces[module_index].text);
  return RunThroughDaemon(args, source_text, *module, *entry, num_results, *checks, parse_time);
}

}  // namespace jitd::tools
