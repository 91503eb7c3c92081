// The conformance checks (check.expect_eq, expect_almost_eq, expect_close and
// their _const forms) as host-side comparisons, with the defaults of both
// spellings (see ../shared/conformance/README.md).
#ifndef JITD_TOOLS_CONFORMANCE_CHECKS_H_
#define JITD_TOOLS_CONFORMANCE_CHECKS_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "jit/eval/eval.h"
#include "jit/ir/literal.h"
#include "jit/ir/module.h"

namespace jitd::conformance {

struct CheckSpec {
  // kSerializedEq: check.expect_serialized_eq %v, probe_id = "id", iter = N
  // -- %v equals the value interpreter.probe "id" saw the N-th time it ran
  // (0-based; the reference interpreter reads it back from the file the
  // probe wrote; the runner keeps the probed values in memory).
  enum class Kind { kEq, kAlmostEq, kClose, kSerializedEq };
  Kind kind = Kind::kEq;
  std::string name;           // "check.expect_close" as written, for messages
  ir::Location loc;
  double tolerance = 1e-3;    // kAlmostEq: absolute, per component
  uint64_t min_ulp = 0;       // kClose: min_ulp <= distance <= max_ulp
  uint64_t max_ulp = 3;
  std::optional<ir::Literal> expected;  // the _const forms' inline value
  std::string probe_id;       // kSerializedEq
  int64_t iteration = 0;      // kSerializedEq: which of the probe's values
};

// What interpreter.probe ops saw during one run: each probe_id's values in
// the order the op ran. Thread-safe (processes of run_parallel share one).
class ProbeLog {
 public:
  Status Record(const std::string& probe_id, const ir::Literal& value);
  // The `iteration`-th value of `probe_id`, or NOT_FOUND saying how many there are.
  StatusOr<ir::Literal> Get(const std::string& probe_id, int64_t iteration) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::vector<ir::Literal>> values_;
};

// Recognizes a check op (custom_call @check.* or a check.* op) and fills
// `spec` with its semantics and defaults. nullopt for any other op;
// UNIMPLEMENTED for a check this runner does not know.
std::optional<StatusOr<CheckSpec>> ParseCheck(const ir::Op& op);

// ULP distance between two values of one float dtype given as bit patterns
// (see the README): 0 if bitwise equal or both NaN; the magnitude difference
// when both are finite (the sum across signs); UINT64_MAX otherwise.
uint64_t UlpDistance(uint64_t a_bits, uint64_t b_bits, ir::DType dtype);

// OK when `actual` meets `spec` against `expected`; otherwise a message
// naming the first failing element: index, actual, expected, and the ULP
// distance or tolerance.
Status Compare(const CheckSpec& spec, const ir::Literal& actual, const ir::Literal& expected);

// A check moved out of a program by HoistChecks: its operands are results
// `actual_result` (and `expected_result`) of the rewritten function.
struct HoistedCheck {
  CheckSpec spec;
  size_t actual_result = 0;
  std::optional<size_t> expected_result;  // absent for the _const forms
};

// Removes every check at the top level of `fn`'s body and appends its
// operands to `fn`'s results, so that any device can run the program and
// the comparison happens on the host. Checks elsewhere are left in place.
StatusOr<std::vector<HoistedCheck>> HoistChecks(ir::Function& fn);

// Compares one hoisted check against the rewritten function's `results`
// (and, for expect_serialized_eq, the values the run's probes recorded).
Status CompareHoisted(const HoistedCheck& check, const std::vector<eval::RuntimeValue>& results,
                      const ProbeLog* probes = nullptr);

}  // namespace jitd::conformance

#endif  // JITD_TOOLS_CONFORMANCE_CHECKS_H_
