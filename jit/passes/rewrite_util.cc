#include "jit/passes/internal/rewrite_util.h"

#include <cstring>

namespace jitd::passes::internal {

const ir::DenseElementsAttr* ConstantAttr(const ir::Value* v) {
  const ir::Op* def = v->defining_op();
  if (!def || def->code() != ir::OpCode::kConstant) return nullptr;
  const ir::Attribute* a = def->attr("value");
  return a ? a->get_if<ir::DenseElementsAttr>() : nullptr;
}

std::optional<ir::Literal> SplatValue(const ir::Value* v) {
  const ir::DenseElementsAttr* attr = ConstantAttr(v);
  if (!attr || !attr->data || !attr->type.is_tensor()) return std::nullopt;
  const size_t elem = static_cast<size_t>(ir::StorageBytes(attr->type.dtype()));
  const std::vector<uint8_t>& data = *attr->data;
  if (data.size() < elem || elem == 0) return std::nullopt;
  if (!attr->splat) {
    if (data.size() % elem) return std::nullopt;
    for (size_t i = elem; i < data.size(); i += elem) {
      if (std::memcmp(data.data(), data.data() + i, elem) != 0) return std::nullopt;
    }
  }
  auto lit = ir::Literal::FromBytes(ir::Type::Scalar(attr->type.dtype()),
                                    std::vector<uint8_t>(data.begin(), data.begin() + elem));
  if (!lit.ok()) return std::nullopt;
  return std::move(lit).value();
}

ir::Attribute I64Array(std::vector<int64_t> values) {
  return ir::DenseArrayAttr{ir::DType::kS64, std::move(values), {}};
}

std::unique_ptr<ir::Op> MakeConstant(ir::DenseElementsAttr attr, ir::Location loc,
                                     std::string name) {
  const ir::Type type = attr.type;
  ir::AttributeList attrs;
  attrs.Set("value", std::move(attr));
  return ir::CreateOp(ir::OpCode::kConstant, loc, {}, std::span<const ir::Type>(&type, 1),
                      std::move(attrs), std::move(name));
}

ir::DenseElementsAttr SplatAttr(const ir::Type& type, const ir::Literal& scalar) {
  ir::DenseElementsAttr attr;
  attr.type = type;
  attr.splat = true;
  attr.data = std::make_shared<const std::vector<uint8_t>>(scalar.bytes().begin(),
                                                           scalar.bytes().end());
  return attr;
}

int64_t RewriteWalker::Run(ir::Function& fn) {
  map_.clear();
  count_ = 0;
  WalkRegion(fn.body());
  map_.clear();
  graveyard_.clear();
  return count_;
}

ir::Op* RewriteWalker::Insert(std::unique_ptr<ir::Op> op) {
  op->set_parent_block(block_);
  out_->push_back(std::move(op));
  return out_->back().get();
}

// Each block is rebuilt into a new op list (inserting into the old one
// would move the whole tail per insertion).
void RewriteWalker::WalkRegion(ir::Region& region) {
  for (size_t b = 0; b < region.num_blocks(); ++b) {
    ir::Block& block = region.block(b);
    std::vector<std::unique_ptr<ir::Op>> ops = block.TakeOps();
    std::vector<std::unique_ptr<ir::Op>> out;
    out.reserve(ops.size());
    for (std::unique_ptr<ir::Op>& op_ptr : ops) {
      ir::Op& op = *op_ptr;
      for (size_t k = 0; k < op.num_operands(); ++k) {
        ir::Value* v = op.operand(k);
        for (auto it = map_.find(v); it != map_.end(); it = map_.find(v)) v = it->second;
        op.set_operand(k, v);
      }
      for (size_t r = 0; r < op.num_regions(); ++r) WalkRegion(op.region(r));
      block_ = &block;
      out_ = &out;
      std::vector<ir::Value*> replacements = rewrite_(op, *this);
      if (replacements.empty()) {
        out.push_back(std::move(op_ptr));
        continue;
      }
      for (size_t k = 0; k < replacements.size() && k < op.num_results(); ++k) {
        if (replacements[k] != op.result(k)) map_[op.result(k)] = replacements[k];
      }
      op.set_parent_block(nullptr);
      graveyard_.push_back(std::move(op_ptr));
      ++count_;
    }
    block.SetOps(std::move(out));
  }
}

}  // namespace jitd::passes::internal
