#include "daemon/value_tree.h"

#include <gtest/gtest.h>

#include <vector>

namespace jitd::daemon {
namespace {

ir::Literal Leaf(ir::Type type, uint8_t fill) {
  std::vector<uint8_t> bytes(static_cast<size_t>(type.byte_size()), fill);
  return ir::Literal::FromBytes(type, std::move(bytes)).value();
}

TEST(ValueTreeTest, TensorsAreFlat) {
  const ir::Type f = ir::Type::Tensor(ir::DType::kF32, {2});
  StatusOr<ValueTree> tree = FlattenTypes({f, f}, "result");
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_TRUE(tree->flat);
  EXPECT_EQ(tree->structure, "tt");
  EXPECT_EQ(tree->leaves.size(), 2u);
  EXPECT_TRUE(AllTensors({f, f}));
}

TEST(ValueTreeTest, NestedTuplesAndTokensFlattenDepthFirst) {
  const ir::Type f = ir::Type::Tensor(ir::DType::kF32, {2});
  const ir::Type i = ir::Type::Tensor(ir::DType::kS32, {});
  const ir::Type nested =
      ir::Type::Tuple({f, ir::Type::Tuple({i, ir::Type::Token()}), ir::Type::Tuple({})});
  std::vector<ir::Type> types = {ir::Type::Token(), nested, i};
  EXPECT_FALSE(AllTensors(types));
  StatusOr<ValueTree> tree = FlattenTypes(types, "result");
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_FALSE(tree->flat);
  EXPECT_EQ(tree->structure, "k(t(tk)())t");
  ASSERT_EQ(tree->leaves.size(), 3u);
  EXPECT_EQ(tree->leaves[0], f);
  EXPECT_EQ(tree->leaves[1], i);
  EXPECT_EQ(tree->leaves[2], i);

  // Assemble from leaves and flatten back: the same leaves, in order.
  std::vector<ir::Literal> leaves = {Leaf(f, 1), Leaf(i, 2), Leaf(i, 3)};
  StatusOr<std::vector<eval::RuntimeValue>> values = AssembleValues(types, leaves);
  ASSERT_TRUE(values.ok()) << values.status().message();
  ASSERT_EQ(values->size(), 3u);
  EXPECT_TRUE((*values)[0].is_token());
  ASSERT_TRUE((*values)[1].is_tuple());
  EXPECT_EQ((*values)[1].type(), nested);
  std::vector<const ir::Literal*> back = ValueLeaves(*values);
  ASSERT_EQ(back.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(back[k]->type(), leaves[k].type());
    EXPECT_EQ(back[k]->bytes()[0], static_cast<uint8_t>(k + 1));
  }
}

TEST(ValueTreeTest, AssembleChecksLeafCountAndTypes) {
  const ir::Type f = ir::Type::Tensor(ir::DType::kF32, {2});
  const ir::Type i = ir::Type::Tensor(ir::DType::kS32, {});
  const std::vector<ir::Type> types = {ir::Type::Tuple({f, i})};
  StatusOr<std::vector<eval::RuntimeValue>> few = AssembleValues(types, {Leaf(f, 0)});
  ASSERT_FALSE(few.ok());
  EXPECT_NE(few.status().message().find("more than the 1 leaf"), std::string::npos)
      << few.status().message();
  StatusOr<std::vector<eval::RuntimeValue>> many =
      AssembleValues(types, {Leaf(f, 0), Leaf(i, 0), Leaf(i, 0)});
  ASSERT_FALSE(many.ok());
  EXPECT_NE(many.status().message().find("take 2 leaf tensor(s), 3 given"), std::string::npos)
      << many.status().message();
  StatusOr<std::vector<eval::RuntimeValue>> swapped =
      AssembleValues(types, {Leaf(i, 0), Leaf(f, 0)});
  ASSERT_FALSE(swapped.ok());
  EXPECT_NE(swapped.status().message().find("leaf 0 is tensor<i32>"), std::string::npos)
      << swapped.status().message();
}

TEST(ValueTreeTest, FuturesAreRefusedNamingTheValue) {
  const ir::Type f = ir::Type::Tensor(ir::DType::kF32, {2});
  StatusOr<ValueTree> tree = FlattenTypes({f, ir::Type::Tuple({f, ir::Type::Future({f})})},
                                          "argument");
  ASSERT_FALSE(tree.ok());
  EXPECT_NE(tree.status().message().find("argument 1.1 is a"), std::string::npos)
      << tree.status().message();
}

TEST(ValueTreeTest, StructureParsesBackToTheTypes) {
  const ir::Type f = ir::Type::Tensor(ir::DType::kF32, {2});
  const ir::Type i = ir::Type::Tensor(ir::DType::kS32, {});
  const std::vector<ir::Type> types = {
      ir::Type::Token(), ir::Type::Tuple({f, ir::Type::Tuple({i, ir::Type::Token()}),
                                          ir::Type::Tuple({})}),
      i};
  ValueTree tree = FlattenTypes(types, "result").value();
  StatusOr<std::vector<ir::Type>> back = TypesFromStructure(tree.structure, tree.leaves);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, types);
  // Empty: one tensor per leaf.
  EXPECT_EQ(TypesFromStructure("", {f, i}).value(), (std::vector<ir::Type>{f, i}));
}

TEST(ValueTreeTest, MalformedStructuresSayWhere) {
  const ir::Type f = ir::Type::Tensor(ir::DType::kF32, {2});
  auto message = [&](std::string_view s, std::vector<ir::Type> leaves) {
    StatusOr<std::vector<ir::Type>> r = TypesFromStructure(s, leaves);
    EXPECT_FALSE(r.ok()) << s;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(message("(t", {f}).find("unclosed tuple"), std::string::npos);
  EXPECT_NE(message("tx", {f}).find("unexpected 'x' at offset 1"), std::string::npos);
  EXPECT_NE(message("tt", {f}).find("more tensors than the 1 leaves"), std::string::npos);
  EXPECT_NE(message("t", {f, f}).find("takes 1 leaves, 2 given"), std::string::npos);
  EXPECT_NE(message(")", {}).find("unexpected ')'"), std::string::npos);
  EXPECT_NE(message(std::string(70, '('), {}).find("deeper than 64"), std::string::npos);
}

}  // namespace
}  // namespace jitd::daemon
