// Test-only helpers (not part of jitd_cpu_runtime): run one op of a module
// both through jit/eval (the golden model) and through its LibraryOp on the
// same operand bytes, and compare the results.
//
// How the interpreter's inputs and outputs of one op are captured: the
// entry block is cut after the op and given a new return of the op's
// operands and results, so evaluating the function yields both. Works for
// any op of the entry block whose operands the block computes.
#ifndef JITD_DEVICES_CPU_RUNTIME_DIFFERENTIAL_TESTING_H_
#define JITD_DEVICES_CPU_RUNTIME_DIFFERENTIAL_TESTING_H_

#include <cmath>
#include <complex>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "devices/cpu/runtime/library_op.h"
#include "jit/eval/eval.h"
#include "jit/ir/literal.h"
#include "jit/ir/module.h"

namespace jitd::cpu::testing {

// How close the library's results must be to the interpreter's.
//   relative == 0: bitwise equal (NaNs match NaNs of any payload).
//   relative > 0: integers and booleans still exactly; each float (or
//   complex component) within relative * max(1, largest |expected| of the
//   tensor), NaN matching NaN and infinities equal. Scaling by the largest
//   magnitude is what a reordered sum of products guarantees: BLAS's
//   blocked summation of K products of values in [-1, 1) is off by at most
//   ~K ulps of the largest partial sum, not of each (possibly cancelled)
//   element.
struct Tolerance {
  double relative = 0;
};

inline std::string CompareLiterals(const ir::Literal& expected, const ir::Literal& actual,
                                   Tolerance tolerance) {
  if (expected.type() != actual.type()) {
    return "type " + actual.type().ToString() + " != " + expected.type().ToString();
  }
  const ir::DType t = expected.dtype();
  const bool floating = ir::IsFloat(t) || ir::IsComplex(t);
  const int64_t n = expected.num_elements();
  double scale = 1;
  if (floating) {
    for (int64_t i = 0; i < n; ++i) {
      const std::complex<double> e = expected.GetComplex(i);
      if (std::isfinite(e.real())) scale = std::max(scale, std::abs(e.real()));
      if (std::isfinite(e.imag())) scale = std::max(scale, std::abs(e.imag()));
    }
  }
  auto close = [&](double e, double a) {
    if (std::isnan(e) || std::isnan(a)) return std::isnan(e) && std::isnan(a);
    if (tolerance.relative == 0 || std::isinf(e) || std::isinf(a)) {
      return std::memcmp(&e, &a, sizeof(double)) == 0 || (e == a && e != 0);
    }
    return std::abs(e - a) <= tolerance.relative * scale;
  };
  for (int64_t i = 0; i < n; ++i) {
    bool ok;
    std::string e_text, a_text;
    if (!floating) {
      ok = std::memcmp(expected.element_ptr(i), actual.element_ptr(i),
                       static_cast<size_t>(ir::StorageBytes(t))) == 0;
      e_text = std::to_string(expected.GetInt(i));
      a_text = std::to_string(actual.GetInt(i));
    } else {
      const std::complex<double> e = expected.GetComplex(i), a = actual.GetComplex(i);
      ok = close(e.real(), a.real()) && close(e.imag(), a.imag());
      if (tolerance.relative == 0 && ok && !std::isnan(e.real()) && !std::isnan(e.imag())) {
        ok = std::memcmp(expected.element_ptr(i), actual.element_ptr(i),
                         static_cast<size_t>(ir::StorageBytes(t))) == 0;
      }
      char buf[128];
      std::snprintf(buf, sizeof(buf), "(%.17g, %.17g)", e.real(), e.imag());
      e_text = buf;
      std::snprintf(buf, sizeof(buf), "(%.17g, %.17g)", a.real(), a.imag());
      a_text = buf;
    }
    if (!ok) {
      return "element " + std::to_string(i) + " of " + expected.type().ToString() + ": got " +
             a_text + ", interpreter " + e_text;
    }
  }
  return "";
}

// Runs `op` through its LibraryOp on `operands`. NOT_FOUND when the library
// has no implementation for it.
inline StatusOr<std::vector<ir::Literal>> RunLibrary(const ir::Op& op,
                                                     const std::vector<ir::Literal>& operands,
                                                     const LibraryOpOptions& options = {},
                                                     const RunContext& context = {}) {
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<LibraryOp> library, CreateLibraryOp(op, options));
  if (!library) return NotFound("no library op for '" + std::string(op.name()) + "'");
  std::vector<ir::Literal> results;
  std::vector<const void*> in;
  std::vector<void*> out;
  for (const ir::Literal& l : operands) in.push_back(l.bytes().data());
  for (size_t i = 0; i < op.num_results(); ++i) {
    // Garbage, not zeros, so a result element the op forgets shows up.
    JITD_ASSIGN_OR_RETURN(ir::Literal r, ir::Literal::Create(op.result(i)->type()));
    if (!r.mutable_bytes().empty()) {
      std::memset(r.mutable_bytes().data(), 0xA5, r.mutable_bytes().size());
    }
    results.push_back(std::move(r));
  }
  for (ir::Literal& r : results) out.push_back(r.mutable_bytes().data());
  JITD_RETURN_IF_ERROR(library->Run(in, out, context));
  return results;
}

// What one differential run found.
struct Differential {
  std::string op_name;
  std::vector<ir::Literal> operands, expected, actual;
  std::string mismatch;  // empty when every result matched
};

// Cuts `function`'s entry block after op `index` (see the file comment),
// evaluates it on `args`, runs the op's LibraryOp on the same operands and
// compares. Mutates `module`. NOT_FOUND when the library declines the op.
inline StatusOr<Differential> RunDifferential(ir::Module& module, ir::Function& function,
                                              size_t index, std::vector<eval::RuntimeValue> args,
                                              Tolerance tolerance,
                                              const LibraryOpOptions& options = {},
                                              const RunContext& context = {}) {
  ir::Block& block = *function.entry();
  if (index >= block.ops().size()) return InvalidArgument("no op at that index");
  const ir::Op& op = *block.ops()[index];
  while (block.ops().size() > index + 1) (void)block.RemoveOp(block.ops().size() - 1);
  auto ret = std::make_unique<ir::Op>(ir::OpCode::kFuncReturn, op.loc());
  for (ir::Value* v : op.operands()) ret->add_operand(v);
  for (size_t i = 0; i < op.num_results(); ++i) ret->add_operand(op.result(i));
  block.add_op(std::move(ret));
  eval::EvalOptions eval_options;
  eval_options.resource_fill_seed = 1;
  JITD_ASSIGN_OR_RETURN(std::vector<eval::RuntimeValue> values,
                        eval::EvaluateFunction(module, function, std::move(args), eval_options));
  Differential d;
  d.op_name = std::string(op.name());
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_tensor()) return Unimplemented("a non-tensor operand or result");
    (i < op.num_operands() ? d.operands : d.expected).push_back(values[i].literal());
  }
  JITD_ASSIGN_OR_RETURN(d.actual, RunLibrary(op, d.operands, options, context));
  for (size_t i = 0; i < d.expected.size() && d.mismatch.empty(); ++i) {
    d.mismatch = CompareLiterals(d.expected[i], d.actual[i], tolerance);
    if (!d.mismatch.empty()) d.mismatch = "result " + std::to_string(i) + ": " + d.mismatch;
  }
  return d;
}

}  // namespace jitd::cpu::testing

#endif  // JITD_DEVICES_CPU_RUNTIME_DIFFERENTIAL_TESTING_H_
