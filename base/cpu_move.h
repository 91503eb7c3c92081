// MoveOffThisCpu: moves the calling thread off the CPU it runs on, to
// another CPU its affinity allows, and gives it its whole affinity back.
// PinThisThread: limits the calling thread to one CPU (threads it starts
// later inherit that).
//
// For two threads that call each other back to back (a client and the
// daemon's worker, daemon/dispatcher.h) and that the kernel has put on one
// CPU beside an idle one: each call then costs two switches. The affinity
// loses the current CPU for a moment, so the kernel migrates the thread;
// the restored set lets the scheduler move it again later as it likes.
#ifndef JITD_BASE_CPU_MOVE_H_
#define JITD_BASE_CPU_MOVE_H_

namespace jitd {

// True when the thread was moved; false when it may run on this CPU only,
// or the CPU or the affinity could not be read or set (the thread stays).
bool MoveOffThisCpu();

// Limits the calling thread to `cpu`; it runs there when this returns.
// False (affinity unchanged) when `cpu` is out of range or not allowed.
bool PinThisThread(int cpu);

}  // namespace jitd

#endif  // JITD_BASE_CPU_MOVE_H_
