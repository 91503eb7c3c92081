#include "devices/cuda/cufft_plan.h"

#include <limits>

namespace jitd::devices::cuda {

namespace {

using ir::DType;

constexpr int64_t kFftPlanTag = 0x46465431;  // "FFT1"

Status NotPlanned(const std::string& why) { return NotFound("cuFFT does not take this fft: " + why); }

bool IsC2R(FftKind k) { return k == FftKind::kC2R || k == FftKind::kZ2D; }
bool IsR2C(FftKind k) { return k == FftKind::kR2C || k == FftKind::kD2Z; }

// Elements per batch entry on each side for `kind` over `n`.
void Sizes(FftKind kind, const std::vector<int64_t>& n, int64_t* in, int64_t* out) {
  int64_t real = 1;
  for (int64_t v : n) real *= v;
  const int64_t half = n.empty() ? 0 : real / n.back() * (n.back() / 2 + 1);
  *in = IsC2R(kind) ? half : real;
  *out = IsR2C(kind) ? half : real;
}

}  // namespace

const char* FftKindName(FftKind k) {
  switch (k) {
    case FftKind::kC2C: return "C2C";
    case FftKind::kZ2Z: return "Z2Z";
    case FftKind::kR2C: return "R2C";
    case FftKind::kD2Z: return "D2Z";
    case FftKind::kC2R: return "C2R";
    case FftKind::kZ2D: return "Z2D";
  }
  return "?";
}

StatusOr<CufftPlan> PlanCufft(const ir::Op& op) {
  const std::string where = "fft at " + op.loc().ToString();
  if (op.code() != ir::OpCode::kFft || op.num_operands() != 1 || op.num_results() != 1) {
    return InvalidArgument("'" + std::string(op.name()) + "' at " + op.loc().ToString() + " is not an fft");
  }
  const ir::EnumAttr* type_attr = op.GetEnum("fft_type");
  const std::string type = type_attr ? type_attr->value : "FFT";
  const std::optional<std::vector<int64_t>> length = op.GetI64Array("fft_length");
  if (!length || length->empty()) return InvalidArgument(where + " has no fft_length");
  const ir::Type& in = op.operand(0)->type();
  const ir::Type& out = op.result(0)->type();
  if (!in.is_tensor() || !out.is_tensor() || in.rank() != out.rank() ||
      in.rank() < static_cast<int64_t>(length->size())) {
    return InvalidArgument(where + ": operand and result ranks do not fit fft_length");
  }
  CufftPlan plan;
  const bool f64 = in.dtype() == DType::kF64 || in.dtype() == DType::kC128;
  if (type == "FFT" || type == "IFFT") {
    if (!ir::IsComplex(in.dtype()) || out.dtype() != in.dtype()) {
      return InvalidArgument(where + ": " + type + " needs equal complex operand and result types");
    }
    plan.kind = f64 ? FftKind::kZ2Z : FftKind::kC2C;
    plan.inverse = type == "IFFT";
  } else if (type == "RFFT") {
    if (!((in.dtype() == DType::kF32 && out.dtype() == DType::kC64) ||
          (in.dtype() == DType::kF64 && out.dtype() == DType::kC128))) {
      return InvalidArgument(where + ": RFFT needs f32 -> complex<f32> or f64 -> complex<f64>");
    }
    plan.kind = f64 ? FftKind::kD2Z : FftKind::kR2C;
  } else if (type == "IRFFT") {
    if (!((in.dtype() == DType::kC64 && out.dtype() == DType::kF32) ||
          (in.dtype() == DType::kC128 && out.dtype() == DType::kF64))) {
      return InvalidArgument(where + ": IRFFT needs complex<f32> -> f32 or complex<f64> -> f64");
    }
    plan.kind = f64 ? FftKind::kZ2D : FftKind::kC2R;
    plan.inverse = true;
  } else {
    return InvalidArgument(where + " has an unknown fft_type '" + type + "'");
  }
  plan.n = *length;
  const int64_t rank = in.rank();
  const auto axes = static_cast<int64_t>(plan.n.size());
  // Shapes: leading axes equal; the transformed ones fft_length, with the
  // complex side's last n/2 + 1.
  for (int64_t d = 0; d < rank - axes; ++d) {
    if (in.dim(d) != out.dim(d)) return InvalidArgument(where + ": batch axis " + std::to_string(d) + " differs");
    plan.batch *= in.dim(d);
  }
  for (int64_t i = 0; i < axes; ++i) {
    const int64_t d = rank - axes + i;
    const int64_t len = plan.n[static_cast<size_t>(i)];
    const bool last = i == axes - 1;
    const int64_t want_in = last && IsC2R(plan.kind) ? len / 2 + 1 : len;
    const int64_t want_out = last && IsR2C(plan.kind) ? len / 2 + 1 : len;
    if (len < 0 || in.dim(d) != want_in || out.dim(d) != want_out) {
      return InvalidArgument(where + ": axis " + std::to_string(d) + " does not match fft_length " +
                             std::to_string(len) + " for " + type);
    }
  }
  if (axes > 3) return NotPlanned("more than 3 transform axes");
  for (int64_t v : plan.n) {
    if (v == 0) return NotPlanned("an empty transform");
    if (v > std::numeric_limits<int32_t>::max()) return NotPlanned("an extent past 2^31 - 1");
  }
  if (plan.batch == 0) return NotPlanned("an empty batch");
  if (plan.batch > std::numeric_limits<int32_t>::max()) return NotPlanned("more than 2^31 - 1 transforms");
  Sizes(plan.kind, plan.n, &plan.input_elements, &plan.output_elements);
  plan.normalize = plan.inverse;
  // cuFFT documents that out-of-place C2R may overwrite its input (always
  // for more than one axis): never let it touch an operand.
  plan.copy_input = IsC2R(plan.kind);
  return plan;
}

std::vector<int64_t> EncodeFftPlan(const CufftPlan& p) {
  std::vector<int64_t> e = {kFftPlanTag, static_cast<int64_t>(p.kind), p.inverse ? 1 : 0, p.batch,
                            p.input_elements, p.output_elements, p.normalize ? 1 : 0, p.copy_input ? 1 : 0,
                            static_cast<int64_t>(p.n.size())};
  e.insert(e.end(), p.n.begin(), p.n.end());
  return e;
}

StatusOr<CufftPlan> DecodeFftPlan(std::span<const int64_t> e) {
  auto bad = [](const std::string& why) { return InvalidArgument("cuFFT plan: " + why); };
  if (e.size() < 10 || e[0] != kFftPlanTag) return bad("too short or not an fft plan");
  CufftPlan p;
  if (e[1] < 0 || e[1] > static_cast<int64_t>(FftKind::kZ2D)) return bad("unknown transform kind");
  p.kind = static_cast<FftKind>(e[1]);
  for (size_t i : {2, 6, 7}) {
    if (e[i] != 0 && e[i] != 1) return bad("a flag out of range");
  }
  p.inverse = e[2] == 1;
  p.batch = e[3];
  p.input_elements = e[4];
  p.output_elements = e[5];
  p.normalize = e[6] == 1;
  p.copy_input = e[7] == 1;
  const int64_t rank = e[8];
  if (rank < 1 || rank > 3 || e.size() != 9 + static_cast<size_t>(rank)) return bad("rank out of range");
  p.n.assign(e.begin() + 9, e.end());
  for (int64_t v : p.n) {
    if (v < 1 || v > std::numeric_limits<int32_t>::max()) return bad("an extent out of range");
  }
  if (p.batch < 1 || p.batch > std::numeric_limits<int32_t>::max()) return bad("batch out of range");
  int64_t in = 0, out = 0;
  Sizes(p.kind, p.n, &in, &out);
  if (in != p.input_elements || out != p.output_elements) return bad("element counts do not match the extents");
  if ((IsC2R(p.kind) && !p.inverse) || (IsR2C(p.kind) && p.inverse)) return bad("direction does not match the kind");
  return p;
}

Status CheckFftBuffers(const CufftPlan& p, int64_t input_bytes, int64_t output_bytes) {
  const bool f64 = p.kind == FftKind::kZ2Z || p.kind == FftKind::kD2Z || p.kind == FftKind::kZ2D;
  const int64_t real = f64 ? 8 : 4;
  const int64_t in_element = IsR2C(p.kind) ? real : 2 * real;
  const int64_t out_element = IsC2R(p.kind) ? real : 2 * real;
  if (input_bytes != p.batch * p.input_elements * in_element) {
    return InvalidArgument("cuFFT call: the input buffer holds " + std::to_string(input_bytes) + " bytes, the plan " +
                           DescribeFftPlan(p) + " needs " + std::to_string(p.batch * p.input_elements * in_element));
  }
  if (output_bytes != p.batch * p.output_elements * out_element) {
    return InvalidArgument("cuFFT call: the output buffer holds " + std::to_string(output_bytes) + " bytes, the plan " +
                           DescribeFftPlan(p) + " needs " + std::to_string(p.batch * p.output_elements * out_element));
  }
  return Status::Ok();
}

std::string DescribeFftPlan(const CufftPlan& p) {
  std::string dims;
  for (int64_t v : p.n) dims += (dims.empty() ? "" : "x") + std::to_string(v);
  return std::string("cufft ") + FftKindName(p.kind) + (p.inverse ? " inverse" : " forward") + " [" + dims + "] x " +
         std::to_string(p.batch) + (p.normalize ? ", normalized" : "") + (p.copy_input ? ", input copied" : "");
}

}  // namespace jitd::devices::cuda
