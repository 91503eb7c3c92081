// The program part of the daemon's cache keys: one program is one key
// however it is spelled and whoever sends it (issue 15, item 5).
//
// What counts as the program's meaning (and so is in the key): its ops,
// their operands, types, attributes and regions, the public functions' names
// (clients call the entry by name), module and function attributes, and the
// resources it carries. What does not: comments, whitespace, `loc(...)`
// and source positions, SSA value names, result-group spelling (`%0:2` vs
// `%a, %b`), private functions' names, the module's name, attribute order,
// and whether the program came as StableHLO text or as a FlatBuffers module
// (ipc/module.fbs, the builder's form): both are printed in one canonical
// form (ir::PrintOptions::canonical) and that text is hashed.
//
// Source positions never count: the ops whose values jitd seeds
// (stablehlo.rng, elided dense_resource weights) are seeded by their place
// among their kind (eval::OpPlaces), which the canonical text keeps.
//
// Thread safety: free functions on values; thread-safe.
#ifndef JITD_DAEMON_PROGRAM_KEY_H_
#define JITD_DAEMON_PROGRAM_KEY_H_

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::daemon {

// A program's identity for the cache. Plain value.
struct ProgramKey {
  // XXH3-128 (32 hex) of the canonical text.
  std::string canonical_hash;
  // The entry function's name and signature, e.g.
  // "@main(tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>"; "" without one.
  std::string entry;

  // The CacheKeyParts::program_hash text: "<hash> <entry>" (or the hash).
  std::string Part() const { return entry.empty() ? canonical_hash : canonical_hash + " " + entry; }
};

// The key of a parsed, verified module.
ProgramKey MakeProgramKey(const ir::Module& module);

// Whether `bytes` carry the FlatBuffers module identifier ("JDMF").
bool IsFlatBufferModule(std::string_view bytes);

// Parses `bytes` as a FlatBuffers module when `flatbuffer`, else as
// StableHLO text (both verify).
StatusOr<std::unique_ptr<ir::Module>> ParseProgram(std::string_view bytes, bool flatbuffer);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_PROGRAM_KEY_H_
