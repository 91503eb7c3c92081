#include "devices/interpreter/interpreter_device.h"

#include <unistd.h>

#include <map>
#include <string>

#include "jit/ir/verifier.h"

namespace jitd::devices {

namespace {

// "stablehlo.add @12:5": a profile row's or trace event's name for `op`.
std::string OpLabel(const ir::Op& op) {
  std::string label(op.name());
  if (op.loc().line != 0) label += " @" + op.loc().ToString();
  return label;
}

class InterpreterExecutable final : public Executable {
 public:
  InterpreterExecutable(std::shared_ptr<const ir::Module> module, const ir::Function* entry)
      : module_(std::move(module)), entry_(entry), size_bytes_(sizeof(*this) + ModuleBytes(*module_)) {}

  StatusOr<std::vector<eval::RuntimeValue>> Execute(
      std::span<const eval::RuntimeValue> args, const ExecuteOptions& options) const override {
    eval::EvalOptions eval_options = ToEvalOptions(options);
    std::map<const ir::Op*, std::pair<int64_t, int64_t>> rows;
    if (options.profile) eval_options.op_profile = &rows;
    eval::EvalOptions::OpTrace spans;
    if (options.trace) {
      spans.max_spans = options.trace->max_events > options.trace->events.size()
                            ? options.trace->max_events - options.trace->events.size()
                            : 0;
      eval_options.op_trace = &spans;
    }
    auto results = eval::EvaluateFunction(
        *module_, *entry_, std::vector<eval::RuntimeValue>(args.begin(), args.end()), eval_options);
    if (options.profile) {
      // One row per op name and call site.
      std::map<std::string, std::pair<int64_t, int64_t>> by_name;
      for (const auto& [op, row] : rows) {
        auto& sum = by_name[OpLabel(*op)];
        sum.first += row.first;
        sum.second += row.second;
      }
      options.profile->clear();
      for (const auto& [name, row] : by_name) {
        options.profile->push_back({name, row.first, row.second});
      }
      SortProfile(*options.profile);
    }
    if (options.trace) {
      const uint64_t thread = static_cast<uint64_t>(::gettid());
      std::map<const ir::Op*, std::string> labels;
      for (const eval::EvalOptions::OpSpan& span : spans.spans) {
        auto [it, added] = labels.try_emplace(span.op);
        if (added) it->second = OpLabel(*span.op);
        options.trace->events.push_back({it->second, span.start_nanos, span.duration_nanos, thread});
      }
      options.trace->dropped += spans.dropped;
    }
    return results;
  }
  const std::vector<ir::Type>& argument_types() const override { return entry_->arg_types(); }
  const std::vector<ir::Type>& result_types() const override { return entry_->result_types(); }
  // The verified module is all it keeps.
  uint64_t size_bytes() const override { return size_bytes_; }

 private:
  std::shared_ptr<const ir::Module> module_;
  const ir::Function* entry_;
  uint64_t size_bytes_;
};

}  // namespace

StatusOr<std::unique_ptr<Executable>> InterpreterDevice::Compile(
    std::shared_ptr<const ir::Module> module, const CompileOptions&) const {
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*module));
  const ir::Function* entry = module->EntryFunction();
  if (!entry) {
    return InvalidArgument("module has no entry function (@main, or exactly one public function)");
  }
  return std::unique_ptr<Executable>(new InterpreterExecutable(std::move(module), entry));
}

}  // namespace jitd::devices
