#include "devices/interpreter/interpreter_device.h"

#include "jit/ir/verifier.h"

namespace jitd::devices {

namespace {

class InterpreterExecutable final : public Executable {
 public:
  InterpreterExecutable(std::shared_ptr<const ir::Module> module, const ir::Function* entry)
      : module_(std::move(module)), entry_(entry), size_bytes_(sizeof(*this) + ModuleBytes(*module_)) {}

  StatusOr<std::vector<eval::RuntimeValue>> Execute(
      std::span<const eval::RuntimeValue> args, const ExecuteOptions& options) const override {
    eval::EvalOptions eval_options = ToEvalOptions(options);
    std::map<std::string, std::pair<int64_t, int64_t>> rows;
    if (options.profile) eval_options.op_profile = &rows;
    auto results = eval::EvaluateFunction(
        *module_, *entry_, std::vector<eval::RuntimeValue>(args.begin(), args.end()), eval_options);
    if (options.profile) {
      options.profile->clear();
      for (const auto& [name, row] : rows) options.profile->push_back({name, row.first, row.second});
      SortProfile(*options.profile);
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
