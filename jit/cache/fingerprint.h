// jit/cache fingerprints: the compile cache's key.
//
// A cache key is made of six text components (CacheKeyParts). Its
// Fingerprint is XXH3-128 over those components, each length-prefixed, so two
// different part lists never hash the same input bytes. The components stay
// available next to every cached entry, so a miss can say which component
// differs from the nearest entry (Explain).
//
// Everything here is independent of the IR and of devices: the caller turns
// shapes and options into canonical text before building a key.
#ifndef JITD_JIT_CACHE_FINGERPRINT_H_
#define JITD_JIT_CACHE_FINGERPRINT_H_

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/status.h"

namespace jitd::cache {

// The components of a cache key. Plain value type (thread-compatible).
struct CacheKeyParts {
  // Which program: XXH3-128 of the program bytes as 32 lowercase hex chars
  // (HashProgram), optionally followed by one space and the program's
  // identity (ProgramIdentity): the daemon keys on its canonical form's hash
  // and the entry function's name and signature, e.g.
  // "3fa2...c1 @main(tensor<4xf32>) -> tensor<4xf32>".
  std::string program_hash;
  // Canonical argument shapes, e.g. "tensor<2xf32>,tensor<i32>".
  std::string argument_shapes;
  // Canonical text of the compile options.
  std::string options;
  // Device name, e.g. "interpreter", "cpu", "cuda:0".
  std::string device;
  // The compiler's build id: a constant the caller passes in.
  std::string compiler_build_id;
  // HostCpuFeatures() for code compiled for the host, or "" when irrelevant.
  std::string host_cpu_features;

  bool operator==(const CacheKeyParts&) const = default;
};

// The number of components and their names, in declaration order.
inline constexpr size_t kNumKeyParts = 6;
inline constexpr std::array<std::string_view, kNumKeyParts> kKeyPartNames = {
    "program_hash", "argument_shapes",   "options",
    "device",       "compiler_build_id", "host_cpu_features"};

// Component `index` (< kNumKeyParts) of `parts`, in kKeyPartNames order.
const std::string& KeyPart(const CacheKeyParts& parts, size_t index);
std::string& KeyPart(CacheKeyParts& parts, size_t index);

// A 128-bit cache key. Value type, trivially copyable; ordered and hashable
// (FingerprintHash) so it can key maps. Printed as 32 lowercase hex chars,
// high half first.
class Fingerprint {
 public:
  Fingerprint() = default;
  Fingerprint(uint64_t high, uint64_t low) : high_(high), low_(low) {}

  // XXH3-128 over the length-prefixed components of `parts`.
  static Fingerprint Of(const CacheKeyParts& parts);
  // Parses 32 hex chars (either case); INVALID_ARGUMENT otherwise.
  static StatusOr<Fingerprint> Parse(std::string_view hex);

  std::string ToHex() const;
  uint64_t high() const { return high_; }
  uint64_t low() const { return low_; }

  auto operator<=>(const Fingerprint&) const = default;

 private:
  uint64_t high_ = 0;
  uint64_t low_ = 0;
};

struct FingerprintHash {
  size_t operator()(const Fingerprint& f) const {
    return static_cast<size_t>(f.low() ^ (f.high() * 0x9E3779B97F4A7C15ull));
  }
};

// XXH3-128 of `program_bytes` as 32 lowercase hex chars.
std::string HashProgram(std::string_view program_bytes);

// Builds key parts: hashes the program and fills in everything else as given.
CacheKeyParts MakeKeyParts(std::string_view program_bytes, std::string argument_shapes,
                           std::string options, std::string device,
                           std::string compiler_build_id, std::string host_cpu_features);

// The identity part of `parts.program_hash` (after the first space): the
// entry function's name and signature; "" when the key has none. Two keys of
// one identity are "the same program" (e.g. a changed constant) for Explain
// and for DiskCache::FindNearest's same-program search.
std::string_view ProgramIdentity(const CacheKeyParts& parts);

// How many components of `a` and `b` are equal (0..kNumKeyParts).
int CountEqualParts(const CacheKeyParts& a, const CacheKeyParts& b);

// Names the components in which `want` differs from `nearest`, with both
// values (long values shortened), e.g.
//   "differs in device ('cpu' vs cached 'interpreter')".
// When only the hash of one program identity differs it says so:
//   "differs in program_hash (same entry @main(...) -> ..., other ops,
//    constants or attributes: '3fa2...' vs cached '9b1c...')".
// Returns "no component differs" when the parts are equal.
std::string Explain(const CacheKeyParts& want, const CacheKeyParts& nearest);

// The host CPU's feature flags as a stable, sorted, comma-separated string
// prefixed with the architecture, e.g. "x86_64:aes,avx,avx2,...". On x86-64
// they come from cpuid (AVX/AVX-512 only where the OS saves their state,
// checked with xgetbv); elsewhere from /proc/cpuinfo ("flags" or "Features").
// Computed once per process; thread-safe.
const std::string& HostCpuFeatures();

}  // namespace jitd::cache

#endif  // JITD_JIT_CACHE_FINGERPRINT_H_
