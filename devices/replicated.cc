#include "devices/replicated.h"

#include <memory>
#include <string>
#include <thread>

namespace jitd::devices {

StatusOr<ProcessGrid> ModuleProcessGrid(const ir::Module& module) {
  ProcessGrid grid;
  for (auto [name, field] : {std::pair<const char*, int64_t*>{"mhlo.num_replicas", &grid.num_replicas},
                             std::pair<const char*, int64_t*>{"mhlo.num_partitions", &grid.num_partitions}}) {
    const ir::Attribute* a = module.attrs().Find(name);
    if (!a) continue;
    const auto* i = a->get_if<ir::IntegerAttr>();
    if (!i || i->value < 1) {
      return InvalidArgument("module attribute " + std::string(name) + " must be an integer >= 1");
    }
    *field = i->value;
  }
  JITD_RETURN_IF_ERROR(eval::ValidateProcessGrid(grid));
  return grid;
}

StatusOr<std::vector<std::vector<eval::RuntimeValue>>> ExecuteProcesses(
    std::span<const Executable* const> executables, const ProcessGrid& grid,
    std::span<const std::vector<eval::RuntimeValue>> args_per_process, const ProcessOptionsFn& options_for) {
  JITD_RETURN_IF_ERROR(eval::ValidateProcessGrid(grid));
  const int64_t n = grid.num_processes();
  if (static_cast<int64_t>(executables.size()) != n) {
    return InvalidArgument("a replicated execution of " + eval::DescribeProcessGrid(grid) + " needs " +
                           std::to_string(n) + " programs, got " + std::to_string(executables.size()));
  }
  if (static_cast<int64_t>(args_per_process.size()) != n) {
    return InvalidArgument("a replicated execution of " + eval::DescribeProcessGrid(grid) + " takes " +
                           std::to_string(n) + " argument lists (one per process), got " +
                           std::to_string(args_per_process.size()));
  }
  if (n == 1) {  // one process: the plain path, no threads, no exchange
    ExecuteOptions options = options_for ? options_for(0) : ExecuteOptions{};
    options.process = nullptr;
    JITD_ASSIGN_OR_RETURN(std::vector<eval::RuntimeValue> results,
                          executables[0]->Execute(args_per_process[0], options));
    std::vector<std::vector<eval::RuntimeValue>> out;
    out.push_back(std::move(results));
    return out;
  }
  auto exchange = std::make_shared<eval::CollectiveExchange>(grid);
  std::vector<eval::ProcessContext> contexts(static_cast<size_t>(n));
  std::vector<ExecuteOptions> options(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    contexts[static_cast<size_t>(i)] = {i / grid.num_partitions, i % grid.num_partitions, exchange};
    options[static_cast<size_t>(i)] = options_for ? options_for(i) : ExecuteOptions{};
    options[static_cast<size_t>(i)].process = &contexts[static_cast<size_t>(i)];
  }
  std::vector<StatusOr<std::vector<eval::RuntimeValue>>> results(static_cast<size_t>(n),
                                                                 Status(StatusCode::kInternal, "not run"));
  auto run = [&](int64_t i) {
    const size_t k = static_cast<size_t>(i);
    results[k] = executables[k]->Execute(args_per_process[k], options[k]);
    if (!results[k].ok()) {
      // A failure of its own (not the exchange's) ends the peers too.
      const Status& s = results[k].status();
      exchange->Abort(Status(s.code(), exchange->DescribeProcess(i) + ": " + s.message()));
    }
    exchange->ProcessFinished(i);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(n - 1));
  for (int64_t i = 1; i < n; ++i) threads.emplace_back(run, i);
  run(0);
  for (std::thread& t : threads) t.join();
  // The first failure is the cause: the exchange holds it (a process's own
  // error, a mismatch, a deadline), and every other process then failed
  // with it.
  if (Status first = exchange->aborted(); !first.ok()) return first;
  std::vector<std::vector<eval::RuntimeValue>> out;
  out.reserve(static_cast<size_t>(n));
  for (auto& r : results) {
    if (!r.ok()) return r.status();
    out.push_back(std::move(r).value());
  }
  return out;
}

StatusOr<std::vector<std::vector<eval::RuntimeValue>>> ExecuteReplicated(
    const Executable& executable, const ProcessGrid& grid,
    std::span<const std::vector<eval::RuntimeValue>> args_per_process, const ProcessOptionsFn& options_for) {
  JITD_RETURN_IF_ERROR(eval::ValidateProcessGrid(grid));
  const std::vector<const Executable*> executables(static_cast<size_t>(grid.num_processes()), &executable);
  return ExecuteProcesses(executables, grid, args_per_process, options_for);
}

}  // namespace jitd::devices
