#include "tools/conformance/checks.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace jitd::conformance {

namespace {

bool IsNan(uint64_t bits, ir::DType dtype) {
  return std::isnan(ir::DecodeFloat(bits, *ir::GetFloatFormat(dtype)));
}

// Appends a readable element: decimal for numbers, (re, im) for complex.
void AppendElement(const ir::Literal& lit, int64_t i, std::string& out) {
  const ir::DType t = lit.dtype();
  if (t == ir::DType::kPred) {
    out += lit.GetPred(i) ? "true" : "false";
  } else if (ir::IsSignedInt(t)) {
    out += std::to_string(lit.GetInt(i));
  } else if (ir::IsUnsignedInt(t)) {
    out += std::to_string(lit.GetUInt(i));
  } else if (ir::IsComplex(t)) {
    const auto c = lit.GetComplex(i);
    const ir::DType part = ir::ComplexComponent(t);
    out += '(';
    ir::AppendFloat(c.real(), part, out);
    out += ", ";
    ir::AppendFloat(c.imag(), part, out);
    out += ')';
  } else {
    ir::AppendFloatBits(lit.GetBits(i), t, out);
  }
}

std::string IndexString(const std::vector<int64_t>& dims, int64_t linear) {
  std::vector<int64_t> index(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    if (dims[d] == 0) break;
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
  std::string out = "[";
  for (size_t d = 0; d < index.size(); ++d) {
    if (d) out += ", ";
    out += std::to_string(index[d]);
  }
  return out + "]";
}

// Component bits of element i: (real, imag) for complex, (value, -) else.
std::pair<uint64_t, uint64_t> ComponentBits(const ir::Literal& lit, int64_t i) {
  if (lit.dtype() == ir::DType::kC64) {
    uint32_t parts[2];
    std::memcpy(parts, lit.element_ptr(i), 8);
    return {parts[0], parts[1]};
  }
  if (lit.dtype() == ir::DType::kC128) {
    uint64_t parts[2];
    std::memcpy(parts, lit.element_ptr(i), 16);
    return {parts[0], parts[1]};
  }
  return {lit.GetBits(i), 0};
}

}  // namespace

uint64_t UlpDistance(uint64_t a, uint64_t b, ir::DType dtype) {
  if (a == b) return 0;
  const ir::FloatFormat format = *ir::GetFloatFormat(dtype);
  if (IsNan(a, dtype) && IsNan(b, dtype)) return 0;
  const double da = ir::DecodeFloat(a, format), db = ir::DecodeFloat(b, format);
  if (!std::isfinite(da) || !std::isfinite(db)) return std::numeric_limits<uint64_t>::max();
  const int width = format.exponent_bits + format.mantissa_bits;
  const uint64_t mask = (uint64_t{1} << width) - 1;
  const uint64_t ma = a & mask, mb = b & mask;
  const bool sa = format.has_sign && ((a >> width) & 1), sb = format.has_sign && ((b >> width) & 1);
  if (sa == sb) return ma > mb ? ma - mb : mb - ma;
  return ma + mb;
}

std::optional<StatusOr<CheckSpec>> ParseCheck(const ir::Op& op) {
  std::string name;
  bool dialect_form = false;
  if (op.code() == ir::OpCode::kCustomCall) {
    const ir::Attribute* target = op.attr("call_target_name");
    if (!target || !target->is<ir::StringAttr>()) return std::nullopt;
    name = target->as<ir::StringAttr>().value;
    if (name.rfind("check.", 0) != 0) return std::nullopt;
  } else if (op.code() >= ir::OpCode::kCheckExpectEq &&
             op.code() <= ir::OpCode::kCheckExpectSerializedEq) {
    name = std::string(op.name());
    dialect_form = true;
  } else {
    return std::nullopt;
  }
  CheckSpec spec;
  spec.name = name;
  spec.loc = op.loc();
  std::string_view kind = std::string_view(name).substr(6);  // after "check."
  const bool is_const = kind.size() > 6 && kind.substr(kind.size() - 6) == "_const";
  if (is_const) kind.remove_suffix(6);
  if (kind == "expect_eq") {
    spec.kind = CheckSpec::Kind::kEq;
  } else if (kind == "expect_almost_eq") {
    spec.kind = CheckSpec::Kind::kAlmostEq;
    spec.tolerance = dialect_form ? 1e-4 : 1e-3;
    if (const ir::Attribute* t = op.attr("tolerance")) {
      if (const auto* f = t->get_if<ir::FloatAttr>()) spec.tolerance = f->value;
    }
  } else if (kind == "expect_close") {
    spec.kind = CheckSpec::Kind::kClose;
    spec.min_ulp = 0;
    spec.max_ulp = dialect_form ? 1 : 3;
    if (auto v = op.GetInt("min_ulp_difference")) spec.min_ulp = static_cast<uint64_t>(*v);
    if (auto v = op.GetInt("max_ulp_difference")) spec.max_ulp = static_cast<uint64_t>(*v);
  } else if (kind == "expect_serialized_eq") {
    spec.kind = CheckSpec::Kind::kSerializedEq;
    if (const ir::Attribute* id = op.attr("probe_id")) {
      if (const auto* str = id->get_if<ir::StringAttr>()) spec.probe_id = str->value;
    }
    if (spec.probe_id.empty()) {
      return StatusOr<CheckSpec>(InvalidArgument(op.loc().ToString() + ": '" + name +
                                                 "' needs a probe_id naming an interpreter.probe"));
    }
    if (auto it = op.GetInt("iter")) spec.iteration = *it;
    if (spec.iteration < 0) {
      return StatusOr<CheckSpec>(InvalidArgument(op.loc().ToString() + ": '" + name +
                                                 "' needs iter >= 0, got " + std::to_string(spec.iteration)));
    }
  } else {
    return StatusOr<CheckSpec>(Unimplemented(op.loc().ToString() + ": check '" + name +
                                             "' is not supported by the conformance runner"));
  }
  if (is_const) {
    const ir::Attribute* value = op.attr("value");
    if (!value || !value->is<ir::DenseElementsAttr>()) {
      return StatusOr<CheckSpec>(InvalidArgument(op.loc().ToString() + ": '" + name +
                                                 "' needs a dense expected value"));
    }
    auto lit = ir::DenseElementsToLiteral(value->as<ir::DenseElementsAttr>());
    if (!lit.ok()) return StatusOr<CheckSpec>(lit.status());
    spec.expected = std::move(lit).value();
  }
  return StatusOr<CheckSpec>(std::move(spec));
}

Status Compare(const CheckSpec& spec, const ir::Literal& actual, const ir::Literal& expected) {
  if (actual.type() != expected.type()) {
    return InvalidArgument(spec.loc.ToString() + ": " + spec.name + ": actual has type " +
                           actual.type().ToString() + ", expected " + expected.type().ToString());
  }
  const ir::DType t = actual.dtype();
  const bool is_float = ir::IsFloat(t) || ir::IsComplex(t);
  const ir::DType part = ir::ComplexComponent(t);
  const int64_t n = actual.num_elements();
  for (int64_t i = 0; i < n; ++i) {
    bool ok = true;
    std::string why;
    if (!is_float) {
      // Integers and booleans compare exactly under every check.
      ok = t == ir::DType::kPred ? actual.GetPred(i) == expected.GetPred(i)
                                 : actual.GetUInt(i) == expected.GetUInt(i);
    } else {
      const auto [ar, ai] = ComponentBits(actual, i);
      const auto [er, ei] = ComponentBits(expected, i);
      const int parts = ir::IsComplex(t) ? 2 : 1;
      const uint64_t a_bits[2] = {ar, ai}, e_bits[2] = {er, ei};
      const ir::FloatFormat format = *ir::GetFloatFormat(part);
      uint64_t worst_ulp = 0;
      double worst_diff = 0;
      for (int p = 0; p < parts; ++p) {
        const double a = ir::DecodeFloat(a_bits[p], format);
        const double e = ir::DecodeFloat(e_bits[p], format);
        switch (spec.kind) {
          case CheckSpec::Kind::kEq:
            ok &= a == e;  // IEEE: NaN never equals anything
            break;
          case CheckSpec::Kind::kSerializedEq:
            ok &= a_bits[p] == e_bits[p];  // the serialized bits
            break;
          case CheckSpec::Kind::kAlmostEq: {
            if (std::isnan(a) && std::isnan(e)) break;
            const double diff = std::fabs(a - e);
            if (!(diff <= spec.tolerance) && !(a == e)) {
              ok = false;
              worst_diff = std::isnan(diff) ? diff : std::max(worst_diff, diff);
            }
            break;
          }
          case CheckSpec::Kind::kClose:
            worst_ulp = std::max(worst_ulp, UlpDistance(a_bits[p], e_bits[p], part));
            break;
        }
      }
      if (spec.kind == CheckSpec::Kind::kClose) {
        ok = worst_ulp >= spec.min_ulp && worst_ulp <= spec.max_ulp;
        if (!ok) {
          why = worst_ulp == std::numeric_limits<uint64_t>::max()
                    ? "ULP distance infinite"
                    : std::to_string(worst_ulp) + " ULP, allowed " + std::to_string(spec.min_ulp) +
                          ".." + std::to_string(spec.max_ulp);
        }
      } else if (spec.kind == CheckSpec::Kind::kAlmostEq && !ok) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "difference %.6g > tolerance %.6g", worst_diff,
                      spec.tolerance);
        why = buf;
      }
    }
    if (ok) continue;
    std::string message = spec.loc.ToString() + ": " + spec.name + " failed at element " +
                          std::to_string(i) + " " + IndexString(actual.type().dims(), i) +
                          ": actual ";
    AppendElement(actual, i, message);
    message += ", expected ";
    AppendElement(expected, i, message);
    if (!why.empty()) message += " (" + why + ")";
    return InvalidArgument(message);
  }
  return Status::Ok();
}

StatusOr<std::vector<HoistedCheck>> HoistChecks(ir::Function& fn) {
  std::vector<HoistedCheck> checks;
  if (!fn.entry()) return checks;
  ir::Block& body = *fn.entry();
  ir::Op* ret = body.terminator();
  for (size_t i = 0; i < body.ops().size();) {
    const ir::Op& op = *body.ops()[i];
    auto parsed = ParseCheck(op);
    if (!parsed) {
      ++i;
      continue;
    }
    if (!parsed->ok()) return parsed->status();
    HoistedCheck check{std::move(*parsed).value(), 0, std::nullopt};
    const size_t operands =
        check.spec.expected || check.spec.kind == CheckSpec::Kind::kSerializedEq ? 1 : 2;
    if (op.num_operands() != operands) {
      return InvalidArgument(op.loc().ToString() + ": " + check.spec.name + " takes " +
                             std::to_string(operands) + " operands");
    }
    for (size_t k = 0; k < operands; ++k) {
      ir::Value* v = op.operand(k);
      if (!v->type().is_tensor()) {
        return InvalidArgument(op.loc().ToString() + ": " + check.spec.name +
                               " compares tensors, got " + v->type().ToString());
      }
      const size_t result = fn.result_types().size();
      ret->add_operand(v);
      fn.result_types().push_back(v->type());
      fn.result_attrs().emplace_back();
      (k == 0 ? check.actual_result : check.expected_result.emplace()) = result;
    }
    checks.push_back(std::move(check));
    body.RemoveOp(i);
  }
  return checks;
}

Status ProbeLog::Record(const std::string& probe_id, const ir::Literal& value) {
  std::lock_guard<std::mutex> lock(mu_);
  values_[probe_id].push_back(value);
  return Status::Ok();
}

StatusOr<ir::Literal> ProbeLog::Get(const std::string& probe_id, int64_t iteration) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = values_.find(probe_id);
  const size_t n = it == values_.end() ? 0 : it->second.size();
  if (iteration < 0 || static_cast<size_t>(iteration) >= n) {
    return NotFound("interpreter.probe \"" + probe_id + "\" ran " + std::to_string(n) +
                    " time(s); there is no value of iteration " + std::to_string(iteration));
  }
  return it->second[static_cast<size_t>(iteration)];
}

Status CompareHoisted(const HoistedCheck& check, const std::vector<eval::RuntimeValue>& results,
                      const ProbeLog* probes) {
  const size_t needed = std::max(check.actual_result, check.expected_result.value_or(0)) + 1;
  if (results.size() < needed) {
    return Internal(check.spec.name + ": the program returned " + std::to_string(results.size()) +
                    " results, fewer than its checks need");
  }
  const ir::Literal& actual = results[check.actual_result].literal();
  if (check.spec.kind == CheckSpec::Kind::kSerializedEq) {
    if (!probes) return Internal(check.spec.name + ": no probe values were recorded");
    auto probed = probes->Get(check.spec.probe_id, check.spec.iteration);
    if (!probed.ok()) return InvalidArgument(check.spec.loc.ToString() + ": " + check.spec.name + ": " +
                                             probed.status().message());
    CheckSpec eq = check.spec;
    eq.kind = CheckSpec::Kind::kEq;
    // Serialized values are compared bit for bit (a probed NaN matches itself).
    if (probed->type() != actual.type()) {
      return InvalidArgument(check.spec.loc.ToString() + ": " + check.spec.name + ": the probe saw a " +
                             probed->type().ToString() + ", the check compares a " + actual.type().ToString());
    }
    const auto a = actual.bytes(), b = probed->bytes();
    if (!std::equal(a.begin(), a.end(), b.begin(), b.end())) return Compare(eq, actual, *probed);
    return Status::Ok();
  }
  const ir::Literal& expected = check.expected_result
                                    ? results[*check.expected_result].literal()
                                    : *check.spec.expected;
  return Compare(check.spec, actual, expected);
}

}  // namespace jitd::conformance
