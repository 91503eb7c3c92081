// Collectives of a replicated execution (spec.md "Parallel execution",
// "Collective ops"): the process grid, each process's place in it, and the
// exchange through which the processes of one execution meet.
//
// A replicated execution runs num_replicas x num_partitions processes, one
// thread each (devices/replicated.h starts them). Every process evaluates the
// program with EvalOptions::process pointing at its ProcessContext; the
// collective ops (all_reduce, all_gather, reduce_scatter, all_to_all,
// collective_permute, collective_broadcast, collective_reduce,
// cross-replica-sum, send / recv) compute their process groups from their
// attributes (replica_groups, channel_id, use_global_device_ids, ...), meet
// the other processes of their group in the CollectiveExchange and combine
// the contributions in group order, so results do not depend on which
// thread arrives first. Without a ProcessContext a program runs as the one
// process (0, 0) of a 1x1 grid, as before.
#ifndef JITD_JIT_EVAL_COLLECTIVES_H_
#define JITD_JIT_EVAL_COLLECTIVES_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"
#include "jit/eval/eval.h"

namespace jitd::eval {

// The shape of a replicated execution (spec.md "process grid"). Process
// (replica r, partition p) has index r * num_partitions + p, the spec's
// flattened id. Plain value.
struct ProcessGrid {
  int64_t num_replicas = 1;
  int64_t num_partitions = 1;
  // Optional device assignment: device_ids[process index] is the device
  // that process runs on (what use_global_device_ids' "global device ids"
  // name in XLA). Empty = process index i is device i. The interpreter and
  // the cpu device run every process on this machine's threads; the ids
  // only matter to devices with several accelerators.
  std::vector<int64_t> device_ids;

  int64_t num_processes() const { return num_replicas * num_partitions; }
  int64_t process_index(int64_t replica, int64_t partition) const {
    return replica * num_partitions + partition;
  }
  bool operator==(const ProcessGrid&) const = default;
};

// OK when `grid` can run: both counts in [1, 2^16], and device_ids either
// empty or one distinct non-negative id per process. INVALID_ARGUMENT naming
// the field otherwise.
Status ValidateProcessGrid(const ProcessGrid& grid);

// "2 replicas x 1 partition" — for messages.
std::string DescribeProcessGrid(const ProcessGrid& grid);

// Where a process of a replicated execution meets the others. One per
// execution, shared by all its processes (threads); thread-safe.
//
// Meet() is the one rendezvous every collective uses: a process arrives at
// a collective site (the op, counted per process so an op in a loop meets
// its own iteration) with the group it computed and its contribution; when
// every member of the group has arrived, each gets all contributions in
// group order. A process whose group disagrees with a member's (the same
// site, another group that holds it) fails the execution with
// INVALID_ARGUMENT; one that waits past its deadline, or is cancelled, fails
// it with DEADLINE_EXCEEDED / UNAVAILABLE naming the site and the processes
// that never came. A failure Abort()s the exchange: every process waiting or
// arriving later returns the same error instead of hanging.
class CollectiveExchange {
 public:
  explicit CollectiveExchange(ProcessGrid grid);
  CollectiveExchange(const CollectiveExchange&) = delete;
  CollectiveExchange& operator=(const CollectiveExchange&) = delete;

  const ProcessGrid& grid() const { return grid_; }

  // What identifies one collective across processes: `site` is the op (the
  // same ir::Op* in every process of an SPMD program) or, for send / recv,
  // null with the channel id set; `name` is for messages ("stablehlo.all_reduce
  // @12:5").
  struct Site {
    const void* op = nullptr;
    int64_t channel = 0;
    std::string name;
  };
  // How long Meet may wait.
  struct Wait {
    std::optional<std::chrono::steady_clock::time_point> deadline;
    const std::atomic<bool>* cancel = nullptr;
  };

  // Process `process` (an index) joins `site` with `group` (process
  // indices; it must hold `process`) and `contribution`. Returns the
  // contributions of group[0], group[1], ... once all have arrived.
  StatusOr<std::vector<std::vector<RuntimeValue>>> Meet(const Site& site, int64_t process,
                                                        std::span<const int64_t> group,
                                                        std::vector<RuntimeValue> contribution,
                                                        const Wait& wait);

  // Ends the execution: every current and later Meet returns `why`. The
  // first status wins. Used by the runner when a process fails outside a
  // collective, so its peers do not wait for it until their deadline.
  void Abort(Status why);
  // The status Abort was given (OK while none).
  Status aborted() const;

 private:
  struct Meeting;
  ProcessGrid grid_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Status aborted_;
  // Per process: how many times it joined each site so far.
  std::vector<std::map<std::tuple<const void*, int64_t>, int64_t>> counts_;
  // Open meetings by (site op, channel, occurrence).
  std::map<std::tuple<const void*, int64_t, int64_t>, std::shared_ptr<Meeting>> meetings_;
};

// One process's place in a replicated execution: its ids and the exchange
// its collectives join. EvalOptions::process (and devices'
// ExecuteOptions::process) point at one; it must outlive the evaluation.
struct ProcessContext {
  int64_t replica_id = 0;
  int64_t partition_id = 0;
  std::shared_ptr<CollectiveExchange> exchange;

  int64_t index() const { return exchange ? exchange->grid().process_index(replica_id, partition_id) : 0; }
};

// The process groups of a collective (spec.md "cross_replica",
// "cross_partition", "cross_replica_and_partition", "flattened_ids"), as
// lists of process indices. `groups` are the op's replica_groups rows (-1
// padding dropped); empty = one group of all ids. INVALID_ARGUMENT when ids
// repeat, fall outside the grid or do not cover it.
enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedIds };
StatusOr<std::vector<std::vector<int64_t>>> ProcessGroups(GroupMode mode,
                                                          const std::vector<std::vector<int64_t>>& groups,
                                                          const ProcessGrid& grid);

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_COLLECTIVES_H_
