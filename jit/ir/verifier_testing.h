// Helpers for the jit/ir unit tests only (not part of jitd_ir): verify a
// function body written as StableHLO text and read the verifier's message.
#ifndef JITD_JIT_IR_VERIFIER_TESTING_H_
#define JITD_JIT_IR_VERIFIER_TESTING_H_

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "jit/frontend/parser.h"
#include "jit/ir/verifier.h"

namespace jitd::ir::testing {

// The verifier's message for `body` inside `func.func @main(args)` (followed
// by `extra_functions`); empty when it verifies. Text that does not parse
// fails the test and gives "<parse error>".
inline std::string VerifyError(std::string_view body, std::string_view args = "",
                               std::string_view extra_functions = "") {
  const std::string text = "func.func @main(" + std::string(args) + ") {\n" + std::string(body) +
                           "\n  return\n}\n" + std::string(extra_functions);
  auto module = frontend::ParseModule(text);
  EXPECT_TRUE(module.ok()) << module.status().ToString() << "\n" << text;
  if (!module.ok()) return "<parse error>";
  Status s = VerifyModule(**module);
  return s.ok() ? "" : s.message();
}

// Expects VerifyError(body, args, extra_functions) to contain `want`.
inline void ExpectVerifyError(std::string_view body, std::string_view args, std::string_view want,
                              std::string_view extra_functions = "") {
  const std::string got = VerifyError(body, args, extra_functions);
  EXPECT_NE(got.find(want), std::string::npos) << "got: " << got << "\nwant: " << want;
}

}  // namespace jitd::ir::testing

#endif  // JITD_JIT_IR_VERIFIER_TESTING_H_
