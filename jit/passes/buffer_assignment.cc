#include "jit/passes/buffer_assignment.h"

#include <algorithm>
#include <functional>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

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
  // Live buffers by offset (they never overlap, so offsets are distinct),
  // and by the end of their range, to expire them.
  auto by_offset = [](const Live& a, const Live& b) { return a.offset < b.offset; };
  std::set<Live, decltype(by_offset)> live(by_offset);
  using Expiry = std::pair<int64_t, int64_t>;  // (end, offset)
  std::priority_queue<Expiry, std::vector<Expiry>, std::greater<Expiry>> expiry;
  for (size_t id : order) {
    const BufferInterval& t = buffers[id];
    while (!expiry.empty() && expiry.top().first < t.def) {
      live.erase(Live{expiry.top().second, 0, 0});
      expiry.pop();
    }
    const int64_t size = align_up(std::max<int64_t>(t.bytes, 1));
    out.unshared_bytes += size;
    int64_t offset = 0;
    if (live.size() <= kFirstFitLiveBuffers) {
      for (const Live& l : live) {
        if (offset + size <= l.offset) break;
        offset = std::max(offset, l.offset + l.size);
      }
    } else if (!live.empty()) {
      offset = live.rbegin()->offset + live.rbegin()->size;  // past the highest
    }
    out.offsets[id] = offset;
    live.insert({offset, size, t.last_use});
    expiry.push({t.last_use, offset});
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
