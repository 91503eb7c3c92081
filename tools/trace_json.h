// `jitd run --trace=FILE.json`: a compile's steps and an execution's spans
// in Chrome's Trace Event Format (the JSON object form), which Perfetto
// (ui.perfetto.dev) and chrome://tracing open.
//
// Every span is a complete event ("ph":"X") with "ts" and "dur" in
// microseconds counted from the earliest span, the process's and threads'
// names as metadata events ("ph":"M"), and spans left out for size counted
// in "otherData". Pure functions; thread-compatible.
#ifndef JITD_TOOLS_TRACE_JSON_H_
#define JITD_TOOLS_TRACE_JSON_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace jitd::tools {

// One span of the timeline. Plain value.
struct TraceSpan {
  std::string name;
  std::string category;  // "compile", "execute", "kernel", "op", ...
  int64_t start_nanos = 0;  // std::chrono::steady_clock time since its epoch
  int64_t duration_nanos = 0;
  uint64_t thread = 0;  // OS thread id
  // Shown beside the span when selected: {"call_site", "model.mlir:12:5"}.
  std::vector<std::pair<std::string, std::string>> args;
};

// What one trace file holds. Plain value.
struct TraceDocument {
  uint64_t pid = 0;
  std::string process_name;
  std::vector<std::pair<uint64_t, std::string>> thread_names;  // {tid, name}
  std::vector<TraceSpan> spans;
  uint64_t dropped = 0;  // spans not recorded (the recorder's cap)
};

// The document as Trace Event Format JSON.
std::string ChromeTraceJson(const TraceDocument& document);

// `text` as a JSON string's contents (quotes, backslashes and control
// characters escaped; other bytes as they are).
std::string JsonEscaped(std::string_view text);

}  // namespace jitd::tools

#endif  // JITD_TOOLS_TRACE_JSON_H_
