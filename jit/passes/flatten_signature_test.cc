#include "jit/passes/flatten_signature.h"

#include <gtest/gtest.h>

#include "jit/passes/testing.h"

namespace jitd::passes {
namespace {

using eval::RuntimeValue;
using ir::DType;
using ir::Type;
using testing::CountOpsNamed;
using testing::ParseVerifiedOrFail;
using testing::Tensor;

const Type kF2 = Type::Tensor(DType::kF32, {2});
const Type kI = Type::Scalar(DType::kS32);

// The value of `type` built from `leaves` (taken in order); tokens fresh.
RuntimeValue Assemble(const Type& type, const std::vector<RuntimeValue>& leaves, size_t& next) {
  if (type.is_token()) return RuntimeValue::Token();
  if (type.is_tuple()) {
    std::vector<RuntimeValue> elements;
    for (const Type& e : type.elements()) elements.push_back(Assemble(e, leaves, next));
    return RuntimeValue::Tuple(std::move(elements));
  }
  return leaves.at(next++);
}

void Leaves(const RuntimeValue& value, std::vector<const ir::Literal*>& out) {
  if (value.is_tensor()) out.push_back(&value.literal());
  if (value.is_tuple()) {
    for (const RuntimeValue& e : value.elements()) Leaves(e, out);
  }
}

// Parses `text`, flattens a copy and checks: the new signature is `args` ->
// `results`, the module verifies, prints and parses back, and evaluating it
// on `leaves` gives the tensor leaves of the original's results on the
// trees built from them. Then the default pipeline runs on it (verifying
// after each pass). Returns the flattened, optimized module.
std::unique_ptr<ir::Module> FlattenAndCompare(std::string_view text,
                                              const std::vector<RuntimeValue>& leaves,
                                              const std::vector<Type>& args,
                                              const std::vector<Type>& results,
                                              const eval::EvalOptions& options = {}) {
  auto before = ParseVerifiedOrFail(text);
  auto after = ParseVerifiedOrFail(text);
  if (!before || !after) return nullptr;
  Status s = FlattenEntrySignature(*after);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (!s.ok()) return nullptr;
  s = ir::VerifyModule(*after);
  EXPECT_TRUE(s.ok()) << s.ToString() << "\n" << ir::PrintModule(*after);
  const ir::Function& entry = *after->EntryFunction();
  EXPECT_EQ(entry.arg_types(), args);
  EXPECT_EQ(entry.result_types(), results);
  EXPECT_EQ(entry.entry()->num_args(), args.size());
  auto reparsed = frontend::ParseModule(ir::PrintModule(*after));
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().ToString();

  std::vector<RuntimeValue> trees;
  size_t next = 0;
  for (const Type& t : before->EntryFunction()->arg_types()) trees.push_back(Assemble(t, leaves, next));
  EXPECT_EQ(next, leaves.size());
  auto want = eval::EvaluateFunction(*before, *before->EntryFunction(), trees, options);
  auto got = eval::EvaluateFunction(*after, entry, leaves, options);
  EXPECT_TRUE(want.ok()) << want.status().ToString();
  EXPECT_TRUE(got.ok()) << got.status().ToString();
  if (!want.ok() || !got.ok()) return nullptr;
  std::vector<const ir::Literal*> want_leaves;
  for (const RuntimeValue& v : *want) Leaves(v, want_leaves);
  EXPECT_EQ(want_leaves.size(), got->size());
  for (size_t i = 0; i < want_leaves.size() && i < got->size(); ++i) {
    EXPECT_TRUE((*got)[i].is_tensor());
    if ((*got)[i].is_tensor()) EXPECT_TRUE(*want_leaves[i] == (*got)[i].literal()) << "leaf " << i;
  }
  testing::RunPipeline(*after, "default");
  return after;
}

TEST(FlattenSignatureTest, NestedTuplesAndTokensInAndOut) {
  // Leaves in depth-first order: %a, %t.0, %t.1.0 (the token makes none).
  auto m = FlattenAndCompare(R"(module {
  func.func @main(%a: tensor<2xf32>, %t: tuple<tensor<i32>, tuple<tensor<2xf32>, !stablehlo.token>>)
      -> (tuple<tensor<2xf32>, tuple<tensor<i32>>>, !stablehlo.token, tensor<2xf32>) {
    %n = stablehlo.get_tuple_element %t[0] : (tuple<tensor<i32>, tuple<tensor<2xf32>, !stablehlo.token>>) -> tensor<i32>
    %inner = stablehlo.get_tuple_element %t[1] : (tuple<tensor<i32>, tuple<tensor<2xf32>, !stablehlo.token>>) -> tuple<tensor<2xf32>, !stablehlo.token>
    %b = stablehlo.get_tuple_element %inner[0] : (tuple<tensor<2xf32>, !stablehlo.token>) -> tensor<2xf32>
    %k = stablehlo.get_tuple_element %inner[1] : (tuple<tensor<2xf32>, !stablehlo.token>) -> !stablehlo.token
    %s = stablehlo.add %a, %b : tensor<2xf32>
    %n1 = stablehlo.negate %n : tensor<i32>
    %r1 = stablehlo.tuple %n1 : tuple<tensor<i32>>
    %r = stablehlo.tuple %s, %r1 : tuple<tensor<2xf32>, tuple<tensor<i32>>>
    return %r, %k, %b : tuple<tensor<2xf32>, tuple<tensor<i32>>>, !stablehlo.token, tensor<2xf32>
  }
}
)", {Tensor(kF2, {1, 2}), Tensor(kI, {7}), Tensor(kF2, {10, 20})}, {kF2, kI, kF2}, {kF2, kI, kF2});
  ASSERT_TRUE(m);
  // Every tuple folds away once the signature is flat.
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.tuple"), 0);
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.get_tuple_element"), 0);
}

TEST(FlattenSignatureTest, TokenOnlySignatureKeepsTheOutfeed) {
  std::vector<std::vector<ir::Literal>> sent;
  eval::EvalOptions options;
  options.outfeed = [&](std::vector<ir::Literal> values, auto) {
    sent.push_back(std::move(values));
    return Status::Ok();
  };
  auto m = FlattenAndCompare(R"(module {
  func.func @main(%k: !stablehlo.token, %x: tensor<2xf32>) -> !stablehlo.token {
    %k2 = "stablehlo.outfeed"(%x, %k) {outfeed_config = ""} : (tensor<2xf32>, !stablehlo.token) -> !stablehlo.token
    return %k2 : !stablehlo.token
  }
}
)", {Tensor(kF2, {3, 4})}, {kF2}, {}, options);
  ASSERT_TRUE(m);
  // Once by the original, once by the flattened program.
  ASSERT_EQ(sent.size(), 2u);
  EXPECT_TRUE(sent[0][0] == sent[1][0]);
  // The dropped token result does not make the outfeed dead.
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.outfeed"), 1);
}

TEST(FlattenSignatureTest, TupleArgumentThroughACallAndAWhile) {
  // @step keeps its tuple signature; the while carries the tuple.
  auto m = FlattenAndCompare(R"(module {
  func.func private @step(%p: tuple<tensor<i32>, tensor<2xf32>>) -> tuple<tensor<i32>, tensor<2xf32>> {
    %i = stablehlo.get_tuple_element %p[0] : (tuple<tensor<i32>, tensor<2xf32>>) -> tensor<i32>
    %x = stablehlo.get_tuple_element %p[1] : (tuple<tensor<i32>, tensor<2xf32>>) -> tensor<2xf32>
    %c1 = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %c1 : tensor<i32>
    %x1 = stablehlo.add %x, %x : tensor<2xf32>
    %r = stablehlo.tuple %i1, %x1 : tuple<tensor<i32>, tensor<2xf32>>
    return %r : tuple<tensor<i32>, tensor<2xf32>>
  }
  func.func @main(%t: tuple<tensor<i32>, tensor<2xf32>>, %n: tensor<i32>) -> tuple<tensor<i32>, tensor<2xf32>> {
    %w = stablehlo.while(%s = %t) : tuple<tensor<i32>, tensor<2xf32>>
     cond {
      %i = stablehlo.get_tuple_element %s[0] : (tuple<tensor<i32>, tensor<2xf32>>) -> tensor<i32>
      %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %next = func.call @step(%s) : (tuple<tensor<i32>, tensor<2xf32>>) -> tuple<tensor<i32>, tensor<2xf32>>
      stablehlo.return %next : tuple<tensor<i32>, tensor<2xf32>>
    }
    return %w : tuple<tensor<i32>, tensor<2xf32>>
  }
}
)", {Tensor(kI, {0}), Tensor(kF2, {1, 3}), Tensor(kI, {3})}, {kI, kF2, kI}, {kI, kF2});
  ASSERT_TRUE(m);
  // The while still carries its tuple; only @main's signature changed.
  EXPECT_EQ(CountOpsNamed(*m, "stablehlo.while"), 1);
  auto direct = ParseVerifiedOrFail(R"(module {
  func.func private @step(%p: tuple<tensor<i32>>) -> tuple<tensor<i32>> {
    return %p : tuple<tensor<i32>>
  }
  func.func @main(%t: tuple<tensor<i32>>) -> tuple<tensor<i32>> {
    %r = func.call @step(%t) : (tuple<tensor<i32>>) -> tuple<tensor<i32>>
    return %r : tuple<tensor<i32>>
  }
}
)");
  ASSERT_TRUE(direct);
  ASSERT_TRUE(FlattenEntrySignature(*direct).ok());
  const ir::Function* step = direct->FindFunction("step");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->arg_types(), std::vector<Type>{Type::Tuple({kI})});
  EXPECT_EQ(step->result_types(), std::vector<Type>{Type::Tuple({kI})});
}

TEST(FlattenSignatureTest, EmptyTuplesHaveNoLeaves) {
  auto m = FlattenAndCompare(R"(module {
  func.func @main(%e: tuple<>, %x: tensor<i32>) -> (tuple<>, tensor<i32>, tuple<tuple<>>) {
    %y = stablehlo.negate %x : tensor<i32>
    %ee = stablehlo.tuple %e : tuple<tuple<>>
    return %e, %y, %ee : tuple<>, tensor<i32>, tuple<tuple<>>
  }
}
)", {Tensor(kI, {5})}, {kI}, {kI});
  ASSERT_TRUE(m);
}

TEST(FlattenSignatureTest, KeepsTensorAttributesAndLeavesFlatSignaturesAlone) {
  auto m = ParseVerifiedOrFail(R"(module {
  func.func public @main(%a: tensor<2xf32> {jax.arg_info = "a"}, %t: tuple<tensor<i32>>)
      -> (tensor<2xf32> {jax.result_info = "r"}, !stablehlo.token) {
    %k = stablehlo.create_token : !stablehlo.token
    return %a, %k : tensor<2xf32>, !stablehlo.token
  }
}
)");
  ASSERT_TRUE(m);
  ASSERT_TRUE(FlattenEntrySignature(*m).ok());
  const ir::Function& entry = *m->EntryFunction();
  ASSERT_EQ(entry.arg_attrs().size(), 2u);
  EXPECT_TRUE(entry.arg_attrs()[0].Has("jax.arg_info"));
  EXPECT_TRUE(entry.arg_attrs()[1].empty());
  ASSERT_EQ(entry.result_attrs().size(), 1u);
  EXPECT_TRUE(entry.result_attrs()[0].Has("jax.result_info"));

  const std::string flat_text = R"(module {
  func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
    return %a : tensor<2xf32>
  }
}
)";
  auto flat = ParseVerifiedOrFail(flat_text);
  ASSERT_TRUE(flat);
  const std::string printed = ir::PrintModule(*flat);
  const ir::Function* before = flat->EntryFunction();
  ASSERT_TRUE(FlattenEntrySignature(*flat).ok());
  EXPECT_EQ(flat->EntryFunction(), before);
  EXPECT_EQ(ir::PrintModule(*flat), printed);
}

TEST(FlattenSignatureTest, CallersOfTheEntryCallACopyOfItAsItWas) {
  const char* text = R"(module {
  func.func @main(%t: tuple<tensor<i32>>, %n: tensor<i32>) -> tuple<tensor<i32>> {
    %x = stablehlo.get_tuple_element %t[0] : (tuple<tensor<i32>>) -> tensor<i32>
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %more = stablehlo.compare GT, %n, %c0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %r = "stablehlo.if"(%more) ({
      %c1 = stablehlo.constant dense<1> : tensor<i32>
      %y = stablehlo.add %x, %x : tensor<i32>
      %m = stablehlo.subtract %n, %c1 : tensor<i32>
      %t2 = stablehlo.tuple %y : tuple<tensor<i32>>
      %rec = func.call @main(%t2, %m) : (tuple<tensor<i32>>, tensor<i32>) -> tuple<tensor<i32>>
      %v = stablehlo.get_tuple_element %rec[0] : (tuple<tensor<i32>>) -> tensor<i32>
      stablehlo.return %v : tensor<i32>
    }, {
      stablehlo.return %x : tensor<i32>
    }) : (tensor<i1>) -> tensor<i32>
    %out = stablehlo.tuple %r : tuple<tensor<i32>>
    return %out : tuple<tensor<i32>>
  }
}
)";
  // 3 * 2^4 = 48: the entry calls itself, through the copy.
  auto m = ParseVerifiedOrFail(text);
  ASSERT_TRUE(m);
  ASSERT_TRUE(FlattenEntrySignature(*m).ok());
  ASSERT_TRUE(ir::VerifyModule(*m).ok()) << ir::PrintModule(*m);
  const ir::Function* copy = m->FindFunction("main_structured");
  ASSERT_NE(copy, nullptr);
  EXPECT_FALSE(copy->is_public());
  EXPECT_EQ(copy->arg_types(), (std::vector<Type>{Type::Tuple({kI}), kI}));
  EXPECT_EQ(m->EntryFunction()->arg_types(), (std::vector<Type>{kI, kI}));
  auto got = eval::EvaluateFunction(*m, *m->EntryFunction(), {Tensor(kI, {3}), Tensor(kI, {4})});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_EQ(got->size(), 1u);
  EXPECT_EQ((*got)[0].literal().GetInt(0), 48);
  auto reparsed = frontend::ParseModule(ir::PrintModule(*m));
  EXPECT_TRUE(reparsed.ok()) << reparsed.status().ToString();
}

}  // namespace
}  // namespace jitd::passes
