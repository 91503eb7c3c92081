#include "jit/cache/fingerprint.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <xxhash.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace jitd::cache {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
// Domain tag hashed before the parts: a new key layout gets a new tag.
constexpr std::string_view kKeyDomain = "jitd-cache-key-v1";

void AppendHex(uint64_t v, std::string& out) {
  for (int shift = 60; shift >= 0; shift -= 4) out += kHexDigits[(v >> shift) & 0xF];
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string HashToHex(XXH128_hash_t h) {
  std::string out;
  out.reserve(32);
  AppendHex(h.high64, out);
  AppendHex(h.low64, out);
  return out;
}

void AppendLengthPrefixed(std::string& out, std::string_view bytes) {
  uint64_t n = bytes.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((n >> (8 * i)) & 0xFF);
  out += bytes;
}

// Shortens a component value for messages.
std::string Quote(std::string_view v) {
  constexpr size_t kMax = 80;
  std::string out = "'";
  if (v.size() <= kMax) {
    out += v;
  } else {
    out += v.substr(0, kMax);
    out += "...(" + std::to_string(v.size()) + " bytes)";
  }
  out += "'";
  return out;
}

std::string ComputeHostCpuFeatures() {
  std::vector<std::string> flags;
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  unsigned c1 = 0, d1 = 0;
  if (max_leaf >= 1 && __get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
    c1 = ecx;
    d1 = edx;
  }
  // Which register state the OS saves (XCR0): gates AVX, AVX-512 and AMX.
  uint64_t xcr0 = 0;
  if (c1 & (1u << 27)) {  // OSXSAVE
    uint32_t lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
  }
  const bool avx_os = (xcr0 & 0x6) == 0x6;
  const bool avx512_os = (xcr0 & 0xE6) == 0xE6;
  const bool amx_os = (xcr0 & 0x60000) == 0x60000;
  auto add = [&](bool present, const char* name) {
    if (present) flags.emplace_back(name);
  };
  add(d1 & (1u << 25), "sse");
  add(d1 & (1u << 26), "sse2");
  add(c1 & (1u << 0), "sse3");
  add(c1 & (1u << 1), "pclmul");
  add(c1 & (1u << 9), "ssse3");
  add(c1 & (1u << 13), "cx16");
  add(c1 & (1u << 19), "sse4.1");
  add(c1 & (1u << 20), "sse4.2");
  add(c1 & (1u << 22), "movbe");
  add(c1 & (1u << 23), "popcnt");
  add(c1 & (1u << 25), "aes");
  add(c1 & (1u << 30), "rdrnd");
  add(avx_os && (c1 & (1u << 28)), "avx");
  add(avx_os && (c1 & (1u << 12)), "fma");
  add(avx_os && (c1 & (1u << 29)), "f16c");
  if (max_leaf >= 7) {
    __cpuid_count(7, 0, eax, ebx, ecx, edx);
    const unsigned max_sub = eax;
    add(ebx & (1u << 3), "bmi");
    add(avx_os && (ebx & (1u << 5)), "avx2");
    add(ebx & (1u << 8), "bmi2");
    add(ebx & (1u << 18), "rdseed");
    add(ebx & (1u << 19), "adx");
    add(ebx & (1u << 29), "sha");
    add(avx512_os && (ebx & (1u << 16)), "avx512f");
    add(avx512_os && (ebx & (1u << 17)), "avx512dq");
    add(avx512_os && (ebx & (1u << 21)), "avx512ifma");
    add(avx512_os && (ebx & (1u << 28)), "avx512cd");
    add(avx512_os && (ebx & (1u << 30)), "avx512bw");
    add(avx512_os && (ebx & (1u << 31)), "avx512vl");
    add(avx512_os && (ecx & (1u << 1)), "avx512vbmi");
    add(avx512_os && (ecx & (1u << 6)), "avx512vbmi2");
    add(ecx & (1u << 8), "gfni");
    add(avx_os && (ecx & (1u << 9)), "vaes");
    add(avx_os && (ecx & (1u << 10)), "vpclmulqdq");
    add(avx512_os && (ecx & (1u << 11)), "avx512vnni");
    add(avx512_os && (ecx & (1u << 12)), "avx512bitalg");
    add(avx512_os && (ecx & (1u << 14)), "avx512vpopcntdq");
    add(avx512_os && (edx & (1u << 23)), "avx512fp16");
    add(amx_os && (edx & (1u << 22)), "amx-bf16");
    add(amx_os && (edx & (1u << 24)), "amx-tile");
    add(amx_os && (edx & (1u << 25)), "amx-int8");
    if (max_sub >= 1) {
      __cpuid_count(7, 1, eax, ebx, ecx, edx);
      add(avx_os && (eax & (1u << 4)), "avxvnni");
      add(avx512_os && (eax & (1u << 5)), "avx512bf16");
    }
  }
  if (__get_cpuid_max(0x80000000u, nullptr) >= 0x80000001u) {
    __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx);
    add(ecx & (1u << 0), "lahfsahf");
    add(ecx & (1u << 5), "lzcnt");
    add(ecx & (1u << 6), "sse4a");
    add(avx_os && (ecx & (1u << 16)), "fma4");
  }
#if defined(__x86_64__)
  std::string arch = "x86_64";
#else
  std::string arch = "x86";
#endif
#else
  // Other architectures: the kernel's view in /proc/cpuinfo.
  std::string arch = "other";
#if defined(__aarch64__)
  arch = "aarch64";
#endif
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0) {
      auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::istringstream words(line.substr(colon + 1));
      std::string w;
      while (words >> w) flags.push_back(w);
      break;
    }
  }
#endif
  std::sort(flags.begin(), flags.end());
  flags.erase(std::unique(flags.begin(), flags.end()), flags.end());
  std::string out = arch + ":";
  for (size_t i = 0; i < flags.size(); ++i) {
    if (i) out += ',';
    out += flags[i];
  }
  return out;
}

}  // namespace

const std::string& KeyPart(const CacheKeyParts& parts, size_t index) {
  switch (index) {
    case 0: return parts.program_hash;
    case 1: return parts.argument_shapes;
    case 2: return parts.options;
    case 3: return parts.device;
    case 4: return parts.compiler_build_id;
    default: return parts.host_cpu_features;
  }
}

std::string& KeyPart(CacheKeyParts& parts, size_t index) {
  return const_cast<std::string&>(KeyPart(static_cast<const CacheKeyParts&>(parts), index));
}

Fingerprint Fingerprint::Of(const CacheKeyParts& parts) {
  // Parts are short text, so one buffer and one hash call is simplest.
  std::string input;
  AppendLengthPrefixed(input, kKeyDomain);
  for (size_t i = 0; i < kNumKeyParts; ++i) AppendLengthPrefixed(input, KeyPart(parts, i));
  XXH128_hash_t h = XXH3_128bits(input.data(), input.size());
  return Fingerprint(h.high64, h.low64);
}

StatusOr<Fingerprint> Fingerprint::Parse(std::string_view hex) {
  if (hex.size() != 32) {
    return InvalidArgument("fingerprint must be 32 hex characters, got " +
                           std::to_string(hex.size()) + " characters");
  }
  uint64_t halves[2] = {0, 0};
  for (size_t i = 0; i < 32; ++i) {
    int v = HexValue(hex[i]);
    if (v < 0) {
      return InvalidArgument("fingerprint has a non-hex character at position " +
                             std::to_string(i));
    }
    halves[i / 16] = (halves[i / 16] << 4) | static_cast<uint64_t>(v);
  }
  return Fingerprint(halves[0], halves[1]);
}

std::string Fingerprint::ToHex() const {
  std::string out;
  out.reserve(32);
  AppendHex(high_, out);
  AppendHex(low_, out);
  return out;
}

std::string HashProgram(std::string_view program_bytes) {
  return HashToHex(XXH3_128bits(program_bytes.data(), program_bytes.size()));
}

CacheKeyParts MakeKeyParts(std::string_view program_bytes, std::string argument_shapes,
                           std::string options, std::string device,
                           std::string compiler_build_id, std::string host_cpu_features) {
  CacheKeyParts parts;
  parts.program_hash = HashProgram(program_bytes);
  parts.argument_shapes = std::move(argument_shapes);
  parts.options = std::move(options);
  parts.device = std::move(device);
  parts.compiler_build_id = std::move(compiler_build_id);
  parts.host_cpu_features = std::move(host_cpu_features);
  return parts;
}

int CountEqualParts(const CacheKeyParts& a, const CacheKeyParts& b) {
  int n = 0;
  for (size_t i = 0; i < kNumKeyParts; ++i) n += KeyPart(a, i) == KeyPart(b, i);
  return n;
}

std::string_view ProgramIdentity(const CacheKeyParts& parts) {
  const std::string_view p = parts.program_hash;
  const size_t space = p.find(' ');
  return space == std::string_view::npos ? std::string_view() : p.substr(space + 1);
}

std::string Explain(const CacheKeyParts& want, const CacheKeyParts& nearest) {
  std::string out;
  for (size_t i = 0; i < kNumKeyParts; ++i) {
    const std::string& w = KeyPart(want, i);
    const std::string& n = KeyPart(nearest, i);
    if (w == n) continue;
    out += out.empty() ? "differs in " : ", ";
    out += kKeyPartNames[i];
    const std::string_view identity = ProgramIdentity(want);
    if (i == 0 && !identity.empty() && identity == ProgramIdentity(nearest)) {
      const std::string_view wh = std::string_view(w).substr(0, w.size() - identity.size() - 1);
      const std::string_view nh = std::string_view(n).substr(0, n.size() - identity.size() - 1);
      out += " (same entry " + Quote(identity) + ", other ops, constants or attributes: " +
             Quote(wh) + " vs cached " + Quote(nh) + ")";
      continue;
    }
    out += " (" + Quote(w) + " vs cached " + Quote(n) + ")";
  }
  return out.empty() ? "no component differs" : out;
}

const std::string& HostCpuFeatures() {
  static const std::string features = ComputeHostCpuFeatures();
  return features;
}

}  // namespace jitd::cache
