#include "devices/interpreter/interpreter_device.h"

#include "jit/ir/verifier.h"

namespace jitd::devices {

namespace {

class InterpreterExecutable final : public Executable {
 public:
  InterpreterExecutable(std::shared_ptr<const ir::Module> module, const ir::Function* entry)
      : module_(std::move(module)), entry_(entry) {}

  StatusOr<std::vector<eval::RuntimeValue>> Execute(
      std::span<const eval::RuntimeValue> args, const ExecuteOptions& options) const override {
    return eval::EvaluateFunction(*module_, *entry_,
                                  std::vector<eval::RuntimeValue>(args.begin(), args.end()),
                                  ToEvalOptions(options));
  }
  const std::vector<ir::Type>& argument_types() const override { return entry_->arg_types(); }
  const std::vector<ir::Type>& result_types() const override { return entry_->result_types(); }

 private:
  std::shared_ptr<const ir::Module> module_;
  const ir::Function* entry_;
};

}  // namespace

StatusOr<std::unique_ptr<Executable>> InterpreterDevice::Compile(
    std::shared_ptr<const ir::Module> module) const {
  JITD_RETURN_IF_ERROR(ir::VerifyModule(*module));
  const ir::Function* entry = module->EntryFunction();
  if (!entry) {
    return InvalidArgument("module has no entry function (@main, or exactly one public function)");
  }
  return std::unique_ptr<Executable>(new InterpreterExecutable(std::move(module), entry));
}

}  // namespace jitd::devices
