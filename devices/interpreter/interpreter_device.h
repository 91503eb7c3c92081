// The interpreter device: jit/eval's reference evaluator behind the device
// interface. Compile = verify + find the entry function; Execute = evaluate.
// The golden model every compiled device is tested against.
#ifndef JITD_DEVICES_INTERPRETER_INTERPRETER_DEVICE_H_
#define JITD_DEVICES_INTERPRETER_INTERPRETER_DEVICE_H_

#include "devices/device.h"

namespace jitd::devices {

class InterpreterDevice final : public Device {
 public:
  std::string_view name() const override { return "interpreter"; }
  StatusOr<std::unique_ptr<Executable>> Compile(
      std::shared_ptr<const ir::Module> module) const override;
};

}  // namespace jitd::devices

#endif  // JITD_DEVICES_INTERPRETER_INTERPRETER_DEVICE_H_
