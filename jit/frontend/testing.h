// Helpers for unit tests only (not part of jitd_frontend): a module from
// StableHLO text, failing the calling test when the text is not a program.
#ifndef JITD_JIT_FRONTEND_TESTING_H_
#define JITD_JIT_FRONTEND_TESTING_H_

#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <utility>

#include "jit/frontend/parser.h"
#include "jit/ir/module.h"
#include "jit/ir/verifier.h"

namespace jitd::frontend::testing {

// The module `text` parses to; null (and a test failure naming the parse
// error) when it does not parse.
inline std::unique_ptr<ir::Module> ParseOrFail(std::string_view text) {
  auto m = ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : nullptr;
}

// ParseOrFail, and the module must also pass ir::VerifyModule.
inline std::unique_ptr<ir::Module> ParseVerifiedOrFail(std::string_view text) {
  std::unique_ptr<ir::Module> m = ParseOrFail(text);
  if (m == nullptr) return nullptr;
  const Status verified = ir::VerifyModule(*m);
  EXPECT_TRUE(verified.ok()) << verified.ToString();
  return verified.ok() ? std::move(m) : nullptr;
}

}  // namespace jitd::frontend::testing

#endif  // JITD_JIT_FRONTEND_TESTING_H_
