#include "daemon/value_tree.h"

#include <utility>

namespace jitd::daemon {
namespace {

Status FlattenOne(const ir::Type& type, const std::string& where, ValueTree& tree) {
  if (type.is_tensor()) {
    tree.leaves.push_back(type);
    tree.structure += 't';
    return Status::Ok();
  }
  tree.flat = false;
  if (type.is_token()) {
    tree.structure += 'k';
    return Status::Ok();
  }
  if (type.is_tuple()) {
    tree.structure += '(';
    const std::vector<ir::Type>& elements = type.elements();
    for (size_t i = 0; i < elements.size(); ++i) {
      if (Status s = FlattenOne(elements[i], where + "." + std::to_string(i), tree); !s.ok()) {
        return s;
      }
    }
    tree.structure += ')';
    return Status::Ok();
  }
  return InvalidArgument(where + " is a " + type.ToString() +
                         "; only tensors, tokens and tuples of them cross the wire");
}

StatusOr<eval::RuntimeValue> AssembleOne(const ir::Type& type, std::vector<ir::Literal>& leaves,
                                         size_t& next) {
  if (type.is_token()) return eval::RuntimeValue::Token();
  if (type.is_tuple()) {
    std::vector<eval::RuntimeValue> elements;
    elements.reserve(type.elements().size());
    for (const ir::Type& element : type.elements()) {
      StatusOr<eval::RuntimeValue> value = AssembleOne(element, leaves, next);
      if (!value.ok()) return value.status();
      elements.push_back(std::move(value).value());
    }
    return eval::RuntimeValue::Tuple(std::move(elements));
  }
  if (next >= leaves.size()) {
    return InvalidArgument("the values need more than the " + std::to_string(leaves.size()) +
                           " leaf tensor(s) given");
  }
  ir::Literal& leaf = leaves[next++];
  if (!(leaf.type() == type)) {
    return InvalidArgument("leaf " + std::to_string(next - 1) + " is " + leaf.type().ToString() +
                           ", expected " + type.ToString());
  }
  return eval::RuntimeValue(std::move(leaf));
}

void CollectLeaves(const eval::RuntimeValue& value, std::vector<const ir::Literal*>& out) {
  if (value.is_tensor()) {
    out.push_back(&value.literal());
  } else if (value.is_tuple()) {
    for (const eval::RuntimeValue& element : value.elements()) CollectLeaves(element, out);
  }
}

// One value of `structure` at `pos` (advanced past it).
StatusOr<ir::Type> ParseOne(std::string_view structure, size_t& pos,
                            const std::vector<ir::Type>& leaves, size_t& next, int depth) {
  if (depth > 64) return InvalidArgument("structure nests tuples deeper than 64");
  const char c = structure[pos];
  const std::string at = " at offset " + std::to_string(pos) + " of structure \"" +
                         std::string(structure) + "\"";
  if (c == 't') {
    ++pos;
    if (next >= leaves.size()) {
      return InvalidArgument("more tensors than the " + std::to_string(leaves.size()) +
                             " leaves" + at);
    }
    return leaves[next++];
  }
  if (c == 'k') {
    ++pos;
    return ir::Type::Token();
  }
  if (c != '(') return InvalidArgument(std::string("unexpected '") + c + "'" + at);
  ++pos;
  std::vector<ir::Type> elements;
  while (true) {
    if (pos >= structure.size()) return InvalidArgument("unclosed tuple" + at);
    if (structure[pos] == ')') break;
    StatusOr<ir::Type> element = ParseOne(structure, pos, leaves, next, depth + 1);
    if (!element.ok()) return element.status();
    elements.push_back(std::move(element).value());
  }
  ++pos;
  return ir::Type::Tuple(std::move(elements));
}

}  // namespace

StatusOr<ValueTree> FlattenTypes(const std::vector<ir::Type>& types, const char* what) {
  ValueTree tree;
  for (size_t i = 0; i < types.size(); ++i) {
    if (Status s = FlattenOne(types[i], std::string(what) + " " + std::to_string(i), tree);
        !s.ok()) {
      return s;
    }
  }
  return tree;
}

bool AllTensors(const std::vector<ir::Type>& types) {
  for (const ir::Type& type : types) {
    if (!type.is_tensor()) return false;
  }
  return true;
}

StatusOr<std::vector<eval::RuntimeValue>> AssembleValues(const std::vector<ir::Type>& types,
                                                         std::vector<ir::Literal> leaves) {
  std::vector<eval::RuntimeValue> values;
  values.reserve(types.size());
  size_t next = 0;
  for (const ir::Type& type : types) {
    StatusOr<eval::RuntimeValue> value = AssembleOne(type, leaves, next);
    if (!value.ok()) return value.status();
    values.push_back(std::move(value).value());
  }
  if (next != leaves.size()) {
    return InvalidArgument("the values take " + std::to_string(next) + " leaf tensor(s), " +
                           std::to_string(leaves.size()) + " given");
  }
  return values;
}

std::vector<const ir::Literal*> ValueLeaves(const std::vector<eval::RuntimeValue>& values) {
  std::vector<const ir::Literal*> out;
  for (const eval::RuntimeValue& value : values) CollectLeaves(value, out);
  return out;
}

}  // namespace jitd::daemon

namespace jitd::daemon {

StatusOr<std::vector<ir::Type>> TypesFromStructure(std::string_view structure,
                                                   const std::vector<ir::Type>& leaves) {
  if (structure.empty()) return leaves;
  std::vector<ir::Type> types;
  size_t pos = 0, next = 0;
  while (pos < structure.size()) {
    StatusOr<ir::Type> type = ParseOne(structure, pos, leaves, next, 0);
    if (!type.ok()) return type.status();
    types.push_back(std::move(type).value());
  }
  if (next != leaves.size()) {
    return InvalidArgument("structure \"" + std::string(structure) + "\" takes " +
                           std::to_string(next) + " leaves, " + std::to_string(leaves.size()) +
                           " given");
  }
  return types;
}

}  // namespace jitd::daemon
