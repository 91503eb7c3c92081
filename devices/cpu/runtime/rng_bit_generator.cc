// stablehlo.rng_bit_generator on raw buffers: the interpreter's bit streams
// (jit/eval/rng_bits.h, shared with jit/eval's kernel), so every algorithm,
// output type and shape gives the interpreter's bits and output state.
// Blocks are independent (counter-based generators), so large outputs are
// split over the device's threads.
#include <cstring>
#include <vector>

#include "devices/cpu/runtime/internal/elements.h"
#include "devices/cpu/runtime/internal/ops.h"
#include "jit/eval/rng_bits.h"

namespace jitd::cpu::internal {
namespace {

class RngBitGeneratorOp final : public LibraryOp {
 public:
  RngBitGeneratorOp(bool three_fry, int64_t state_words, ir::Type output)
      : three_fry_(three_fry), state_words_(state_words), output_(std::move(output)) {}

  Status Run(std::span<const void* const> operands, std::span<void* const> results,
             const RunContext& context) const override {
    std::vector<uint64_t> state(static_cast<size_t>(state_words_));
    if (state_words_ > 0) std::memcpy(state.data(), operands[0], state.size() * sizeof(uint64_t));
    const eval::RngBitStream stream(three_fry_, state, output_.dims(), ir::BitWidth(output_.dtype()));
    const std::vector<uint64_t> new_state = stream.NewState();
    if (state_words_ > 0) std::memcpy(results[0], new_state.data(), new_state.size() * sizeof(uint64_t));
    auto* out = static_cast<uint8_t*>(results[1]);
    const size_t bytes = static_cast<size_t>(ir::StorageBytes(output_.dtype()));
    // ~20 rounds of a few operations per block.
    ParallelRange(context, stream.blocks(), 64, [&](int64_t begin, int64_t end) {
      stream.Generate(begin, end, [&](int64_t i, uint64_t bits) {
        std::memcpy(out + static_cast<size_t>(i) * bytes, &bits, bytes);  // little-endian low bytes
      });
    });
    return Status::Ok();
  }

 private:
  bool three_fry_;
  int64_t state_words_;
  ir::Type output_;
};

}  // namespace

LibraryOpOr CreateRngBitGeneratorOp(const ir::Op& op) {
  if (op.num_operands() != 1 || op.num_results() != 2) return Declined();
  const ir::Type& state = op.operand(0)->type();
  const ir::Type& output = op.result(1)->type();
  if (!state.is_tensor() || state.rank() != 1 || state.dtype() != ir::DType::kU64 ||
      op.result(0)->type() != state || !output.is_tensor()) {
    return Declined();
  }
  const ir::DType t = output.dtype();
  // Every integer and float type whose elements the interpreter stores as
  // whole little-endian bytes holding the low bits (sub-byte types
  // included: one byte each).
  if (!(ir::IsInteger(t) || ir::IsFloat(t)) || ir::BitWidth(t) > 64 ||
      ir::StorageBytes(t) * 8 < ir::BitWidth(t)) {
    return Declined();
  }
  const ir::EnumAttr* algorithm = op.GetEnum("rng_algorithm");
  const bool three_fry = algorithm && algorithm->value == "THREE_FRY";
  return std::unique_ptr<LibraryOp>(std::make_unique<RngBitGeneratorOp>(three_fry, state.dim(0), output));
}

}  // namespace jitd::cpu::internal
