#include "tools/stats_command.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <sstream>
#include <string>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "base/duration_text.h"
#include "base/status.h"
#include "daemon/server.h"
#include "libclient/client.h"
#include "tools/cli_util.h"
#include "tools/prometheus_text.h"

namespace jitd::tools {

namespace {

using boost::property_tree::ptree;

void PrintError(const std::string& message) {
  std::fputs(("jitd stats: " + message + "\n").c_str(), stderr);
}

// `path` of `tree` as text; "-" when absent.
std::string Field(const ptree& tree, const std::string& path) {
  return tree.get<std::string>(path, "-");
}

// A duration in microseconds as it reads best: "850 us", "1.25 ms", "3.42 s".
std::string Duration(double micros) { return DurationText(micros); }

// The duration at `path` (microseconds) of `tree` as Duration; "-" when absent.
std::string DurationField(const ptree& tree, const std::string& path) {
  const double micros = tree.get<double>(path, -1);
  return micros < 0 ? "-" : Duration(micros);
}

// Human-readable byte count: "1.5 MiB".
std::string Bytes(const ptree& tree, const std::string& path) {
  const double bytes = tree.get<double>(path, -1);
  if (bytes < 0) return "-";
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = bytes;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

// The daemon-wide lines (requests, compiles, caches, latencies) of the
// full view.
void AppendDaemonWide(const ptree& s, std::ostringstream& out) {
  out << "  requests:     " << Field(s, "requests") << " (" << Field(s, "bad_requests")
      << " malformed)\n";
  out << "  compiles:     " << Field(s, "compiles") << " (" << Field(s, "compile_errors")
      << " failed), " << Field(s, "disk_loads") << " loaded from disk";
  if (s.get<uint64_t>("unknown_device_compiles", 0) > 0) {
    out << ", " << Field(s, "unknown_device_compiles") << " for devices this daemon lacks";
  }
  out << "\n";
  out << "  executes:     " << Field(s, "executes") << " (" << Field(s, "execute_errors")
      << " failed)\n";
  // One line per device: "cpu", "cuda: NVIDIA H100 ..., 1.0 GiB of 79.1 GiB
  // in jitd's pool" or "cuda: unavailable (<reason>)".
  if (const boost::optional<const ptree&> devices = s.get_child_optional("devices")) {
    for (const auto& [unused, d] : *devices) {
      out << "  device:       " << Field(d, "name");
      if (d.get<bool>("available", false)) {
        if (d.get_child_optional("gpu")) {
          out << ": " << Field(d, "gpu") << ", " << Bytes(d, "memory_used_bytes") << " of "
              << Bytes(d, "memory_total_bytes") << " in jitd's pool";
          // Client segments registered at attach + the staging pool.
          if (d.get<uint64_t>("pinned_bytes", 0) > 0) {
            out << ", " << Bytes(d, "pinned_bytes") << " of host memory pinned ("
                << Bytes(d, "registered_bytes") << " client segments)";
          }
        }
        // The CUDA libraries its ops call, or why not (own kernels then).
        if (d.get_child_optional("libraries")) out << "\n  libraries:    " << Field(d, "libraries");
        if (d.get_child_optional("ptx_assembly")) out << "\n  ptx:          " << Field(d, "ptx_assembly");
      } else {
        out << ": unavailable (" << Field(d, "reason") << ")";
      }
      out << "\n";
    }
  }
  out << "  memory cache: " << Field(s, "memory_cache.hits") << " hits, "
      << Field(s, "memory_cache.misses") << " misses, " << Field(s, "memory_cache.joined")
      << " joined an in-flight compile, " << Field(s, "memory_cache.entries") << " entries, "
      << Bytes(s, "memory_cache.bytes") << " of " << Bytes(s, "memory_cache.budget_bytes")
      << ", " << Field(s, "memory_cache.evictions") << " evictions\n";
  const boost::optional<const ptree&> disk = s.get_child_optional("disk_cache");
  if (disk && !disk->empty()) {
    out << "  disk cache:   " << Field(*disk, "hits") << " hits, " << Field(*disk, "misses")
        << " misses, " << Field(*disk, "writes") << " writes, "
        << Field(*disk, "corrupt_dropped") << " corrupt entries dropped, "
        << Field(*disk, "evictions") << " evictions (" << Field(*disk, "dir") << ")\n";
  } else {
    out << "  disk cache:   off\n";
  }
  out << "  executables:  " << Field(s, "executables") << " handles held by clients, buffers: "
      << Field(s, "buffers") << "\n";
  for (const char* name : {"compile_latency", "execute_latency"}) {
    const boost::optional<const ptree&> h = s.get_child_optional(name);
    if (!h) continue;
    out << "  " << (std::string(name) == "compile_latency" ? "compile time: " : "execute time: ")
        << "p50 " << DurationField(*h, "p50_us") << ", p90 " << DurationField(*h, "p90_us")
        << ", p99 " << DurationField(*h, "p99_us") << ", max " << DurationField(*h, "max_us")
        << " ("
        << Field(*h, "count") << (std::string(name) == "compile_latency"
                                      ? " device compiles)\n"
                                      : " executes, daemon side)\n");
  }
}

// The readable summary of the daemon's stats JSON (daemon/instance.cc).
std::string Summary(const ptree& s, const std::string& socket_path) {
  std::ostringstream out;
  out << "jitd daemon " << Field(s, "version") << " at " << socket_path << "\n";
  // A user other than the daemon's (and root) sees only its own uid's
  // sessions and programs (daemon/instance.h, StatsJson).
  const bool own_only = Field(s, "view") == "uid";
  if (own_only) {
    out << "  (only uid " << Field(s, "uid")
        << "'s sessions are shown; the daemon's own user or root sees everything)\n";
    out << "  sessions:     " << Field(s, "sessions_active")
        << " of this user (this one included)\n";
  } else {
    out << "  sessions:     " << Field(s, "sessions_active") << " active (this one included), "
        << Field(s, "sessions_opened") << " opened since start\n";
    AppendDaemonWide(s, out);
    // The TCP listener (daemon/remote_server.h), when the daemon has one.
    if (const boost::optional<const ptree&> r = s.get_child_optional("remote"); r && !r->empty()) {
      std::string listen;
      if (const auto addresses = r->get_child_optional("listen")) {
        for (const auto& [unused, a] : *addresses) {
          listen += (listen.empty() ? "" : " ") + a.get_value<std::string>();
        }
      }
      out << "  remote:       " << listen << (Field(*r, "tls") == "true" ? " (TLS)" : " (PLAINTEXT)")
          << ", " << Field(*r, "sessions_open") << " sessions open, "
          << Field(*r, "sessions_opened") << " opened, " << Field(*r, "refused") << " refused, "
          << Field(*r, "handshake_timeouts") << " handshake timeouts, "
          << Field(*r, "malformed_frames") << " malformed frames\n";
    }
  }
  const boost::optional<const ptree&> clients = s.get_child_optional("clients");
  if (clients) {
    out << "  clients (" << clients->size() << "):\n";
    char line[256];
    // "device peak": the most GPU memory its executions held at once;
    // "gpu time": its kernels' GPU time.
    std::snprintf(line, sizeof(line),
                  "    %-8s %-8s %-6s %-16s %9s %8s %9s %6s %11s %7s %10s %11s %10s\n", "session",
                  "pid", "uid", "name", "requests", "compiles", "executes", "errors",
                  "executables", "buffers", "bytes", "device peak", "gpu time");
    out << line;
    for (const auto& [unused, c] : *clients) {
      std::snprintf(line, sizeof(line),
                    "    %-8s %-8s %-6s %-16.16s %9s %8s %9s %6s %11s %7s %10s %11s %10s\n",
                    Field(c, "session").c_str(), Field(c, "pid").c_str(), Field(c, "uid").c_str(),
                    Field(c, "name").c_str(), Field(c, "requests").c_str(),
                    Field(c, "compiles").c_str(), Field(c, "executes").c_str(),
                    Field(c, "errors").c_str(), Field(c, "executables").c_str(),
                    Field(c, "buffers").c_str(), Bytes(c, "buffer_bytes").c_str(),
                    Bytes(c, "device_peak_bytes").c_str(),
                    DurationField(c, "device_micros").c_str());
      out << line;
      if (const std::string remote = c.get<std::string>("remote", ""); !remote.empty()) {
        out << "             remote client " << remote << " from " << Field(c, "address") << "\n";
      }
    }
  }
  const boost::optional<const ptree&> keys = s.get_child_optional("keys");
  if (keys) {
    out << "  cache entries (" << keys->size() << "):\n";
    char line[512];
    std::snprintf(line, sizeof(line), "    %-16s %-12s %6s %9s %10s %12s  %-32s  %s\n", "program",
                  "device", "hits", "compile", "bytes", "last use", "fingerprint", "arguments");
    out << line;
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    for (const auto& [unused, entry] : *keys) {
      const int64_t last_ms = entry.get<int64_t>("last_use_unix_ms", -1);
      const std::string ago =
          last_ms < 0 ? "-" : Duration(std::max<int64_t>(0, now_ms - last_ms) * 1e3) + " ago";
      const double compile_us = entry.get<double>("compile_micros", -1);
      std::snprintf(line, sizeof(line), "    %-16.16s %-12.12s %6s %9s %10s %12s  %-32s  %s\n",
                    Field(entry, "program").c_str(), Field(entry, "device").c_str(),
                    Field(entry, "hits").c_str(),
                    compile_us < 0 ? "-" : Duration(compile_us).c_str(),
                    Bytes(entry, "bytes").c_str(), ago.c_str(),
                    Field(entry, "fingerprint").c_str(), Field(entry, "argument_shapes").c_str());
      out << line;
    }
  }
  return out.str();
}

}  // namespace

CLI::App* AddStatsCommand(CLI::App& app, StatsArgs& args) {
  CLI::App* cmd = app.add_subcommand("stats", "Print a running daemon's statistics");
  cmd->footer(
      "Connects to the daemon at --socket (else $JITD_SOCKET, else\n"
      "$XDG_RUNTIME_DIR/jitd/jitd.sock, else /tmp/jitd-$UID/jitd.sock); never\n"
      "starts one.\n"
      "Exit status: 0 printed, 2 usage error or no daemon running.");
  cmd->add_option("--socket", args.socket_path, "The daemon's Unix socket")->type_name("PATH");
  cmd->add_flag("--json", args.json, "Print the daemon's statistics as JSON, unchanged");
  cmd->add_flag("--prometheus", args.prometheus,
                "Print them in Prometheus' text exposition format, for scraping")
      ->excludes("--json");
  cmd->add_flag("--keys", args.keys, "List the memory cache's entries too: program, device, hits, "
                "compile time, bytes, last use, fingerprint, argument shapes");
  return cmd;
}

int RunStats(const StatsArgs& args) {
  const std::string socket_path =
      args.socket_path.empty() ? daemon::DefaultSocketPath() : args.socket_path;
  client::ClientOptions options;
  options.client_name = "jitd stats";
  StatusOr<std::unique_ptr<client::Client>> client = client::Client::Connect(socket_path, options);
  if (!client.ok()) {
    if (client.status().code() == StatusCode::kUnavailable) {
      PrintError(client.status().message() + " (`jitd stats` never starts one)");
    } else {
      PrintError(client.status().ToString());
    }
    return kExitUsageOrIo;
  }
  StatusOr<std::string> json = (*client)->Stats(args.keys);
  if (!json.ok()) {
    PrintError(json.status().ToString());
    return json.status().code() == StatusCode::kUnavailable ? kExitUsageOrIo : kExitInternal;
  }
  if (args.json) {
    std::printf("%s\n", json->c_str());
    return kExitOk;
  }
  ptree tree;
  try {
    std::istringstream in(*json);
    boost::property_tree::read_json(in, tree);
  } catch (const std::exception& e) {
    PrintError(std::string("the daemon's statistics are not valid JSON: ") + e.what());
    return kExitInternal;
  }
  if (args.prometheus) {
    std::fputs(PrometheusText(tree).c_str(), stdout);
    return kExitOk;
  }
  std::fputs(Summary(tree, socket_path).c_str(), stdout);
  return kExitOk;
}

}  // namespace jitd::tools
