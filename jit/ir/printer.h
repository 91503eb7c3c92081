// The printer: IR -> StableHLO text, in the pretty form stablehlo-opt uses
// where an op has one and the generic form otherwise. Its output parses back
// to an equal module, and printing that prints the same text (a fixpoint).
#ifndef JITD_JIT_IR_PRINTER_H_
#define JITD_JIT_IR_PRINTER_H_

#include <string>

#include "jit/ir/module.h"

namespace jitd::ir {

struct PrintOptions {
  // Print every op in the generic `"dialect.op"(...) <{...}> : (...) -> ...`
  // form instead of its pretty form.
  bool generic = false;
};

std::string PrintModule(const Module& module, const PrintOptions& options = {});
// One op in generic or pretty form, for messages and dumps (value names are
// the op's own; nested regions included).
std::string PrintOp(const Op& op, const PrintOptions& options = {});

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_PRINTER_H_
