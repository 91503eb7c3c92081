// DeclareKernel / FinishKernel: the kernel's function and its
// nvvm.annotations entries come and go together.
#include "jit/codegen/nvptx/kernel_function.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jit/frontend/testing.h"
#include "llvm/IR/BasicBlock.h"
#include "llvm/IR/CallingConv.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Metadata.h"
#include "llvm/IR/Module.h"

namespace jitd::codegen {
namespace {

using frontend::testing::ParseOrFail;

// The names of the functions nvvm.annotations entries name, in order
// ("?" for an entry that names none).
std::vector<std::string> Annotated(const llvm::Module& module) {
  std::vector<std::string> names;
  const llvm::NamedMDNode* annotations = module.getNamedMetadata("nvvm.annotations");
  if (annotations == nullptr) return names;
  for (const llvm::MDNode* node : annotations->operands()) {
    const auto* v = node->getNumOperands() > 0
                        ? llvm::dyn_cast_or_null<llvm::ValueAsMetadata>(node->getOperand(0))
                        : nullptr;
    names.push_back(v != nullptr && v->getValue() != nullptr ? v->getValue()->getName().str() : "?");
  }
  return names;
}

// A body that returns at once.
void ReturnAtOnce(llvm::Function* fn) {
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(fn->getContext(), "entry", fn));
  b.CreateRetVoid();
}

class KernelFunctionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = ParseOrFail(
        "func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %r = stablehlo.negate %a : tensor<4xf32>\n"
        "  return %r : tensor<4xf32>\n}\n");
    ASSERT_NE(program_, nullptr);
    op_ = program_->EntryFunction()->body().block(0).ops()[0].get();
  }

  llvm::LLVMContext ctx_;
  llvm::Module module_{"kernels", ctx_};
  std::unique_ptr<ir::Module> program_;
  const ir::Op* op_ = nullptr;
};

TEST_F(KernelFunctionTest, DeclaresAGlobalPointerKernelWithItsAnnotation) {
  llvm::Function* fn = DeclareKernel(module_, "k", 4, {1, 3}, 16);
  ASSERT_EQ(fn->arg_size(), 4u);
  EXPECT_EQ(fn->getCallingConv(), llvm::CallingConv::PTX_Kernel);
  EXPECT_TRUE(fn->hasFnAttribute(llvm::Attribute::NoUnwind));
  for (unsigned i = 0; i < 4; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(fn->getArg(i)->getType()->getPointerAddressSpace(), 1u);
    EXPECT_TRUE(fn->hasParamAttribute(i, llvm::Attribute::NoAlias));
    EXPECT_EQ(fn->hasParamAttribute(i, llvm::Attribute::ReadOnly), i == 1 || i == 2);
    EXPECT_EQ(fn->getParamAlign(i).valueOrOne().value(), 16u);
  }
  EXPECT_EQ(Annotated(module_), (std::vector<std::string>{"k"}));
}

TEST_F(KernelFunctionTest, AVerifiedKernelStays) {
  llvm::Function* fn = DeclareKernel(module_, "k", 2, {0, 1});
  ReturnAtOnce(fn);
  EXPECT_TRUE(FinishKernel(module_, fn, Status::Ok(), *op_).ok());
  EXPECT_NE(module_.getFunction("k"), nullptr);
  EXPECT_EQ(Annotated(module_), (std::vector<std::string>{"k"}));
}

TEST_F(KernelFunctionTest, AnEmitterErrorTakesOutOnlyThatKernel) {
  llvm::Function* kept = DeclareKernel(module_, "kept", 1, {0, 0});
  ReturnAtOnce(kept);
  llvm::Function* fn = DeclareKernel(module_, "failed", 2, {0, 1});
  // A second entry naming it, as the grid emitter adds (maxntidx).
  module_.getOrInsertNamedMetadata("nvvm.annotations")
      ->addOperand(llvm::MDNode::get(ctx_, {llvm::ValueAsMetadata::get(fn), llvm::MDString::get(ctx_, "maxntidx")}));
  ReturnAtOnce(fn);
  const Status status = FinishKernel(module_, fn, Unimplemented("no such op"), *op_);
  EXPECT_EQ(status.code(), StatusCode::kUnimplemented);
  EXPECT_EQ(module_.getFunction("failed"), nullptr);
  EXPECT_NE(module_.getFunction("kept"), nullptr);
  EXPECT_EQ(Annotated(module_), (std::vector<std::string>{"kept"}));
}

TEST_F(KernelFunctionTest, InvalidIrIsAnInternalErrorNamingTheOp) {
  llvm::Function* fn = DeclareKernel(module_, "broken", 1, {0, 0});
  llvm::BasicBlock::Create(ctx_, "entry", fn);  // no terminator
  const Status status = FinishKernel(module_, fn, Status::Ok(), *op_);
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_NE(status.message().find("invalid NVPTX IR for 'stablehlo.negate' at "), std::string::npos)
      << status.message();
  EXPECT_EQ(module_.getFunction("broken"), nullptr);
  EXPECT_TRUE(Annotated(module_).empty());
}

}  // namespace
}  // namespace jitd::codegen
