#include "tools/progress_line.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>


namespace jitd::tools {

ProgressOptions ProgressLine::ForStderr() {
  ProgressOptions options;
  const char* term = std::getenv("TERM");
  options.enabled = ::isatty(STDERR_FILENO) == 1 && !(term && std::strcmp(term, "dumb") == 0);
  return options;
}

void ProgressLine::Start(std::string what) {
  Stop();
  if (!options_.enabled) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  const auto start = std::chrono::steady_clock::now();
  drawer_ = std::thread([this, what = std::move(what), start] {
    std::unique_lock<std::mutex> lock(mu_);
    if (stop_cv_.wait_for(lock, options_.show_after, [this] { return stop_; })) return;
    do {
      Draw(what, std::chrono::steady_clock::now() - start);
    } while (!stop_cv_.wait_for(lock, options_.redraw_every, [this] { return stop_; }));
  });
}

void ProgressLine::Stop() {
  if (!drawer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  drawer_.join();
  if (drawn_) {
    std::fputs("\r\033[K", options_.out);  // back to the line's start, erase it
    std::fflush(options_.out);
    drawn_ = false;
  }
}

void ProgressLine::Draw(const std::string& what, std::chrono::steady_clock::duration elapsed) {
  const double micros = std::chrono::duration<double, std::micro>(elapsed).count();
  // Whole tenths of a second: a calm, steadily growing number.
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", micros / 1e6);
  std::fprintf(options_.out, "\r\033[Kjitd run: %s ... %s", what.c_str(), seconds);
  std::fflush(options_.out);
  drawn_ = true;
}

}  // namespace jitd::tools
