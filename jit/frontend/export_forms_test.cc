// Forms the parser reads as real exporters write them (jax.export's
// locations on region arguments, chlo's `attributes {...}` keyword form),
// kept apart from parser_test.cc.
#include <gtest/gtest.h>

#include "jit/frontend/parser.h"
#include "jit/ir/printer.h"

namespace jitd::frontend {
namespace {

TEST(ExportFormsTest, ReducerArgumentsWithLocations) {
  // jax.export of jax.random.categorical: an argmax reduce whose reducer
  // arguments carry locations.
  auto m = ParseModule(R"(#loc1 = loc("x")
func.func @main(%x: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<f32>, tensor<i32>) {
  %c = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.reduce(%x init: %c), (%i init: %z) across dimensions = [0] : (tensor<4xf32>, tensor<4xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
   reducer(%a: tensor<f32> loc("reduce:"(#loc1)), %b: tensor<f32> loc("reduce:"(#loc1))) (%c2: tensor<i32> loc(unknown), %d: tensor<i32> loc(#loc1))  {
    %m = stablehlo.maximum %a, %b : tensor<f32>
    %n = stablehlo.maximum %c2, %d : tensor<i32>
    stablehlo.return %m, %n : tensor<f32>, tensor<i32>
  }
  return %r#0, %r#1 : tensor<f32>, tensor<i32>
}
)");
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Op& reduce = *(*m)->FindFunction("main")->entry()->ops()[2];
  ASSERT_EQ(reduce.num_regions(), 1u);
  EXPECT_EQ(reduce.region(0).block(0).num_args(), 4u);
}

TEST(ExportFormsTest, ChloScanWithAttributesKeyword) {
  const char* text = R"(func.func @main(%x: tensor<4xi32>, %init: tensor<i32>) -> (tensor<4xi32>, tensor<i32>) {
  %0:2 = chlo.scan(%x) inits(%init) dimension=0 attributes {is_reverse = true} {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %1 = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %1, %1 : tensor<i32>, tensor<i32>
  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  return %0#0, %0#1 : tensor<4xi32>, tensor<i32>
}
)";
  auto m = ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  const ir::Op& scan = *(*m)->FindFunction("main")->entry()->ops()[0];
  const ir::Attribute* reverse = scan.attr("is_reverse");
  ASSERT_NE(reverse, nullptr);
  EXPECT_TRUE(reverse->as<bool>());
  EXPECT_EQ(scan.GetInt("dimension"), 0);
  // Printed back (jitd's form puts the dictionary after the body) and parsed
  // again, the attribute stays.
  auto again = ParseModule(ir::PrintModule(**m));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_NE((*again)->FindFunction("main")->entry()->ops()[0]->attr("is_reverse"), nullptr);
}

TEST(ExportFormsTest, ChloScanAttributesKeywordNeedsADictionary) {
  auto m = ParseModule(R"(func.func @main(%x: tensor<4xi32>, %init: tensor<i32>) -> (tensor<4xi32>, tensor<i32>) {
  %0:2 = chlo.scan(%x) inits(%init) dimension=0 attributes is_reverse {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    stablehlo.return %a, %b : tensor<i32>, tensor<i32>
  } : (tensor<4xi32>, tensor<i32>) -> (tensor<4xi32>, tensor<i32>)
  return %0#0, %0#1 : tensor<4xi32>, tensor<i32>
}
)");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("2:"), std::string::npos) << m.status().message();
}

}  // namespace
}  // namespace jitd::frontend
