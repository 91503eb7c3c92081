#include "tools/prometheus_text.h"

#include <cstdio>
#include <string_view>

namespace jitd::tools {
namespace {

using boost::property_tree::ptree;

// One metric taken from a JSON field: `scale` converts its unit (1e-6 for
// microseconds -> seconds).
struct Metric {
  const char* path;  // in the stats JSON
  const char* name;  // without the jitd_ prefix
  const char* type;  // "counter" or "gauge"
  const char* help;
  double scale = 1;
};

constexpr Metric kDaemonMetrics[] = {
    {"sessions_active", "sessions_active", "gauge", "Client sessions open now."},
    {"sessions_opened", "sessions_opened_total", "counter", "Client sessions opened since start."},
    {"requests", "requests_total", "counter", "Requests served."},
    {"bad_requests", "bad_requests_total", "counter", "Malformed requests refused."},
    {"compiles", "compiles_total", "counter", "Programs compiled by a device (cache misses)."},
    {"compile_errors", "compile_errors_total", "counter", "Compiles that failed."},
    {"unknown_device_compiles", "unknown_device_compiles_total", "counter",
     "Compiles for a device the daemon lacks (platform probes), not failures."},
    {"disk_loads", "disk_loads_total", "counter", "Compiled programs loaded from the disk cache."},
    {"executes", "executes_total", "counter", "Executes run."},
    {"execute_errors", "execute_errors_total", "counter", "Executes that failed."},
    {"execute_slots", "execute_slots", "gauge", "Executes that may run at once (--execute-slots)."},
    {"execute_waits", "execute_waits_total", "counter", "Executes that waited for a slot."},
    {"execute_express", "execute_express_total", "counter",
     "Executes run at once on the express path."},
    {"executables", "executables", "gauge", "Executable handles held by clients."},
    {"buffers", "buffers", "gauge", "Buffers held by clients."},
    {"feed_clients", "feed_clients", "gauge", "Clients with infeed/outfeed queues."},
    {"memory_cache.hits", "memory_cache_hits_total", "counter", "Memory cache hits."},
    {"memory_cache.misses", "memory_cache_misses_total", "counter", "Memory cache misses."},
    {"memory_cache.joined", "memory_cache_joined_total", "counter",
     "Compiles that joined one already in flight (single flight)."},
    {"memory_cache.evictions", "memory_cache_evictions_total", "counter",
     "Programs evicted from the memory cache."},
    {"memory_cache.entries", "memory_cache_entries", "gauge", "Programs in the memory cache."},
    {"memory_cache.bytes", "memory_cache_bytes", "gauge", "Bytes held by the memory cache."},
    {"memory_cache.budget_bytes", "memory_cache_budget_bytes", "gauge",
     "The memory cache's budget (--memory-cache-bytes)."},
    {"disk_cache.hits", "disk_cache_hits_total", "counter", "Disk cache hits."},
    {"disk_cache.misses", "disk_cache_misses_total", "counter", "Disk cache misses."},
    {"disk_cache.writes", "disk_cache_writes_total", "counter", "Disk cache writes."},
    {"disk_cache.corrupt_dropped", "disk_cache_corrupt_dropped_total", "counter",
     "Corrupt disk cache entries dropped."},
    {"disk_cache.evictions", "disk_cache_evictions_total", "counter",
     "Programs evicted from the disk cache."},
    // The TCP listener for remote clients (daemon/remote_server.h), when on.
    {"remote.connections", "remote_connections_total", "counter",
     "TCP connections accepted from remote clients."},
    {"remote.sessions_opened", "remote_sessions_opened_total", "counter",
     "Remote clients admitted (authenticated, within the limits)."},
    {"remote.sessions_open", "remote_sessions_open", "gauge", "Remote client sessions open now."},
    {"remote.refused", "remote_refused_total", "counter",
     "Remote connections refused: TLS or authentication failures, limits."},
    {"remote.handshake_timeouts", "remote_handshake_timeouts_total", "counter",
     "Remote connections dropped before their hello."},
    {"remote.frame_timeouts", "remote_frame_timeouts_total", "counter",
     "Remote connections dropped for a frame that did not complete in time."},
    {"remote.malformed_frames", "remote_malformed_frames_total", "counter",
     "Remote connections closed for a malformed frame."},
    {"remote.bytes_in", "remote_received_bytes_total", "counter",
     "Frame bytes received from remote clients."},
    {"remote.bytes_out", "remote_sent_bytes_total", "counter",
     "Frame bytes sent to remote clients."},
};

constexpr Metric kClientMetrics[] = {
    {"requests", "client_requests_total", "counter", "Requests of one client session."},
    {"compiles", "client_compiles_total", "counter", "Compiles one client session asked for."},
    {"executes", "client_executes_total", "counter", "Executes of one client session."},
    {"errors", "client_errors_total", "counter", "Failed requests of one client session."},
    {"execute_micros", "client_execute_seconds_total", "counter",
     "Daemon-side execute time of one client session.", 1e-6},
    {"executables", "client_executables", "gauge", "Executable handles one client holds."},
    {"buffers", "client_buffers", "gauge", "Buffers one client holds."},
    {"buffer_bytes", "client_buffer_bytes", "gauge", "Buffer bytes one client holds."},
};

// A label value with \, " and newline escaped.
std::string LabelValue(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

// A sample value: integers without a fraction, others to 15 digits.
std::string Number(double value) {
  char text[40];
  std::snprintf(text, sizeof(text), "%.15g", value);
  return text;
}

void Header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

}  // namespace

std::string PrometheusText(const ptree& stats) {
  std::string out;
  Header(out, "jitd_info", "gauge", "The daemon's version (value 1).");
  out += "jitd_info{version=\"" + LabelValue(stats.get<std::string>("version", "")) +
         "\",view=\"" + LabelValue(stats.get<std::string>("view", "")) + "\"} 1\n";
  for (const Metric& m : kDaemonMetrics) {
    const boost::optional<double> value = stats.get_optional<double>(m.path);
    if (!value) continue;
    const std::string name = std::string("jitd_") + m.name;
    Header(out, name, m.type, m.help);
    out += name + " " + Number(*value * m.scale) + "\n";
  }
  for (const char* which : {"compile", "execute"}) {
    const auto latency = stats.get_child_optional(std::string(which) + "_latency");
    if (!latency) continue;
    const std::string name = std::string("jitd_") + which + "_latency_seconds";
    Header(out, name, "gauge",
           std::string(which) == "compile"
               ? "Device compile time percentiles (quantile 1 = max)."
               : "Daemon-side execute time percentiles (quantile 1 = max).");
    for (auto [key, quantile] : {std::pair{"p50_us", "0.5"}, std::pair{"p90_us", "0.9"},
                                 std::pair{"p99_us", "0.99"}, std::pair{"max_us", "1"}}) {
      if (auto v = latency->get_optional<double>(key)) {
        out += name + "{quantile=\"" + quantile + "\"} " + Number(*v * 1e-6) + "\n";
      }
    }
    const std::string count = std::string("jitd_") + which + "_latency_samples_total";
    Header(out, count, "counter", "Samples behind the percentiles.");
    out += count + " " + Number(latency->get<double>("count", 0)) + "\n";
  }
  const auto clients = stats.get_child_optional("clients");
  if (clients && !clients->empty()) {
    for (const Metric& m : kClientMetrics) {
      const std::string name = std::string("jitd_") + m.name;
      Header(out, name, m.type, m.help);
      for (const auto& [unused, c] : *clients) {
        const boost::optional<double> value = c.get_optional<double>(m.path);
        if (!value) continue;
        out += name + "{session=\"" + LabelValue(c.get<std::string>("session", "")) +
               "\",pid=\"" + LabelValue(c.get<std::string>("pid", "")) + "\",uid=\"" +
               LabelValue(c.get<std::string>("uid", "")) + "\",name=\"" +
               LabelValue(c.get<std::string>("name", "")) + "\"" +
               (c.get<std::string>("remote", "").empty()
                    ? std::string()
                    : ",remote=\"" + LabelValue(c.get<std::string>("remote", "")) + "\"") +
               "} " + Number(*value * m.scale) + "\n";
      }
    }
  }
  return out;
}

}  // namespace jitd::tools
