#include "daemon/program_key.h"

#include <cstdint>
#include <span>

#include "jit/cache/fingerprint.h"
#include "jit/frontend/flatbuffer_module.h"
#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"
#include "jit/ir/type.h"

namespace jitd::daemon {
namespace {

// Whether `op`'s value depends on its source position (see the header).
// (Elided dense_resource weights do not: their fill is seeded by name and
// place among them, jit/eval.)
bool DependsOnPosition(const ir::Module& module, const ir::Op& op) {
  (void)module;
  return op.code() == ir::OpCode::kRng;
}

// Appends "line:col;" of every position-dependent op under `block`, in order.
void AppendPositions(const ir::Module& module, const ir::Block& block, std::string& out) {
  for (const auto& op : block.ops()) {
    if (DependsOnPosition(module, *op)) out += op->loc().ToString() + ";";
    for (size_t r = 0; r < op->num_regions(); ++r) {
      for (size_t b = 0; b < op->region(r).num_blocks(); ++b) {
        AppendPositions(module, op->region(r).block(b), out);
      }
    }
  }
}

}  // namespace

ProgramKey MakeProgramKey(const ir::Module& module) {
  ir::PrintOptions options;
  options.canonical = true;
  std::string text = ir::PrintModule(module, options);
  std::string positions;
  for (const auto& fn : module.functions()) {
    if (fn->entry() != nullptr) AppendPositions(module, *fn->entry(), positions);
  }
  if (!positions.empty()) text += "\n// positions " + positions;
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
  return frontend::ParseModule(bytes);
}

}  // namespace jitd::daemon
