// Small process helpers shared by the client library's daemon launcher and
// the tests that run real processes.
//
// Thread-safe (they touch only the given pid).
#ifndef JITD_BASE_PROCESS_H_
#define JITD_BASE_PROCESS_H_

#include <sys/types.h>

#include <chrono>

namespace jitd {

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
