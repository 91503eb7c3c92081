// The verifier: the StableHLO spec's type and shape rules for every op of
// jit/ir, plus the structure around them (terminators, region signatures,
// calls matching their callees, functions returning what they declare).
#ifndef JITD_JIT_IR_VERIFIER_H_
#define JITD_JIT_IR_VERIFIER_H_

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::ir {

// OK, or INVALID_ARGUMENT with a message "line:col: 'op.name' op <rule>"
// for the first op found breaking a rule (line:col of the op in the source).
Status VerifyModule(const Module& module);

}  // namespace jitd::ir

#endif  // JITD_JIT_IR_VERIFIER_H_
