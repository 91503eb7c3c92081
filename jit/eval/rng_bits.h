// The bit streams of stablehlo.rng_bit_generator, shared by the interpreter
// (jit/eval's kernel) and the CPU device's runtime library so both produce
// the same bits. Header-only, no dependencies beyond the standard library.
//
// XLA's streams (xla/hlo/builder/lib/prng.cc as RngBitGeneratorExpander
// runs it), so programs exported from JAX get the numbers XLA gives:
//   THREE_FRY: state = [key, counter]. Block i is Threefry-2x32 (20 rounds)
//     of counter + i, split into (low, high) words, under the key's words.
//     64-bit outputs: element i is block i, low word first. 32-bit and
//     narrower outputs (narrow ones keep the low bits): the shape is halved
//     along its first even dimension (else its largest), block i covers
//     element i of the halved shape (row-major), and its two words go to
//     positions 2h and 2h + 1 of the split dimension. The counter advances
//     by the number of blocks.
//   PHILOX: state = [key, counter_low, counter_high], or [key, counter_low]
//     with the key doubling as counter_high (XLA reverses a 2-element state);
//     only the low word is written back then. Block i is Philox-4x32 (10
//     rounds) of the 128-bit counter + i; its four words fill four
//     consecutive 32-bit outputs, or two consecutive 64-bit ones.
//   DEFAULT: PHILOX, XLA's default on CPU and GPU.
// Float outputs receive the bits of their width.
//
// Thread safety: RngBitStream is immutable after construction; Generate may
// run concurrently on disjoint block ranges (every block writes its own
// output elements).
#ifndef JITD_JIT_EVAL_RNG_BITS_H_
#define JITD_JIT_EVAL_RNG_BITS_H_

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace jitd::eval {

using RngWords2 = std::array<uint32_t, 2>;
using RngWords4 = std::array<uint32_t, 4>;

inline RngWords2 ThreeFry2x32(RngWords2 x, RngWords2 key) {
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  auto rotl = [](uint32_t v, int r) { return (v << r) | (v >> (32 - r)); };
  const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDA ^ key[0] ^ key[1]};
  x[0] += ks[0];
  x[1] += ks[1];
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      x[0] += x[1];
      x[1] = rotl(x[1], kRotations[(group % 2) * 4 + r]);
      x[1] ^= x[0];
    }
    // Key injection after every four rounds.
    x[0] += ks[(group + 1) % 3];
    x[1] += ks[(group + 2) % 3] + static_cast<uint32_t>(group + 1);
  }
  return x;
}

inline RngWords4 Philox4x32(RngWords4 x, RngWords2 key) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{x[0]} * 0xD2511F53u;
    const uint64_t p1 = uint64_t{x[2]} * 0xCD9E8D57u;
    x = {static_cast<uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<uint32_t>(p0)};
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  return x;
}

// One rng_bit_generator: its algorithm, initial state and output shape.
class RngBitStream {
 public:
  // `three_fry`: THREE_FRY, else PHILOX (DEFAULT). `state`: the initial
  // state words (any length; missing words read as 0). `dims`: the output
  // shape; `bits`: the output element width (at most 64).
  RngBitStream(bool three_fry, std::span<const uint64_t> state, std::vector<int64_t> dims, int bits)
      : three_fry_(three_fry), state_(state.begin(), state.end()), dims_(std::move(dims)), bits_(bits) {
    n_ = 1;
    for (int64_t d : dims_) n_ *= d;
    key_ = Split(Word(0));
    if (three_fry_) {
      if (bits_ > 32) {
        blocks_ = n_;
        return;
      }
      // Halve the shape along its first even dimension, else its largest.
      split_dims_ = dims_.empty() ? std::vector<int64_t>{1} : dims_;  // a scalar takes word 0 of one block
      split_ = split_dims_.size();
      for (size_t d = 0; d < split_dims_.size() && split_ == split_dims_.size(); ++d) {
        if (split_dims_[d] % 2 == 0) split_ = d;
      }
      if (split_ == split_dims_.size()) {
        split_ = static_cast<size_t>(std::max_element(split_dims_.begin(), split_dims_.end()) -
                                     split_dims_.begin());
      }
      half_ = split_dims_;
      half_[split_] = (split_dims_[split_] + 1) / 2;
      blocks_ = 1;
      for (int64_t d : half_) blocks_ *= d;
      strides_.assign(split_dims_.size(), 1);
      for (size_t d = split_dims_.size(); d-- > 1;) strides_[d - 1] = strides_[d] * split_dims_[d];
      return;
    }
    const int64_t size = static_cast<int64_t>(state_.size());
    lo_ = size >= 3 ? Word(1) : Word(size - 1);
    hi_ = size >= 3 ? Word(2) : Word(size - 2);
    const int64_t words = bits_ > 32 ? 2 * n_ : n_;  // 32-bit words needed
    blocks_ = (words + 3) / 4;
  }

  // Output elements in all.
  int64_t num_elements() const { return n_; }
  // Independent blocks; Generate(0, blocks()) writes every output element.
  int64_t blocks() const { return blocks_; }

  // Calls put(i, bits) for each output element i of blocks [begin, end),
  // `bits` masked to the output width.
  template <typename Put>
  void Generate(int64_t begin, int64_t end, Put&& put) const {
    if (begin >= end) return;
    const uint64_t mask = bits_ >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits_) - 1;
    if (three_fry_) {
      const uint64_t counter = Word(1);
      if (bits_ > 32) {
        for (int64_t i = begin; i < end; ++i) {
          const RngWords2 out = ThreeFry2x32(Split(counter + static_cast<uint64_t>(i)), key_);
          put(i, Join(out[0], out[1]) & mask);
        }
        return;
      }
      // Block b is element b of the halved shape (row-major).
      std::vector<int64_t> h(half_.size(), 0);
      int64_t rest = begin;
      for (size_t d = half_.size(); d-- > 0;) {
        h[d] = rest % half_[d];
        rest /= half_[d];
      }
      for (int64_t b = begin; b < end; ++b) {
        const RngWords2 out = ThreeFry2x32(Split(counter + static_cast<uint64_t>(b)), key_);
        int64_t first = 0;
        for (size_t d = 0; d < h.size(); ++d) first += (d == split_ ? 2 * h[d] : h[d]) * strides_[d];
        if (first < n_) put(first, out[0] & mask);
        if (2 * h[split_] + 1 < split_dims_[split_]) put(first + strides_[split_], out[1] & mask);
        for (size_t d = h.size(); d-- > 0;) {
          if (++h[d] < half_[d]) break;
          h[d] = 0;
        }
      }
      return;
    }
    for (int64_t b = begin; b < end; ++b) {
      const auto [c_lo, c_hi] = Counter(static_cast<uint64_t>(b));
      const RngWords2 l = Split(c_lo), hw = Split(c_hi);
      const RngWords4 out = Philox4x32({l[0], l[1], hw[0], hw[1]}, key_);
      if (bits_ > 32) {
        if (2 * b < n_) put(2 * b, Join(out[0], out[1]) & mask);
        if (2 * b + 1 < n_) put(2 * b + 1, Join(out[2], out[3]) & mask);
      } else {
        for (int64_t j = 0; j < 4; ++j) {
          if (4 * b + j < n_) put(4 * b + j, out[j] & mask);
        }
      }
    }
  }

  // The output state: the initial state with the counter advanced past
  // every block.
  std::vector<uint64_t> NewState() const {
    std::vector<uint64_t> out = state_;
    const size_t size = out.size();
    if (three_fry_) {
      if (size > 1) out[1] = Word(1) + static_cast<uint64_t>(blocks_);
      return out;
    }
    const auto [new_lo, new_hi] = Counter(static_cast<uint64_t>(blocks_));
    if (size > 1) out[1] = new_lo;
    if (size > 2) out[2] = new_hi;
    return out;
  }

 private:
  static RngWords2 Split(uint64_t v) { return {static_cast<uint32_t>(v), static_cast<uint32_t>(v >> 32)}; }
  static uint64_t Join(uint32_t lo, uint32_t hi) { return uint64_t{lo} | uint64_t{hi} << 32; }
  uint64_t Word(int64_t i) const {
    return i >= 0 && i < static_cast<int64_t>(state_.size()) ? state_[static_cast<size_t>(i)] : uint64_t{0};
  }
  // (lo, hi) + add as a 128-bit sum.
  std::pair<uint64_t, uint64_t> Counter(uint64_t add) const {
    const uint64_t new_lo = lo_ + add;
    return {new_lo, new_lo < lo_ ? hi_ + 1 : hi_};
  }

  bool three_fry_;
  std::vector<uint64_t> state_;
  std::vector<int64_t> dims_;
  int bits_;
  int64_t n_ = 0;
  int64_t blocks_ = 0;
  RngWords2 key_{};
  // THREE_FRY with outputs of 32 bits or fewer.
  std::vector<int64_t> split_dims_, half_, strides_;
  size_t split_ = 0;
  // PHILOX: the 128-bit counter.
  uint64_t lo_ = 0, hi_ = 0;
};

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_RNG_BITS_H_
