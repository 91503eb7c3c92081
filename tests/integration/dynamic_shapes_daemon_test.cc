// A shape-polymorphic program (`?` batch dimension, as jax.export writes
// them) through a real `jitd serve` and the C++ client (issue 16, item 3):
// the compile request's argument_shapes refine it, one cache entry per
// concrete shape; without them, or with shapes that contradict the
// program, the compile fails naming the argument.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "libclient/client.h"
#include "tests/integration/daemon_process.h"

namespace jitd::testing {
namespace {

// y = x @ w + 1 for x of shape (b, 4); s = the sum of y over b.
constexpr char kPoly[] = R"(module @jit_f attributes {jax.uses_shape_polymorphism = true} {
  func.func public @main(%x: tensor<?x4xf32>, %w: tensor<4x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>) {
    %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<?x4xf32>, tensor<4x3xf32>) -> tensor<?x3xf32>
    %one = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %b = stablehlo.get_dimension_size %x, dim = 0 : (tensor<?x4xf32>) -> tensor<i32>
    %b1 = stablehlo.reshape %b : (tensor<i32>) -> tensor<1xi32>
    %c3 = stablehlo.constant dense<3> : tensor<1xi32>
    %shape = stablehlo.concatenate %b1, %c3, dim = 0 : (tensor<1xi32>, tensor<1xi32>) -> tensor<2xi32>
    %ones = stablehlo.dynamic_broadcast_in_dim %one, %shape, dims = [] : (tensor<f32>, tensor<2xi32>) -> tensor<?x3xf32>
    %y = stablehlo.add %0, %ones : tensor<?x3xf32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %s = stablehlo.reduce(%y init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<?x3xf32>, tensor<f32>) -> tensor<3xf32>
    return %s, %y : tensor<3xf32>, tensor<?x3xf32>
  }
}
)";

client::TensorShape F32(std::vector<int64_t> dims) {
  return client::TensorShape{wire::ElementType_F32, std::move(dims)};
}

class DynamicShapesDaemonTest : public ::testing::Test {
 protected:
  DaemonProcess daemon_{JITD_BIN};
};

// Runs `exe` on x = [[0, 1, 2, 3], [4, 5, 6, 7], ...] (b rows) and w = 1
// everywhere; checks y and s.
void RunAndCheck(client::Client& c, const client::Executable& exe, int64_t b) {
  auto x = c.AllocateBuffer(F32({b, 4}));
  auto w = c.AllocateBuffer(F32({4, 3}));
  auto s = c.AllocateBuffer(F32({3}));
  auto y = c.AllocateBuffer(F32({b, 3}));
  ASSERT_TRUE(x.ok() && w.ok() && s.ok() && y.ok());
  std::vector<float> xs(static_cast<size_t>(b * 4)), ws(12, 1.0f);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
  std::memcpy(x->data.data(), xs.data(), xs.size() * sizeof(float));
  std::memcpy(w->data.data(), ws.data(), ws.size() * sizeof(float));
  const uint64_t args[2] = {x->handle, w->handle};
  const uint64_t results[2] = {s->handle, y->handle};
  auto run = c.Execute(exe.handle, args, results);
  ASSERT_TRUE(run.ok()) << run.status().ToString();
  std::vector<float> ys(static_cast<size_t>(b * 3)), ss(3);
  std::memcpy(ys.data(), y->data.data(), ys.size() * sizeof(float));
  std::memcpy(ss.data(), s->data.data(), ss.size() * sizeof(float));
  float sum = 0;
  for (int64_t r = 0; r < b; ++r) {
    const float row = static_cast<float>(16 * r + 6) + 1.0f;  // 4r + (4r+1) + (4r+2) + (4r+3) + 1
    sum += row;
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(ys[r * 3 + j], row) << b << " " << r;
  }
  for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(ss[j], sum) << b;
}

TEST_F(DynamicShapesDaemonTest, OneEntryPerConcreteShape) {
  ASSERT_TRUE(daemon_.Start({}));
  auto c = client::Client::Connect(daemon_.socket());
  ASSERT_TRUE(c.ok()) << c.status().ToString();

  client::CompileOptions two;
  two.argument_shapes = {F32({2, 4}), F32({4, 3})};
  auto first = (*c)->Compile(kPoly, two);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->cache_hit);
  EXPECT_EQ(first->arguments, two.argument_shapes);
  ASSERT_EQ(first->results.size(), 2u);
  EXPECT_EQ(first->results[1], F32({2, 3}));
  RunAndCheck(**c, *first, 2);

  auto again = (*c)->Compile(kPoly, two);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->cache_hit);
  EXPECT_TRUE(again->fingerprint == first->fingerprint);

  client::CompileOptions five;
  five.argument_shapes = {F32({5, 4}), F32({4, 3})};
  auto other = (*c)->Compile(kPoly, five);
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  EXPECT_FALSE(other->cache_hit);
  EXPECT_FALSE(other->fingerprint == first->fingerprint);
  EXPECT_EQ(other->results[1], F32({5, 3}));
  RunAndCheck(**c, *other, 5);
}

TEST_F(DynamicShapesDaemonTest, MissingOrWrongShapesAreRefusedByName) {
  ASSERT_TRUE(daemon_.Start({}));
  auto c = client::Client::Connect(daemon_.socket());
  ASSERT_TRUE(c.ok()) << c.status().ToString();

  auto none = (*c)->Compile(kPoly);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("argument #0 of @main is tensor<?x4xf32>"),
            std::string::npos)
      << none.status().ToString();
  EXPECT_NE(none.status().message().find("argument_shapes"), std::string::npos);

  client::CompileOptions wrong;
  wrong.argument_shapes = {F32({2, 5}), F32({4, 3})};
  auto bad = (*c)->Compile(kPoly, wrong);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("argument #0 of @main: the given type tensor<2x5xf32> "
                                        "differs in static dimension 1"),
            std::string::npos)
      << bad.status().ToString();
}

}  // namespace
}  // namespace jitd::testing
