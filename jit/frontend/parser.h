// The StableHLO text parser: MLIR's textual syntax, as JAX, PyTorch/XLA and
// stablehlo-opt print it, in pretty and generic forms, into jit/ir.
//
// Any input yields a Module or an INVALID_ARGUMENT status whose message
// starts with "line:col: " and says what was expected. The parser never
// materializes declared shapes (splat constants stay one element) and has
// nesting and size limits, so hostile input cannot crash it, hang it, or
// make it allocate without bound. Stateless; safe to call from any thread.
#ifndef JITD_JIT_FRONTEND_PARSER_H_
#define JITD_JIT_FRONTEND_PARSER_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::frontend {

// Parses one module. The text may be `module [@name] [attributes {...}] {...}`
// or, as MLIR allows, bare top-level `func.func`s (an implicit module).
StatusOr<std::unique_ptr<ir::Module>> ParseModule(std::string_view text);
// The same for a piece of a larger file whose first line is `first_line`
// (error locations are then file line numbers).
StatusOr<std::unique_ptr<ir::Module>> ParseModule(std::string_view text, int first_line);

// One module of a file split at `// -----` lines.
struct ModuleText {
  std::string_view text;  // a view into the file's text
  int first_line = 1;     // line number of text[0] within the file
};
// Splits `file_text` at lines that are exactly `// -----` (trailing spaces
// allowed). A file without separators yields one piece.
std::vector<ModuleText> SplitModules(std::string_view file_text);

// Parses every module of a file; error locations are file line numbers.
StatusOr<std::vector<std::unique_ptr<ir::Module>>> ParseModules(std::string_view file_text);

}  // namespace jitd::frontend

#endif  // JITD_JIT_FRONTEND_PARSER_H_
