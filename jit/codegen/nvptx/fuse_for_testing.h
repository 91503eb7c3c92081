// Test-only helpers shared by the NVPTX codegen tests (kernel_plan_test,
// nvptx_kernel_test, grid_kernel_host_test): a module parsed and fused as
// the NVPTX backend fuses it, the kernel specs of its fusion ops, and the
// small programs several of those tests use. Header-only; failures are
// reported through GoogleTest's EXPECT_*, so include it from tests only.
#ifndef JITD_JIT_CODEGEN_NVPTX_FUSE_FOR_TESTING_H_
#define JITD_JIT_CODEGEN_NVPTX_FUSE_FOR_TESTING_H_

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jit/codegen/fusion.h"
#include "jit/codegen/nvptx/nvptx_target_math.h"
#include "jit/frontend/parser.h"
#include "jit/passes/fusion.h"

namespace jitd::codegen {

// A module fused for NVPTX, the specs of its jitd.fusion ops in order, and
// the op each spec came from. The specs and ops point into `module`.
struct Fused {
  std::unique_ptr<ir::Module> module;
  std::vector<KernelSpec> specs;
  std::vector<const ir::Op*> fusions;
};

// Parses `text`, fuses it with NvptxFusionPolicy and collects a spec per
// fusion op of the entry function. A parse or fusion failure, or a fusion
// op NVPTX cannot emit, fails the test (the result then holds what it got).
inline Fused FuseForNvptx(const std::string& text) {
  Fused f;
  auto parsed = frontend::ParseModule(text);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << text;
  if (!parsed.ok()) return f;
  f.module = std::move(parsed).value();
  Status fused = passes::FuseModule(*f.module, NvptxFusionPolicy());
  EXPECT_TRUE(fused.ok()) << fused.message();
  for (const auto& op : f.module->EntryFunction()->entry()->ops()) {
    if (op->code() != ir::OpCode::kFusion) continue;
    std::optional<KernelSpec> spec = KernelSpecOfFusion(*op, NvptxMath());
    EXPECT_TRUE(spec.has_value()) << "a fusion op NVPTX cannot emit at " << op->loc().ToString();
    if (!spec) continue;
    f.specs.push_back(*spec);
    f.fusions.push_back(op.get());
  }
  return f;
}

// x * y + x over tensors of `dims` (e.g. "1024x1024") of element type `t`:
// one two-input elementwise fusion.
inline std::string MultiplyAdd(const std::string& dims, const std::string& t) {
  const std::string type = "tensor<" + dims + "x" + t + ">";
  return "func.func @main(%x: " + type + ", %y: " + type + ") -> " + type + " {\n" +
         "  %0 = stablehlo.multiply %x, %y : " + type + "\n" +
         "  %1 = stablehlo.add %0, %x : " + type + "\n" +
         "  return %1 : " + type + "\n}";
}

inline std::string MultiplyAdd(int64_t n, const std::string& t) { return MultiplyAdd(std::to_string(n), t); }

// The f32 sum of each row of a `rows` x `cols` tensor (a reduce over
// dimension 1 starting from 0).
inline std::string RowSums(int64_t rows, int64_t cols) {
  const std::string in = "tensor<" + std::to_string(rows) + "x" + std::to_string(cols) + "xf32>";
  const std::string out = "tensor<" + std::to_string(rows) + "xf32>";
  return "func.func @main(%x: " + in + ") -> " + out + " {\n" +
         "  %zero = stablehlo.constant dense<0.0> : tensor<f32>\n" +
         "  %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (" + in +
         ", tensor<f32>) -> " + out + "\n" +
         "  return %0 : " + out + "\n}";
}

// How many times `what` occurs in `text` (overlapping occurrences count).
inline size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace jitd::codegen

#endif  // JITD_JIT_CODEGEN_NVPTX_FUSE_FOR_TESTING_H_
