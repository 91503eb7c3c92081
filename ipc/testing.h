// Helpers for the ipc unit tests only (not part of jitd_ipc).
#ifndef JITD_IPC_TESTING_H_
#define JITD_IPC_TESTING_H_

#include <cstdint>
#include <span>
#include <string_view>

namespace jitd::ipc::testing {

// The bytes of `s` (no terminating NUL), as the rings and framers take them.
inline std::span<const uint8_t> Bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

}  // namespace jitd::ipc::testing

#endif  // JITD_IPC_TESTING_H_
