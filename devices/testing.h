// Helpers for the devices unit tests only (not part of jitd_devices).
#ifndef JITD_DEVICES_TESTING_H_
#define JITD_DEVICES_TESTING_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/ir/literal.h"

namespace jitd::devices::testing {

// One argument: a tensor<n x f32> holding 0, step, 2 step, ...
inline std::vector<eval::RuntimeValue> F32RampArgs(int64_t n, double step) {
  ir::Literal arg = *ir::Literal::Create(ir::Type::Tensor(ir::DType::kF32, {n}));
  for (int64_t i = 0; i < n; ++i) arg.SetDouble(i, step * static_cast<double>(i));
  std::vector<eval::RuntimeValue> args;
  args.emplace_back(std::move(arg));
  return args;
}

}  // namespace jitd::devices::testing

#endif  // JITD_DEVICES_TESTING_H_
