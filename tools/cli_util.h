// Small pieces every `jitd` subcommand shares: exit codes and how files are
// named in messages.
#ifndef JITD_TOOLS_CLI_UTIL_H_
#define JITD_TOOLS_CLI_UTIL_H_

#include <string>

namespace jitd::tools {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInvalidProgram = 1;  // parse/verify error, failed run or check
inline constexpr int kExitUsageOrIo = 2;
inline constexpr int kExitInternal = 3;

// How a path is named in messages ("-" is standard input).
inline std::string DisplayName(const std::string& path) {
  return path == "-" ? "<stdin>" : path;
}

// Parser and verifier messages start with "line:col: "; prefixing the file
// name gives the familiar "file:line:col: message".
inline std::string WithFileName(const std::string& path, const std::string& message) {
  std::string out = DisplayName(path) + ":";
  if (message.empty() || message[0] < '0' || message[0] > '9') out += ' ';
  return out + message;
}

}  // namespace jitd::tools

#endif  // JITD_TOOLS_CLI_UTIL_H_
