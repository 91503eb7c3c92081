#include "daemon/program_key.h"

#include <cstdint>
#include <span>

#include "jit/cache/fingerprint.h"
#include "jit/frontend/bytecode_reader.h"
#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/type.h"

namespace jitd::daemon {

ProgramKey MakeProgramKey(const ir::Module& module) {
  ir::PrintOptions options;
  options.canonical = true;
  // No source positions: the values that depended on them (stablehlo.rng,
  // elided dense_resource weights) are seeded by their place among their
  // kind instead (eval::OpPlaces).
  const std::string text = ir::PrintModule(module, options);
  ProgramKey key;
  key.canonical_hash = cache::HashProgram(text);
  if (const ir::Function* entry = module.EntryFunction()) {
    key.entry = "@" + entry->name() +
                ir::FunctionTypeToString(entry->arg_types(), entry->result_types());
  }
  return key;
}

bool IsFlatBufferModule(std::string_view bytes) {
  return bytes.size() >= 8 && bytes.substr(4, 4) == "JDMF";
}

StatusOr<std::unique_ptr<ir::Module>> ParseProgram(std::string_view bytes, bool flatbuffer) {
  if (flatbuffer) {
    return frontend::ModuleFromFlatBuffer(std::span<const uint8_t>(
        reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  }
  return frontend::ParseProgram(bytes);  // StableHLO text or VHLO bytecode
}

}  // namespace jitd::daemon
