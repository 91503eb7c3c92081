// The IR mutation helpers of module.h: insert/erase, use replacement,
// cloning, function removal.
#include "jit/ir/module.h"

#include <gtest/gtest.h>

#include "jit/frontend/parser.h"
#include "jit/frontend/testing.h"
#include "jit/ir/printer.h"
#include "jit/ir/verifier.h"

namespace jitd::ir {
namespace {

using frontend::testing::ParseOrFail;

constexpr std::string_view kTwoAdds = R"(module {
  func.func @main(%a: tensor<2xi32>, %b: tensor<2xi32>) -> tensor<2xi32> {
    %0 = stablehlo.add %a, %b : tensor<2xi32>
    %1 = stablehlo.add %0, %0 : tensor<2xi32>
    return %1 : tensor<2xi32>
  }
}
)";

// WalkOps keeps its own stack: nesting costs it no recursion. (RegionNesting
// too; the IR's destructor recurses, so the test stays at 2000 levels.)
TEST(ModuleMutationTest, WalkOpsAndRegionNestingOnDeepIr) {
  Module m;
  auto fn = std::make_unique<Function>("main", Location{1, 1});
  Block* at = &fn->body().add_block();
  std::vector<Op*> ops;
  for (int d = 0; d < 2000; ++d) {
    const Location loc{static_cast<uint32_t>(d + 2), 1};
    auto op = std::make_unique<Op>(OpCode::kOptimizationBarrier, loc);
    Op* added = at->add_op(std::move(op));
    ops.push_back(added);
    at = &added->add_region().add_block();
  }
  std::vector<uint32_t> lines;
  WalkOps(static_cast<const Region&>(fn->body()), [&](const Op& op) { lines.push_back(op.loc().line); });
  ASSERT_EQ(lines.size(), 2000u);
  for (size_t i = 0; i < lines.size(); ++i) EXPECT_EQ(lines[i], i + 2);  // program order
  EXPECT_EQ(RegionNesting(*ops[0]), 2000);
  EXPECT_EQ(RegionNesting(*ops[1999]), 1);
  ASSERT_TRUE(m.AddFunction(std::move(fn)).ok());
}

TEST(ModuleMutationTest, CountUsesAndReplaceAllUses) {
  auto m = ParseOrFail(kTwoAdds);
  ASSERT_TRUE(m);
  Function* fn = m->FindFunction("main");
  Block& block = *fn->entry();
  Value* a = block.arg(0);
  Value* sum = block.ops()[0]->result(0);
  auto uses = CountUses(fn->body());
  EXPECT_EQ(uses[a], 1);
  EXPECT_EQ(uses[sum], 2);
  ReplaceAllUsesWith(fn->body(), sum, a);
  EXPECT_EQ(block.ops()[1]->operand(0), a);
  EXPECT_EQ(block.ops()[1]->operand(1), a);
  EXPECT_EQ(CountUses(fn->body())[sum], 0);
  // The first add is now dead: erase it and the module still verifies.
  EXPECT_EQ(block.EraseOpsIf([&](const Op& op) { return &op == block.ops()[0].get(); }), 1u);
  EXPECT_EQ(block.ops().size(), 2u);
  EXPECT_TRUE(VerifyModule(*m).ok());
}

TEST(ModuleMutationTest, CreateInsertAndRemapFollowsChains) {
  auto m = ParseOrFail(kTwoAdds);
  ASSERT_TRUE(m);
  Block& block = *m->FindFunction("main")->entry();
  Value* a = block.arg(0);
  Value* b = block.arg(1);
  const Type t = a->type();
  Value* operands[] = {a, b};
  Op* sub = block.InsertOp(
      0, CreateOp(OpCode::kSubtract, Location{}, operands, std::span<const Type>(&t, 1), {}, "d"));
  EXPECT_EQ(block.IndexOf(sub), 0u);
  EXPECT_EQ(sub->parent_block(), &block);
  // %1 -> %0 -> %d: the return ends at %d, and %1's operands at %d too.
  ValueMap map;
  map[block.ops()[2]->result(0)] = block.ops()[1]->result(0);
  map[block.ops()[1]->result(0)] = sub->result(0);
  RemapOperands(m->FindFunction("main")->body(), map);
  EXPECT_EQ(block.terminator()->operand(0), sub->result(0));
  EXPECT_EQ(block.ops()[2]->operand(0), sub->result(0));
  EXPECT_EQ(sub->operand(0), a);
  EXPECT_TRUE(VerifyModule(*m).ok());
  const std::string printed = PrintModule(*m);
  EXPECT_NE(printed.find("%d = stablehlo.subtract %a, %b"), std::string::npos) << printed;
  EXPECT_FALSE(block.IndexOf(nullptr).has_value());
}

TEST(ModuleMutationTest, CloneOpCopiesRegionsAndRemapsOperands) {
  auto m = ParseOrFail(R"(module {
  func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<f32> {
    %init = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%x init: %init) across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
     reducer(%p: tensor<f32>, %q: tensor<f32>) {
      %s = stablehlo.add %p, %q : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    return %0 : tensor<f32>
  }
}
)");
  ASSERT_TRUE(m);
  Function* fn = m->FindFunction("main");
  Block& block = *fn->entry();
  const Op& reduce = *block.ops()[1];
  ValueMap mapping;
  mapping[block.arg(0)] = block.arg(1);  // reduce %y instead of %x
  std::unique_ptr<Op> copy = CloneOp(reduce, mapping);
  EXPECT_EQ(copy->operand(0), block.arg(1));
  EXPECT_EQ(copy->operand(1), reduce.operand(1));  // not in the map: kept
  ASSERT_EQ(copy->num_regions(), 1u);
  const Block& body = copy->region(0).block(0);
  // The inner add uses the copy's own block arguments, not the original's.
  EXPECT_EQ(body.ops()[0]->operand(0), body.arg(0));
  EXPECT_EQ(mapping[reduce.result(0)], copy->result(0));
  Op* inserted = block.InsertOp(2, std::move(copy));
  block.terminator()->set_operand(0, inserted->result(0));
  ASSERT_TRUE(VerifyModule(*m).ok()) << VerifyModule(*m).ToString();
  // The original reduce is now unused; removing it leaves a valid module.
  block.RemoveOp(1);
  EXPECT_TRUE(VerifyModule(*m).ok());
}

TEST(ModuleMutationTest, TakeAndSetOpsRebuildABlock) {
  auto m = ParseOrFail(kTwoAdds);
  ASSERT_TRUE(m);
  Block& block = *m->FindFunction("main")->entry();
  std::vector<std::unique_ptr<Op>> ops = block.TakeOps();
  EXPECT_TRUE(block.ops().empty());
  ASSERT_EQ(ops.size(), 3u);
  // Put them back in a fresh vector with a subtract in front.
  std::vector<std::unique_ptr<Op>> rebuilt;
  Value* operands[] = {block.arg(0), block.arg(1)};
  const Type t = block.arg(0)->type();
  rebuilt.push_back(CreateOp(OpCode::kSubtract, Location{}, operands, std::span<const Type>(&t, 1)));
  for (auto& op : ops) rebuilt.push_back(std::move(op));
  block.SetOps(std::move(rebuilt));
  ASSERT_EQ(block.ops().size(), 4u);
  for (const auto& op : block.ops()) EXPECT_EQ(op->parent_block(), &block);
  EXPECT_TRUE(VerifyModule(*m).ok());
}

TEST(ModuleMutationTest, RemoveFunction) {
  auto m = ParseOrFail(R"(module {
  func.func private @helper(%x: tensor<i32>) -> tensor<i32> {
    return %x : tensor<i32>
  }
  func.func @main(%x: tensor<i32>) -> tensor<i32> {
    return %x : tensor<i32>
  }
}
)");
  ASSERT_TRUE(m);
  EXPECT_TRUE(m->RemoveFunction("helper"));
  EXPECT_FALSE(m->RemoveFunction("helper"));
  EXPECT_EQ(m->FindFunction("helper"), nullptr);
  EXPECT_EQ(m->functions().size(), 1u);
  EXPECT_EQ(m->EntryFunction(), m->FindFunction("main"));
}

}  // namespace
}  // namespace jitd::ir
