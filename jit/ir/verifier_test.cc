// Tests of the verifier on IR built by hand: for each op family a valid case
// and invalid ones whose message must name the op and the broken rule, plus
// structure (terminators, use before definition) and malformed IR that must
// fail cleanly instead of crashing.
#include "jit/ir/verifier.h"

#include "jit/frontend/parser.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "jit/ir/attribute.h"
#include "jit/ir/literal.h"
#include "jit/ir/module.h"

namespace jitd::ir {
namespace {

// ---------------------------------------------------------------------------
// Building IR.

// "2x3xf32", "f32", "4xcomplex<f32>", "token".
Type T(std::string_view s) {
  if (s == "token") return Type::Token();
  std::vector<int64_t> dims;
  while (!s.empty() && std::isdigit(static_cast<unsigned char>(s[0]))) {
    const size_t x = s.find('x');
    dims.push_back(std::stoll(std::string(s.substr(0, x))));
    s.remove_prefix(x + 1);
  }
  auto dtype = ParseDTypeName(s);
  EXPECT_TRUE(dtype.has_value()) << s;
  return Type::Tensor(dtype.value_or(DType::kF32), std::move(dims));
}

std::vector<Type> Ts(std::initializer_list<std::string_view> specs) {
  std::vector<Type> out;
  for (auto s : specs) out.push_back(T(s));
  return out;
}

Attribute I64(int64_t v) { return IntegerAttr{v, DType::kS64}; }
Attribute I64s(std::vector<int64_t> v) { return DenseArrayAttr{DType::kS64, std::move(v), {}}; }
Attribute Enum(std::string name, std::string value) {
  return EnumAttr{"stablehlo", std::move(name), std::move(value)};
}
Attribute Struct(std::string name, std::vector<StructField> fields) {
  return StructAttr{std::move(name), std::move(fields)};
}
StructField Field(std::string name, std::vector<int64_t> values) {
  return StructField{std::move(name), true, std::move(values)};
}
StructField Scalar(std::string name, int64_t value) {
  return StructField{std::move(name), false, {value}};
}
// dense<...> of `type` holding zeros.
Attribute Zeros(const Type& type) { return MakeDenseElements(Literal::Create(type).value()); }
// dense<[[lo, hi], ...]> : tensor<Nx2xi64>.
Attribute Padding(std::vector<std::pair<int64_t, int64_t>> pads) {
  Literal lit =
      Literal::Create(Type::Tensor(DType::kS64, {static_cast<int64_t>(pads.size()), 2})).value();
  for (size_t i = 0; i < pads.size(); ++i) {
    lit.SetInt(2 * i, pads[i].first);
    lit.SetInt(2 * i + 1, pads[i].second);
  }
  DenseElementsAttr attr;
  attr.type = lit.type();
  attr.data = std::make_shared<const std::vector<uint8_t>>(lit.bytes().begin(), lit.bytes().end());
  return attr;
}

Op& AddOp(Block& block, OpCode code, std::vector<Value*> operands, std::vector<Type> results,
          uint32_t line = 3) {
  auto op = std::make_unique<Op>(code, Location{line, 5});
  for (Value* v : operands) op->add_operand(v);
  for (Type& t : results) op->add_result(std::move(t));
  return *block.add_op(std::move(op));
}

std::vector<Value*> Results(const Op& op) {
  std::vector<Value*> out;
  for (size_t i = 0; i < op.num_results(); ++i) out.push_back(op.result(i));
  return out;
}

std::vector<Value*> Args(const Block& b) {
  std::vector<Value*> out;
  for (size_t i = 0; i < b.num_args(); ++i) out.push_back(b.arg(i));
  return out;
}

Function& AddFunc(Module& m, std::string name, std::vector<Type> args, std::vector<Type> results,
                  std::string visibility = "public") {
  auto fn = std::make_unique<Function>(std::move(name), Location{1, 1});
  fn->set_visibility(std::move(visibility));
  fn->arg_types() = args;
  fn->result_types() = results;
  Block& b = fn->body().add_block();
  for (Type& t : args) b.add_arg(t);
  return *m.AddFunction(std::move(fn)).value();
}

// A module whose @main takes `args`, applies one `code` op to all of them,
// and returns its results (of types `results`).
struct Prog {
  std::unique_ptr<Module> module = std::make_unique<Module>();
  Function* fn = nullptr;
  Op* op = nullptr;
  Block& body() { return fn->body().block(0); }
};

Prog OneOp(OpCode code, std::vector<Type> args, std::vector<Type> results) {
  Prog p;
  p.fn = &AddFunc(*p.module, "main", args, results);
  p.op = &AddOp(p.body(), code, Args(p.body()), results);
  AddOp(p.body(), OpCode::kFuncReturn, Results(*p.op), {}, 9);
  return p;
}

// Adds a region to `op` whose block takes `args`; `body` fills it and
// returns the values for its stablehlo.return.
void AddRegion(Op& op, std::vector<Type> args,
               const std::function<std::vector<Value*>(Block&)>& body) {
  Block& b = op.add_region().add_block();
  for (Type& t : args) b.add_arg(t);
  std::vector<Value*> ret = body(b);
  AddOp(b, OpCode::kReturn, ret, {}, 8);
}

// A region applying binary `code` to (arg0, arg1) of scalar type `elem`
// (reduce and scatter bodies with one input).
void AddBinaryRegion(Op& op, OpCode code, std::string_view elem) {
  AddRegion(op, Ts({elem, elem}), [&](Block& b) {
    return Results(AddOp(b, code, {b.arg(0), b.arg(1)}, Ts({elem}), 7));
  });
}

// ---------------------------------------------------------------------------
// Expectations.

::testing::AssertionResult Verifies(const Module& m) {
  Status s = VerifyModule(m);
  if (s.ok()) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << s.message();
}

// Fails unless verification fails with a message naming `op_name` (as
// "'op_name' op ") and containing `rule`.
::testing::AssertionResult Rejects(const Module& m, std::string_view op_name,
                                   std::string_view rule) {
  Status s = VerifyModule(m);
  if (s.ok()) return ::testing::AssertionFailure() << "verified, expected: " << rule;
  if (s.code() != StatusCode::kInvalidArgument) {
    return ::testing::AssertionFailure() << "wrong code: " << s.ToString();
  }
  const std::string head = "'" + std::string(op_name) + "' op ";
  if (s.message().find(head) == std::string::npos || s.message().find(rule) == std::string::npos) {
    return ::testing::AssertionFailure()
           << "message \"" << s.message() << "\" lacks " << head << " / \"" << rule << "\"";
  }
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------
// Structure.

TEST(VerifierStructure, EmptyModuleVerifies) {
  Module m;
  EXPECT_TRUE(Verifies(m));
}

TEST(VerifierStructure, ErrorCarriesLocationAndOpName) {
  Prog p = OneOp(OpCode::kAdd, Ts({"2xf32", "3xf32"}), Ts({"2xf32"}));
  Status s = VerifyModule(*p.module);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "3:5: 'stablehlo.add' op requires operand types to match, got tensor<2xf32> and "
            "tensor<3xf32>");
}

TEST(VerifierStructure, FunctionMustEndWithFuncReturn) {
  Module m;
  Function& f = AddFunc(m, "main", Ts({"f32"}), Ts({"f32"}));
  AddOp(f.body().block(0), OpCode::kNegate, {f.body().block(0).arg(0)}, Ts({"f32"}));
  EXPECT_TRUE(Rejects(m, "func.func", "to end with 'func.return', got 'stablehlo.negate'"));
}

TEST(VerifierStructure, EmptyFunctionBody) {
  Module m;
  AddFunc(m, "main", {}, {});
  EXPECT_TRUE(Rejects(m, "func.func", "got an empty block"));
}

TEST(VerifierStructure, FuncReturnTypesMustMatchSignature) {
  Module m;
  Function& f = AddFunc(m, "main", Ts({"f32"}), Ts({"i32"}));
  AddOp(f.body().block(0), OpCode::kFuncReturn, {f.body().block(0).arg(0)}, {});
  EXPECT_TRUE(Rejects(m, "func.return", "result types of @main (tensor<i32>), got (tensor<f32>)"));
}

TEST(VerifierStructure, TerminatorMustBeLast) {
  Module m;
  Function& f = AddFunc(m, "main", Ts({"f32"}), Ts({"f32"}));
  Block& b = f.body().block(0);
  AddOp(b, OpCode::kFuncReturn, {b.arg(0)}, {});
  AddOp(b, OpCode::kFuncReturn, {b.arg(0)}, {});
  EXPECT_TRUE(Rejects(m, "func.return", "must be the last op of its block"));
}

TEST(VerifierStructure, EntryArgumentsMustMatchSignature) {
  Module m;
  Function& f = AddFunc(m, "main", Ts({"f32"}), {});
  f.arg_types()[0] = T("i32");
  AddOp(f.body().block(0), OpCode::kFuncReturn, {}, {});
  EXPECT_TRUE(Rejects(m, "func.func", "entry block argument #0 of type tensor<f32>"));
}

TEST(VerifierStructure, DeclarationsMustBePrivate) {
  Module m;
  auto fn = std::make_unique<Function>("ext", Location{1, 1});
  Function* raw = m.AddFunction(std::move(fn)).value();
  EXPECT_TRUE(Rejects(m, "func.func", "cannot be public"));
  raw->set_visibility("private");
  EXPECT_TRUE(Verifies(m));
}

TEST(VerifierStructure, NullOperand) {
  Prog p = OneOp(OpCode::kNegate, Ts({"f32"}), Ts({"f32"}));
  p.op->set_operand(0, nullptr);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate", "null operand #0"));
}

TEST(VerifierStructure, UseBeforeDefinition) {
  Module m;
  Function& f = AddFunc(m, "main", Ts({"f32"}), Ts({"f32"}));
  Block& b = f.body().block(0);
  Op& first = AddOp(b, OpCode::kNegate, {b.arg(0)}, Ts({"f32"}));
  Op& second = AddOp(b, OpCode::kNegate, {b.arg(0)}, Ts({"f32"}));
  first.set_operand(0, second.result(0));
  AddOp(b, OpCode::kFuncReturn, {second.result(0)}, {});
  EXPECT_TRUE(Rejects(m, "stablehlo.negate", "not defined before it"));
}

TEST(VerifierStructure, ValueOfAnotherFunction) {
  Module m;
  Function& f = AddFunc(m, "f", Ts({"f32"}), Ts({"f32"}));
  AddOp(f.body().block(0), OpCode::kFuncReturn, {f.body().block(0).arg(0)}, {});
  Function& g = AddFunc(m, "main", {}, Ts({"f32"}));
  Op& neg = AddOp(g.body().block(0), OpCode::kNegate, {f.body().block(0).arg(0)}, Ts({"f32"}));
  AddOp(g.body().block(0), OpCode::kFuncReturn, {neg.result(0)}, {});
  EXPECT_TRUE(Rejects(m, "stablehlo.negate", "operand #0, which is not defined before it"));
}

TEST(VerifierStructure, RegionMayUseOuterValuesButNotItsOpsResults) {
  Prog p = OneOp(OpCode::kReduce, Ts({"4xf32", "f32"}), Ts({"f32"}));
  p.op->attrs().Set("dimensions", I64s({0}));
  Value* outer = p.body().arg(1);
  AddRegion(*p.op, Ts({"f32", "f32"}), [&](Block& b) {
    return Results(AddOp(b, OpCode::kAdd, {b.arg(0), outer}, Ts({"f32"}), 7));
  });
  EXPECT_TRUE(Verifies(*p.module));
  // The reduce's own result is not visible inside its body.
  p.op->region(0).block(0).ops()[0]->set_operand(1, p.op->result(0));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.add", "not defined before it"));
}

TEST(VerifierStructure, ValueOfSiblingRegion) {
  Prog p = OneOp(OpCode::kIf, Ts({"i1"}), Ts({"f32"}));
  Value* inner = nullptr;
  AddRegion(*p.op, {}, [&](Block& b) {
    Op& c = AddOp(b, OpCode::kConstant, {}, Ts({"f32"}), 6);
    c.attrs().Set("value", Zeros(T("f32")));
    inner = c.result(0);
    return Results(c);
  });
  AddRegion(*p.op, {}, [&](Block&) { return std::vector<Value*>{inner}; });
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.return", "not defined before it"));
}

TEST(VerifierStructure, OperandAndResultCounts) {
  Prog p = OneOp(OpCode::kAdd, Ts({"f32"}), Ts({"f32"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.add", "requires 2 operands, got 1"));
  Prog q = OneOp(OpCode::kNegate, Ts({"f32"}), Ts({"f32", "f32"}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.negate", "requires 1 results, got 2"));
}

TEST(VerifierStructure, UnexpectedRegion) {
  Prog p = OneOp(OpCode::kNegate, Ts({"f32"}), Ts({"f32"}));
  AddRegion(*p.op, {}, [](Block&) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate", "requires 0 regions, got 1"));
}

TEST(VerifierStructure, RegionMustEndWithStablehloReturn) {
  Prog p = OneOp(OpCode::kReduce, Ts({"4xf32", "f32"}), Ts({"f32"}));
  p.op->attrs().Set("dimensions", I64s({0}));
  Block& b = p.op->add_region().add_block();
  b.add_arg(T("f32"));
  b.add_arg(T("f32"));
  AddOp(b, OpCode::kFuncReturn, {b.arg(0)}, {});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce", "region #0 to end with 'stablehlo.return'"));
}

TEST(VerifierStructure, RegionWithTwoBlocks) {
  Prog p = OneOp(OpCode::kReduce, Ts({"4xf32", "f32"}), Ts({"f32"}));
  p.op->attrs().Set("dimensions", I64s({0}));
  AddBinaryRegion(*p.op, OpCode::kAdd, "f32");
  p.op->region(0).add_block();
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce", "region #0 to have one block, got 2"));
}

TEST(VerifierStructure, TensorsRequired) {
  Prog p = OneOp(OpCode::kNegate, Ts({"token"}), Ts({"f32"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate",
                      "requires operand #0 to be a tensor, got !stablehlo.token"));
}

TEST(VerifierStructure, TypesOutsideTheLimits) {
  Prog p = OneOp(OpCode::kNegate, Ts({"f32"}), Ts({"f32"}));
  p.op->result(0)->set_type(Type::Tensor(DType::kF32, {-1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate", "invalid type: dimension size -1"));
  p.op->result(0)->set_type(Type::Tensor(DType::kF32, {int64_t{1} << 30, int64_t{1} << 30}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate", "more than 2^40 elements"));
  p.op->result(0)->set_type(Type::Tensor(DType::kF32, std::vector<int64_t>(65, 1)));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate", "rank 65"));
  p.op->result(0)->set_type(Type::Tensor(static_cast<DType>(200), {}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.negate", "invalid element type"));
  Prog q = OneOp(OpCode::kNegate, Ts({"f32"}), Ts({"f32"}));
  q.fn->arg_types()[0] = Type::Tensor(DType::kF32, {-2});
  EXPECT_TRUE(Rejects(*q.module, "func.func", "invalid type in its signature: dimension size -2"));
}

// ---------------------------------------------------------------------------
// Elementwise ops.

TEST(VerifierElementwise, BinaryValid) {
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kAdd, Ts({"2x3xf32", "2x3xf32"}), Ts({"2x3xf32"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kAnd, Ts({"4xi1", "4xi1"}), Ts({"4xi1"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kShiftLeft, Ts({"ui8", "ui8"}), Ts({"ui8"})).module));
  EXPECT_TRUE(Verifies(
      *OneOp(OpCode::kAtan2, Ts({"complex<f64>", "complex<f64>"}), Ts({"complex<f64>"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kChloNextAfter, Ts({"f16", "f16"}), Ts({"f16"})).module));
}

TEST(VerifierElementwise, BinaryTypesMustMatch) {
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kAdd, Ts({"2xf32", "2xf32"}), Ts({"3xf32"})).module,
                      "stablehlo.add",
                      "requires operand types to match the result type, got tensor<2xf32> and "
                      "tensor<3xf32>"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kMultiply, Ts({"2xf32", "2xf16"}), Ts({"2xf32"})).module,
                      "stablehlo.multiply", "requires operand types to match"));
}

TEST(VerifierElementwise, BinaryElementTypes) {
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kAnd, Ts({"f32", "f32"}), Ts({"f32"})).module, "stablehlo.and",
                      "requires operands of boolean or integer type, got tensor<f32>"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kShiftLeft, Ts({"i1", "i1"}), Ts({"i1"})).module,
                      "stablehlo.shift_left", "requires operands of integer type"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kSubtract, Ts({"i1", "i1"}), Ts({"i1"})).module,
                      "stablehlo.subtract", "integer, floating-point or complex"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kChloZeta, Ts({"i32", "i32"}), Ts({"i32"})).module,
                      "chlo.zeta", "floating-point type"));
}

TEST(VerifierElementwise, UnaryValid) {
  for (OpCode c : {OpCode::kSine, OpCode::kExponential, OpCode::kLog, OpCode::kTanh,
                   OpCode::kChloAcos, OpCode::kChloSinh}) {
    EXPECT_TRUE(Verifies(*OneOp(c, Ts({"3xcomplex<f32>"}), Ts({"3xcomplex<f32>"})).module));
  }
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kNot, Ts({"3xi1"}), Ts({"3xi1"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kPopulationCount, Ts({"3xui16"}), Ts({"3xui16"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kChloLgamma, Ts({"bf16"}), Ts({"bf16"})).module));
}

TEST(VerifierElementwise, UnaryElementTypes) {
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kSine, Ts({"3xi32"}), Ts({"3xi32"})).module, "stablehlo.sine",
                      "requires an operand of floating-point or complex type, got tensor<3xi32>"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kFloor, Ts({"complex<f32>"}), Ts({"complex<f32>"})).module,
                      "stablehlo.floor", "floating-point type"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kCountLeadingZeros, Ts({"f32"}), Ts({"f32"})).module,
                      "stablehlo.count_leading_zeros", "integer type"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kAbs, Ts({"ui8"}), Ts({"ui8"})).module, "stablehlo.abs",
                      "signed integer, floating-point or complex"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kChloErf, Ts({"complex<f32>"}), Ts({"complex<f32>"})).module,
                      "chlo.erf", "floating-point type"));
}

TEST(VerifierElementwise, UnaryResultType) {
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kNegate, Ts({"2xf32"}), Ts({"2xf64"})).module,
                      "stablehlo.negate",
                      "requires a result of type tensor<2xf32> for operand tensor<2xf32>, got "
                      "tensor<2xf64>"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kTanh, Ts({"2xf32"}), Ts({"3xf32"})).module, "stablehlo.tanh",
                      "requires a result of type tensor<2xf32>"));
}

TEST(VerifierElementwise, AbsRealImagAndPredicates) {
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kAbs, Ts({"2xcomplex<f64>"}), Ts({"2xf64"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kAbs, Ts({"2xcomplex<f64>"}), Ts({"2xcomplex<f64>"})).module,
                      "stablehlo.abs", "requires a result of type tensor<2xf64>"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kReal, Ts({"2xcomplex<f32>"}), Ts({"2xf32"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kImag, Ts({"2xf32"}), Ts({"2xf32"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kImag, Ts({"2xcomplex<f32>"}), Ts({"2xf64"})).module,
                      "stablehlo.imag", "requires a result of type tensor<2xf32>"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kIsFinite, Ts({"2xf16"}), Ts({"2xi1"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kIsFinite, Ts({"2xf16"}), Ts({"2xf16"})).module,
                      "stablehlo.is_finite", "requires a result of type tensor<2xi1>"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kChloIsInf, Ts({"f32"}), Ts({"i1"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kChloIsPosInf, Ts({"i32"}), Ts({"i1"})).module,
                      "chlo.is_pos_inf", "floating-point type"));
}

TEST(VerifierElementwise, ComplexOp) {
  EXPECT_TRUE(
      Verifies(*OneOp(OpCode::kComplex, Ts({"2xf32", "2xf32"}), Ts({"2xcomplex<f32>"})).module));
  EXPECT_TRUE(
      Rejects(*OneOp(OpCode::kComplex, Ts({"2xf16", "2xf16"}), Ts({"2xcomplex<f32>"})).module,
              "stablehlo.complex", "requires operands of type f32 or f64"));
  EXPECT_TRUE(
      Rejects(*OneOp(OpCode::kComplex, Ts({"2xf32", "2xf32"}), Ts({"2xcomplex<f64>"})).module,
              "stablehlo.complex", "requires a result of type tensor<2xcomplex<f32>>"));
  EXPECT_TRUE(
      Rejects(*OneOp(OpCode::kComplex, Ts({"2xf32", "3xf32"}), Ts({"2xcomplex<f32>"})).module,
              "stablehlo.complex", "type(lhs) = type(rhs)"));
}

TEST(VerifierElementwise, ConvertAndBitcast) {
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kConvert, Ts({"2x3xi32"}), Ts({"2x3xcomplex<f32>"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kConvert, Ts({"2x3xi32"}), Ts({"3x2xf32"})).module,
                      "stablehlo.convert", "shape(operand) = shape(result)"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kBitcastConvert, Ts({"2xf32"}), Ts({"2xi32"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kBitcastConvert, Ts({"2xf32"}), Ts({"2x4xui8"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kBitcastConvert, Ts({"2x2xi32"}), Ts({"2xf64"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kBitcastConvert, Ts({"2xf32"}), Ts({"2x2xui8"})).module,
                      "stablehlo.bitcast_convert", "split or merged"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kBitcastConvert, Ts({"f32"}), Ts({"f64"})).module,
                      "stablehlo.bitcast_convert", "split or merged"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kBitcastConvert, Ts({"complex<f32>"}), Ts({"f64"})).module,
                      "stablehlo.bitcast_convert", "both complex"));
}

TEST(VerifierElementwise, ReducePrecision) {
  Prog p = OneOp(OpCode::kReducePrecision, Ts({"4xf32"}), Ts({"4xf32"}));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.reduce_precision", "requires attribute 'exponent_bits'"));
  p.op->attrs().Set("exponent_bits", IntegerAttr{5, DType::kS32});
  p.op->attrs().Set("mantissa_bits", IntegerAttr{10, DType::kS32});
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("exponent_bits", IntegerAttr{0, DType::kS32});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce_precision", "1 <= exponent_bits, got 0"));
  p.op->attrs().Set("exponent_bits", IntegerAttr{5, DType::kS32});
  p.op->attrs().Set("mantissa_bits", IntegerAttr{-1, DType::kS32});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce_precision", "0 <= mantissa_bits, got -1"));
}

TEST(VerifierElementwise, Compare) {
  Prog p = OneOp(OpCode::kCompare, Ts({"3xi32", "3xi32"}), Ts({"3xi1"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.compare", "requires attribute 'comparison_direction'"));
  p.op->attrs().Set("comparison_direction", Enum("comparison_direction", "LT"));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("compare_type", Enum("comparison_type", "SIGNED"));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("compare_type", Enum("comparison_type", "FLOAT"));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.compare", "compare_type that fits element type i32"));
  p.op->attrs().Set("compare_type", Enum("comparison_type", "BOGUS"));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.compare", "to be one of FLOAT, TOTALORDER"));
  p.op->attrs().Set("compare_type", Enum("comparison_type", "SIGNED"));
  p.op->attrs().Set("comparison_direction", I64(1));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.compare",
                      "requires attribute 'comparison_direction' to be an enum, got integer"));

  Prog q = OneOp(OpCode::kCompare, Ts({"3xf32", "3xf32"}), Ts({"3xf32"}));
  q.op->attrs().Set("comparison_direction", Enum("comparison_direction", "EQ"));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.compare", "result of type i1"));
  Prog r = OneOp(OpCode::kCompare, Ts({"3xf32", "3xf64"}), Ts({"3xi1"}));
  r.op->attrs().Set("comparison_direction", Enum("comparison_direction", "EQ"));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.compare", "operands of the same element type"));
}

TEST(VerifierElementwise, SelectAndClamp) {
  EXPECT_TRUE(
      Verifies(*OneOp(OpCode::kSelect, Ts({"i1", "2xf32", "2xf32"}), Ts({"2xf32"})).module));
  EXPECT_TRUE(
      Verifies(*OneOp(OpCode::kSelect, Ts({"2xi1", "2xf32", "2xf32"}), Ts({"2xf32"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kSelect, Ts({"3xi1", "2xf32", "2xf32"}), Ts({"2xf32"})).module,
                      "stablehlo.select", "pred to be 0-d or of the shape of on_true"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kSelect, Ts({"i32", "2xf32", "2xf32"}), Ts({"2xf32"})).module,
                      "stablehlo.select", "pred of type i1"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kSelect, Ts({"i1", "2xf32", "2xi32"}), Ts({"2xf32"})).module,
                      "stablehlo.select", "type(on_true) = type(on_false) = type(result)"));
  EXPECT_TRUE(
      Verifies(*OneOp(OpCode::kClamp, Ts({"f32", "2xf32", "2xf32"}), Ts({"2xf32"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kClamp, Ts({"3xf32", "2xf32", "f32"}), Ts({"2xf32"})).module,
                      "stablehlo.clamp", "min to be 0-d or of the operand's shape"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kClamp, Ts({"f32", "2xf32", "i32"}), Ts({"2xf32"})).module,
                      "stablehlo.clamp", "of the same element type"));
}

// ---------------------------------------------------------------------------
// Constants and shape ops.

TEST(VerifierShape, Constant) {
  Prog p = OneOp(OpCode::kConstant, {}, Ts({"2x2xf32"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.constant", "requires attribute 'value'"));
  p.op->attrs().Set("value", Zeros(T("2x2xf32")));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("value", Zeros(T("4xf32")));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.constant",
                      "requires the type of 'value' to equal tensor<2x2xf32>, got tensor<4xf32>"));
  p.op->attrs().Set("value", DenseResourceAttr{"__elided__", T("2x2xf32")});
  EXPECT_TRUE(Verifies(*p.module));
  DenseElementsAttr bad;
  bad.type = T("2x2xf32");
  bad.data = std::make_shared<const std::vector<uint8_t>>(3, 0);
  p.op->attrs().Set("value", bad);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.constant", "data of 3 bytes, expected 16"));
  bad.data = nullptr;
  p.op->attrs().Set("value", bad);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.constant", "data of 0 bytes"));
  p.op->attrs().Set("value", StringAttr{"x"});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.constant", "to be dense elements, got string"));
}

TEST(VerifierShape, Iota) {
  Prog p = OneOp(OpCode::kIota, {}, Ts({"4x5xi32"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.iota", "requires attribute 'iota_dimension'"));
  p.op->attrs().Set("iota_dimension", I64(1));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("iota_dimension", I64(2));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.iota", "0 <= iota_dimension < rank(result) = 2, got 2"));
  p.op->attrs().Set("iota_dimension", I64s({0}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.iota", "to be an integer, got dense array"));
  Prog q = OneOp(OpCode::kIota, {}, Ts({"4xi1"}));
  q.op->attrs().Set("iota_dimension", I64(0));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.iota", "integer, floating-point or complex"));
}

TEST(VerifierShape, BroadcastInDim) {
  Prog p = OneOp(OpCode::kBroadcastInDim, Ts({"1x3xf32"}), Ts({"2x4x3xf32"}));
  p.op->attrs().Set("broadcast_dimensions", I64s({0, 2}));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("broadcast_dimensions", I64s({0}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.broadcast_in_dim",
                      "size(broadcast_dimensions) = rank(operand) = 2, got [0]"));
  p.op->attrs().Set("broadcast_dimensions", I64s({0, 3}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.broadcast_in_dim",
                      "0 <= broadcast_dimensions < rank(result) = 3, got [0, 3]"));
  p.op->attrs().Set("broadcast_dimensions", I64s({2, 2}));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.broadcast_in_dim", "broadcast_dimensions to be unique"));
  p.op->attrs().Set("broadcast_dimensions", I64s({0, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.broadcast_in_dim",
                      "dim(operand, 1) to be 1 or dim(result, 1)"));
  p.op->attrs().Set("broadcast_dimensions", I64s({0, std::numeric_limits<int64_t>::min()}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.broadcast_in_dim", "0 <= broadcast_dimensions"));
  Prog q = OneOp(OpCode::kBroadcastInDim, Ts({"3xf32"}), Ts({"3xf16"}));
  q.op->attrs().Set("broadcast_dimensions", I64s({0}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.broadcast_in_dim",
                      "element_type(operand) = element_type(result)"));
}

TEST(VerifierShape, LegacyBroadcast) {
  Prog p = OneOp(OpCode::kBroadcast, Ts({"3xf32"}), Ts({"2x3xf32"}));
  p.op->attrs().Set("broadcast_sizes", I64s({2}));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("broadcast_sizes", I64s({4}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.broadcast", "broadcast_sizes ++ shape(operand)"));
}

TEST(VerifierShape, ReshapeTransposeReverse) {
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kReshape, Ts({"2x3xf32"}), Ts({"6xf32"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kReshape, Ts({"2x3xf32"}), Ts({"5xf32"})).module,
                      "stablehlo.reshape", "size(operand) = size(result)"));
  Prog t = OneOp(OpCode::kTranspose, Ts({"2x3x4xf32"}), Ts({"4x2x3xf32"}));
  t.op->attrs().Set("permutation", I64s({2, 0, 1}));
  EXPECT_TRUE(Verifies(*t.module));
  t.op->attrs().Set("permutation", I64s({2, 0, 0}));
  EXPECT_TRUE(Rejects(*t.module, "stablehlo.transpose", "permutation to be unique"));
  t.op->attrs().Set("permutation", I64s({1, 0, 2}));
  EXPECT_TRUE(
      Rejects(*t.module, "stablehlo.transpose", "shape(result) = dim(operand, permutation...)"));
  t.op->attrs().Set("permutation", I64s({1, 0}));
  EXPECT_TRUE(Rejects(*t.module, "stablehlo.transpose", "size(permutation) = rank(operand) = 3"));
  Prog r = OneOp(OpCode::kReverse, Ts({"2x3xf32"}), Ts({"2x3xf32"}));
  r.op->attrs().Set("dimensions", I64s({1}));
  EXPECT_TRUE(Verifies(*r.module));
  r.op->attrs().Set("dimensions", I64s({1, 1}));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.reverse", "dimensions to be unique"));
  r.op->attrs().Set("dimensions", I64s({-1}));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.reverse", "0 <= dimensions < rank(result)"));
}

TEST(VerifierShape, Slice) {
  Prog p = OneOp(OpCode::kSlice, Ts({"10x5xf32"}), Ts({"3x5xf32"}));
  p.op->attrs().Set("start_indices", I64s({1, 0}));
  p.op->attrs().Set("limit_indices", I64s({8, 5}));
  p.op->attrs().Set("strides", I64s({3, 1}));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("strides", I64s({2, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.slice",
                      "shape(result) = ceil((limit_indices - start_indices) / strides)"));
  p.op->attrs().Set("strides", I64s({0, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.slice", "0 < strides, got [0, 1]"));
  p.op->attrs().Set("strides", I64s({std::numeric_limits<int64_t>::max(), 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.slice", "shape(result) = ceil"));
  p.op->attrs().Set("limit_indices", I64s({11, 5}));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.slice", "start_indices <= limit_indices <= shape(operand)"));
  p.op->attrs().Remove("strides");
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.slice", "requires attribute 'strides'"));
}

TEST(VerifierShape, DynamicSliceAndUpdate) {
  Prog p = OneOp(OpCode::kDynamicSlice, Ts({"10x5xf32", "i32", "i32"}), Ts({"2x5xf32"}));
  p.op->attrs().Set("slice_sizes", I64s({2, 5}));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("slice_sizes", I64s({2, 6}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.dynamic_slice", "0 <= slice_sizes <= shape(operand)"));
  Prog q = OneOp(OpCode::kDynamicSlice, Ts({"10x5xf32", "i32", "i64"}), Ts({"2x5xf32"}));
  q.op->attrs().Set("slice_sizes", I64s({2, 5}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.dynamic_slice", "start indices of one type"));
  Prog r = OneOp(OpCode::kDynamicSlice, Ts({"10x5xf32", "i32"}), Ts({"2x5xf32"}));
  r.op->attrs().Set("slice_sizes", I64s({2, 5}));
  EXPECT_TRUE(
      Rejects(*r.module, "stablehlo.dynamic_slice", "one start index per operand dimension"));

  EXPECT_TRUE(Verifies(*OneOp(OpCode::kDynamicUpdateSlice,
                              Ts({"10x5xf32", "2x5xf32", "i64", "i64"}), Ts({"10x5xf32"}))
                            .module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kDynamicUpdateSlice, Ts({"10x5xf32", "2x6xf32", "i64", "i64"}),
                             Ts({"10x5xf32"}))
                           .module,
                      "stablehlo.dynamic_update_slice", "shape(update) <= shape(operand)"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kDynamicUpdateSlice, Ts({"10x5xf32", "2x5xf32", "f32", "f32"}),
                             Ts({"10x5xf32"}))
                           .module,
                      "stablehlo.dynamic_update_slice", "0-d tensors of integer type"));
}

TEST(VerifierShape, Concatenate) {
  Prog p = OneOp(OpCode::kConcatenate, Ts({"2x3xf32", "4x3xf32"}), Ts({"6x3xf32"}));
  p.op->attrs().Set("dimension", I64(0));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("dimension", I64(1));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.concatenate", "same shape except in dimension 1"));
  p.op->attrs().Set("dimension", I64(2));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.concatenate", "0 <= dimension < rank(inputs[0]) = 2"));
  Prog q = OneOp(OpCode::kConcatenate, Ts({"2x3xf32", "4x3xf32"}), Ts({"7x3xf32"}));
  q.op->attrs().Set("dimension", I64(0));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.concatenate", "the sum of the inputs' (6)"));
  Prog r = OneOp(OpCode::kConcatenate, {}, Ts({"7x3xf32"}));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.concatenate", "at least one input"));
}

TEST(VerifierShape, Pad) {
  Prog p = OneOp(OpCode::kPad, Ts({"2x3xf32", "f32"}), Ts({"5x6xf32"}));
  p.op->attrs().Set("edge_padding_low", I64s({1, -1}));
  p.op->attrs().Set("edge_padding_high", I64s({1, 2}));
  p.op->attrs().Set("interior_padding", I64s({1, 1}));
  // dim0: 1 + 2 + 1*1 + 1 = 5; dim1: -1 + 3 + 2*1 + 2 = 6.
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("interior_padding", I64s({-1, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.pad", "0 <= interior_padding"));
  p.op->attrs().Set("interior_padding", I64s({std::numeric_limits<int64_t>::max(), 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.pad", "shape(result) = edge_padding_low"));
  p.op->attrs().Set("edge_padding_low", I64s({std::numeric_limits<int64_t>::min(), 0}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.pad", "shape(result) = edge_padding_low"));
  Prog q = OneOp(OpCode::kPad, Ts({"2x3xf32", "1xf32"}), Ts({"2x3xf32"}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.pad", "0-d padding_value"));
}

TEST(VerifierShape, GetDimensionSize) {
  Prog p = OneOp(OpCode::kGetDimensionSize, Ts({"2x3xf32"}), Ts({"i32"}));
  p.op->attrs().Set("dimension", I64(1));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("dimension", I64(2));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.get_dimension_size", "0 <= dimension < rank(operand)"));
}

// ---------------------------------------------------------------------------
// Gather and scatter.

// jnp.take(x, idx, axis=0) for x: 5x4, idx: 3 -> 3x4.
Prog TakeGather() {
  Prog p = OneOp(OpCode::kGather, Ts({"5x4xf32", "3x1xi32"}), Ts({"3x4xf32"}));
  p.op->attrs().Set(
      "dimension_numbers",
      Struct("stablehlo.gather", {Field("offset_dims", {1}), Field("collapsed_slice_dims", {0}),
                                  Field("start_index_map", {0}), Scalar("index_vector_dim", 1)}));
  p.op->attrs().Set("slice_sizes", I64s({1, 4}));
  return p;
}

TEST(VerifierGather, Valid) {
  EXPECT_TRUE(Verifies(*TakeGather().module));
  // With batching dims: operand 2x5x4, indices 2x3x1 -> 2x3x4.
  Prog p = OneOp(OpCode::kGather, Ts({"2x5x4xf32", "2x3x1xi32"}), Ts({"2x3x4xf32"}));
  p.op->attrs().Set(
      "dimension_numbers",
      Struct("stablehlo.gather",
             {Field("offset_dims", {2}), Field("collapsed_slice_dims", {1}),
              Field("operand_batching_dims", {0}), Field("start_indices_batching_dims", {0}),
              Field("start_index_map", {1}), Scalar("index_vector_dim", 2)}));
  p.op->attrs().Set("slice_sizes", I64s({1, 1, 4}));
  EXPECT_TRUE(Verifies(*p.module));
}

TEST(VerifierGather, Invalid) {
  Prog p = TakeGather();
  p.op->attrs().Set("slice_sizes", I64s({1, 5}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.gather", "0 <= slice_sizes <= shape(operand)"));
  p.op->attrs().Set("slice_sizes", I64s({2, 4}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.gather", "slice_sizes <= 1 in collapsed_slice_dims"));
  p.op->attrs().Set("slice_sizes", I64s({1, 3}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.gather", "combine the batch dimensions"));

  Prog q = TakeGather();
  q.op->attrs().Set(
      "dimension_numbers",
      Struct("stablehlo.gather", {Field("offset_dims", {1}), Field("collapsed_slice_dims", {0}),
                                  Field("start_index_map", {0}), Scalar("index_vector_dim", 3)}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.gather",
                      "0 <= index_vector_dim <= rank(start_indices) = 2, got 3"));
  q.op->attrs().Set("dimension_numbers",
                    Struct("stablehlo.gather",
                           {Field("offset_dims", {1}), Field("collapsed_slice_dims", {0}),
                            Field("start_index_map", {0, 1}), Scalar("index_vector_dim", 1)}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.gather", "size(start_index_map) = 1"));
  q.op->attrs().Set(
      "dimension_numbers",
      Struct("stablehlo.gather", {Field("offset_dims", {1}), Field("collapsed_slice_dims", {0}),
                                  Field("start_index_map", {0}), Field("bogus", {0})}));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.gather", "unknown field 'bogus'"));
  q.op->attrs().Set("dimension_numbers", I64s({0}));
  EXPECT_TRUE(
      Rejects(*q.module, "stablehlo.gather", "'dimension_numbers' to be #stablehlo.gather"));

  Prog r = OneOp(OpCode::kGather, Ts({"5x4xf32", "3x1xf32"}), Ts({"3x4xf32"}));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.gather", "start_indices of integer type"));
}

// x[idx] += updates for x: 5x4, idx: 3x1, updates: 3x4.
Prog AddScatter(std::string_view body_elem = "f32") {
  Prog p = OneOp(OpCode::kScatter, Ts({"5x4xf32", "3x1xi32", "3x4xf32"}), Ts({"5x4xf32"}));
  p.op->attrs().Set(
      "scatter_dimension_numbers",
      Struct("stablehlo.scatter",
             {Field("update_window_dims", {1}), Field("inserted_window_dims", {0}),
              Field("scatter_dims_to_operand_dims", {0}), Scalar("index_vector_dim", 1)}));
  AddBinaryRegion(*p.op, OpCode::kAdd, body_elem);
  return p;
}

TEST(VerifierScatter, Valid) { EXPECT_TRUE(Verifies(*AddScatter().module)); }

TEST(VerifierScatter, BodyTypes) {
  // The body may accumulate in a wider type, but then the result has it too.
  Prog p = AddScatter("f64");
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.scatter", "requires result #0 to have the element type f64"));
  Prog q = OneOp(OpCode::kScatter, Ts({"5x4xf32", "3x1xi32", "3x4xf32"}), Ts({"5x4xf32"}));
  AddBinaryRegion(*q.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(
      Rejects(*q.module, "stablehlo.scatter", "requires attribute 'scatter_dimension_numbers'"));
  Prog r = AddScatter("f16");
  EXPECT_TRUE(
      Rejects(*r.module, "stablehlo.scatter", "element type f32 promotes to, got tensor<f16>"));
  Prog s = AddScatter("i32");
  EXPECT_TRUE(Rejects(*s.module, "stablehlo.scatter", "promotes to"));
}

TEST(VerifierScatter, Promotion) {
  Prog p = OneOp(OpCode::kScatter, Ts({"5x4xbf16", "3x1xi32", "3x4xbf16"}), Ts({"5x4xf32"}));
  p.op->attrs().Set(
      "scatter_dimension_numbers",
      Struct("stablehlo.scatter",
             {Field("update_window_dims", {1}), Field("inserted_window_dims", {0}),
              Field("scatter_dims_to_operand_dims", {0}), Scalar("index_vector_dim", 1)}));
  AddBinaryRegion(*p.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(Verifies(*p.module));
}

TEST(VerifierScatter, Shapes) {
  Prog p = OneOp(OpCode::kScatter, Ts({"5x4xf32", "3x1xi32", "3x5xf32"}), Ts({"5x4xf32"}));
  p.op->attrs().Set(
      "scatter_dimension_numbers",
      Struct("stablehlo.scatter",
             {Field("update_window_dims", {1}), Field("inserted_window_dims", {0}),
              Field("scatter_dims_to_operand_dims", {0}), Scalar("index_vector_dim", 1)}));
  AddBinaryRegion(*p.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.scatter", "window dimensions no larger than the input's"));
  p.op->attrs().Set(
      "scatter_dimension_numbers",
      Struct("stablehlo.scatter",
             {Field("update_window_dims", {1}), Field("inserted_window_dims", {0, 0}),
              Field("scatter_dims_to_operand_dims", {0}), Scalar("index_vector_dim", 1)}));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.scatter", "rank(inputs[0]) = size(update_window_dims)"));
  Prog q = OneOp(OpCode::kScatter, Ts({"5x4xf32", "3x1xi32"}), Ts({"5x4xf32"}));
  AddBinaryRegion(*q.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.scatter", "N inputs, scatter_indices and N updates"));
}

// ---------------------------------------------------------------------------
// Reductions, sort, map.

Prog SumRows(std::string_view in = "4x5xf32", std::string_view out = "4xf32",
             std::string_view body = "f32") {
  const std::string elem(in.substr(in.rfind('x') + 1));
  Prog p = OneOp(OpCode::kReduce, Ts({in, elem}), Ts({out}));
  p.op->attrs().Set("dimensions", I64s({1}));
  AddBinaryRegion(*p.op, OpCode::kAdd, body);
  return p;
}

TEST(VerifierReduce, Valid) {
  EXPECT_TRUE(Verifies(*SumRows().module));
  EXPECT_TRUE(Verifies(*SumRows("4x5xbf16", "4xf32", "f32").module));  // promoted accumulator
  EXPECT_TRUE(Verifies(*SumRows("4x5xi1", "4xi1", "i1").module));
}

TEST(VerifierReduce, Invalid) {
  EXPECT_TRUE(Rejects(*SumRows("4x5xf32", "5xf32").module, "stablehlo.reduce",
                      "shape(results...) = shape(inputs...) without dimensions [1]"));
  EXPECT_TRUE(Rejects(*SumRows("4x5xf32", "4xf32", "f16").module, "stablehlo.reduce",
                      "promotes to, got tensor<f16>"));
  EXPECT_TRUE(Rejects(*SumRows("4x5xi1", "4xi8", "i8").module, "stablehlo.reduce", "promotes to"));
  Prog p = SumRows();
  p.op->attrs().Set("dimensions", I64s({1, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce", "dimensions to be unique"));
  p.op->attrs().Set("dimensions", I64s({2}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce", "0 <= dimensions < rank(inputs[0]) = 2"));
  Prog q = OneOp(OpCode::kReduce, Ts({"4x5xf32", "f64"}), Ts({"4xf32"}));
  q.op->attrs().Set("dimensions", I64s({1}));
  AddBinaryRegion(*q.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.reduce", "init_values[0] to be a 0-d tensor"));
  Prog r = OneOp(OpCode::kReduce, Ts({"4x5xf32", "f32"}), Ts({"4xf32"}));
  r.op->attrs().Set("dimensions", I64s({1}));
  AddRegion(*r.op, Ts({"f32"}), [](Block& b) { return Args(b); });
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.reduce", "'body' region to take 2 arguments, got 1"));
  Prog s = OneOp(OpCode::kReduce, Ts({"4x5xf32"}), Ts({"4xf32"}));
  s.op->attrs().Set("dimensions", I64s({1}));
  AddBinaryRegion(*s.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(Rejects(*s.module, "stablehlo.reduce", "N inputs and N init_values"));
}

TEST(VerifierReduce, VariadicArgmax) {
  Prog p = OneOp(OpCode::kReduce, Ts({"4x5xf32", "4x5xi32", "f32", "i32"}), Ts({"4xf32", "4xi32"}));
  p.op->attrs().Set("dimensions", I64s({1}));
  AddRegion(*p.op, Ts({"f32", "i32", "f32", "i32"}), [](Block& b) {
    Op& m = AddOp(b, OpCode::kMaximum, {b.arg(0), b.arg(2)}, Ts({"f32"}), 7);
    Op& i = AddOp(b, OpCode::kMinimum, {b.arg(1), b.arg(3)}, Ts({"i32"}), 7);
    return std::vector<Value*>{m.result(0), i.result(0)};
  });
  EXPECT_TRUE(Verifies(*p.module));
  p.op->region(0).block(0).terminator()->set_operand(1,
                                                     p.op->region(0).block(0).ops()[0]->result(0));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce",
                      "'body' region to return tensor<i32> as value #1, got tensor<f32>"));
}

// 3x3 max pool, stride 2, padding 1 over 1x8x8x1.
Prog MaxPool(std::string_view out = "1x4x4x1xf32") {
  Prog p = OneOp(OpCode::kReduceWindow, Ts({"1x8x8x1xf32", "f32"}), Ts({out}));
  p.op->attrs().Set("window_dimensions", I64s({1, 3, 3, 1}));
  p.op->attrs().Set("window_strides", I64s({1, 2, 2, 1}));
  p.op->attrs().Set("padding", Padding({{0, 0}, {1, 1}, {1, 1}, {0, 0}}));
  AddBinaryRegion(*p.op, OpCode::kMaximum, "f32");
  return p;
}

TEST(VerifierReduceWindow, Valid) {
  EXPECT_TRUE(Verifies(*MaxPool().module));
  Prog p = MaxPool("1x15x4x1xf32");
  p.op->attrs().Set("window_strides", I64s({1, 1, 2, 1}));
  p.op->attrs().Set("base_dilations", I64s({1, 2, 1, 1}));
  p.op->attrs().Set("window_dilations", I64s({1, 1, 1, 1}));
  // dim1: dilated 15, padded 17, window 3, stride 1 -> 15.
  EXPECT_TRUE(Verifies(*p.module));
}

TEST(VerifierReduceWindow, Invalid) {
  EXPECT_TRUE(Rejects(*MaxPool("1x3x4x1xf32").module, "stablehlo.reduce_window",
                      "the number of windows along each dimension"));
  Prog p = MaxPool();
  p.op->attrs().Set("window_dimensions", I64s({1, 0, 3, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce_window", "0 < window_dimensions"));
  p.op->attrs().Set("window_dimensions", I64s({1, 3, 3}));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.reduce_window", "size(window_dimensions) = rank(operand) = 4"));
  p.op->attrs().Set("window_dimensions", I64s({1, 3, 3, 1}));
  p.op->attrs().Set("padding", Padding({{0, 0}, {1, 1}}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce_window", "padding of type tensor<4x2xi64>"));
  p.op->attrs().Set(
      "padding",
      Padding({{0, 0},
               {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::max()},
               {1, 1},
               {0, 0}}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce_window", "the number of windows"));
  p.op->attrs().Set("padding", Padding({{0, 0}, {1, 1}, {1, 1}, {0, 0}}));
  p.op->attrs().Set("window_dilations", I64s({1, std::numeric_limits<int64_t>::max(), 1, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.reduce_window", "the number of windows"));
  p.op->attrs().Remove("window_dimensions");
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.reduce_window", "requires attribute 'window_dimensions'"));
}

TEST(VerifierSelectAndScatter, ValidAndInvalid) {
  Prog p = OneOp(OpCode::kSelectAndScatter, Ts({"4x4xf32", "2x2xf32", "f32"}), Ts({"4x4xf32"}));
  p.op->attrs().Set("window_dimensions", I64s({2, 2}));
  p.op->attrs().Set("window_strides", I64s({2, 2}));
  AddRegion(*p.op, Ts({"f32", "f32"}), [](Block& b) {
    Op& c = AddOp(b, OpCode::kCompare, {b.arg(0), b.arg(1)}, Ts({"i1"}), 7);
    c.attrs().Set("comparison_direction", Enum("comparison_direction", "GE"));
    return Results(c);
  });
  AddBinaryRegion(*p.op, OpCode::kAdd, "f32");
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("window_strides", I64s({1, 1}));
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.select_and_scatter", "shape(source) = the number of windows"));
  p.op->attrs().Set("window_strides", I64s({2, 2}));
  p.op->region(0).block(0).terminator()->set_operand(0, p.op->region(0).block(0).arg(0));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.select_and_scatter",
                      "'select' region to return one tensor<i1>"));
}

Prog SortPair() {
  Prog p = OneOp(OpCode::kSort, Ts({"8xf32", "8xi32"}), Ts({"8xf32", "8xi32"}));
  p.op->attrs().Set("dimension", I64(0));
  AddRegion(*p.op, Ts({"f32", "f32", "i32", "i32"}), [](Block& b) {
    Op& c = AddOp(b, OpCode::kCompare, {b.arg(0), b.arg(1)}, Ts({"i1"}), 7);
    c.attrs().Set("comparison_direction", Enum("comparison_direction", "LT"));
    return Results(c);
  });
  return p;
}

TEST(VerifierSort, ValidAndInvalid) {
  Prog p = SortPair();
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("dimension", I64(-1));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("dimension", I64(1));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.sort",
                      "-R <= dimension < R for R = rank(inputs[0]) = 1, got 1"));
  p.op->attrs().Set("dimension", I64(0));
  p.op->attrs().Set("is_stable", I64(3));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.sort", "'is_stable' to be a boolean"));
  p.op->attrs().Set("is_stable", true);
  EXPECT_TRUE(Verifies(*p.module));
  Prog q = OneOp(OpCode::kSort, Ts({"8xf32", "8xi32"}), Ts({"8xf32", "8xf32"}));
  AddRegion(*q.op, Ts({"f32", "f32", "i32", "i32"}),
            [](Block& b) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.sort", "type(inputs...) = type(results...)"));
  Prog r = OneOp(OpCode::kSort, Ts({"8xf32"}), Ts({"8xf32"}));
  AddRegion(*r.op, Ts({"f32", "f32"}), [](Block& b) { return std::vector<Value*>{b.arg(0)}; });
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.sort", "'comparator' region to return one tensor<i1>"));
  Prog s = OneOp(OpCode::kSort, Ts({"8xf32"}), Ts({"8xf32"}));
  AddRegion(*s.op, Ts({"f32", "i32"}), [](Block& b) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Rejects(*s.module, "stablehlo.sort",
                      "argument #1 of the 'comparator' region to be tensor<f32>"));
}

TEST(VerifierMap, ValidAndInvalid) {
  Prog p = OneOp(OpCode::kMap, Ts({"2x3xf32", "2x3xf32"}), Ts({"2x3xf32"}));
  p.op->attrs().Set("dimensions", I64s({0, 1}));
  AddBinaryRegion(*p.op, OpCode::kMultiply, "f32");
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("dimensions", I64s({1, 0}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.map", "dimensions = range(rank(inputs[0]))"));
  Prog q = OneOp(OpCode::kMap, Ts({"2x3xf32", "2x3xf32"}), Ts({"2x3xi32"}));
  q.op->attrs().Set("dimensions", I64s({0, 1}));
  AddBinaryRegion(*q.op, OpCode::kMultiply, "f32");
  EXPECT_TRUE(
      Rejects(*q.module, "stablehlo.map", "'computation' region to return one tensor<i32>"));
}

// ---------------------------------------------------------------------------
// Linear algebra.

Prog BatchMatmul(std::string_view lhs, std::string_view rhs, std::string_view out) {
  Prog p = OneOp(OpCode::kDotGeneral, Ts({lhs, rhs}), Ts({out}));
  p.op->attrs().Set(
      "dot_dimension_numbers",
      Struct("stablehlo.dot",
             {Field("lhs_batching_dimensions", {0}), Field("rhs_batching_dimensions", {0}),
              Field("lhs_contracting_dimensions", {2}), Field("rhs_contracting_dimensions", {1})}));
  return p;
}

TEST(VerifierDot, DotGeneral) {
  EXPECT_TRUE(Verifies(*BatchMatmul("8x2x3xf32", "8x3x4xf32", "8x2x4xf32").module));
  EXPECT_TRUE(
      Rejects(*BatchMatmul("8x2x3xf32", "8x5x4xf32", "8x2x4xf32").module, "stablehlo.dot_general",
              "dim(lhs, lhs_contracting_dimensions...) = dim(rhs, rhs_contracting_dimensions...)"));
  EXPECT_TRUE(Rejects(*BatchMatmul("8x2x3xf32", "7x3x4xf32", "8x2x4xf32").module,
                      "stablehlo.dot_general", "dim(lhs, lhs_batching_dimensions...)"));
  EXPECT_TRUE(Rejects(*BatchMatmul("8x2x3xf32", "8x3x4xf32", "8x4x2xf32").module,
                      "stablehlo.dot_general", "batch dims + lhs free dims + rhs free dims"));
  EXPECT_TRUE(Rejects(*BatchMatmul("8x2x3xf32", "8x3x4xf16", "8x2x4xf32").module,
                      "stablehlo.dot_general", "element_type(lhs) = element_type(rhs)"));
  // The result element type may differ (preferred_element_type).
  EXPECT_TRUE(Verifies(*BatchMatmul("8x2x3xbf16", "8x3x4xbf16", "8x2x4xf32").module));
  Prog p = BatchMatmul("8x2x3xf32", "8x3x4xf32", "8x2x4xf32");
  p.op->attrs().Set(
      "dot_dimension_numbers",
      Struct("stablehlo.dot",
             {Field("lhs_batching_dimensions", {0}), Field("rhs_batching_dimensions", {0}),
              Field("lhs_contracting_dimensions", {3}), Field("rhs_contracting_dimensions", {1})}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.dot_general",
                      "0 <= lhs_contracting_dimensions < rank(lhs) = 3"));
  p.op->attrs().Set(
      "dot_dimension_numbers",
      Struct("stablehlo.dot",
             {Field("lhs_batching_dimensions", {0}), Field("rhs_batching_dimensions", {0}),
              Field("lhs_contracting_dimensions", {0}), Field("rhs_contracting_dimensions", {1})}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.dot_general", "to be unique together"));
  p.op->attrs().Set("dot_dimension_numbers",
                    Struct("stablehlo.dot", {Field("lhs_batching_dimensions", {0}),
                                             Field("lhs_contracting_dimensions", {2}),
                                             Field("rhs_contracting_dimensions", {1})}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.dot_general",
                      "size(lhs_batching_dimensions) = size(rhs_batching_dimensions)"));
}

TEST(VerifierDot, PrecisionConfig) {
  Prog p = BatchMatmul("8x2x3xf32", "8x3x4xf32", "8x2x4xf32");
  p.op->attrs().Set("precision_config", ArrayAttr{{EnumAttr{"stablehlo", "precision", "DEFAULT"},
                                                   EnumAttr{"stablehlo", "precision", "HIGHEST"}}});
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("precision_config", ArrayAttr{{EnumAttr{"stablehlo", "precision", "DEFAULT"}}});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.dot_general", "precision_config to hold 2 values"));
  p.op->attrs().Set("precision_config", ArrayAttr{{EnumAttr{"stablehlo", "precision", "DEFAULT"},
                                                   EnumAttr{"stablehlo", "precision", "LOW"}}});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.dot_general", "DEFAULT, HIGH or HIGHEST"));
}

TEST(VerifierDot, LegacyDot) {
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kDot, Ts({"2x3xf32", "3x4xf32"}), Ts({"2x4xf32"})).module));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kDot, Ts({"3xf32", "3xf32"}), Ts({"f32"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kDot, Ts({"2x3xf32", "4x4xf32"}), Ts({"2x4xf32"})).module,
                      "stablehlo.dot", "last dimension of lhs to equal the first of rhs"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kDot, Ts({"2x3xf32", "3x4xf32"}), Ts({"4x2xf32"})).module,
                      "stablehlo.dot", "shape(result) = [2, 4]"));
}

// NHWC x HWIO -> NHWC, 3x3 kernel, padding 1, stride `stride`.
Prog Conv(std::string_view lhs, std::string_view rhs, std::string_view out, int64_t stride = 1) {
  Prog p = OneOp(OpCode::kConvolution, Ts({lhs, rhs}), Ts({out}));
  ConvDimensionNumbers dn;
  dn.input_batch_dimension = 0;
  dn.input_feature_dimension = 3;
  dn.input_spatial_dimensions = {1, 2};
  dn.kernel_input_feature_dimension = 2;
  dn.kernel_output_feature_dimension = 3;
  dn.kernel_spatial_dimensions = {0, 1};
  dn.output_batch_dimension = 0;
  dn.output_feature_dimension = 3;
  dn.output_spatial_dimensions = {1, 2};
  p.op->attrs().Set("dimension_numbers", dn);
  p.op->attrs().Set("window_strides", I64s({stride, stride}));
  p.op->attrs().Set("padding", Padding({{1, 1}, {1, 1}}));
  p.op->attrs().Set("feature_group_count", I64(1));
  p.op->attrs().Set("batch_group_count", I64(1));
  return p;
}

TEST(VerifierConvolution, Valid) {
  EXPECT_TRUE(Verifies(*Conv("1x14x14x8xf32", "3x3x8x16xf32", "1x14x14x16xf32").module));
  EXPECT_TRUE(Verifies(*Conv("1x14x14x8xf32", "3x3x8x16xf32", "1x7x7x16xf32", 2).module));
  Prog p = Conv("1x14x14x8xf32", "3x3x2x16xf32", "1x14x14x16xf32");
  p.op->attrs().Set("feature_group_count", I64(4));
  EXPECT_TRUE(Verifies(*p.module));
}

TEST(VerifierConvolution, Invalid) {
  EXPECT_TRUE(Rejects(*Conv("1x14x14x8xf32", "3x3x8x16xf32", "1x14x14x8xf32").module,
                      "stablehlo.convolution", "result shape the convolution produces"));
  EXPECT_TRUE(Rejects(*Conv("1x14x14x8xf32", "3x3x4x16xf32", "1x14x14x16xf32").module,
                      "stablehlo.convolution", "dim(rhs, kernel_input_feature_dimension)"));
  EXPECT_TRUE(Rejects(*Conv("1x14x14x8xf32", "3x3x8x16xf16", "1x14x14x16xf32").module,
                      "stablehlo.convolution", "element_type(lhs) = element_type(rhs)"));
  EXPECT_TRUE(Rejects(*Conv("1x14x14x8xf32", "3x8x16xf32", "1x14x14x16xf32").module,
                      "stablehlo.convolution", "rank(lhs) = rank(rhs) >= 2"));
  Prog p = Conv("1x14x14x8xf32", "3x3x8x16xf32", "1x14x14x16xf32");
  p.op->attrs().Set("window_strides", I64s({0, 1}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.convolution", "0 < window_strides"));
  p.op->attrs().Set("window_strides", I64s({1, 1}));
  p.op->attrs().Set("feature_group_count", I64(3));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.convolution", "% feature_group_count = 0"));
  p.op->attrs().Set("feature_group_count", I64(2));
  p.op->attrs().Set("batch_group_count", I64(2));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.convolution",
                      "feature_group_count = 1 or batch_group_count = 1"));
  p.op->attrs().Set("batch_group_count", I64(1));
  p.op->attrs().Set("feature_group_count", I64(1));
  ConvDimensionNumbers dn = p.op->attr("dimension_numbers")->as<ConvDimensionNumbers>();
  dn.output_spatial_dimensions = {1, 3};
  p.op->attrs().Set("dimension_numbers", dn);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.convolution", "output dimensions to be unique"));
  dn.output_spatial_dimensions = {1, 9};
  p.op->attrs().Set("dimension_numbers", dn);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.convolution", "0 <= output dimensions < N = 4"));
  dn.output_spatial_dimensions = {1};
  p.op->attrs().Set("dimension_numbers", dn);
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.convolution", "size(output_spatial_dimensions) = N - 2"));
}

TEST(VerifierLinalg, Fft) {
  Prog p = OneOp(OpCode::kFft, Ts({"3x16xf32"}), Ts({"3x9xcomplex<f32>"}));
  p.op->attrs().Set("fft_type", Enum("fft_type", "RFFT"));
  p.op->attrs().Set("fft_length", I64s({16}));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("fft_length", I64s({15}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.fft", "trailing dimensions of the real tensor"));
  p.op->attrs().Set("fft_length", I64s({}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.fft", "1 <= size(fft_length) <= 3"));
  p.op->attrs().Set("fft_length", I64s({16}));
  p.op->attrs().Set("fft_type", Enum("fft_type", "FFT"));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.fft", "fit fft_type FFT"));
  Prog q = OneOp(OpCode::kFft, Ts({"3x9xcomplex<f64>"}), Ts({"3x16xf64"}));
  q.op->attrs().Set("fft_type", Enum("fft_type", "IRFFT"));
  q.op->attrs().Set("fft_length", I64s({16}));
  EXPECT_TRUE(Verifies(*q.module));
  Prog r = OneOp(OpCode::kFft, Ts({"3x9xcomplex<f64>"}), Ts({"3x8xcomplex<f64>"}));
  r.op->attrs().Set("fft_type", Enum("fft_type", "FFT"));
  r.op->attrs().Set("fft_length", I64s({9}));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.fft", "shape(result) = shape(operand)"));
}

TEST(VerifierLinalg, TriangularSolveAndCholesky) {
  Prog p = OneOp(OpCode::kTriangularSolve, Ts({"2x4x4xf32", "2x4x3xf32"}), Ts({"2x4x3xf32"}));
  p.op->attrs().Set("left_side", true);
  p.op->attrs().Set("lower", true);
  p.op->attrs().Set("unit_diagonal", false);
  p.op->attrs().Set("transpose_a", Enum("transpose", "NO_TRANSPOSE"));
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("left_side", false);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.triangular_solve",
                      "dim(a, -1) = dim(b, -1) for left_side = false"));
  p.op->attrs().Set("left_side", true);
  p.op->attrs().Set("transpose_a", Enum("transpose", "SIDEWAYS"));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.triangular_solve", "NO_TRANSPOSE, TRANSPOSE, ADJOINT"));
  EXPECT_TRUE(Rejects(
      *OneOp(OpCode::kTriangularSolve, Ts({"2x4x5xf32", "2x4x3xf32"}), Ts({"2x4x3xf32"})).module,
      "stablehlo.triangular_solve", "dim(a, -2) = dim(a, -1)"));

  EXPECT_TRUE(Verifies(*OneOp(OpCode::kCholesky, Ts({"3x3xf64"}), Ts({"3x3xf64"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kCholesky, Ts({"3xf64"}), Ts({"3xf64"})).module,
                      "stablehlo.cholesky", "2 <= rank(a)"));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kCholesky, Ts({"3x3xi32"}), Ts({"3x3xi32"})).module,
                      "stablehlo.cholesky", "floating-point or complex"));
}

TEST(VerifierLinalg, Rng) {
  Prog p = OneOp(OpCode::kRngBitGenerator, Ts({"2xui64"}), Ts({"2xui64", "4x4xui32"}));
  p.op->attrs().Set("rng_algorithm", Enum("rng_algorithm", "THREE_FRY"));
  EXPECT_TRUE(Verifies(*p.module));
  Prog q = OneOp(OpCode::kRngBitGenerator, Ts({"3xui64"}), Ts({"3xui64", "4x4xui32"}));
  q.op->attrs().Set("rng_algorithm", Enum("rng_algorithm", "THREE_FRY"));
  EXPECT_TRUE(
      Rejects(*q.module, "stablehlo.rng_bit_generator", "initial_state of size 2 for THREE_FRY"));
  q.op->attrs().Set("rng_algorithm", Enum("rng_algorithm", "PHILOX"));
  EXPECT_TRUE(Verifies(*q.module));
  Prog r = OneOp(OpCode::kRngBitGenerator, Ts({"2xui64"}), Ts({"3xui64", "4x4xui32"}));
  r.op->attrs().Set("rng_algorithm", Enum("rng_algorithm", "DEFAULT"));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.rng_bit_generator",
                      "type(initial_state) = type(output_state)"));

  Prog s = OneOp(OpCode::kRng, Ts({"f32", "f32", "2xi64"}), Ts({"3x4xf32"}));
  s.op->attrs().Set("rng_distribution", Enum("rng_distribution", "NORMAL"));
  EXPECT_TRUE(Verifies(*s.module));
  Prog t = OneOp(OpCode::kRng, Ts({"i32", "i32", "2xi64"}), Ts({"3x4xi32"}));
  t.op->attrs().Set("rng_distribution", Enum("rng_distribution", "NORMAL"));
  EXPECT_TRUE(Rejects(*t.module, "stablehlo.rng", "floating-point a for NORMAL"));
  t.op->attrs().Set("rng_distribution", Enum("rng_distribution", "UNIFORM"));
  EXPECT_TRUE(Verifies(*t.module));
  Prog u = OneOp(OpCode::kRng, Ts({"f32", "f32", "3xi64"}), Ts({"3x4xf32"}));
  u.op->attrs().Set("rng_distribution", Enum("rng_distribution", "UNIFORM"));
  EXPECT_TRUE(Rejects(*u.module, "stablehlo.rng", "rank(result) = 2 elements"));
}

TEST(VerifierLinalg, BatchNorm) {
  auto set = [](Prog& p) {
    p.op->attrs().Set("feature_index", I64(1));
    p.op->attrs().Set("epsilon", FloatAttr{1e-5, DType::kF32});
  };
  Prog inf = OneOp(OpCode::kBatchNormInference,
                   Ts({"2x3x4xf32", "3xf32", "3xf32", "3xf32", "3xf32"}), Ts({"2x3x4xf32"}));
  set(inf);
  EXPECT_TRUE(Verifies(*inf.module));
  inf.op->attrs().Set("feature_index", I64(2));
  EXPECT_TRUE(Rejects(*inf.module, "stablehlo.batch_norm_inference",
                      "size dim(operand, feature_index) = 4, got tensor<3xf32>"));
  inf.op->attrs().Set("feature_index", I64(3));
  EXPECT_TRUE(Rejects(*inf.module, "stablehlo.batch_norm_inference",
                      "0 <= feature_index < rank(operand) = 3"));
  inf.op->attrs().Remove("epsilon");
  EXPECT_TRUE(
      Rejects(*inf.module, "stablehlo.batch_norm_inference", "requires attribute 'epsilon'"));

  Prog tr = OneOp(OpCode::kBatchNormTraining, Ts({"2x3xf32", "3xf32", "3xf32"}),
                  Ts({"2x3xf32", "3xf32", "3xf32"}));
  set(tr);
  EXPECT_TRUE(Verifies(*tr.module));
  Prog tr2 = OneOp(OpCode::kBatchNormTraining, Ts({"2x3xf32", "3xf32", "3xf32"}),
                   Ts({"2x3xf32", "3xf16", "3xf32"}));
  set(tr2);
  EXPECT_TRUE(Rejects(*tr2.module, "stablehlo.batch_norm_training", "one element type"));

  Prog gr = OneOp(OpCode::kBatchNormGrad, Ts({"2x3xf32", "3xf32", "3xf32", "3xf32", "2x3xf32"}),
                  Ts({"2x3xf32", "3xf32", "3xf32"}));
  set(gr);
  EXPECT_TRUE(Verifies(*gr.module));
  Prog gr2 = OneOp(OpCode::kBatchNormGrad, Ts({"2x3xf32", "3xf32", "3xf32", "3xf32", "3x2xf32"}),
                   Ts({"2x3xf32", "3xf32", "3xf32"}));
  set(gr2);
  EXPECT_TRUE(Rejects(*gr2.module, "stablehlo.batch_norm_grad",
                      "operand, grad_output and grad_operand of one type"));
}

// ---------------------------------------------------------------------------
// Control flow, tuples, tokens, calls.

Prog CountdownWhile() {
  Prog p = OneOp(OpCode::kWhile, Ts({"i32", "4xf32"}), Ts({"i32", "4xf32"}));
  AddRegion(*p.op, Ts({"i32", "4xf32"}), [](Block& b) {
    Op& c = AddOp(b, OpCode::kCompare, {b.arg(0), b.arg(0)}, Ts({"i1"}), 7);
    c.attrs().Set("comparison_direction", Enum("comparison_direction", "GT"));
    return Results(c);
  });
  AddRegion(*p.op, Ts({"i32", "4xf32"}), [](Block& b) {
    Op& s = AddOp(b, OpCode::kSubtract, {b.arg(0), b.arg(0)}, Ts({"i32"}), 7);
    return std::vector<Value*>{s.result(0), b.arg(1)};
  });
  return p;
}

TEST(VerifierControlFlow, While) {
  Prog p = CountdownWhile();
  EXPECT_TRUE(Verifies(*p.module));
  Block& body = p.op->region(1).block(0);
  body.terminator()->set_operand(1, body.arg(0));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.while",
                      "'body' region to return tensor<4xf32> as value #1, got tensor<i32>"));
  Prog q = CountdownWhile();
  q.op->region(0).block(0).terminator()->set_operand(0, q.op->region(0).block(0).arg(0));
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.while", "'cond' region to return one tensor<i1>"));
  Prog r = OneOp(OpCode::kWhile, Ts({"i32"}), Ts({"i32"}));
  AddRegion(*r.op, Ts({"i64"}), [](Block& b) { return std::vector<Value*>{}; });
  AddRegion(*r.op, Ts({"i32"}), [](Block& b) { return Args(b); });
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.while",
                      "argument #0 of the 'cond' region to be tensor<i32>, got tensor<i64>"));
  Prog s = OneOp(OpCode::kWhile, Ts({"i32"}), Ts({"f32"}));
  EXPECT_TRUE(Rejects(*s.module, "stablehlo.while", "requires 2 regions, got 0"));
}

TEST(VerifierControlFlow, IfAndCase) {
  Prog p = OneOp(OpCode::kIf, Ts({"i1", "f32"}), Ts({"f32"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.if", "requires 1 operands, got 2"));
  // Branches returning a value defined before the if.
  Prog r;
  r.fn = &AddFunc(*r.module, "main", Ts({"i1"}), Ts({"f32"}));
  Op& k = AddOp(r.body(), OpCode::kConstant, {}, Ts({"f32"}), 2);
  k.attrs().Set("value", Zeros(T("f32")));
  r.op = &AddOp(r.body(), OpCode::kIf, {r.body().arg(0)}, Ts({"f32"}));
  AddRegion(*r.op, {}, [&](Block&) { return Results(k); });
  AddRegion(*r.op, {}, [&](Block& b) {
    return Results(AddOp(b, OpCode::kNegate, {k.result(0)}, Ts({"f32"}), 7));
  });
  AddOp(r.body(), OpCode::kFuncReturn, Results(*r.op), {}, 9);
  EXPECT_TRUE(Verifies(*r.module));
  r.op->region(1).block(0).terminator()->set_operand(0, r.body().arg(0));
  EXPECT_TRUE(Rejects(*r.module, "stablehlo.if",
                      "'branch #1' region to return tensor<f32> as value #0, got tensor<i1>"));
  Prog q = OneOp(OpCode::kIf, Ts({"i32"}), {});
  AddRegion(*q.op, {}, [](Block&) { return std::vector<Value*>{}; });
  AddRegion(*q.op, {}, [](Block&) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Rejects(*q.module, "stablehlo.if", "pred of type tensor<i1>, got tensor<i32>"));

  Prog s = OneOp(OpCode::kCase, Ts({"i32"}), {});
  AddRegion(*s.op, {}, [](Block&) { return std::vector<Value*>{}; });
  AddRegion(*s.op, {}, [](Block&) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Verifies(*s.module));
  Prog t = OneOp(OpCode::kCase, Ts({"i64"}), {});
  AddRegion(*t.op, {}, [](Block&) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Rejects(*t.module, "stablehlo.case", "index of type tensor<i32>, got tensor<i64>"));
  Prog u = OneOp(OpCode::kCase, Ts({"i32"}), {});
  EXPECT_TRUE(Rejects(*u.module, "stablehlo.case", "at least one branch"));
  Prog v = OneOp(OpCode::kCase, Ts({"i32"}), {});
  AddRegion(*v.op, Ts({"f32"}), [](Block&) { return std::vector<Value*>{}; });
  EXPECT_TRUE(Rejects(*v.module, "stablehlo.case", "branch #0 to take no arguments"));
}

TEST(VerifierTuples, TupleAndGetTupleElement) {
  const Type tuple = Type::Tuple(Ts({"f32", "2xi32"}));
  Prog p = OneOp(OpCode::kTuple, Ts({"f32", "2xi32"}), {tuple});
  EXPECT_TRUE(Verifies(*p.module));
  Prog q = OneOp(OpCode::kTuple, Ts({"f32", "2xi32"}), {Type::Tuple(Ts({"f32"}))});
  EXPECT_TRUE(
      Rejects(*q.module, "stablehlo.tuple", "result type tuple<tensor<f32>, tensor<2xi32>>"));
  Prog g = OneOp(OpCode::kGetTupleElement, {tuple}, Ts({"2xi32"}));
  g.op->attrs().Set("index", IntegerAttr{1, DType::kS32});
  EXPECT_TRUE(Verifies(*g.module));
  g.op->attrs().Set("index", IntegerAttr{2, DType::kS32});
  EXPECT_TRUE(
      Rejects(*g.module, "stablehlo.get_tuple_element", "0 <= index < size(operand) = 2, got 2"));
  g.op->attrs().Set("index", IntegerAttr{0, DType::kS32});
  EXPECT_TRUE(Rejects(*g.module, "stablehlo.get_tuple_element", "element #0 of tuple<"));
}

TEST(VerifierTokens, TokensBarrierFeeds) {
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kAfterAll, Ts({"token", "token"}), Ts({"token"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kAfterAll, Ts({"f32"}), Ts({"token"})).module,
                      "stablehlo.after_all", "token operands"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kCreateToken, {}, Ts({"token"})).module));
  EXPECT_TRUE(Verifies(
      *OneOp(OpCode::kOptimizationBarrier, Ts({"f32", "token"}), Ts({"f32", "token"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kOptimizationBarrier, Ts({"f32"}), Ts({"i32"})).module,
                      "stablehlo.optimization_barrier", "type(operand...) = type(result...)"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kInfeed, Ts({"token"}), Ts({"2xf32", "token"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kInfeed, Ts({"token"}), Ts({"token", "2xf32"})).module,
                      "stablehlo.infeed", "tensor results before the token"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kOutfeed, Ts({"2xf32", "token"}), Ts({"token"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kOutfeed, Ts({"token", "2xf32"}), Ts({"token"})).module,
                      "stablehlo.outfeed", "last operand to be a token"));
  EXPECT_TRUE(Verifies(*OneOp(OpCode::kReplicaId, {}, Ts({"ui32"})).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kPartitionId, {}, Ts({"i32"})).module,
                      "stablehlo.partition_id", "tensor<ui32>"));
}

TEST(VerifierCalls, FuncCall) {
  Module m;
  Function& callee = AddFunc(m, "helper", Ts({"f32"}), Ts({"2xf32"}), "private");
  {
    Block& b = callee.body().block(0);
    Op& bc = AddOp(b, OpCode::kBroadcastInDim, {b.arg(0)}, Ts({"2xf32"}));
    bc.attrs().Set("broadcast_dimensions", I64s({}));
    AddOp(b, OpCode::kFuncReturn, Results(bc), {});
  }
  Function& main = AddFunc(m, "main", Ts({"f32"}), Ts({"2xf32"}));
  Block& b = main.body().block(0);
  Op& call = AddOp(b, OpCode::kFuncCall, {b.arg(0)}, Ts({"2xf32"}));
  call.attrs().Set("callee", SymbolRefAttr{"helper"});
  AddOp(b, OpCode::kFuncReturn, Results(call), {});
  EXPECT_TRUE(Verifies(m));
  call.attrs().Set("callee", SymbolRefAttr{"nope"});
  EXPECT_TRUE(Rejects(m, "func.call", "calls @nope, which is not a function of this module"));
  call.attrs().Set("callee", StringAttr{"helper"});
  EXPECT_TRUE(Rejects(m, "func.call", "'callee' to be a symbol reference"));
  call.attrs().Set("callee", SymbolRefAttr{"main"});
  EXPECT_TRUE(Verifies(m));  // recursion is allowed
  call.attrs().Remove("callee");
  EXPECT_TRUE(Rejects(m, "func.call", "requires attribute 'callee'"));
}

TEST(VerifierCalls, FuncCallTypes) {
  Module m;
  Function& callee = AddFunc(m, "id", Ts({"f32"}), Ts({"f32"}), "private");
  AddOp(callee.body().block(0), OpCode::kFuncReturn, {callee.body().block(0).arg(0)}, {});
  Function& main = AddFunc(m, "main", Ts({"i32"}), Ts({"f32"}));
  Block& b = main.body().block(0);
  Op& call = AddOp(b, OpCode::kFuncCall, {b.arg(0)}, Ts({"f32"}));
  call.attrs().Set("callee", SymbolRefAttr{"id"});
  AddOp(b, OpCode::kFuncReturn, Results(call), {});
  EXPECT_TRUE(Rejects(m, "func.call", "requires the types of @id"));
}

TEST(VerifierCall, StaticCallOfDynamicCalleeTakesCompatibleTypes) {
  // A shape-polymorphic export (tensor<?xf32>) called with a concrete value.
  const char* ok = R"(
func.func @main() -> tensor<3xf32> {
  %x = stablehlo.constant dense<1.0> : tensor<3xf32>
  %0 = func.call @poly(%x) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @poly(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
})";
  auto m = frontend::ParseModule(ok);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_TRUE(VerifyModule(**m).ok()) << VerifyModule(**m).ToString();
  // Incompatible: another rank.
  auto bad = frontend::ParseModule(R"(
func.func @main() -> tensor<3x1xf32> {
  %x = stablehlo.constant dense<1.0> : tensor<3x1xf32>
  %0 = func.call @poly(%x) : (tensor<3x1xf32>) -> tensor<3x1xf32>
  return %0 : tensor<3x1xf32>
}
func.func private @poly(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
})");
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  Status s = VerifyModule(**bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("requires the types of @poly"), std::string::npos) << s.message();
}

TEST(VerifierCollectives, CollectiveBroadcastWithDynamicRoot) {
  auto verify = [](const std::string& sig, const std::string& roots) {
    auto m = frontend::ParseModule(R"(
func.func @main(%a: tensor<2xf32>, %b: tensor<i64>, %r: )" + roots + R"() -> ()" + sig + R"() {
  %0:2 = "stablehlo.collective_broadcast"(%a, %b, %r) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, has_dynamic_root} : (tensor<2xf32>, tensor<i64>, )" + roots + R"() -> ()" + sig + R"()
  return %0#0, %0#1 : )" + sig + R"(
})");
    return m.ok() ? VerifyModule(**m) : m.status();
  };
  EXPECT_TRUE(verify("tensor<2xf32>, tensor<i64>", "tensor<2xi32>").ok());
  Status roots = verify("tensor<2xf32>, tensor<i64>", "tensor<3xi32>");
  ASSERT_FALSE(roots.ok());
  EXPECT_NE(roots.message().find("last operand to be tensor<2xi32>"), std::string::npos) << roots.message();
  Status types = verify("tensor<2xf32>, tensor<i32>", "tensor<2xi32>");
  ASSERT_FALSE(types.ok());
  EXPECT_NE(types.message().find("result #1"), std::string::npos) << types.message();
}

TEST(VerifierCustom, CustomCallTopKAndChecks) {
  Prog p = OneOp(OpCode::kCustomCall, Ts({"2xf32", "token"}), Ts({"3xi8", "token"}));
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.custom_call", "requires attribute 'call_target_name'"));
  p.op->attrs().Set("call_target_name", StringAttr{"anything"});
  EXPECT_TRUE(Verifies(*p.module));
  p.op->attrs().Set("has_side_effect", StringAttr{"yes"});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.custom_call", "'has_side_effect' to be a boolean"));

  Prog t = OneOp(OpCode::kChloTopK, Ts({"5x8xf32"}), Ts({"5x3xf32", "5x3xi32"}));
  t.op->attrs().Set("k", I64(3));
  EXPECT_TRUE(Verifies(*t.module));
  t.op->attrs().Set("k", I64(9));
  EXPECT_TRUE(Rejects(*t.module, "chlo.top_k", "0 <= k <= the operand's last dimension 8, got 9"));
  Prog u = OneOp(OpCode::kChloTopK, Ts({"5x8xf32"}), Ts({"5x3xf32", "5x3xi64"}));
  u.op->attrs().Set("k", I64(3));
  EXPECT_TRUE(Rejects(*u.module, "chlo.top_k", "indices of type tensor<5x3xi32>"));

  EXPECT_TRUE(Verifies(*OneOp(OpCode::kCheckExpectEq, Ts({"2xf32", "2xf32"}), {}).module));
  EXPECT_TRUE(Rejects(*OneOp(OpCode::kCheckExpectEq, Ts({"2xf32", "2xf64"}), {}).module,
                      "check.expect_eq", "operands of one type"));
  Prog c = OneOp(OpCode::kCheckExpectAlmostEqConst, Ts({"2xf32"}), {});
  c.op->attrs().Set("value", Zeros(T("2xf32")));
  c.op->attrs().Set("tolerance", FloatAttr{1e-3, DType::kF32});
  EXPECT_TRUE(Verifies(*c.module));
  c.op->attrs().Set("value", Zeros(T("3xf32")));
  EXPECT_TRUE(
      Rejects(*c.module, "check.expect_almost_eq_const", "type of 'value' to equal tensor<2xf32>"));
  Prog d = OneOp(OpCode::kCheckExpectClose, Ts({"f32", "f32"}), {});
  d.op->attrs().Set("min_ulp_difference", I64(4));
  d.op->attrs().Set("max_ulp_difference", I64(2));
  EXPECT_TRUE(Rejects(*d.module, "check.expect_close", "min_ulp_difference <= max_ulp_difference"));
  Prog e = OneOp(OpCode::kCheckExpectEq, Ts({"f32", "f32"}), Ts({"f32"}));
  EXPECT_TRUE(Rejects(*e.module, "check.expect_eq", "requires 0 results, got 1"));
}

// ---------------------------------------------------------------------------
// Malformed IR: every op with odd operand counts and every attribute of the
// wrong kind must fail (or pass) without crashing.

TEST(VerifierRobustness, EveryOpWithGarbageNeverCrashes) {
  const std::vector<std::string_view> names = {"broadcast_dimensions",
                                               "permutation",
                                               "dimensions",
                                               "start_indices",
                                               "limit_indices",
                                               "strides",
                                               "slice_sizes",
                                               "edge_padding_low",
                                               "edge_padding_high",
                                               "interior_padding",
                                               "window_dimensions",
                                               "window_strides",
                                               "base_dilations",
                                               "window_dilations",
                                               "padding",
                                               "lhs_dilation",
                                               "rhs_dilation",
                                               "window_reversal",
                                               "fft_length",
                                               "fft_type",
                                               "iota_dimension",
                                               "dimension",
                                               "index",
                                               "k",
                                               "feature_group_count",
                                               "batch_group_count",
                                               "exponent_bits",
                                               "mantissa_bits",
                                               "feature_index",
                                               "epsilon",
                                               "comparison_direction",
                                               "compare_type",
                                               "precision_config",
                                               "rng_algorithm",
                                               "rng_distribution",
                                               "transpose_a",
                                               "left_side",
                                               "lower",
                                               "unit_diagonal",
                                               "is_stable",
                                               "dot_dimension_numbers",
                                               "dimension_numbers",
                                               "scatter_dimension_numbers",
                                               "value",
                                               "callee",
                                               "call_target_name",
                                               "broadcast_sizes",
                                               "tolerance",
                                               "min_ulp_difference",
                                               "max_ulp_difference"};
  const int64_t kBig = std::numeric_limits<int64_t>::max();
  const std::vector<Attribute> garbage = {
      UnitAttr{},
      true,
      I64(kBig),
      I64(-kBig),
      FloatAttr{1.0, DType::kF32},
      StringAttr{"x"},
      I64s({kBig, -kBig, 0, 1, 63, 64}),
      I64s({}),
      DenseArrayAttr{DType::kPred, {1, 0}, {}},
      ArrayAttr{{I64(1)}},
      Enum("x", "EQ"),
      Enum("x", "PHILOX"),
      Struct("stablehlo.gather", {Field("offset_dims", {kBig}), Scalar("index_vector_dim", -5)}),
      Struct("stablehlo.scatter", {Field("update_window_dims", {-1})}),
      Struct("stablehlo.dot", {Field("lhs_contracting_dimensions", {64})}),
      ConvDimensionNumbers{kBig, -1, {kBig}, 0, 0, {}, 99, 1, {1, 2, 3}},
      Padding({{kBig, kBig}, {-kBig, kBig}}),
      Zeros(T("2x3xf32")),
      DenseResourceAttr{"r", T("2xf32")},
      SymbolRefAttr{"main"}};
  const std::vector<std::vector<Type>> operand_sets = {
      {},
      Ts({"f32"}),
      Ts({"2x3xf32", "2x3xf32"}),
      Ts({"2x3xi32", "i32", "3xf32"}),
      Ts({"1x2x3x4xf32", "4x3x2x1xf32", "f32", "i1", "token"}),
      {Type::Tuple(Ts({"f32"})), T("token")}};
  const std::vector<std::vector<Type>> result_sets = {
      {}, Ts({"f32"}), Ts({"2x3xf32"}), Ts({"2x3xf32", "3xi32"}), Ts({"token"})};
  int verified = 0, rejected = 0;
  auto run = [&](OpCode code, const std::vector<Type>& operands, const std::vector<Type>& results,
                 const Attribute* attr, bool region) {
    Prog p = OneOp(code, operands, results);
    if (attr) {
      for (auto name : names) p.op->attrs().Set(std::string(name), *attr);
    }
    if (region) {  // of a mismatched shape
      AddRegion(*p.op, Ts({"f32", "f32"}), [](Block& b) { return std::vector<Value*>{b.arg(0)}; });
    }
    Status s = VerifyModule(*p.module);
    (s.ok() ? verified : rejected) += 1;
    if (!s.ok()) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find("' op "), std::string::npos) << s.message();
    }
  };
  for (size_t c = 0; c <= static_cast<size_t>(OpCode::kCheckExpectSerializedEq); ++c) {
    const OpCode code = static_cast<OpCode>(c);
    for (const auto& operands : operand_sets) {
      for (const auto& results : result_sets) run(code, operands, results, nullptr, false);
    }
    for (size_t g = 0; g < garbage.size(); ++g) {
      run(code, operand_sets[g % operand_sets.size()], result_sets[(g / 2) % result_sets.size()],
          &garbage[g], g % 3 == 1);
    }
  }
  EXPECT_GT(rejected, 0);
  EXPECT_GT(verified, 0);
}

// Hand-built IR with values no parser produces: out-of-range element types
// and op codes, null dense data.
TEST(VerifierRobustness, OutOfRangeEnumsAndNullData) {
  const DType bad_dtype = static_cast<DType>(250);
  DenseElementsAttr null_data;
  null_data.type = Type::Tensor(bad_dtype, {2});
  Prog p = OneOp(OpCode::kIota, {}, Ts({"4xi32"}));
  p.op->attrs().Set("iota_dimension", null_data);
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.iota", "got dense elements <dense elements>"));
  p.op->attrs().Set("iota_dimension", DenseArrayAttr{bad_dtype, {1}, {}});
  EXPECT_TRUE(Rejects(*p.module, "stablehlo.iota", "got dense array <dense array>"));
  p.op->attrs().Set("iota_dimension", IntegerAttr{7, bad_dtype});
  EXPECT_TRUE(
      Rejects(*p.module, "stablehlo.iota", "0 <= iota_dimension < rank(result) = 1, got 7"));

  Prog c = OneOp(OpCode::kConstant, {}, Ts({"2xf32"}));
  c.op->attrs().Set("value", null_data);
  EXPECT_TRUE(Rejects(*c.module, "stablehlo.constant", "'value' of an invalid type"));
  Prog w = MaxPool();
  w.op->attrs().Set("padding", null_data);
  EXPECT_TRUE(Rejects(*w.module, "stablehlo.reduce_window", "padding of an invalid type"));

  // A function body ending in an op with an op code outside ops.def.
  Module m;
  Function& f = AddFunc(m, "main", {}, {});
  AddOp(f.body().block(0), static_cast<OpCode>(60000), {}, {});
  EXPECT_TRUE(Rejects(m, "func.func", "got '<invalid op>'"));
  AddOp(f.body().block(0), OpCode::kFuncReturn, {}, {});
  Status s = VerifyModule(m);
  EXPECT_NE(s.message().find("op with an invalid op code"), std::string::npos) << s.message();

  // A call to a function whose signature is broken reports the signature.
  Module n;
  Function& g = AddFunc(n, "main", {}, {});
  Op& call = AddOp(g.body().block(0), OpCode::kFuncCall, {}, {});
  call.attrs().Set("callee", SymbolRefAttr{"broken"});
  AddOp(g.body().block(0), OpCode::kFuncReturn, {}, {});
  Function& broken = AddFunc(n, "broken", {}, {}, "private");
  broken.result_types().push_back(Type::Tensor(bad_dtype, {}));
  EXPECT_TRUE(Rejects(n, "func.func", "@broken has an invalid type in its signature"));
}

// stablehlo.if ops nested `depth` deep (the op at nesting level d on line
// 100 + d), each returning %x from its innermost region.
std::unique_ptr<Module> NestedIfs(int depth) {
  auto m = std::make_unique<Module>();
  Function& f = AddFunc(*m, "main", Ts({"i1", "f32"}), Ts({"f32"}));
  Block& body = f.body().block(0);
  Value* p = body.arg(0);
  Value* x = body.arg(1);
  std::vector<std::pair<Block*, Op*>> levels;
  Block* at = &body;
  for (int d = 0; d < depth; ++d) {
    Op& op = AddOp(*at, OpCode::kIf, {p}, Ts({"f32"}), static_cast<uint32_t>(100 + d));
    levels.push_back({at, &op});
    Block& then = op.add_region().add_block();
    Block& other = op.add_region().add_block();
    AddOp(other, OpCode::kReturn, {x}, {});
    at = &then;
  }
  AddOp(*at, OpCode::kReturn, {x}, {});
  for (size_t i = levels.size(); i-- > 0;) {
    AddOp(*levels[i].first, i == 0 ? OpCode::kFuncReturn : OpCode::kReturn,
          {levels[i].second->result(0)}, {});
  }
  return m;
}

// Regions nest at most kMaxRegionNesting deep, whatever built the IR; the
// check comes before descending, so deeper IR costs no deeper recursion.
TEST(VerifierRobustness, RegionsNestAtMostTheLimit) {
  EXPECT_TRUE(Verifies(*NestedIfs(kMaxRegionNesting)));
  for (int depth : {kMaxRegionNesting + 1, 2000}) {
    Status s = VerifyModule(*NestedIfs(depth));
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(),
              "164:5: 'stablehlo.if' op has regions nested deeper than the limit of 64 levels");
  }
}

// A long chain verifies, and failures deep inside nesting are still found.
TEST(VerifierRobustness, LongChainAndNestedFailure) {
  Module m;
  Function& f = AddFunc(m, "main", Ts({"4xf32"}), Ts({"4xf32"}));
  Block& b = f.body().block(0);
  Value* v = b.arg(0);
  for (int i = 0; i < 20000; ++i) v = AddOp(b, OpCode::kNegate, {v}, Ts({"4xf32"})).result(0);
  AddOp(b, OpCode::kFuncReturn, {v}, {});
  EXPECT_TRUE(Verifies(m));

  // A bad op inside a reduce body inside a while body.
  Prog p = OneOp(OpCode::kWhile, Ts({"4xf32"}), Ts({"4xf32"}));
  AddRegion(*p.op, Ts({"4xf32"}), [](Block& b) {
    Op& c = AddOp(b, OpCode::kConstant, {}, Ts({"i1"}), 6);
    c.attrs().Set("value", Zeros(T("i1")));
    return Results(c);
  });
  AddRegion(*p.op, Ts({"4xf32"}), [](Block& b) {
    Op& r = AddOp(b, OpCode::kReduce, {b.arg(0), b.arg(0)}, Ts({"f32"}), 6);
    r.attrs().Set("dimensions", I64s({0}));
    AddRegion(r, Ts({"f32", "f32"}), [](Block& inner) {
      return Results(AddOp(inner, OpCode::kAdd, {inner.arg(0)}, Ts({"f32"}), 42));
    });
    return Args(b);
  });
  Status s = VerifyModule(*p.module);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind("42:5: 'stablehlo.add' op requires 2 operands", 0), 0u)
      << s.message();
}

}  // namespace
}  // namespace jitd::ir
