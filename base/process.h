// Small process helpers shared by the client library's daemon launcher and
// the tests that run real processes.
//
// Thread-safe (they touch only the given pid).
#ifndef JITD_BASE_PROCESS_H_
#define JITD_BASE_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace jitd {

// Starts `args[0]` (a path: no PATH search) with arguments `args` in a
// forked child and returns its pid, or -1 when fork() fails (errno says
// why). With a non-empty `output`, the child's stdout and stderr are
// appended to that file (created mode 0600; left as they are when it cannot
// be opened). When exec fails the child prints why and exits 127. The
// caller reaps the child (WaitForExit). Everything the child needs is
// prepared before fork(), so it may be called from a threaded process.
pid_t SpawnProcess(const std::vector<std::string>& args, const std::string& output = "");

// Whether a connect() to the Unix socket at `path` succeeds now: something
// listens there. The connection is closed at once.
bool UnixSocketAccepts(const std::string& path);

// Waits up to `timeout` for the child `pid` to exit and returns its wait
// status (for WIFEXITED / WEXITSTATUS). When it has not exited by then it is
// SIGKILLed and reaped, and the result is -1 (also -1 when `pid` is not a
// child of this process).
int WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Whether a process `pid` is running: it exists (kill(pid, 0) does not
// answer ESRCH) and is not a zombie (an exited process nobody reaped yet,
// per /proc/PID/stat).
bool ProcessAlive(pid_t pid);

}  // namespace jitd

#endif  // JITD_BASE_PROCESS_H_
