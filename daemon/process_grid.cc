#include "daemon/process_grid.h"

#include <charconv>
#include <set>

namespace jitd::daemon {
namespace {

constexpr std::string_view kReplicasOption = ",replicas=";
constexpr std::string_view kPartitionsOption = ",partitions=";
constexpr std::string_view kDevicesOption = ",devices=";

// A count attribute: absent = 0, else a positive integer.
StatusOr<int64_t> CountAttribute(const ir::Module& module, std::string_view name) {
  const ir::Attribute* attr = module.attrs().Find(name);
  if (attr == nullptr) return int64_t{0};
  const ir::IntegerAttr* value = attr->get_if<ir::IntegerAttr>();
  if (value == nullptr || value->value < 1) {
    return InvalidArgument("module attribute " + std::string(name) + " = " + attr->ToString() +
                           ": expected a positive integer");
  }
  return value->value;
}

// The integer after `name` in `options` ("" -> nullopt), up to ',' or the end.
std::string_view OptionValue(std::string_view options, std::string_view name) {
  const size_t at = options.find(name);
  if (at == std::string_view::npos) return {};
  std::string_view value = options.substr(at + name.size());
  return value.substr(0, value.find(','));
}

int64_t ParseInt(std::string_view text, int64_t otherwise) {
  int64_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  return error == std::errc() && end == text.data() + text.size() ? value : otherwise;
}

// One count: the request's, the module's, or 1.
StatusOr<int64_t> ResolveCount(uint32_t requested, int64_t declared, const char* option,
                               const char* attribute) {
  if (requested == 0) return declared == 0 ? int64_t{1} : declared;
  if (declared != 0 && declared != static_cast<int64_t>(requested)) {
    return InvalidArgument(std::string("compile option ") + option + " = " +
                           std::to_string(requested) + " contradicts the module's " + attribute +
                           " = " + std::to_string(declared) +
                           " (leave the option 0 to take the module's)");
  }
  return static_cast<int64_t>(requested);
}

}  // namespace

StatusOr<DeclaredGrid> DeclaredProcessGrid(const ir::Module& module) {
  DeclaredGrid grid;
  JITD_ASSIGN_OR_RETURN(grid.num_replicas, CountAttribute(module, "mhlo.num_replicas"));
  JITD_ASSIGN_OR_RETURN(grid.num_partitions, CountAttribute(module, "mhlo.num_partitions"));
  return grid;
}

StatusOr<eval::ProcessGrid> ResolveProcessGrid(const GridRequest& request,
                                               const DeclaredGrid& declared) {
  eval::ProcessGrid grid;
  JITD_ASSIGN_OR_RETURN(grid.num_replicas,
                        ResolveCount(request.num_replicas, declared.num_replicas, "num_replicas",
                                     "mhlo.num_replicas"));
  JITD_ASSIGN_OR_RETURN(grid.num_partitions,
                        ResolveCount(request.num_partitions, declared.num_partitions,
                                     "num_partitions", "mhlo.num_partitions"));
  if (grid.num_replicas > kMaxProcesses || grid.num_partitions > kMaxProcesses ||
      grid.num_processes() > kMaxProcesses) {
    return InvalidArgument("compile options: " + std::to_string(grid.num_replicas) +
                           " replicas x " + std::to_string(grid.num_partitions) +
                           " partitions is more than the daemon's " +
                           std::to_string(kMaxProcesses) + " processes per execution");
  }
  if (!request.device_assignment.empty()) {
    if (static_cast<int64_t>(request.device_assignment.size()) != grid.num_processes()) {
      return InvalidArgument("compile option device_assignment has " +
                             std::to_string(request.device_assignment.size()) +
                             " device ids; the grid of " + std::to_string(grid.num_replicas) +
                             " replicas x " + std::to_string(grid.num_partitions) +
                             " partitions needs one per process (" +
                             std::to_string(grid.num_processes()) + ")");
    }
    std::set<int64_t> seen;
    for (size_t i = 0; i < request.device_assignment.size(); ++i) {
      const int64_t id = request.device_assignment[i];
      if (id < 0 || !seen.insert(id).second) {
        return InvalidArgument("compile option device_assignment[" + std::to_string(i) +
                               "] = " + std::to_string(id) +
                               (id < 0 ? " is negative" : " repeats an earlier device id") +
                               "; ids are distinct and non-negative");
      }
    }
    grid.device_ids = request.device_assignment;
  }
  return grid;
}

std::string GridKeyOption(const eval::ProcessGrid& grid) {
  if (grid.num_processes() == 1 && grid.device_ids.empty()) return "";
  std::string out = std::string(kReplicasOption) + std::to_string(grid.num_replicas) +
                    std::string(kPartitionsOption) + std::to_string(grid.num_partitions);
  if (!grid.device_ids.empty()) {
    out += kDevicesOption;
    for (size_t i = 0; i < grid.device_ids.size(); ++i) {
      out += (i == 0 ? "" : ";") + std::to_string(grid.device_ids[i]);
    }
  }
  return out;
}

eval::ProcessGrid GridFromKeyOptions(std::string_view options) {
  eval::ProcessGrid grid;
  grid.num_replicas = ParseInt(OptionValue(options, kReplicasOption), 1);
  grid.num_partitions = ParseInt(OptionValue(options, kPartitionsOption), 1);
  std::string_view devices = OptionValue(options, kDevicesOption);
  while (!devices.empty()) {
    const size_t end = devices.find(';');
    grid.device_ids.push_back(ParseInt(devices.substr(0, end), -1));
    if (end == std::string_view::npos) break;
    devices.remove_prefix(end + 1);
  }
  return grid;
}

std::string EncodeDeclaredGrid(const DeclaredGrid& grid) {
  return std::to_string(grid.num_replicas) + "," + std::to_string(grid.num_partitions);
}

StatusOr<DeclaredGrid> DecodeDeclaredGrid(std::string_view text) {
  const size_t comma = text.find(',');
  DeclaredGrid grid;
  grid.num_replicas = ParseInt(text.substr(0, comma), -1);
  grid.num_partitions =
      comma == std::string_view::npos ? -1 : ParseInt(text.substr(comma + 1), -1);
  if (grid.num_replicas < 0 || grid.num_partitions < 0) {
    return Internal("process grid '" + std::string(text) + "' is not 'R,P'");
  }
  return grid;
}

}  // namespace jitd::daemon
