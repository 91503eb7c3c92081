// A reader of StableHLO portable artifacts: MLIR bytecode (magic "ML\xEFR")
// whose ops, attributes and types are those of the versioned VHLO dialect
// (`vhlo.add_v1`, `#vhlo.tensor_v1`, ...), as `jax.export` serialization and
// `stablehlo.serialize_portable_artifact` write them.
//
// The reader decodes the bytecode container (string, dialect, attribute/type,
// properties, resource and IR sections), maps every VHLO op, attribute and
// type to its StableHLO / func equivalent, writes that program as generic
// StableHLO text, and hands the text to the text parser (ParseModule), so a
// bytecode program and its text twin become the same ir::Module.
//
// Refused, by name: bytecode versions other than the ones below, VHLO
// versions newer than kMaxVhloVersion (from the producer string or the vhlo
// dialect version), VHLO ops, attributes and types this reader does not map.
// Every error message starts with "bytecode offset N: " (N = byte offset in
// the input) and says what was wrong. Every read is bounds-checked, counts
// are checked against the bytes left, nesting is limited: hostile bytes give
// an error, never a crash, hang or unbounded allocation. Stateless;
// thread-safe.
#ifndef JITD_JIT_FRONTEND_BYTECODE_READER_H_
#define JITD_JIT_FRONTEND_BYTECODE_READER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/frontend/parser.h"
#include "jit/ir/module.h"

namespace jitd::frontend {

// MLIR bytecode versions this reader accepts (MLIR's kLazyLoading ..
// kNativePropertiesODSSegmentSize).
inline constexpr int kMinBytecodeVersion = 2;
inline constexpr int kMaxBytecodeVersion = 6;
// Newest VHLO (StableHLO) version accepted, "major.minor.patch".
inline constexpr std::string_view kMaxVhloVersion = "1.0.0";

// True when `bytes` starts with MLIR's bytecode magic "ML\xEFR".
bool IsMlirBytecode(std::string_view bytes);

// Decodes a portable artifact into generic StableHLO text (what ReadBytecode
// parses); exposed for tools and tests.
StatusOr<std::string> BytecodeToStableHloText(std::string_view bytes);

// Decodes a portable artifact into a module.
StatusOr<std::unique_ptr<ir::Module>> ReadBytecode(std::string_view bytes);

// The one entry point for program bytes of unknown form: MLIR bytecode
// (picked by its magic number, never by a file name) or StableHLO text.
StatusOr<std::unique_ptr<ir::Module>> ParseProgram(std::string_view bytes);

// File-level forms of the same choice, for tools that take files of several
// `// -----`-separated text modules: a bytecode file is one piece (it is
// never split), a text file splits as SplitModules does.
std::vector<ModuleText> SplitProgram(std::string_view file_bytes);
// Parses one piece of SplitProgram (error locations are file lines for text).
StatusOr<std::unique_ptr<ir::Module>> ParseProgram(const ModuleText& piece);
// Every module of a file (one for bytecode), as ParseModules.
StatusOr<std::vector<std::unique_ptr<ir::Module>>> ParsePrograms(std::string_view file_bytes);

}  // namespace jitd::frontend

#endif  // JITD_JIT_FRONTEND_BYTECODE_READER_H_
