// The process grid of a daemon compile (issue 17): what the client asked
// for (CompileOptions.num_replicas / num_partitions / device_assignment),
// what the module declares (its mhlo.num_replicas / mhlo.num_partitions
// attributes), the grid the program runs as, and how that grid enters the
// cache key.
//
// Rules: a count the client leaves 0 comes from the module's attribute, or
// is 1 when the module has none; a count the client gives must equal the
// module's attribute when there is one (INVALID_ARGUMENT naming both
// otherwise). A 1x1 grid without a device assignment adds nothing to the
// key, so one-process programs keep the keys they always had; any other
// grid appends ",replicas=R,partitions=P[,devices=a;b;...]" to the key's
// options part, which is also where a program loaded by fingerprint or from
// disk (without a parse) finds its grid again (GridFromKeyOptions).
//
// Thread safety: free functions on values; thread-safe.
#ifndef JITD_DAEMON_PROCESS_GRID_H_
#define JITD_DAEMON_PROCESS_GRID_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/eval/collectives.h"
#include "jit/ir/module.h"

namespace jitd::daemon {

// The most processes one execution may have: each runs on a thread of its
// own in the daemon (and one execute slot of the gate holds them all).
inline constexpr int64_t kMaxProcesses = 256;

// What a client asked for. Plain value; 0 = not given.
struct GridRequest {
  uint32_t num_replicas = 0;
  uint32_t num_partitions = 0;
  std::vector<int64_t> device_assignment;  // empty = process i is device i
};

// What a module declares. Plain value; 0 = the attribute is absent.
struct DeclaredGrid {
  int64_t num_replicas = 0;
  int64_t num_partitions = 0;
  bool operator==(const DeclaredGrid&) const = default;
};

// The module's mhlo.num_replicas / mhlo.num_partitions. INVALID_ARGUMENT
// naming the attribute when one is not a positive integer.
StatusOr<DeclaredGrid> DeclaredProcessGrid(const ir::Module& module);

// The grid a compile runs as (see the rules above). INVALID_ARGUMENT naming
// the option and the attribute when they disagree, or naming the field when
// the grid is out of range (more than kMaxProcesses processes; a device
// assignment of the wrong length, with a negative or repeated id).
StatusOr<eval::ProcessGrid> ResolveProcessGrid(const GridRequest& request,
                                               const DeclaredGrid& declared);

// The grid's part of the key's options text: "" for 1x1 without devices.
std::string GridKeyOption(const eval::ProcessGrid& grid);
// The grid a key's options text names (1x1 when it names none).
eval::ProcessGrid GridFromKeyOptions(std::string_view options);

// A DeclaredGrid as text and back, for the daemon's alias map (which then
// answers a program's grid without a parse): "R,P".
std::string EncodeDeclaredGrid(const DeclaredGrid& grid);
// Nullopt-like failure as INTERNAL: the alias map only holds what
// EncodeDeclaredGrid wrote.
StatusOr<DeclaredGrid> DecodeDeclaredGrid(std::string_view text);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_PROCESS_GRID_H_
