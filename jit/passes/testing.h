// Helpers for the jit/passes unit tests only (not part of jitd_passes): parse
// a module, run passes with verification after each, count ops, and check
// that the rewritten program computes the same bits as the original on the
// reference evaluator.
#ifndef JITD_JIT_PASSES_TESTING_H_
#define JITD_JIT_PASSES_TESTING_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"
#include "jit/passes/pass_manager.h"
#include "jit/passes/passes.h"

namespace jitd::passes::testing {

using frontend::testing::ParseVerifiedOrFail;

// Runs `spec` ("cse", "inline,dce", "default") on `module` with
// verification after every pass; fails the test on an error.
inline void RunPipeline(ir::Module& module, std::string_view spec,
                        const PipelineOptions& options = {}) {
  PassManager manager;
  manager.set_verify_each(true);
  Status s = AddPipeline(manager, spec, options);
  ASSERT_TRUE(s.ok()) << s.ToString();
  s = manager.Run(module);
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << ir::PrintModule(module);
}

// How many ops named `op_name` ("stablehlo.add") the module holds.
inline int CountOpsNamed(const ir::Module& module, std::string_view op_name) {
  int n = 0;
  for (const auto& fn : module.functions()) {
    ir::WalkOps(static_cast<const ir::Region&>(fn->body()), [&](const ir::Op& op) {
      n += op.name() == op_name;
    });
  }
  return n;
}

// Evaluates the entry function on `args`; fails the test on an error.
inline std::vector<eval::RuntimeValue> Evaluate(const ir::Module& module,
                                                const std::vector<eval::RuntimeValue>& args) {
  auto r = eval::EvaluateFunction(module, *module.EntryFunction(), args);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? std::move(r).value() : std::vector<eval::RuntimeValue>{};
}

// Parses `text`, runs `spec`, and checks that the entry function's results
// are bit-identical before and after on `args`. Returns the rewritten module.
inline std::unique_ptr<ir::Module> RunAndCompare(std::string_view text, std::string_view spec,
                                                 const std::vector<eval::RuntimeValue>& args = {},
                                                 const PipelineOptions& options = {}) {
  auto before = ParseVerifiedOrFail(text);
  auto after = ParseVerifiedOrFail(text);
  if (!before || !after) return nullptr;
  RunPipeline(*after, spec, options);
  std::vector<eval::RuntimeValue> want = Evaluate(*before, args);
  std::vector<eval::RuntimeValue> got = Evaluate(*after, args);
  EXPECT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    EXPECT_TRUE(want[i].is_tensor() && got[i].is_tensor());
    if (want[i].is_tensor() && got[i].is_tensor()) {
      EXPECT_TRUE(want[i].literal() == got[i].literal())
          << "result " << i << " differs after '" << spec << "'\n"
          << ir::PrintModule(*after);
    }
  }
  // The rewritten module prints and parses back.
  auto reparsed = frontend::ParseModule(ir::PrintModule(*after));
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().ToString();
  return after;
}

// Element values that tests feed through folds and decompositions.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// tensor<dims x f32> and tensor<dims x i32>.
inline ir::Type F32(std::vector<int64_t> dims) {
  return ir::Type::Tensor(ir::DType::kF32, std::move(dims));
}
inline ir::Type S32(std::vector<int64_t> dims) {
  return ir::Type::Tensor(ir::DType::kS32, std::move(dims));
}

// A literal of `type` with the given element values (converted per dtype).
inline eval::RuntimeValue Tensor(const ir::Type& type, const std::vector<double>& values) {
  ir::Literal lit = *ir::Literal::Create(type);
  for (size_t i = 0; i < values.size() && static_cast<int64_t>(i) < lit.num_elements(); ++i) {
    if (ir::IsInteger(type.dtype()) || type.dtype() == ir::DType::kPred) {
      lit.SetInt(static_cast<int64_t>(i), static_cast<int64_t>(values[i]));
    } else {
      lit.SetDouble(static_cast<int64_t>(i), values[i]);
    }
  }
  return eval::RuntimeValue(std::move(lit));
}

}  // namespace jitd::passes::testing

#endif  // JITD_JIT_PASSES_TESTING_H_
