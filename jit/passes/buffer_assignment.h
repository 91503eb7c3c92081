// Buffer assignment: packs temporaries into one arena so that buffers whose
// live ranges do not overlap share memory (XLA's buffer assignment, reduced
// to a linear scan: the CPU device's thunk sequence is a straight line,
// loops and branches being single positions holding their bodies).
//
// Input: per buffer its size and live range [def, last_use] in program
// positions (inclusive; a buffer defined at the position where another one
// is last used does not share with it: a kernel reads its inputs while it
// writes its outputs). Output: an offset per buffer and the arena's size.
// First fit in order of definition (ties by index): deterministic, and the
// same answer for the same input on any machine. While more than
// kFirstFitLiveBuffers are live at once, a buffer goes past the highest
// live one instead (first fit would cost a walk over all of them: a program
// defining 10^5 values before using any took minutes), so the time is
// O(n log n) whatever the program. Pure functions, thread-safe.
#ifndef JITD_JIT_PASSES_BUFFER_ASSIGNMENT_H_
#define JITD_JIT_PASSES_BUFFER_ASSIGNMENT_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace jitd::passes {

struct BufferInterval {
  int64_t bytes = 0;
  int64_t def = 0;
  int64_t last_use = 0;  // >= def
};

struct BufferAssignment {
  std::vector<int64_t> offsets;  // per buffer, multiples of the alignment
  int64_t arena_bytes = 0;       // the arena holding them all
  int64_t unshared_bytes = 0;    // what separate (aligned) buffers would take
};

inline constexpr size_t kFirstFitLiveBuffers = 256;

// `alignment` must be a power of two; sizes are rounded up to it.
BufferAssignment AssignBuffers(std::span<const BufferInterval> buffers, int64_t alignment);

// One line per buffer, "#i bytes=B live=[def,last_use] offset=O", then
// "arena=A unshared=U": the compile dump "buffers.txt".
std::string DescribeAssignment(std::span<const BufferInterval> buffers, const BufferAssignment& assignment);

}  // namespace jitd::passes

#endif  // JITD_JIT_PASSES_BUFFER_ASSIGNMENT_H_
