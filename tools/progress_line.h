// A progress line for slow steps of `jitd run` on a terminal: once a step
// has taken longer than a second, one line on stderr says what is happening
// and for how long ("jitd run: compiling model.mlir on cpu ... 3.2 s"),
// rewritten in place every tenth of a second and cleared when the step
// ends, so that nothing of it stays in the terminal's text. Off when stderr
// is no terminal (piped, redirected to a file): then it prints nothing.
//
// Thread safety: Start / Stop from one thread; a background thread draws.
// Lifetime: the destructor stops a running step.
#ifndef JITD_TOOLS_PROGRESS_LINE_H_
#define JITD_TOOLS_PROGRESS_LINE_H_

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

namespace jitd::tools {

struct ProgressOptions {
  std::FILE* out = stderr;
  // Draw at all (the default: whether `out` is a terminal).
  bool enabled = false;
  std::chrono::milliseconds show_after{1000};
  std::chrono::milliseconds redraw_every{100};
};

class ProgressLine {
 public:
  // Enabled when stderr is a terminal (and TERM is not "dumb").
  static ProgressOptions ForStderr();

  explicit ProgressLine(ProgressOptions options) : options_(options) {}
  ~ProgressLine() { Stop(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Begins a step described by `what` ("compiling model.mlir on cpu"),
  // ending the previous one.
  void Start(std::string what);
  // Ends the step; clears the line if one was drawn.
  void Stop();

 private:
  void Draw(const std::string& what, std::chrono::steady_clock::duration elapsed);

  const ProgressOptions options_;
  std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread drawer_;
};

}  // namespace jitd::tools

#endif  // JITD_TOOLS_PROGRESS_LINE_H_
