// Replicated execution (issue 17): one executable run as num_replicas x
// num_partitions processes on this machine, whose collectives meet in
// memory (jit/eval/collectives.h).
//
// What the daemon and clients use: ExecuteReplicated runs every process on
// its own thread, concurrently, and returns each process's results. The
// grid comes from the caller's compile options or, when it gives none, from
// the module's mhlo.num_replicas / mhlo.num_partitions attributes
// (ModuleProcessGrid). A 1x1 grid is a plain Executable::Execute on the
// calling thread: no threads, no exchange, the fast paths unchanged.
//
// Collectives combine in a fixed order (group order), so results are
// deterministic. A collective that cannot complete — a process never
// arrives, groups disagree, a process fails or is cancelled — ends every
// process with DEADLINE_EXCEEDED (at options' deadline), INVALID_ARGUMENT,
// or that process's own error, naming the op (and its location) and the
// process: never a hang, provided each process's ExecuteOptions carries a
// deadline or a cancel flag for the case where a process waits on a peer
// that is itself blocked forever (an infeed nobody fills).
//
// Thread safety: ExecuteReplicated may be called from any thread, several
// at once on one Executable (each call has its own exchange).
#ifndef JITD_DEVICES_REPLICATED_H_
#define JITD_DEVICES_REPLICATED_H_

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "base/status.h"
#include "devices/device.h"
#include "jit/eval/collectives.h"
#include "jit/ir/module.h"

namespace jitd::devices {

using eval::ProcessGrid;

// The grid `module` declares: its mhlo.num_replicas and mhlo.num_partitions
// attributes (integers >= 1; absent = 1). INVALID_ARGUMENT naming the
// attribute when one is malformed.
StatusOr<ProcessGrid> ModuleProcessGrid(const ir::Module& module);

// The ExecuteOptions of one process (its index r * num_partitions + p):
// deadline, cancel flag, its own infeed / outfeed hooks, profile. The
// runner sets ExecuteOptions::process itself; what options_for puts there
// is replaced.
using ProcessOptionsFn = std::function<ExecuteOptions(int64_t process)>;

// Runs `executable` once per process of `grid`: process i gets
// args_per_process[i] (size must be grid.num_processes()) and
// options_for(i); returns the results of process 0, 1, ... On failure the
// status of the first process that failed for its own reason (not because a
// peer aborted), prefixed with "process i (replica r, partition p): ".
StatusOr<std::vector<std::vector<eval::RuntimeValue>>> ExecuteReplicated(
    const Executable& executable, const ProcessGrid& grid,
    std::span<const std::vector<eval::RuntimeValue>> args_per_process,
    const ProcessOptionsFn& options_for);

// The same, with a program per process (spec.md's "Multiple Program,
// Multiple Data" style; `jitd conformance` runs interpreter.run_parallel's
// grid of functions this way): executables[i] runs as process i. The
// executables' collectives meet by channel and group, not by op.
StatusOr<std::vector<std::vector<eval::RuntimeValue>>> ExecuteProcesses(
    std::span<const Executable* const> executables, const ProcessGrid& grid,
    std::span<const std::vector<eval::RuntimeValue>> args_per_process,
    const ProcessOptionsFn& options_for);

}  // namespace jitd::devices

#endif  // JITD_DEVICES_REPLICATED_H_
