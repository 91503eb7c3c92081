// Helpers for the jit/eval unit tests only (not part of jitd_eval): run a
// StableHLO program's entry function through the parser, the verifier and
// the evaluator, and read result literals back as vectors.
#ifndef JITD_JIT_EVAL_TESTING_H_
#define JITD_JIT_EVAL_TESTING_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "jit/eval/eval.h"
#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd::eval::testing {

// Parses and verifies `text`, then evaluates its entry function on `args`.
inline StatusOr<std::vector<RuntimeValue>> EvalText(std::string_view text,
                                                    std::vector<RuntimeValue> args = {},
                                                    const EvalOptions& options = {}) {
  auto m = frontend::ParseModule(text);
  if (!m.ok()) return m.status();
  JITD_RETURN_IF_ERROR(ir::VerifyModule(**m));
  return EvaluateFunction(**m, *(*m)->EntryFunction(), std::move(args), options);
}

// All results of `text`'s entry function; fails the test on any error.
inline std::vector<ir::Literal> Results(std::string_view text) {
  auto r = EvalText(text);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  std::vector<ir::Literal> out;
  if (r.ok()) {
    for (const RuntimeValue& v : *r) out.push_back(v.literal());
  }
  return out;
}

// The one tensor result of `text`'s entry function, or the error (an
// INTERNAL one when it has another number or kind of results).
inline StatusOr<ir::Literal> TensorResult(std::string_view text) {
  JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> results, EvalText(text));
  if (results.size() != 1 || !results[0].is_tensor()) {
    return Internal("expected one tensor result");
  }
  return results[0].literal();
}

// Result 0 of `text`'s entry function (empty on error, failing the test).
inline ir::Literal First(std::string_view text) {
  auto r = Results(text);
  return r.empty() ? ir::Literal() : r[0];
}

// A literal's elements, converted.
inline std::vector<int64_t> Ints(const ir::Literal& lit) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetInt(i));
  return out;
}

inline std::vector<uint64_t> UInts(const ir::Literal& lit) {
  std::vector<uint64_t> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetUInt(i));
  return out;
}

inline std::vector<double> Doubles(const ir::Literal& lit) {
  std::vector<double> out;
  for (int64_t i = 0; i < lit.num_elements(); ++i) out.push_back(lit.GetDouble(i));
  return out;
}

}  // namespace jitd::eval::testing

#endif  // JITD_JIT_EVAL_TESTING_H_
