// Launcher: starts `jitd serve` in the background when no daemon answers, for
// the C API's start_daemon_if_missing and for `jitd run`.
//
// Finding the binary (FindJitdBinary): $JITD_BINARY when set; else
// ../bin/jitd relative to the directory of the object holding this code
// (libjitd.so in lib/ -> bin/jitd; the jitd executable itself in bin/);
// else `jitd` on $PATH.
//
// Starting (StartDaemon): `BINARY serve --socket PATH`, double-forked so it
// is nobody's child here (no zombie, no SIGCHLD in the caller), in its own
// session, stdin/stdout on /dev/null, stderr appended to jitd.log in the
// socket's directory (created 0700 when missing). An exec failure is
// reported at once.
//
// Announcing: a started daemon is announced in one line on stderr (its pid,
// socket and log, and how to stop it) unless LaunchOptions::announce is off.
// The daemon writes its pid to jitd.pid beside the socket itself and removes
// it when it exits cleanly (tools/serve_command.cc); `jitd stop` uses both.
//
// Turning it off: JITD_NO_AUTOSTART=1 (any value but "" and "0") in the
// environment makes ConnectOrStart only connect, whatever the caller asked,
// so a user can keep every client (jitd run, Python, C) from starting
// daemons; the UNAVAILABLE error then names the variable.
//
// Races: several processes may start a daemon at the same moment. Only one
// can own the socket (the daemon takes an exclusive lock beside it and
// refuses to start otherwise, see daemon/server.h); the others exit at once,
// and every caller connects to the winner: ConnectOrStart retries connect
// with a backoff until LaunchOptions::wait is over.
//
// Thread-safe (no shared state); fork() in a multithreaded caller is fine:
// the children only exec or _exit.
#ifndef JITD_LIBCLIENT_LAUNCHER_H_
#define JITD_LIBCLIENT_LAUNCHER_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "libclient/client.h"

namespace jitd::client {

// Options of ConnectOrStart. Plain value.
struct LaunchOptions {
  // Start a daemon when none answers; false = just connect.
  bool start = true;
  // The jitd binary; empty = FindJitdBinary().
  std::string jitd_binary;
  // Extra arguments for `jitd serve` (after --socket PATH).
  std::vector<std::string> serve_args;
  // Longest wait for the started daemon to answer.
  std::chrono::milliseconds wait{10'000};
  // Print the one-line announcement on stderr when this call started the
  // daemon that answered.
  bool announce = true;
};

// Whether $JITD_NO_AUTOSTART forbids starting daemons (set, not "" or "0").
bool AutostartDisabled();

// The one line that announces a daemon started for a client, without the
// trailing newline: "jitd: started a daemon (pid P) at SOCKET; log LOG; stop
// it with `jitd stop`".
std::string DaemonAnnouncement(pid_t pid, const std::string& socket_path,
                               const std::string& log_path);

// The jitd binary to start (see the file comment); FAILED_PRECONDITION naming
// every place tried when there is none.
StatusOr<std::string> FindJitdBinary();

// Starts `binary serve --socket socket_path [serve_args]` detached (see the
// file comment) and returns its pid. UNAVAILABLE when it cannot be started.
StatusOr<pid_t> StartDaemon(const std::string& binary, const std::string& socket_path,
                            const std::vector<std::string>& serve_args = {});

// Connects to the daemon at `socket_path`; when none answers and
// launch.start (and not AutostartDisabled()), starts one and retries until it answers (or, when it exits,
// one more time: another process's daemon may have won the race). The error
// says why the started daemon did not answer, with the tail of its log.
StatusOr<std::unique_ptr<Client>> ConnectOrStart(const std::string& socket_path,
                                                 const ClientOptions& options,
                                                 const LaunchOptions& launch);

// jitd.pid beside `socket_path`: where a daemon writes its pid.
std::string DaemonPidFilePath(const std::string& socket_path);

// Whether `pid` is a running `jitd serve` process (by /proc/PID/cmdline).
bool IsJitdDaemonProcess(pid_t pid);

// The pid of the daemon serving `socket_path`: the socket's peer as the
// kernel saw it (SO_PEERCRED) when that is a `jitd serve` process — not
// under socket activation, where it is the service manager — else the pid
// in jitd.pid beside the socket when that is a running `jitd serve`.
// NOT_FOUND when neither names one (no daemon, or a stale pid file);
// FAILED_PRECONDITION when the socket answers but neither does.
StatusOr<pid_t> FindDaemonPid(const std::string& socket_path);

// The tail (last `lines` lines) of a log file, each line indented, for an
// error message; "" when it cannot be read.
std::string LogTail(const std::string& path, size_t lines = 5);

}  // namespace jitd::client

#endif  // JITD_LIBCLIENT_LAUNCHER_H_
