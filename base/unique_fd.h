// UniqueFd: sole owner of a POSIX file descriptor, closed on destruction.
//
// Move-only; -1 means "none". Thread-compatible value type. Used wherever a
// descriptor is opened (segments, received descriptors, cache files, .npy
// files) so that no error path leaks one.
#ifndef JITD_BASE_UNIQUE_FD_H_
#define JITD_BASE_UNIQUE_FD_H_

#include <unistd.h>

#include <utility>

namespace jitd {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& other) noexcept {
    if (this != &other) Reset(std::exchange(other.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Gives up ownership without closing.
  int Release() { return std::exchange(fd_, -1); }
  // Closes the current descriptor (if any) and owns `fd` instead.
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }
  // Closes now and returns close()'s result (writes report errors there).
  int Close() { return fd_ >= 0 ? ::close(std::exchange(fd_, -1)) : 0; }

 private:
  int fd_ = -1;
};

}  // namespace jitd

#endif  // JITD_BASE_UNIQUE_FD_H_
