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
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
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
// Meet() is the one rendezvous every collective uses, in two phases: a
// process arrives at a collective with the group it computed (process
// indices, in the order contributions combine) and a pointer to what it
// publishes (its operands and result buffers; the collective's kernel
// defines the struct). Once every member has arrived, each runs `work` on
// its own thread, seeing every member's publication in group order (so it
// may read peers' operands and write into peers' results — the kernels
// split the work so each element is written once); then each waits until
// all members finished their work, so nothing published is freed while a
// peer still reads it. Meetings are matched by (channel, group, how many
// times this process met that channel and group before): SPMD and MPMD
// programs alike, an op in a loop meets its own iteration.
//
// Failures end the whole execution, never hang it: a member that arrives at
// a different kind of collective, or whose group disagrees with a waiting
// member's (each waits for the other), fails with INVALID_ARGUMENT; a member
// that finished its program without arriving (ProcessFinished) likewise;
// waiting past the deadline gives DEADLINE_EXCEEDED, a cancel flag
// CancelledStatus() — each naming the collective and the processes. The
// first failure Abort()s the exchange: every process waiting or arriving
// later returns that same status.
class CollectiveExchange {
 public:
  explicit CollectiveExchange(ProcessGrid grid);
  CollectiveExchange(const CollectiveExchange&) = delete;
  CollectiveExchange& operator=(const CollectiveExchange&) = delete;

  const ProcessGrid& grid() const { return grid_; }

  // Which collective a process is at. `kind` must agree between the members
  // ("stablehlo.all_reduce"; send and recv both "channel"); `name` is for
  // messages ("'stablehlo.all_reduce' at 12:5").
  struct Site {
    int64_t channel = 0;
    std::string kind;
    std::string name;
  };
  // How long Meet may wait.
  struct Wait {
    std::optional<std::chrono::steady_clock::time_point> deadline;
    const std::atomic<bool>* cancel = nullptr;
  };
  // Runs once all members arrived: peers[k] is what group[k] published,
  // `self` this process's position in the group.
  using Work = std::function<Status(std::span<void* const> peers, size_t self)>;

  // Process `process` joins the collective `site` with `group` (it must hold
  // `process`; no repeats) publishing `published`, and runs `work` when all
  // members are there. A failing `work` aborts the exchange.
  Status Meet(const Site& site, int64_t process, std::span<const int64_t> group, void* published,
              const Work& work, const Wait& wait);

  // Point-to-point (send / recv): `from` posts `values` on (channel, from,
  // to) without waiting for the receiver; Receive takes the oldest value
  // posted there, waiting for one until `wait` ends (DEADLINE_EXCEEDED,
  // cancel) or `from` finished without posting (INVALID_ARGUMENT). from =
  // to = -1: the channel's own queue, shared by all processes.
  Status Send(const Site& site, int64_t from, int64_t to, std::vector<RuntimeValue> values);
  StatusOr<std::vector<RuntimeValue>> Receive(const Site& site, int64_t from, int64_t to, const Wait& wait);

  // Process `process` ended (its program returned or failed): members
  // waiting for it fail instead of waiting until their deadline.
  void ProcessFinished(int64_t process);

  // Ends the execution: every current and later Meet returns `why`. The
  // first status wins. The runner calls it when a process fails outside a
  // collective, so its peers do not wait for it.
  void Abort(Status why);
  // The status Abort was given (OK while none).
  Status aborted() const;

  // "process 3 (replica 1, partition 1)".
  std::string DescribeProcess(int64_t process) const;

 private:
  struct Meeting;
  using Key = std::tuple<int64_t, std::vector<int64_t>, int64_t>;  // channel, group, occurrence
  Status FailLocked(Status why);

  ProcessGrid grid_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Status aborted_;
  std::vector<std::map<std::pair<int64_t, std::vector<int64_t>>, int64_t>> counts_;  // per process
  std::vector<Meeting*> waiting_;  // per process: the meeting it waits to fill, or null
  std::vector<bool> finished_;     // per process
  std::map<Key, std::shared_ptr<Meeting>> meetings_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<std::vector<RuntimeValue>>> mailboxes_;
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
// padding dropped); no rows = one group of all ids (as XLA reads an empty
// replica_groups). INVALID_ARGUMENT when ids repeat, fall outside the grid,
// or (when `must_cover`) leave some id out.
enum class GroupMode { kCrossReplica, kCrossPartition, kCrossReplicaAndPartition, kFlattenedIds };
std::string_view GroupModeName(GroupMode mode);
StatusOr<std::vector<std::vector<int64_t>>> ProcessGroups(GroupMode mode,
                                                          const std::vector<std::vector<int64_t>>& groups,
                                                          const ProcessGrid& grid,
                                                          bool must_cover = true);

}  // namespace jitd::eval

#endif  // JITD_JIT_EVAL_COLLECTIVES_H_
