#include "tools/trace_json.h"

#include <algorithm>
#include <cstdio>
#include <limits>

namespace jitd::tools {

std::string JsonEscaped(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
          out += escaped;
        } else {
          out += c;
        }
    }
  }
  return out;
}

namespace {

// Microseconds with nanosecond precision: "12.345".
void AppendMicros(std::string& out, int64_t nanos) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(nanos) / 1e3);
  out += text;
}

}  // namespace

std::string ChromeTraceJson(const TraceDocument& document) {
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const TraceSpan& span : document.spans) origin = std::min(origin, span.start_nanos);
  if (document.spans.empty()) origin = 0;
  const std::string pid = std::to_string(document.pid);
  std::string out = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto begin_event = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  begin_event();
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":\"" + JsonEscaped(document.process_name) + "\"}}";
  for (const auto& [tid, name] : document.thread_names) {
    begin_event();
    out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
           ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":\"" + JsonEscaped(name) +
           "\"}}";
  }
  for (const TraceSpan& span : document.spans) {
    begin_event();
    out += "{\"name\":\"" + JsonEscaped(span.name) + "\",\"cat\":\"" +
           JsonEscaped(span.category) + "\",\"ph\":\"X\",\"ts\":";
    AppendMicros(out, span.start_nanos - origin);
    out += ",\"dur\":";
    AppendMicros(out, std::max<int64_t>(span.duration_nanos, 0));
    out += ",\"pid\":" + pid + ",\"tid\":" + std::to_string(span.thread);
    if (!span.args.empty()) {
      out += ",\"args\":{";
      for (size_t i = 0; i < span.args.size(); ++i) {
        out += (i ? ",\"" : "\"") + JsonEscaped(span.args[i].first) + "\":\"" +
               JsonEscaped(span.args[i].second) + "\"";
      }
      out += "}";
    }
    out += "}";
  }
  out += "\n],\"otherData\":{\"producer\":\"jitd run --trace\",\"dropped_spans\":" +
         std::to_string(document.dropped) + "}}\n";
  return out;
}

}  // namespace jitd::tools
