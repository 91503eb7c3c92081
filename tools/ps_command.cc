#include "tools/ps_command.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include "base/status.h"
#include "daemon/server.h"
#include "libclient/client.h"
#include "libclient/launcher.h"
#include "tools/cli_util.h"

namespace jitd::tools {

namespace {

using boost::property_tree::ptree;

void PrintError(const std::string& message) {
  std::fputs(("jitd ps: " + message + "\n").c_str(), stderr);
}

// One client process: its sessions added up.
struct ProcessRow {
  std::string pid, uid, name;
  uint64_t sessions = 0, executables = 0, buffers = 0, buffer_bytes = 0, requests = 0,
           executes = 0, errors = 0;
  std::vector<std::string> programs;  // when the daemon lists them per client
};

std::string BytesText(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), unit == 0 ? "%.0f %s" : "%.1f %s", bytes, units[unit]);
  return text;
}

// The process's command line from /proc ("-" when it cannot be read: gone,
// or in another pid namespace), at most `width` characters.
std::string CommandLine(const std::string& pid, size_t width) {
  std::ifstream in("/proc/" + pid + "/cmdline", std::ios::binary);
  std::string command;
  for (std::string arg; std::getline(in, arg, '\0');) command += (command.empty() ? "" : " ") + arg;
  if (command.empty()) return "-";
  for (char& c : command) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // a newline in `python -c` text
  }
  if (command.size() > width) command = command.substr(0, width - 3) + "...";
  return command;
}

std::vector<ProcessRow> Rows(const ptree& stats) {
  std::vector<ProcessRow> rows;
  std::map<std::string, size_t> index;
  const std::string self = std::to_string(::getpid());
  const boost::optional<const ptree&> clients = stats.get_child_optional("clients");
  if (!clients) return rows;
  for (const auto& [unused, c] : *clients) {
    const std::string pid = c.get<std::string>("pid", "-");
    if (pid == self) continue;  // this `jitd ps`
    auto [it, added] = index.emplace(pid, rows.size());
    if (added) {
      rows.emplace_back();
      rows.back().pid = pid;
      rows.back().uid = c.get<std::string>("uid", "-");
      rows.back().name = c.get<std::string>("name", "-");
    }
    ProcessRow& row = rows[it->second];
    row.sessions += 1;
    row.executables += c.get<uint64_t>("executables", 0);
    row.buffers += c.get<uint64_t>("buffers", 0);
    row.buffer_bytes += c.get<uint64_t>("buffer_bytes", 0);
    row.requests += c.get<uint64_t>("requests", 0);
    row.executes += c.get<uint64_t>("executes", 0);
    row.errors += c.get<uint64_t>("errors", 0);
    if (const boost::optional<const ptree&> programs = c.get_child_optional("programs")) {
      for (const auto& [unused2, p] : *programs) {
        const std::string name = p.get_value<std::string>().empty()
                                     ? p.get<std::string>("name", "")
                                     : p.get_value<std::string>();
        if (!name.empty()) row.programs.push_back(name);
      }
    }
  }
  return rows;
}

}  // namespace

CLI::App* AddPsCommand(CLI::App& app, PsArgs& args) {
  CLI::App* cmd = app.add_subcommand(
      "ps", "List a running daemon's client processes and the programs each holds");
  cmd->footer(
      "One line per client process of the daemon at --socket (else $JITD_SOCKET,\n"
      "else $XDG_RUNTIME_DIR/jitd/jitd.sock, else /tmp/jitd-$UID/jitd.sock): pid,\n"
      "uid, sessions (connections), live executables and buffers, buffer memory,\n"
      "requests, executes, errors, the name it gave and its command line; under\n"
      "it the programs it holds (module @name, @entry function, device; x2 when\n"
      "held twice). Never starts a daemon; `jitd stats` has the daemon-wide\n"
      "numbers.\n"
      "Exit status: 0 printed, 2 usage error or no daemon running.");
  cmd->add_option("--socket", args.socket_path, "The daemon's Unix socket")->type_name("PATH");
  return cmd;
}

int RunPs(const PsArgs& args) {
  const std::string socket_path =
      args.socket_path.empty() ? daemon::DefaultSocketPath() : args.socket_path;
  client::ClientOptions options;
  options.client_name = "jitd ps";
  StatusOr<std::unique_ptr<client::Client>> client = client::Client::Connect(socket_path, options);
  if (!client.ok()) {
    if (client.status().code() == StatusCode::kUnavailable) {
      PrintError(client.status().message() + " (`jitd ps` never starts one)");
    } else {
      PrintError(client.status().ToString());
    }
    return kExitUsageOrIo;
  }
  StatusOr<std::string> json = (*client)->Stats(false);
  if (!json.ok()) {
    PrintError(json.status().ToString());
    return json.status().code() == StatusCode::kUnavailable ? kExitUsageOrIo : kExitInternal;
  }
  ptree stats;
  try {
    std::istringstream in(*json);
    boost::property_tree::read_json(in, stats);
  } catch (const std::exception& e) {
    PrintError(std::string("the daemon's statistics are not valid JSON: ") + e.what());
    return kExitInternal;
  }
  const std::vector<ProcessRow> rows = Rows(stats);
  StatusOr<pid_t> daemon_pid = client::FindDaemonPid(socket_path);
  std::printf("jitd daemon %s%s at %s: %zu client process%s\n",
              stats.get<std::string>("version", "?").c_str(),
              daemon_pid.ok() ? (" (pid " + std::to_string(*daemon_pid) + ")").c_str() : "",
              socket_path.c_str(), rows.size(), rows.size() == 1 ? "" : "es");
  if (stats.get<std::string>("view", "") == "uid") {
    std::printf("(only uid %s's clients are shown; the daemon's own user or root sees all)\n",
                stats.get<std::string>("uid", "?").c_str());
  }
  if (rows.empty()) return kExitOk;
  std::printf("%-8s %-6s %8s %11s %7s %10s %9s %9s %6s  %-12s %s\n", "PID", "UID", "SESSIONS",
              "EXECUTABLES", "BUFFERS", "BUFFER-MEM", "REQUESTS", "EXECUTES", "ERRORS", "NAME",
              "COMMAND");
  for (const ProcessRow& row : rows) {
    std::printf("%-8s %-6s %8llu %11llu %7llu %10s %9llu %9llu %6llu  %-12.12s %s\n",
                row.pid.c_str(), row.uid.c_str(), static_cast<unsigned long long>(row.sessions),
                static_cast<unsigned long long>(row.executables),
                static_cast<unsigned long long>(row.buffers),
                BytesText(static_cast<double>(row.buffer_bytes)).c_str(),
                static_cast<unsigned long long>(row.requests),
                static_cast<unsigned long long>(row.executes),
                static_cast<unsigned long long>(row.errors), row.name.c_str(),
                CommandLine(row.pid, 100).c_str());
    if (!row.programs.empty()) {
      std::string programs;
      for (const std::string& p : row.programs) programs += (programs.empty() ? "" : ", ") + p;
      std::printf("         programs: %s\n", programs.c_str());
    }
  }
  return kExitOk;
}

}  // namespace jitd::tools
