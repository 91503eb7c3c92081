// DurationText: a duration as people read it — "850 ns" is never needed,
// so: "12.3 us", "850 us", "1.25 ms", "189 ms", "3.42 s", "2 min 5 s".
// About three significant digits, the unit chosen by size. Used by every
// tool line and daemon log line that prints a time. Pure function.
#ifndef JITD_BASE_DURATION_TEXT_H_
#define JITD_BASE_DURATION_TEXT_H_

#include <cmath>
#include <cstdio>
#include <string>

namespace jitd {

inline std::string DurationText(double micros) {
  char text[48];
  auto three_digits = [&](double value, const char* unit) {
    const char* format = value < 9.995 ? "%.2f %s" : value < 99.95 ? "%.1f %s" : "%.0f %s";
    std::snprintf(text, sizeof(text), format, value, unit);
  };
  if (micros == 0) return "0 us";
  if (!std::isfinite(micros) || micros < 0) {
    std::snprintf(text, sizeof(text), "%g us", micros);
  } else if (micros < 999.5) {
    three_digits(micros, "us");
  } else if (micros < 999.5e3) {
    three_digits(micros / 1e3, "ms");
  } else if (micros < 60e6) {
    three_digits(micros / 1e6, "s");
  } else {
    const double seconds = std::round(micros / 1e6);
    std::snprintf(text, sizeof(text), "%.0f min %.0f s", std::floor(seconds / 60),
                  std::fmod(seconds, 60));
  }
  return text;
}

}  // namespace jitd

#endif  // JITD_BASE_DURATION_TEXT_H_
