// The interpreter device: jit/eval's reference evaluator behind the device
// interface. Compile = verify + find the entry function; Execute = evaluate
// (with a per-op profile when ExecuteOptions::profile asks for one).
// The golden model every compiled device is tested against.
#ifndef JITD_DEVICES_INTERPRETER_INTERPRETER_DEVICE_H_
#define JITD_DEVICES_INTERPRETER_INTERPRETER_DEVICE_H_

#include "devices/device.h"

namespace jitd::devices {

class InterpreterDevice final : public Device {
 public:
  using Device::Compile;
  std::string_view name() const override { return "interpreter"; }
  // Has no dumps of its own (CompileProgram's pass dumps are all there is).
  StatusOr<std::unique_ptr<Executable>> Compile(std::shared_ptr<const ir::Module> module,
                                                const CompileOptions& options) const override;
};

}  // namespace jitd::devices

#endif  // JITD_DEVICES_INTERPRETER_INTERPRETER_DEVICE_H_
