// ElementalEmitter's rule for one index map (internal to jit/codegen):
// what it supports, where it reads its operands and its value, in one
// entry of the table in elemental_index_maps.cc.
#ifndef JITD_JIT_CODEGEN_INTERNAL_MAP_RULE_H_
#define JITD_JIT_CODEGEN_INTERNAL_MAP_RULE_H_

#include <cstddef>
#include <cstdint>

#include "jit/codegen/elemental_emitter.h"

namespace jitd::codegen {

struct ElementalEmitter::MapRule {
  enum Kind : uint8_t {
    kConstant,  // a splat constant: no index
    kIndexMap,  // needs the index (iota, broadcast_in_dim, ... dynamic_update_slice)
    kBits,      // bitcast_convert: storage bits, pieces between widths
  };
  ir::OpCode code;
  Kind kind;
  bool (*supported)(const ir::Op& op, const TargetMath& target);
  // Where the op, computed at `idx`, reads operand `k` unconditionally
  // (ElementalEmitter::OperandIndex), or null; unused without operands.
  Index* (ElementalEmitter::*operand)(const ir::Op& op, size_t k, Index* idx);
  // The op's value at `idx`.
  llvm::Value* (ElementalEmitter::*value)(const ir::Op& op, Index* idx);
  // It only moves its operands' elements: HalfBits walks it on bits.
  bool copies_elements;
  // Operand 0's index needs the other operands' values (start indices).
  bool starts_first;
};

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_INTERNAL_MAP_RULE_H_
