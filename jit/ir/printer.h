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
  // Print the canonical form, for cache keys (jit/cache): what the program
  // means, not how it was spelled. Values are numbered in order (%0, %1, ...;
  // source names and result-group spelling ignored), the module's name is
  // left out, and private functions are named @_jitd_fN in module order
  // (calls follow) unless some function already uses that prefix. Public
  // function names stay: clients call them. Locations are never printed;
  // attributes print sorted, as always. The output still parses.
  bool canonical = false;
};

std::string PrintModule(const Module& module, const PrintOptions& options = {});
// One op in generic or pretty form, for messages and dumps (value names are
// the op's own; nested regions included).
std::string PrintOp(const Op& op, const PrintOptions& options = {});

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_PRINTER_H_
