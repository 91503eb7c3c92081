#include "jit/passes/buffer_assignment.h"

#include <algorithm>
#include <tuple>

namespace jitd::passes {

BufferAssignment AssignBuffers(std::span<const BufferInterval> buffers, int64_t alignment) {
  auto align_up = [alignment](int64_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<size_t> order(buffers.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // By definition point, ties by index (a stable order without
  // stable_sort's temporary buffer).
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(buffers[a].def, a) < std::tie(buffers[b].def, b);
  });
  BufferAssignment out;
  out.offsets.assign(buffers.size(), 0);
  struct Live {
    int64_t offset, size, end;
  };
  std::vector<Live> live;  // sorted by offset
  for (size_t id : order) {
    const BufferInterval& t = buffers[id];
    live.erase(std::remove_if(live.begin(), live.end(), [&](const Live& l) { return l.end < t.def; }),
               live.end());
    const int64_t size = align_up(std::max<int64_t>(t.bytes, 1));
    out.unshared_bytes += size;
    int64_t offset = 0;
    for (const Live& l : live) {
      if (offset + size <= l.offset) break;
      offset = std::max(offset, l.offset + l.size);
    }
    out.offsets[id] = offset;
    live.push_back({offset, size, t.last_use});
    std::sort(live.begin(), live.end(), [](const Live& a, const Live& b) { return a.offset < b.offset; });
    out.arena_bytes = std::max(out.arena_bytes, offset + size);
  }
  return out;
}

std::string DescribeAssignment(std::span<const BufferInterval> buffers, const BufferAssignment& assignment) {
  std::string out;
  for (size_t i = 0; i < buffers.size(); ++i) {
    out += "#" + std::to_string(i) + " bytes=" + std::to_string(buffers[i].bytes) + " live=[" +
           std::to_string(buffers[i].def) + "," + std::to_string(buffers[i].last_use) +
           "] offset=" + std::to_string(i < assignment.offsets.size() ? assignment.offsets[i] : -1) + "\n";
  }
  out += "arena=" + std::to_string(assignment.arena_bytes) +
         " unshared=" + std::to_string(assignment.unshared_bytes) + "\n";
  return out;
}

}  // namespace jitd::passes
