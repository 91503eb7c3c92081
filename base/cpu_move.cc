#include "base/cpu_move.h"

#include <sched.h>

namespace jitd {

bool MoveOffThisCpu() {
  const int cpu = ::sched_getcpu();
  cpu_set_t allowed;
  if (cpu < 0 || ::sched_getaffinity(0, sizeof(allowed), &allowed) != 0 ||
      CPU_COUNT(&allowed) < 2 || !CPU_ISSET(cpu, &allowed)) {
    return false;
  }
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (::sched_setaffinity(0, sizeof(others), &others) != 0) return false;
  (void)::sched_setaffinity(0, sizeof(allowed), &allowed);
  return true;
}

bool PinThisThread(int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE) return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return ::sched_setaffinity(0, sizeof(one), &one) == 0;
}

}  // namespace jitd
