#include "jit/codegen/kernel_spec.h"

#include <unordered_map>

namespace jitd::codegen {

using ir::Op;

namespace {

// Appends op name, operand ids, result types, attributes and regions to
// `key`, numbering results as they appear.
void DescribeOp(const Op& op, std::unordered_map<const ir::Value*, int>& ids, std::string& key) {
  key += op.name();
  key += '(';
  for (const ir::Value* v : op.operands()) {
    auto it = ids.find(v);
    key += it == ids.end() ? std::string("?") : std::to_string(it->second);
    key += ',';
  }
  key += ")->";
  for (size_t i = 0; i < op.num_results(); ++i) {
    key += op.result(i)->type().ToString();
    key += ',';
    ids[op.result(i)] = static_cast<int>(ids.size());
  }
  op.attrs().AppendDictTo(key);
  for (size_t r = 0; r < op.num_regions(); ++r) {
    key += "{";
    for (size_t b = 0; b < op.region(r).num_blocks(); ++b) {
      const ir::Block& block = op.region(r).block(b);
      key += "^(";
      for (size_t i = 0; i < block.num_args(); ++i) {
        key += block.arg(i)->type().ToString();
        key += ',';
        ids[block.arg(i)] = static_cast<int>(ids.size());
      }
      key += ")";
      for (const auto& inner : block.ops()) {
        DescribeOp(*inner, ids, key);
        key += ';';
      }
    }
    key += "}";
  }
}

}  // namespace

std::string KernelKey(const KernelSpec& spec) {
  std::unordered_map<const ir::Value*, int> ids;
  std::string key;
  for (const ir::Value* v : spec.inputs) {
    key += "in:" + v->type().ToString() + ";";
    ids[v] = static_cast<int>(ids.size());
  }
  // Producers before consumers: the reverse of the planner's discovery
  // order (root first, then producers by descending block position).
  std::vector<const Op*> ops(spec.fused.rbegin(), spec.fused.rend());
  for (const Op* op : ops) {
    if (op == spec.root) continue;
    DescribeOp(*op, ids, key);
    key += ';';
  }
  key += "root:";
  DescribeOp(*spec.root, ids, key);
  for (const ir::Value* v : spec.extra_outputs) {
    auto it = ids.find(v);
    key += ";out:" + (it == ids.end() ? std::string("?") : std::to_string(it->second));
  }
  return key;
}

size_t KernelOps(const KernelSpec& spec) {
  size_t n = 0;
  for (const Op* op : spec.fused) n += op->code() != ir::OpCode::kConstant;
  return n;
}

}  // namespace jitd::codegen
