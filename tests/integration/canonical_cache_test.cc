// One program is one cache entry whoever sends it and however it is spelled
// (issue 15, item 5), through a real `jitd serve` and the C++ client: text
// as `jitd run` sends it, the same text respelled, and the builder's
// FlatBuffers module; a changed constant misses and says why; a restarted
// daemon finds every spelling on disk.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "libclient/builder.h"
#include "libclient/client.h"
#include "tests/integration/daemon_process.h"

namespace jitd::testing {
namespace {

constexpr char kText[] = R"(module @jit_f {
  func.func public @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
    %s = stablehlo.add %x, %y : tensor<4xf32>
    %c = stablehlo.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
    %r = stablehlo.multiply %s, %c : tensor<4xf32>
    return %r : tensor<4xf32>
  }
}
)";

// kText re-exported: comments, names, locations.
constexpr char kRespelled[] = R"(#loc1 = loc("model.py":7:0)
// exported by another tool
module @main_module {
  func.func @main(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<4xf32> loc("y")) -> tensor<4xf32> {
    %0 = stablehlo.add %arg0, %arg1 : tensor<4xf32> loc(#loc1)
    // the scale
    %1 = stablehlo.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32> loc("model.py":8:0)
    %2 = stablehlo.multiply %0, %1 : tensor<4xf32> loc("model.py":9:0)
    return %2 : tensor<4xf32> loc("model.py":10:0)
  }
}
)";

// The same program from the builder (what the C and Python builders send).
std::string BuilderModule() {
  using client::BinaryOp;
  using client::Builder;
  using client::Shape;
  Builder b("f");
  const Shape f32x4 = Shape::Array(fbmodule::ElementType_F32, {4});
  auto x = b.Parameter(0, f32x4, "x");
  auto y = b.Parameter(1, f32x4, "y");
  EXPECT_TRUE(x.ok() && y.ok());
  auto sum = b.Binary(BinaryOp::kAdd, *x, *y);
  const float scale[4] = {1, 2, 3, 4};
  auto c = b.ConstantArray(fbmodule::ElementType_F32, {4}, scale, sizeof(scale));
  EXPECT_TRUE(sum.ok() && c.ok());
  auto r = b.Binary(BinaryOp::kMul, *sum, *c);
  EXPECT_TRUE(r.ok());
  auto computation = b.Build(*r);
  EXPECT_TRUE(computation.ok()) << computation.status().ToString();
  const std::vector<uint8_t>& bytes = (*computation)->module_bytes();
  return std::string(bytes.begin(), bytes.end());
}

class CanonicalCacheTest : public ::testing::Test {
 protected:
  DaemonProcess daemon_{JITD_BIN};
};

TEST_F(CanonicalCacheTest, TextRespelledAndBuilderMeetInOneEntry) {
  ASSERT_TRUE(daemon_.Start({}));
  auto c = client::Client::Connect(daemon_.socket());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  auto first = (*c)->Compile(kText);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->cache_hit);

  auto respelled = (*c)->Compile(kRespelled);
  ASSERT_TRUE(respelled.ok()) << respelled.status().ToString();
  EXPECT_TRUE(respelled->cache_hit);
  EXPECT_TRUE(respelled->fingerprint == first->fingerprint);

  client::CompileOptions fb;
  fb.flatbuffer_module = true;
  auto built = (*c)->Compile(BuilderModule(), fb);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  EXPECT_TRUE(built->cache_hit);
  EXPECT_TRUE(built->fingerprint == first->fingerprint);

  // The builder's executable computes the program: (x + y) * [1, 2, 3, 4].
  auto x = (*c)->AllocateBuffer({wire::ElementType_F32, {4}});
  auto y = (*c)->AllocateBuffer({wire::ElementType_F32, {4}});
  auto out = (*c)->AllocateBuffer({wire::ElementType_F32, {4}});
  ASSERT_TRUE(x.ok() && y.ok() && out.ok());
  const float xs[4] = {1, 1, 1, 1}, ys[4] = {0, 1, 2, 3};
  std::memcpy(x->data.data(), xs, sizeof(xs));
  std::memcpy(y->data.data(), ys, sizeof(ys));
  const uint64_t args[2] = {x->handle, y->handle};
  const uint64_t results[1] = {out->handle};
  ASSERT_TRUE((*c)->Execute(built->handle, args, results).ok());
  float got[4];
  std::memcpy(got, out->data.data(), sizeof(got));
  EXPECT_EQ(got[0], 1.0f);
  EXPECT_EQ(got[3], 16.0f);

  // A changed constant misses, explained against this program's entry.
  std::string changed = kRespelled;
  changed.replace(changed.find("4.000000e+00"), 12, "5.000000e+00");
  auto miss = (*c)->Compile(changed);
  ASSERT_TRUE(miss.ok()) << miss.status().ToString();
  EXPECT_FALSE(miss->cache_hit);
  EXPECT_NE(miss->explain.find("differs in program_hash (same entry '@main(tensor<4xf32>, "
                               "tensor<4xf32>) -> tensor<4xf32>'"),
            std::string::npos)
      << miss->explain;

  auto stats = (*c)->Stats(/*keys=*/true);
  ASSERT_TRUE(stats.ok());
  EXPECT_NE(stats->find("\"program\":\"@main\""), std::string::npos) << *stats;
  EXPECT_NE(stats->find("\"argument_shapes\":\"tensor<4xf32>, tensor<4xf32>\""),
            std::string::npos)
      << *stats;
  EXPECT_NE(stats->find("\"hits\":2"), std::string::npos) << *stats;
}

TEST_F(CanonicalCacheTest, ARestartedDaemonFindsEverySpellingOnDisk) {
  client::Fingerprint fingerprint{};
  {
    ASSERT_TRUE(daemon_.Start({}));
    auto c = client::Client::Connect(daemon_.socket());
    ASSERT_TRUE(c.ok());
    client::CompileOptions fb;
    fb.flatbuffer_module = true;
    auto built = (*c)->Compile(BuilderModule(), fb);
    ASSERT_TRUE(built.ok()) << built.status().ToString();
    EXPECT_FALSE(built->cache_hit);
    fingerprint = built->fingerprint;
    c->reset();
    daemon_.Stop();
  }
  ASSERT_TRUE(daemon_.Start({}));
  auto c = client::Client::Connect(daemon_.socket());
  ASSERT_TRUE(c.ok());
  auto by_fingerprint = (*c)->CompileByFingerprint(fingerprint);
  ASSERT_TRUE(by_fingerprint.ok()) << by_fingerprint.status().ToString();
  auto text = (*c)->Compile(kRespelled);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_TRUE(text->cache_hit);
  EXPECT_TRUE(text->fingerprint == fingerprint);
}

}  // namespace
}  // namespace jitd::testing
