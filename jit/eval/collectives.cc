// Collectives of a replicated execution: the exchange where processes meet
// (CollectiveExchange), the spec's process-group strategies (ProcessGroups)
// and the kernels of replica_id's companions: all_reduce, all_gather,
// reduce_scatter, all_to_all, collective_permute, collective_broadcast,
// collective_reduce, cross-replica-sum, send and recv.
//
// Every kernel works the same way: compute this process's group from the
// op's attributes and the grid, publish pointers to its operands and its
// (already allocated) results, meet the group, then fill its share of the
// results reading the peers' operands. Reductions fold left in group order
// (the spec's schedule is implementation-defined; a fixed one makes results
// independent of thread timing); all_reduce splits the elements between the
// members, each folding its slice and writing it into every member's
// result, so the work and the memory traffic are shared. Without a
// ProcessContext a program is the one process (0, 0) of a 1x1 grid and a
// group of one needs no meeting.
#include "jit/eval/collectives.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <numeric>
#include <set>
#include <type_traits>

#include "jit/eval/fold.h"
#include "jit/eval/internal/kernels.h"

namespace jitd::eval {

// ---- ProcessGrid -------------------------------------------------------------

Status ValidateProcessGrid(const ProcessGrid& grid) {
  constexpr int64_t kMax = int64_t{1} << 16;
  if (grid.num_replicas < 1 || grid.num_replicas > kMax) {
    return InvalidArgument("num_replicas must be in [1, 65536], got " + std::to_string(grid.num_replicas));
  }
  if (grid.num_partitions < 1 || grid.num_partitions > kMax) {
    return InvalidArgument("num_partitions must be in [1, 65536], got " +
                           std::to_string(grid.num_partitions));
  }
  if (grid.num_processes() > kMax) {
    return InvalidArgument("num_replicas x num_partitions must be at most 65536 processes, got " +
                           DescribeProcessGrid(grid));
  }
  if (!grid.device_ids.empty()) {
    if (static_cast<int64_t>(grid.device_ids.size()) != grid.num_processes()) {
      return InvalidArgument("the device assignment names " + std::to_string(grid.device_ids.size()) +
                             " devices for " + std::to_string(grid.num_processes()) + " processes (" +
                             DescribeProcessGrid(grid) + ")");
    }
    std::set<int64_t> seen;
    for (size_t i = 0; i < grid.device_ids.size(); ++i) {
      const int64_t id = grid.device_ids[i];
      if (id < 0 || !seen.insert(id).second) {
        return InvalidArgument("the device assignment's entry " + std::to_string(i) + " (" +
                               std::to_string(id) + ") is negative or repeats an earlier one");
      }
    }
  }
  return Status::Ok();
}

std::string DescribeProcessGrid(const ProcessGrid& grid) {
  return std::to_string(grid.num_replicas) + (grid.num_replicas == 1 ? " replica x " : " replicas x ") +
         std::to_string(grid.num_partitions) + (grid.num_partitions == 1 ? " partition" : " partitions");
}

// ---- ProcessGroups -------------------------------------------------------------

std::string_view GroupModeName(GroupMode mode) {
  switch (mode) {
    case GroupMode::kCrossReplica: return "cross_replica";
    case GroupMode::kCrossPartition: return "cross_partition";
    case GroupMode::kCrossReplicaAndPartition: return "cross_replica_and_partition";
    case GroupMode::kFlattenedIds: return "flattened_ids";
  }
  return "?";
}

StatusOr<std::vector<std::vector<int64_t>>> ProcessGroups(GroupMode mode,
                                                          const std::vector<std::vector<int64_t>>& groups,
                                                          const ProcessGrid& grid, bool must_cover) {
  const int64_t R = grid.num_replicas, P = grid.num_partitions;
  const int64_t id_count = mode == GroupMode::kCrossPartition ? P
                           : mode == GroupMode::kFlattenedIds ? R * P
                                                              : R;
  const char* id_name = mode == GroupMode::kCrossPartition ? "partition"
                        : mode == GroupMode::kFlattenedIds ? "flattened process"
                                                           : "replica";
  std::vector<std::vector<int64_t>> rows = groups;
  if (rows.empty()) {
    rows.emplace_back(static_cast<size_t>(id_count));
    std::iota(rows[0].begin(), rows[0].end(), 0);
  }
  std::vector<bool> seen(static_cast<size_t>(id_count), false);
  for (const auto& row : rows) {
    for (int64_t id : row) {
      if (id < 0 || id >= id_count) {
        return InvalidArgument(std::string(GroupModeName(mode)) + " groups name " + id_name + " id " +
                               std::to_string(id) + ", outside the " + std::to_string(id_count) +
                               " of the process grid (" + DescribeProcessGrid(grid) + ")");
      }
      if (seen[static_cast<size_t>(id)]) {
        return InvalidArgument(std::string(GroupModeName(mode)) + " groups name " + id_name + " id " +
                               std::to_string(id) + " twice");
      }
      seen[static_cast<size_t>(id)] = true;
    }
  }
  if (must_cover) {
    for (int64_t id = 0; id < id_count; ++id) {
      if (!seen[static_cast<size_t>(id)]) {
        return InvalidArgument(std::string(GroupModeName(mode)) + " groups leave out " + id_name + " id " +
                               std::to_string(id) + " of the process grid (" + DescribeProcessGrid(grid) +
                               "); they must cover every id");
      }
    }
  }
  std::vector<std::vector<int64_t>> out;
  switch (mode) {
    case GroupMode::kCrossReplica:
      for (const auto& row : rows) {
        for (int64_t p = 0; p < P; ++p) {
          std::vector<int64_t> g;
          for (int64_t r : row) g.push_back(grid.process_index(r, p));
          out.push_back(std::move(g));
        }
      }
      break;
    case GroupMode::kCrossPartition:
      for (const auto& row : rows) {
        for (int64_t r = 0; r < R; ++r) {
          std::vector<int64_t> g;
          for (int64_t p : row) g.push_back(grid.process_index(r, p));
          out.push_back(std::move(g));
        }
      }
      break;
    case GroupMode::kCrossReplicaAndPartition:
      for (const auto& row : rows) {
        std::vector<int64_t> g;
        for (int64_t p = 0; p < P; ++p) {
          for (int64_t r : row) g.push_back(grid.process_index(r, p));
        }
        out.push_back(std::move(g));
      }
      break;
    case GroupMode::kFlattenedIds:
      out = rows;  // flattened ids are process indices
      break;
  }
  return out;
}

// ---- CollectiveExchange ------------------------------------------------------

struct CollectiveExchange::Meeting {
  std::string kind, name;  // of the first member to arrive
  std::vector<int64_t> group;
  std::vector<void*> published;
  std::vector<bool> arrived;
  size_t num_arrived = 0;
  size_t num_done = 0;
};

namespace {

std::string GroupText(std::span<const int64_t> group) {
  std::string s = "[";
  for (size_t i = 0; i < group.size(); ++i) s += (i ? ", " : "") + std::to_string(group[i]);
  return s + "]";
}

bool Contains(std::span<const int64_t> group, int64_t process) {
  return std::find(group.begin(), group.end(), process) != group.end();
}

}  // namespace

CollectiveExchange::CollectiveExchange(ProcessGrid grid)
    : grid_(std::move(grid)),
      counts_(static_cast<size_t>(grid_.num_processes())),
      waiting_(static_cast<size_t>(grid_.num_processes()), nullptr),
      finished_(static_cast<size_t>(grid_.num_processes()), false) {}

std::string CollectiveExchange::DescribeProcess(int64_t process) const {
  const int64_t P = grid_.num_partitions;
  return "process " + std::to_string(process) + " (replica " + std::to_string(process / P) +
         ", partition " + std::to_string(process % P) + ")";
}

Status CollectiveExchange::FailLocked(Status why) {
  if (aborted_.ok()) aborted_ = std::move(why);
  cv_.notify_all();
  return aborted_;
}

void CollectiveExchange::Abort(Status why) {
  std::lock_guard<std::mutex> lock(mu_);
  (void)FailLocked(std::move(why));
}

Status CollectiveExchange::aborted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return aborted_;
}

void CollectiveExchange::ProcessFinished(int64_t process) {
  std::lock_guard<std::mutex> lock(mu_);
  if (process >= 0 && process < grid_.num_processes()) finished_[static_cast<size_t>(process)] = true;
  cv_.notify_all();
}

Status CollectiveExchange::Meet(const Site& site, int64_t process, std::span<const int64_t> group,
                                void* published, const Work& work, const Wait& wait) {
  using Clock = std::chrono::steady_clock;
  const int64_t n = grid_.num_processes();
  std::unique_lock<std::mutex> lock(mu_);
  if (!aborted_.ok()) return aborted_;
  if (process < 0 || process >= n) {
    return FailLocked(InvalidArgument(site.name + ": process index " + std::to_string(process) +
                                      " is outside the process grid (" + DescribeProcessGrid(grid_) + ")"));
  }
  const auto self_it = std::find(group.begin(), group.end(), process);
  if (self_it == group.end()) {
    return FailLocked(InvalidArgument(site.name + ": " + DescribeProcess(process) + " joined group " +
                                      GroupText(group) + ", which does not hold it"));
  }
  const size_t self = static_cast<size_t>(self_it - group.begin());
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] < 0 || group[i] >= n || std::find(group.begin(), group.begin() + i, group[i]) !=
                                             group.begin() + static_cast<std::ptrdiff_t>(i)) {
      return FailLocked(InvalidArgument(site.name + ": group " + GroupText(group) +
                                        " names a process twice or outside the grid (" +
                                        DescribeProcessGrid(grid_) + ")"));
    }
  }
  std::vector<int64_t> group_vec(group.begin(), group.end());
  const int64_t occurrence = counts_[static_cast<size_t>(process)][{site.channel, group_vec}]++;
  std::shared_ptr<Meeting>& slot = meetings_[Key{site.channel, group_vec, occurrence}];
  if (!slot) {
    slot = std::make_shared<Meeting>();
    slot->kind = site.kind;
    slot->name = site.name;
    slot->group = group_vec;
    slot->published.assign(group.size(), nullptr);
    slot->arrived.assign(group.size(), false);
  }
  const std::shared_ptr<Meeting> m = slot;
  if (m->kind != site.kind) {
    return FailLocked(InvalidArgument(
        site.name + ": " + DescribeProcess(process) + " reached this collective where another member of its group " +
        GroupText(group) + " reached " + m->name +
        ": the processes do not run the same collectives in the same order"));
  }
  m->published[self] = published;
  m->arrived[self] = true;
  m->num_arrived++;
  if (m->num_arrived == group.size()) cv_.notify_all();
  waiting_[static_cast<size_t>(process)] = m.get();
  // Waiting processes that wait for each other in a cycle never move on (a
  // process waits for the members of its meeting that have not arrived;
  // those waiting elsewhere are blocked too): the groups disagree.
  if (m->num_arrived < group.size()) {
    std::vector<int64_t> path = {process};
    std::vector<bool> visited(static_cast<size_t>(n), false);
    std::function<bool(int64_t)> cycle = [&](int64_t p) -> bool {
      const Meeting* at = waiting_[static_cast<size_t>(p)];
      for (size_t k = 0; k < at->group.size(); ++k) {
        const int64_t q = at->group[k];
        if (at->arrived[k] || !waiting_[static_cast<size_t>(q)]) continue;
        if (q == process) return true;
        if (visited[static_cast<size_t>(q)]) continue;
        visited[static_cast<size_t>(q)] = true;
        path.push_back(q);
        if (cycle(q)) return true;
        path.pop_back();
      }
      return false;
    };
    if (cycle(process)) {
      std::string text;
      for (int64_t p : path) {
        const Meeting* at = waiting_[static_cast<size_t>(p)];
        text += (text.empty() ? "" : "; ") + DescribeProcess(p) + " waits in " + at->name + " with group " +
                GroupText(at->group);
      }
      waiting_[static_cast<size_t>(process)] = nullptr;
      return FailLocked(InvalidArgument(site.name + ": the processes' groups disagree, each waits for another: " +
                                        text));
    }
  }

  // Waits until `done()` or failure; names the members still missing.
  auto wait_for = [&](auto done, bool arriving) -> Status {
    while (!done()) {
      if (!aborted_.ok()) return aborted_;
      std::vector<int64_t> missing;
      for (size_t k = 0; k < group.size(); ++k) {
        if (!m->arrived[k]) missing.push_back(group[k]);
      }
      if (arriving) {
        for (int64_t q : missing) {
          if (finished_[static_cast<size_t>(q)]) {
            return FailLocked(InvalidArgument(site.name + ": " + DescribeProcess(q) +
                                              " ended without joining this collective (group " +
                                              GroupText(group) + ") that " + DescribeProcess(process) +
                                              " waits in"));
          }
        }
      }
      if (wait.cancel && wait.cancel->load(std::memory_order_relaxed)) return FailLocked(CancelledStatus());
      const Clock::time_point now = Clock::now();
      if (wait.deadline && now >= *wait.deadline) {
        std::string who;
        for (int64_t q : missing) who += (who.empty() ? "" : ", ") + std::to_string(q);
        return FailLocked(Status(
            StatusCode::kDeadlineExceeded,
            site.name + ": " + DescribeProcess(process) + " waited past its deadline " +
                (arriving ? "for process(es) " + who + " of its group " + GroupText(group) + " to arrive"
                          : "for its group " + GroupText(group) + " to finish")));
      }
      // Wake at the deadline, and every few ms to read the cancel flag.
      Clock::time_point until = now + std::chrono::milliseconds(wait.cancel ? 5 : 100);
      if (wait.deadline && *wait.deadline < until) until = *wait.deadline;
      cv_.wait_until(lock, until);
    }
    return Status::Ok();
  };
  Status s = wait_for([&] { return m->num_arrived == group.size(); }, true);
  waiting_[static_cast<size_t>(process)] = nullptr;
  if (!s.ok()) return s;

  lock.unlock();
  Status worked = work(std::span<void* const>(m->published), self);
  lock.lock();
  if (!worked.ok()) return FailLocked(std::move(worked));
  if (++m->num_done == group.size()) {
    cv_.notify_all();
    meetings_.erase(Key{site.channel, group_vec, occurrence});
    return aborted_;
  }
  return wait_for([&] { return m->num_done == group.size(); }, false);
}

Status CollectiveExchange::Send(const Site& site, int64_t from, int64_t to, std::vector<RuntimeValue> values) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!aborted_.ok()) return aborted_;
  const int64_t n = grid_.num_processes();
  if (from < -1 || from >= n || to < -1 || to >= n) {
    return FailLocked(InvalidArgument(site.name + ": sends from process " + std::to_string(from) + " to " +
                                      std::to_string(to) + ", outside the process grid (" +
                                      DescribeProcessGrid(grid_) + ")"));
  }
  mailboxes_[{site.channel, from, to}].push_back(std::move(values));
  cv_.notify_all();
  return Status::Ok();
}

StatusOr<std::vector<RuntimeValue>> CollectiveExchange::Receive(const Site& site, int64_t from, int64_t to,
                                                                const Wait& wait) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t n = grid_.num_processes();
  if (from < -1 || from >= n || to < -1 || to >= n) {
    return FailLocked(InvalidArgument(site.name + ": receives from process " + std::to_string(from) + " at " +
                                      std::to_string(to) + ", outside the process grid (" +
                                      DescribeProcessGrid(grid_) + ")"));
  }
  auto& box = mailboxes_[{site.channel, from, to}];
  while (box.empty()) {
    if (!aborted_.ok()) return aborted_;
    if (from >= 0 && finished_[static_cast<size_t>(from)]) {
      return FailLocked(InvalidArgument(site.name + ": " + DescribeProcess(from) +
                                        " ended without sending what " + DescribeProcess(to) +
                                        " receives on channel " + std::to_string(site.channel)));
    }
    if (wait.cancel && wait.cancel->load(std::memory_order_relaxed)) return FailLocked(CancelledStatus());
    const Clock::time_point now = Clock::now();
    if (wait.deadline && now >= *wait.deadline) {
      return FailLocked(Status(StatusCode::kDeadlineExceeded,
                               site.name + ": " + (to >= 0 ? DescribeProcess(to) : std::string("a process")) +
                                   " waited past its deadline for " +
                                   (from >= 0 ? DescribeProcess(from) : std::string("any process")) +
                                   " to send on channel " + std::to_string(site.channel)));
    }
    Clock::time_point until = now + std::chrono::milliseconds(wait.cancel ? 5 : 100);
    if (wait.deadline && *wait.deadline < until) until = *wait.deadline;
    cv_.wait_until(lock, until);
  }
  std::vector<RuntimeValue> values = std::move(box.front());
  box.pop_front();
  return values;
}

// ---- Kernels -----------------------------------------------------------------

namespace internal {
namespace {

using ir::DType;
using ir::Literal;
using ir::OpCode;

// What a process publishes at a meeting: its operands and its results.
struct Published {
  std::vector<const Literal*> operands;
  std::vector<Literal*> results;
};

// channel_id: the handle of `#stablehlo.channel_handle<handle = N, type = T>`
// (kept as its text by the parser, or a struct), or a `channel_id` integer.
int64_t ChannelId(const OpContext& ctx) {
  const std::vector<int64_t> handle = ctx.StructField("channel_handle", "handle");
  if (!handle.empty()) return handle[0];
  if (const ir::Attribute* a = ctx.op().attr("channel_handle")) {
    if (const auto* o = a->get_if<ir::OpaqueAttr>()) {
      const std::string& t = o->text;
      for (size_t at = t.find("handle"); at != std::string::npos; at = t.find("handle", at + 6)) {
        if (at > 0 && (std::isalnum(static_cast<unsigned char>(t[at - 1])) || t[at - 1] == '_')) continue;
        size_t k = at + 6;
        while (k < t.size() && t[k] == ' ') ++k;
        if (k >= t.size() || t[k] != '=') continue;
        ++k;
        while (k < t.size() && t[k] == ' ') ++k;
        const bool negative = k < t.size() && t[k] == '-';
        if (negative) ++k;
        int64_t v = 0;
        while (k < t.size() && std::isdigit(static_cast<unsigned char>(t[k]))) v = v * 10 + (t[k++] - '0');
        return negative ? -v : v;
      }
    }
  }
  return ctx.Int("channel_id", 0);
}

// The rows of a 2-d i64 attribute (replica_groups, source_target_pairs),
// without the -1 that pads ragged groups.
StatusOr<std::vector<std::vector<int64_t>>> Rows(const OpContext& ctx, std::string_view name) {
  std::vector<std::vector<int64_t>> rows;
  const ir::Attribute* a = ctx.op().attr(name);
  if (!a) return rows;
  if (!a->is<ir::DenseElementsAttr>()) {
    return ctx.Unimplemented("has a " + std::string(name) +
                             " that is not a dense i64 tensor (mesh-axes replica groups are not supported)");
  }
  JITD_ASSIGN_OR_RETURN(Literal lit, ir::DenseElementsToLiteral(a->as<ir::DenseElementsAttr>()));
  if (lit.type().rank() != 2) {
    if (lit.num_elements() == 0) return rows;
    return ctx.Error("requires a 2-d " + std::string(name) + ", got " + lit.type().ToString());
  }
  const int64_t n = lit.type().dim(0), m = lit.type().dim(1);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> row;
    for (int64_t j = 0; j < m; ++j) {
      const int64_t v = lit.GetInt(i * m + j);
      if (v >= 0) row.push_back(v);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

const ProcessGrid& GridOf(const OpContext& ctx) {
  static const ProcessGrid kOne;
  const ProcessContext* p = ctx.options().process;
  return p && p->exchange ? p->exchange->grid() : kOne;
}

int64_t SelfOf(const OpContext& ctx) {
  const ProcessContext* p = ctx.options().process;
  return p ? p->index() : 0;
}

std::string SiteName(const OpContext& ctx) {
  return "'" + std::string(ctx.op().name()) + "' at " + ctx.op().loc().ToString();
}

// The group that holds this process among `groups`; empty when none does.
std::vector<int64_t> GroupOf(const std::vector<std::vector<int64_t>>& groups, int64_t self) {
  for (const auto& g : groups) {
    if (Contains(g, self)) return g;
  }
  return {};
}

// Meets `group` (a group of one runs `work` directly) publishing `mine`.
Status MeetGroup(OpContext& ctx, std::string kind, int64_t channel, const std::vector<int64_t>& group,
                 void* mine, const CollectiveExchange::Work& work) {
  const ProcessContext* p = ctx.options().process;
  if (group.size() == 1 && group[0] == SelfOf(ctx)) {
    void* const peers[] = {mine};
    return work(peers, 0);
  }
  if (!p || !p->exchange) {
    return ctx.Error("needs processes " + GroupText(group) +
                     " but the program runs as one process (1 replica x 1 partition); run it with "
                     "num_replicas / num_partitions (or mhlo.num_replicas / mhlo.num_partitions)");
  }
  CollectiveExchange::Site site{channel, std::move(kind), SiteName(ctx)};
  CollectiveExchange::Wait wait{ctx.options().deadline, ctx.options().cancel};
  return p->exchange->Meet(site, p->index(), group, mine, work, wait);
}

// Errors of a group that is not what the op's shapes need.
Status CheckGroupSize(const OpContext& ctx, const std::vector<int64_t>& group, int64_t want,
                      const std::string& what) {
  if (static_cast<int64_t>(group.size()) == want) return Status::Ok();
  return ctx.Error("has process group " + GroupText(group) + " of " + std::to_string(group.size()) +
                   " processes, but " + what + " needs " + std::to_string(want));
}

// The process groups of all_gather / all_reduce / reduce_scatter (channel_id
// and use_global_device_ids pick the mode), of this process.
StatusOr<std::vector<int64_t>> ReplicaGroupOf(OpContext& ctx, bool partition_mode_by_channel,
                                              bool must_cover = true) {
  JITD_ASSIGN_OR_RETURN(auto rows, Rows(ctx, "replica_groups"));
  const int64_t channel = ChannelId(ctx);
  const bool global = ctx.op().attr("use_global_device_ids") != nullptr &&
                      ctx.Bool("use_global_device_ids", true);
  GroupMode mode;
  if (partition_mode_by_channel) {
    mode = channel > 0 ? GroupMode::kCrossPartition : GroupMode::kCrossReplica;
  } else if (global) {
    if (channel <= 0) return ctx.Error("sets use_global_device_ids without a positive channel_id (C5)");
    mode = GroupMode::kFlattenedIds;
  } else {
    mode = channel > 0 ? GroupMode::kCrossReplicaAndPartition : GroupMode::kCrossReplica;
  }
  auto groups = ProcessGroups(mode, rows, GridOf(ctx), must_cover);
  if (!groups.ok()) return ctx.Error(groups.status().message());
  return GroupOf(*groups, SelfOf(ctx));
}

// ---- folding -------------------------------------------------------------------

// Why an evaluation must stop now (cancelled, past its deadline); OK if not.
Status StopStatus(const OpContext& ctx) {
  const EvalOptions& o = ctx.options();
  if (o.cancel && o.cancel->load(std::memory_order_relaxed)) return CancelledStatus();
  if (o.deadline && std::chrono::steady_clock::now() >= *o.deadline) {
    return Status(StatusCode::kDeadlineExceeded, ctx.op().loc().ToString() + ": '" +
                                                     std::string(ctx.op().name()) + "' ran past the deadline");
  }
  return Status::Ok();
}

template <typename T>
T FoldTyped(FoldOp op, T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    switch (op) {
      case FoldOp::kAdd: return a + b;
      case FoldOp::kMultiply: return a * b;
      case FoldOp::kMaximum:
      case FoldOp::kMinimum:
        if (a != a) return a;
        if (b != b) return b;
        if (a == b) return ((op == FoldOp::kMaximum) != std::signbit(a)) ? a : b;
        return (op == FoldOp::kMaximum) == (a > b) ? a : b;
      default: return a;
    }
  } else {
    using U = std::make_unsigned_t<T>;
    switch (op) {
      case FoldOp::kAdd: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case FoldOp::kMultiply: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case FoldOp::kMaximum: return a > b ? a : b;
      case FoldOp::kMinimum: return a < b ? a : b;
      case FoldOp::kAnd: return a & b;
      case FoldOp::kOr: return a | b;
      case FoldOp::kXor: return a ^ b;
    }
    return a;
  }
}

// out[k][dst + e] = fold(in[0][src + e], in[1][src + e], ...) for e < count,
// for every output k. The loop for one op is specialized so the compiler
// vectorizes it (the adds of two f32 streams run at memory speed).
template <typename T, FoldOp kOp>
void FoldRunsOp(std::span<const Literal* const> in, int64_t src, std::span<Literal* const> out, int64_t dst,
                int64_t count) {
  constexpr int64_t kBlock = 2048;  // elements kept in cache between the inputs' passes
  T acc[kBlock];
  for (int64_t base = 0; base < count; base += kBlock) {
    const int64_t m = std::min(kBlock, count - base);
    const T* a = reinterpret_cast<const T*>(in[0]->element_ptr(src + base));
    std::memcpy(acc, a, static_cast<size_t>(m) * sizeof(T));
    for (size_t k = 1; k < in.size(); ++k) {
      const T* b = reinterpret_cast<const T*>(in[k]->element_ptr(src + base));
      for (int64_t e = 0; e < m; ++e) acc[e] = FoldTyped<T>(kOp, acc[e], b[e]);
    }
    for (Literal* o : out) {
      std::memcpy(o->mutable_element_ptr(dst + base), acc, static_cast<size_t>(m) * sizeof(T));
    }
  }
}

template <typename T>
void FoldRunsT(FoldOp op, std::span<const Literal* const> in, int64_t src, std::span<Literal* const> out,
               int64_t dst, int64_t count) {
  switch (op) {
    case FoldOp::kAdd: return FoldRunsOp<T, FoldOp::kAdd>(in, src, out, dst, count);
    case FoldOp::kMultiply: return FoldRunsOp<T, FoldOp::kMultiply>(in, src, out, dst, count);
    case FoldOp::kMaximum: return FoldRunsOp<T, FoldOp::kMaximum>(in, src, out, dst, count);
    case FoldOp::kMinimum: return FoldRunsOp<T, FoldOp::kMinimum>(in, src, out, dst, count);
    case FoldOp::kAnd: return FoldRunsOp<T, FoldOp::kAnd>(in, src, out, dst, count);
    case FoldOp::kOr: return FoldRunsOp<T, FoldOp::kOr>(in, src, out, dst, count);
    case FoldOp::kXor: return FoldRunsOp<T, FoldOp::kXor>(in, src, out, dst, count);
  }
}

// Folds with `ctx`'s region `region` (or its recognized op, on the native
// types): the reduction of all_reduce, reduce_scatter, collective_reduce.
// Inputs are in the region's element type already.
// `fixed`: the op of a collective without a region (cross-replica-sum).
Status FoldRuns(OpContext& ctx, size_t region, std::span<const Literal* const> in, int64_t src,
                std::span<Literal* const> out, int64_t dst, int64_t count,
                std::optional<FoldOp> fixed = std::nullopt) {
  if (count <= 0) return Status::Ok();
  const DType t = in[0]->dtype();
  if (in.size() == 1) {
    for (Literal* o : out) {
      std::memcpy(o->mutable_element_ptr(dst), in[0]->element_ptr(src),
                  static_cast<size_t>(count * ir::StorageBytes(t)));
    }
    return Status::Ok();
  }
  if (const std::optional<FoldOp> op = fixed ? fixed : RecognizeFold(ctx.op(), region, t)) {
    const bool is_bitwise = *op == FoldOp::kAnd || *op == FoldOp::kOr || *op == FoldOp::kXor;
    switch (t) {
      case DType::kF32:
        if (!is_bitwise) return FoldRunsT<float>(*op, in, src, out, dst, count), Status::Ok();
        break;
      case DType::kF64:
        if (!is_bitwise) return FoldRunsT<double>(*op, in, src, out, dst, count), Status::Ok();
        break;
      case DType::kS8: return FoldRunsT<int8_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kS16: return FoldRunsT<int16_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kS32: return FoldRunsT<int32_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kS64: return FoldRunsT<int64_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kU8: return FoldRunsT<uint8_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kU16: return FoldRunsT<uint16_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kU32: return FoldRunsT<uint32_t>(*op, in, src, out, dst, count), Status::Ok();
      case DType::kU64: return FoldRunsT<uint64_t>(*op, in, src, out, dst, count), Status::Ok();
      default: break;
    }
  }
  if (fixed) return ctx.Unimplemented("is not implemented for element type " + std::string(ir::DTypeName(t)));
  // Any other body or type: the region, element by element, left to right.
  for (int64_t e = 0; e < count; ++e) {
    RuntimeValue acc = ScalarOf(*in[0], src + e);
    for (size_t k = 1; k < in.size(); ++k) {
      if ((e & 1023) == 0) JITD_RETURN_IF_ERROR(StopStatus(ctx));
      JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> r,
                            ctx.CallRegion(region, {std::move(acc), ScalarOf(*in[k], src + e)}));
      if (r.size() != 1 || !r[0].is_tensor() || r[0].literal().dtype() != t ||
          r[0].literal().num_elements() != 1) {
        return ctx.Error("computation must return one scalar of its argument type");
      }
      acc = std::move(r[0]);
    }
    for (Literal* o : out) StoreScalar(acc, *o, dst + e);
  }
  return Status::Ok();
}

// The region's element type for operand i: the type of its first argument.
StatusOr<DType> ReducerType(const OpContext& ctx, size_t region) {
  const ir::Op& op = ctx.op();
  if (op.num_regions() <= region || op.region(region).num_blocks() != 1 ||
      op.region(region).block(0).num_args() != 2) {
    return ctx.Error("needs a computation region of two scalar arguments");
  }
  return op.region(region).block(0).arg(0)->type().dtype();
}

// Operand i of `ctx` in `dtype`: the operand itself when it has that type,
// else a converted copy kept in `store`.
StatusOr<const Literal*> OperandAs(OpContext& ctx, size_t i, DType dtype, std::vector<Literal>& store) {
  const Literal& x = ctx.operand(i);
  if (x.dtype() == dtype) return &x;
  JITD_ASSIGN_OR_RETURN(Literal c, ctx.NewLiteral(x.type().WithDType(dtype)));
  for (int64_t k = 0; k < x.num_elements(); ++k) ConvertElement(x, k, c, k);
  store.push_back(std::move(c));
  return &store.back();
}

std::vector<RuntimeValue> Wrap(std::vector<Literal>& results) {
  std::vector<RuntimeValue> out;
  for (Literal& r : results) out.emplace_back(std::move(r));
  return out;
}

// ---- the kernels -------------------------------------------------------------

// all_reduce and cross-replica-sum: every member folds its share of the
// elements (member k of n: elements [k*N/n, (k+1)*N/n)) over all members'
// operands and writes it into every member's result.
KernelResult AllReduceKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(std::vector<int64_t> group, ReplicaGroupOf(ctx, false));
  if (group.empty()) return ctx.Error("this process is in none of its groups");
  std::vector<Literal> converted;
  converted.reserve(ctx.num_operands());
  std::vector<Literal> results;
  Published mine;
  for (size_t i = 0; i < ctx.num_operands(); ++i) {
    const DType e = ctx.result_type(i).dtype();
    JITD_ASSIGN_OR_RETURN(const Literal* x, OperandAs(ctx, i, e, converted));
    mine.operands.push_back(x);
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(i));
    results.push_back(std::move(r));
  }
  for (Literal& r : results) mine.results.push_back(&r);
  const size_t region = 0;
  const std::optional<FoldOp> fixed =
      ctx.op().code() == OpCode::kCrossReplicaSum ? std::optional<FoldOp>(FoldOp::kAdd) : std::nullopt;
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), ChannelId(ctx), group, &mine,
                                 [&](std::span<void* const> peers, size_t self) -> Status {
    const size_t n = peers.size();
    for (size_t i = 0; i < mine.operands.size(); ++i) {
      std::vector<const Literal*> in;
      std::vector<Literal*> out;
      for (void* p : peers) {
        const auto* pub = static_cast<const Published*>(p);
        if (pub->operands.size() != mine.operands.size() ||
            pub->operands[i]->type() != mine.operands[i]->type()) {
          return ctx.Error("members of group " + GroupText(group) + " disagree on operand #" +
                           std::to_string(i) + "'s type");
        }
        in.push_back(pub->operands[i]);
        out.push_back(pub->results[i]);
      }
      const int64_t N = mine.operands[i]->num_elements();
      const int64_t begin = N * static_cast<int64_t>(self) / static_cast<int64_t>(n);
      const int64_t end = N * static_cast<int64_t>(self + 1) / static_cast<int64_t>(n);
      JITD_RETURN_IF_ERROR(FoldRuns(ctx, region, in, begin, out, begin, end - begin, fixed));
    }
    return Status::Ok();
  }));
  return Wrap(results);
}

// Calls fn(outer, offset) for the `outer` blocks before dimension `dim`.
int64_t Outer(const ir::Type& t, int64_t dim) {
  int64_t o = 1;
  for (int64_t d = 0; d < dim; ++d) o *= t.dim(d);
  return o;
}
int64_t Inner(const ir::Type& t, int64_t dim) {
  int64_t o = 1;
  for (int64_t d = dim + 1; d < t.rank(); ++d) o *= t.dim(d);
  return o;
}

// all_gather: result = concatenate(operand@group[0], operand@group[1], ...)
// along all_gather_dim; each member fills its own result.
KernelResult AllGatherKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(std::vector<int64_t> group, ReplicaGroupOf(ctx, false));
  if (group.empty()) return ctx.Error("this process is in none of its groups");
  const int64_t dim = ctx.Int("all_gather_dim", 0);
  std::vector<Literal> results;
  Published mine;
  for (size_t i = 0; i < ctx.num_operands(); ++i) {
    mine.operands.push_back(&ctx.operand(i));
    const ir::Type& x = ctx.operand(i).type();
    if (dim < 0 || dim >= x.rank()) return ctx.Error("all_gather_dim is out of range");
    JITD_RETURN_IF_ERROR(CheckGroupSize(ctx, group, ctx.result_type(i).dim(dim) / std::max<int64_t>(1, x.dim(dim)),
                                        "result #" + std::to_string(i) + "'s shape"));
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(i));
    results.push_back(std::move(r));
  }
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), ChannelId(ctx), group, &mine,
                                 [&](std::span<void* const> peers, size_t) -> Status {
    for (size_t i = 0; i < results.size(); ++i) {
      const ir::Type& x = mine.operands[i]->type();
      const int64_t outer = Outer(x, dim);
      const size_t chunk = static_cast<size_t>(x.dim(dim) * Inner(x, dim) * ir::StorageBytes(x.dtype()));
      uint8_t* dst = results[i].mutable_bytes().data();
      const size_t n = peers.size();
      for (size_t k = 0; k < n; ++k) {
        const Literal* src = static_cast<const Published*>(peers[k])->operands[i];
        if (src->type() != x) {
          return ctx.Error("members of group " + GroupText(group) + " disagree on operand #" +
                           std::to_string(i) + "'s type");
        }
        for (int64_t o = 0; o < outer; ++o) {
          if (chunk) std::memcpy(dst + (static_cast<size_t>(o) * n + k) * chunk, src->bytes().data() + o * chunk, chunk);
        }
      }
    }
    return Status::Ok();
  }));
  return Wrap(results);
}

// reduce_scatter: member k's result is part k (along scatter_dimension) of
// the fold of all members' operands; each member folds its own part.
KernelResult ReduceScatterKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(std::vector<int64_t> group, ReplicaGroupOf(ctx, false));
  if (group.empty()) return ctx.Error("this process is in none of its groups");
  const int64_t dim = ctx.Int("scatter_dimension", 0);
  std::vector<Literal> converted;
  std::vector<Literal> results;
  Published mine;
  JITD_ASSIGN_OR_RETURN(const Literal* x, OperandAs(ctx, 0, ctx.result_type(0).dtype(), converted));
  mine.operands.push_back(x);
  if (dim < 0 || dim >= x->type().rank()) return ctx.Error("scatter_dimension is out of range");
  const int64_t part = ctx.result_type(0).dim(dim);
  JITD_RETURN_IF_ERROR(CheckGroupSize(ctx, group, part > 0 ? x->type().dim(dim) / part : 0,
                                      "the result's shape"));
  JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(0));
  results.push_back(std::move(r));
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), ChannelId(ctx), group, &mine,
                                 [&](std::span<void* const> peers, size_t self) -> Status {
    std::vector<const Literal*> in;
    for (void* p : peers) {
      const Literal* o = static_cast<const Published*>(p)->operands[0];
      if (o->type() != x->type()) {
        return ctx.Error("members of group " + GroupText(group) + " disagree on the operand's type");
      }
      in.push_back(o);
    }
    Literal* out[] = {&results[0]};
    const int64_t outer = Outer(x->type(), dim), inner = Inner(x->type(), dim);
    const int64_t run = part * inner;
    for (int64_t o = 0; o < outer; ++o) {
      JITD_RETURN_IF_ERROR(FoldRuns(ctx, 0, in, (o * x->type().dim(dim) + static_cast<int64_t>(self) * part) * inner,
                                    out, o * run, run));
    }
    return Status::Ok();
  }));
  return Wrap(results);
}

// all_to_all: member j's result concatenates, along concat_dimension, part j
// (along split_dimension) of every member's operand, in group order.
KernelResult AllToAllKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(std::vector<int64_t> group, ReplicaGroupOf(ctx, true));
  if (group.empty()) return ctx.Error("this process is in none of its groups");
  const int64_t split = ctx.Int("split_dimension", 0), concat = ctx.Int("concat_dimension", 0);
  const int64_t count = ctx.Int("split_count", static_cast<int64_t>(group.size()));
  JITD_RETURN_IF_ERROR(CheckGroupSize(ctx, group, count, "split_count"));
  std::vector<Literal> results;
  Published mine;
  for (size_t i = 0; i < ctx.num_operands(); ++i) {
    mine.operands.push_back(&ctx.operand(i));
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(i));
    results.push_back(std::move(r));
  }
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), ChannelId(ctx), group, &mine,
                                 [&](std::span<void* const> peers, size_t self) -> Status {
    for (size_t i = 0; i < results.size(); ++i) {
      const ir::Type& xt = mine.operands[i]->type();
      const ir::Type& rt = results[i].type();
      const int64_t rank = rt.rank();
      if (rank == 0 || split >= rank || concat >= rank || split < 0 || concat < 0) {
        return ctx.Error("split_dimension / concat_dimension are out of range");
      }
      const int64_t part_s = xt.dim(split) / count;  // rows of a part along split
      const int64_t part_c = rt.dim(concat) / count;  // rows one sender fills along concat
      const size_t bytes = static_cast<size_t>(ir::StorageBytes(rt.dtype()));
      std::vector<const Literal*> src;
      for (void* p : peers) {
        const Literal* o = static_cast<const Published*>(p)->operands[i];
        if (o->type() != xt) {
          return ctx.Error("members of group " + GroupText(group) + " disagree on operand #" +
                           std::to_string(i) + "'s type");
        }
        src.push_back(o);
      }
      if (rt.num_elements() == 0) continue;
      const std::vector<int64_t> xs = Strides(xt.dims());
      // Copy runs along the last dimension, cut where a sender's rows end.
      const int64_t last = rank - 1;
      const int64_t run = rank == 0 ? 1 : (concat == last ? part_c : rt.dim(last));
      std::vector<int64_t> outer_dims = rt.dims();
      if (rank > 0) outer_dims[static_cast<size_t>(last)] = rt.dim(last) / run;
      uint8_t* dst = results[i].mutable_bytes().data();
      int64_t out_off = 0;
      JITD_RETURN_IF_ERROR(ForEachIndex(outer_dims, [&](const std::vector<int64_t>& idx) -> Status {
        std::vector<int64_t> r = idx;
        if (rank > 0) r[static_cast<size_t>(last)] *= run;
        const int64_t k = r[static_cast<size_t>(concat)] / part_c;  // the sender
        std::vector<int64_t> s = r;
        s[static_cast<size_t>(concat)] -= k * part_c;
        s[static_cast<size_t>(split)] += static_cast<int64_t>(self) * part_s;
        std::memcpy(dst + static_cast<size_t>(out_off) * bytes, src[static_cast<size_t>(k)]->element_ptr(Offset(s, xs)),
                    static_cast<size_t>(run) * bytes);
        out_off += run;
        return Status::Ok();
      }));
    }
    return Status::Ok();
  }));
  return Wrap(results);
}

// collective_permute: a process named as the target of a pair gets its
// source's operand, any other zeros. The processes of the pairs (of this
// process's replica or partition) meet together.
KernelResult CollectivePermuteKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(auto pairs, Rows(ctx, "source_target_pairs"));
  const int64_t channel = ChannelId(ctx);
  const bool by_partition = channel > 0;  // cross_partition; else cross_replica
  const ProcessGrid& grid = GridOf(ctx);
  const int64_t self = SelfOf(ctx), P = grid.num_partitions;
  const int64_t limit = by_partition ? P : grid.num_replicas;
  const int64_t my_id = by_partition ? self % P : self / P;
  auto to_process = [&](int64_t id) {
    return by_partition ? grid.process_index(self / P, id) : grid.process_index(id, self % P);
  };
  std::set<int64_t> members, sources, targets;
  int64_t source = -1;
  for (const auto& p : pairs) {
    if (p.size() != 2) return ctx.Error("requires source_target_pairs of two ids per row");
    for (int64_t id : p) {
      if (id >= limit) {
        return ctx.Error("source_target_pairs name " + std::string(by_partition ? "partition " : "replica ") +
                         std::to_string(id) + ", outside the process grid (" + DescribeProcessGrid(grid) + ")");
      }
    }
    if (!sources.insert(p[0]).second) return ctx.Error("names source " + std::to_string(p[0]) + " twice (C2)");
    if (!targets.insert(p[1]).second) return ctx.Error("names target " + std::to_string(p[1]) + " twice (C3)");
    members.insert(to_process(p[0]));
    members.insert(to_process(p[1]));
    if (p[1] == my_id) source = to_process(p[0]);
  }
  JITD_ASSIGN_OR_RETURN(Literal result, ctx.NewResult(0));
  if (!members.count(self)) return Single(std::move(result));
  // The processes of the pairs in this process's replica (partition) meet
  // together; each target copies its source's operand.
  const std::vector<int64_t> group(members.begin(), members.end());
  Published mine;
  mine.operands.push_back(&ctx.operand(0));
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), channel, group, &mine,
                                 [&](std::span<void* const> peers, size_t) -> Status {
    if (source < 0) return Status::Ok();
    const size_t k = static_cast<size_t>(std::find(group.begin(), group.end(), source) - group.begin());
    const Literal* src = static_cast<const Published*>(peers[k])->operands[0];
    if (src->type() != result.type()) {
      return ctx.Error("source process " + std::to_string(source) + " sends " + src->type().ToString() +
                       " where " + result.type().ToString() + " is received");
    }
    std::memcpy(result.mutable_bytes().data(), src->bytes().data(), src->bytes().size());
    return Status::Ok();
  }));
  return Single(std::move(result));
}

// collective_broadcast: members of a group get its first member's operands
// (or the member operands[N][j] names, with has_dynamic_root); processes in
// no group get zeros.
KernelResult CollectiveBroadcastKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(auto rows, Rows(ctx, "replica_groups"));
  const int64_t channel = ChannelId(ctx);
  const GroupMode mode = channel > 0 ? GroupMode::kCrossPartition : GroupMode::kCrossReplica;
  auto groups = ProcessGroups(mode, rows, GridOf(ctx), false);
  if (!groups.ok()) return ctx.Error(groups.status().message());
  const std::vector<int64_t> group = GroupOf(*groups, SelfOf(ctx));
  // A unit attribute in the generic form (`has_dynamic_root`), or a boolean.
  const ir::Attribute* dynamic = ctx.op().attr("has_dynamic_root");
  const bool dynamic_root = dynamic && (dynamic->is<ir::UnitAttr>() || ctx.Bool("has_dynamic_root", false));
  const size_t n_results = ctx.op().num_results();
  std::vector<Literal> results;
  for (size_t j = 0; j < n_results; ++j) {
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(j));
    results.push_back(std::move(r));
  }
  if (group.empty()) return Wrap(results);
  std::vector<int64_t> roots(n_results, 0);
  if (dynamic_root) {
    if (ctx.num_operands() != n_results + 1) return ctx.Error("with has_dynamic_root needs one operand of roots");
    const Literal& r = ctx.operand(n_results);
    for (size_t j = 0; j < n_results; ++j) {
      roots[j] = j < static_cast<size_t>(r.num_elements()) ? r.GetInt(static_cast<int64_t>(j)) : -1;
      if (roots[j] < 0 || roots[j] >= static_cast<int64_t>(group.size())) {
        return ctx.Error("root " + std::to_string(roots[j]) + " of result #" + std::to_string(j) +
                         " is outside its group " + GroupText(group) + " (C6)");
      }
    }
  }
  Published mine;
  for (size_t j = 0; j < n_results; ++j) mine.operands.push_back(&ctx.operand(j));
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), channel, group, &mine,
                                 [&](std::span<void* const> peers, size_t) -> Status {
    for (size_t j = 0; j < n_results; ++j) {
      const Literal* src = static_cast<const Published*>(peers[static_cast<size_t>(roots[j])])->operands[j];
      if (src->type() != results[j].type()) {
        return ctx.Error("the root of group " + GroupText(group) + " sends " + src->type().ToString() +
                         " for result #" + std::to_string(j) + " of type " + results[j].type().ToString());
      }
      std::memcpy(results[j].mutable_bytes().data(), src->bytes().data(), src->bytes().size());
    }
    return Status::Ok();
  }));
  return Wrap(results);
}

// collective_reduce: the first member of each group gets the fold of the
// group's operands; the other members and processes in no group get zeros.
KernelResult CollectiveReduceKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(auto rows, Rows(ctx, "replica_groups"));
  const int64_t channel = ChannelId(ctx);
  const GroupMode mode = channel > 0 ? GroupMode::kCrossPartition : GroupMode::kCrossReplica;
  auto groups = ProcessGroups(mode, rows, GridOf(ctx), false);
  if (!groups.ok()) return ctx.Error(groups.status().message());
  const std::vector<int64_t> group = GroupOf(*groups, SelfOf(ctx));
  if (ctx.op().num_regions() < 1) return ctx.Error("has no computation region to reduce with");
  JITD_ASSIGN_OR_RETURN(DType e, ReducerType(ctx, 0));
  std::vector<Literal> converted;
  converted.reserve(ctx.num_operands());
  std::vector<Literal> results;
  Published mine;
  for (size_t i = 0; i < ctx.op().num_results(); ++i) {
    JITD_ASSIGN_OR_RETURN(const Literal* x, OperandAs(ctx, i, e, converted));
    mine.operands.push_back(x);
    JITD_ASSIGN_OR_RETURN(Literal r, ctx.NewResult(i));
    results.push_back(std::move(r));
  }
  if (group.empty()) return Wrap(results);
  JITD_RETURN_IF_ERROR(MeetGroup(ctx, std::string(ctx.op().name()), channel, group, &mine,
                                 [&](std::span<void* const> peers, size_t self) -> Status {
    if (self != 0) return Status::Ok();
    for (size_t i = 0; i < results.size(); ++i) {
      std::vector<const Literal*> in;
      for (void* p : peers) in.push_back(static_cast<const Published*>(p)->operands[i]);
      Literal* out[] = {&results[i]};
      JITD_RETURN_IF_ERROR(FoldRuns(ctx, 0, in, 0, out, 0, results[i].num_elements()));
    }
    return Status::Ok();
  }));
  return Wrap(results);
}

// send / recv between two processes: the pairs (source, target) of
// source_target_pairs, read as replica ids or partition ids (see below)
// within this process's partition / replica. A send posts to each of its
// targets without waiting; a recv waits for its source's post.
// Without source_target_pairs (or with is_host_transfer, the reference
// interpreter's MPMD programs) the channel itself is the queue: a send posts
// to it from any process, a recv takes the oldest post (the pair
// (kAnyProcess, kAnyProcess)).
constexpr int64_t kAnyProcess = -1;

StatusOr<std::vector<std::pair<int64_t, int64_t>>> ChannelPairs(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(auto rows, Rows(ctx, "source_target_pairs"));
  if (rows.empty() || ctx.Bool("is_host_transfer", false)) {
    return std::vector<std::pair<int64_t, int64_t>>{{kAnyProcess, kAnyProcess}};
  }
  const ProcessGrid& grid = GridOf(ctx);
  const int64_t self = SelfOf(ctx), P = grid.num_partitions;
  // The spec does not say which strategy send / recv use; their channel ids
  // are positive, so a grid of one partition reads replica ids, one of one
  // replica partition ids, and a 2-d grid follows collective_permute
  // (channel_id > 0: partition ids).
  const bool by_partition =
      P > 1 && (grid.num_replicas == 1 || ChannelId(ctx) > 0);
  const int64_t limit = by_partition ? P : grid.num_replicas;
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& p : rows) {
    if (p.size() != 2) return ctx.Error("requires source_target_pairs of two ids per row");
    for (int64_t id : p) {
      if (id >= limit) {
        return ctx.Error("source_target_pairs name " + std::string(by_partition ? "partition " : "replica ") +
                         std::to_string(id) + ", outside the process grid (" + DescribeProcessGrid(grid) + ")");
      }
    }
    auto to_process = [&](int64_t id) {
      return by_partition ? grid.process_index(self / P, id) : grid.process_index(id, self % P);
    };
    out.emplace_back(to_process(p[0]), to_process(p[1]));
  }
  return out;
}

// The exchange of a send / recv that talks to another process.
StatusOr<CollectiveExchange*> ChannelExchange(OpContext& ctx, int64_t other) {
  const ProcessContext* p = ctx.options().process;
  if (!p || !p->exchange) {
    return ctx.Error((other == kAnyProcess ? std::string("talks to other processes over channel ") +
                                                 std::to_string(ChannelId(ctx))
                                           : "talks to process " + std::to_string(other)) +
                     " but the program runs as one process (1 replica x 1 partition)");
  }
  return p->exchange.get();
}

KernelResult SendKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(auto pairs, ChannelPairs(ctx));
  const int64_t self = SelfOf(ctx);
  for (const auto& [s, t] : pairs) {
    if (s != self && s != kAnyProcess) continue;
    JITD_ASSIGN_OR_RETURN(CollectiveExchange * ex, ChannelExchange(ctx, t));
    std::vector<RuntimeValue> values;
    for (size_t i = 0; i + 1 < ctx.num_operands(); ++i) values.push_back(ctx.value(i));
    JITD_RETURN_IF_ERROR(ex->Send({ChannelId(ctx), "channel", SiteName(ctx)}, s, t, std::move(values)));
  }
  return std::vector<RuntimeValue>{RuntimeValue::Token()};
}

KernelResult RecvKernel(OpContext& ctx) {
  JITD_ASSIGN_OR_RETURN(auto pairs, ChannelPairs(ctx));
  const int64_t self = SelfOf(ctx);
  const size_t n = ctx.op().num_results() - 1;
  int64_t source = -1;
  bool found = false;
  for (const auto& [s, t] : pairs) {
    if (t == self || t == kAnyProcess) source = s, found = true;
  }
  if (!found) {
    return ctx.Error("has no source for process " + std::to_string(self) + " in its source_target_pairs");
  }
  JITD_ASSIGN_OR_RETURN(CollectiveExchange * ex, ChannelExchange(ctx, source));
  JITD_ASSIGN_OR_RETURN(std::vector<RuntimeValue> values,
                        ex->Receive({ChannelId(ctx), "channel", SiteName(ctx)}, source,
                                    source == kAnyProcess ? kAnyProcess : self,
                                    {ctx.options().deadline, ctx.options().cancel}));
  if (values.size() != n) {
    return ctx.Error("receives " + std::to_string(n) + " values but process " + std::to_string(source) +
                     " sent " + std::to_string(values.size()));
  }
  for (size_t i = 0; i < n; ++i) {
    if (values[i].type() != ctx.result_type(i)) {
      return ctx.Error("receives " + ctx.result_type(i).ToString() + " as value #" + std::to_string(i) +
                       " but process " + std::to_string(source) + " sent " + values[i].type().ToString());
    }
  }
  values.push_back(RuntimeValue::Token());
  return values;
}

}  // namespace

KernelResult ReplicaOrPartitionIdKernel(OpContext& ctx) {
  const ProcessContext* p = ctx.options().process;
  JITD_ASSIGN_OR_RETURN(Literal id, ctx.NewResult(0));
  if (p) id.SetInt(0, ctx.op().code() == OpCode::kReplicaId ? p->replica_id : p->partition_id);
  return Single(std::move(id));
}

void RegisterCollectiveKernels(KernelTable& table) {
  Register(table, OpCode::kAllReduce, AllReduceKernel);
  Register(table, OpCode::kCrossReplicaSum, AllReduceKernel);
  Register(table, OpCode::kAllGather, AllGatherKernel);
  Register(table, OpCode::kReduceScatter, ReduceScatterKernel);
  Register(table, OpCode::kAllToAll, AllToAllKernel);
  Register(table, OpCode::kCollectivePermute, CollectivePermuteKernel);
  Register(table, OpCode::kCollectiveBroadcast, CollectiveBroadcastKernel);
  Register(table, OpCode::kCollectiveReduce, CollectiveReduceKernel);
  Register(table, OpCode::kSend, SendKernel);
  Register(table, OpCode::kRecv, RecvKernel);
}

}  // namespace internal
}  // namespace jitd::eval
