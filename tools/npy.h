// NumPy .npy files <-> jit/ir Literals: how `jitd run` reads its inputs and
// writes its results.
//
// The format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair
// (1.0: 16-bit header length; 2.0 and 3.0: 32-bit), then a Python dict
// literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and ended by '\n', then the elements in C order.
//
// Supported dtypes: |b1 (<-> i1), i1/i2/i4/i8 (<-> i8..i64), u1..u8 (<->
// ui8..ui64), f2/f4/f8 (<-> f16/f32/f64), c8/c16 (<-> complex<f32>/<f64>),
// little-endian ('<'), not-applicable ('|') or native ('=') byte order.
// Refused with an error that says so: big-endian data, fortran_order True,
// structured and every other dtype, and on writing the IR types numpy has no
// dtype for (bf16, the f4/f6/f8 formats, i2/i4/ui2/ui4).
//
// Reading is safe on hostile files: the header length is bounded, the dict
// is parsed strictly (the three keys exactly once, nothing else), the shape
// is checked against ir::kMaxRank / ir::kMaxElements and its byte size
// against the bytes present, and nothing is allocated beyond what the file
// holds. Errors are INVALID_ARGUMENT (NOT_FOUND for a missing file) whose
// message starts with the file's name.
//
// Free functions, no state: safe to call from any thread.
#ifndef JITD_TOOLS_NPY_H_
#define JITD_TOOLS_NPY_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/ir/literal.h"
#include "jit/ir/type.h"

namespace jitd::tools {

// Longest header (the dict, its padding and newline) accepted on reading.
// numpy's own reader stops at 10000 bytes by default.
inline constexpr int64_t kNpyMaxHeaderBytes = 65536;

// What the header of an .npy file says.
struct NpyHeader {
  ir::Type type;            // a tensor type: dtype and shape
  std::string descr;        // as written, e.g. "<f4"
  int64_t data_offset = 0;  // where the elements start
  int64_t data_bytes = 0;   // type.byte_size(): how many bytes must follow
};

// Parses the header at the start of `bytes` (which may hold only a prefix of
// the file, as long as it covers the header). `name` is used in messages.
StatusOr<NpyHeader> ParseNpyHeader(std::span<const uint8_t> bytes, std::string_view name);

// Parses a whole .npy file held in memory. The data must be exactly as long
// as the header's shape and dtype say (truncated or trailing bytes: error).
StatusOr<ir::Literal> ParseNpy(std::span<const uint8_t> bytes, std::string_view name);

// The .npy encoding of `literal` (format 1.0, header padded to 64 bytes; 2.0
// only if the header would not fit in 1.0). Fails for dtypes numpy lacks.
StatusOr<std::vector<uint8_t>> SerializeNpy(const ir::Literal& literal);

// The numpy descr ("<f4", "|b1") for `dtype`, or an error naming the
// workaround when numpy has no such dtype.
StatusOr<std::string> NpyDescr(ir::DType dtype);

// Reads `path`: header first, then exactly the data it announces.
StatusOr<ir::Literal> ReadNpyFile(const std::string& path);
// Writes `literal` to `path` (created or truncated).
Status WriteNpyFile(const std::string& path, const ir::Literal& literal);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_NPY_H_
