// The jitd FlatBuffers module format (ipc/module.fbs) <-> IR.
//
// ModuleToFlatBuffer serializes any IR module losslessly enough that
// ModuleFromFlatBuffer(ModuleToFlatBuffer(m)) prints exactly like m (value
// names, result groups, attributes and resources are carried; locations too).
// ModuleFromFlatBuffer accepts hostile bytes: it runs the FlatBuffers
// verifier, checks every value id, type, enum, index and nesting depth, and
// finally ir::VerifyModule; errors say where ("function 'main' op #3
// (stablehlo.add): operand 1 names value 17, which is not defined"). Both are
// stateless and safe to call from any thread.
#ifndef JITD_JIT_FRONTEND_FLATBUFFER_MODULE_H_
#define JITD_JIT_FRONTEND_FLATBUFFER_MODULE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/status.h"
#include "jit/ir/module.h"

namespace jitd::frontend {

// The format version this code writes and the newest it reads.
inline constexpr uint32_t kFlatBufferModuleVersion = 1;

// IR -> FlatBuffers bytes. Fails only for modules beyond the format's limits
// (a 2 GiB FlatBuffer).
StatusOr<std::vector<uint8_t>> ModuleToFlatBuffer(const ir::Module& module);

// FlatBuffers bytes -> a verified IR module, or INVALID_ARGUMENT naming what
// was wrong and where. `bytes` need not be aligned.
StatusOr<std::unique_ptr<ir::Module>> ModuleFromFlatBuffer(std::span<const uint8_t> bytes);

// The same without the final ir::VerifyModule (the structure is still fully
// checked: ids, types, nesting); for tools that want to print what they got.
StatusOr<std::unique_ptr<ir::Module>> ModuleFromFlatBufferUnverified(
    std::span<const uint8_t> bytes);

}  // namespace jitd::frontend

#endif  // JITD_JIT_FRONTEND_FLATBUFFER_MODULE_H_
