// Deep programs through a real daemon (issue 13, item 1): a chain of
// 20,000 adds used to kill `jitd serve` on the cpu device (the kernel
// emitter recursed once per op). Here chains and trees of 10^5 ops (and a
// chain of 10^6) compile and run through libclient on both devices with
// exact results, programs past the limits are refused with a clear error,
// and the daemon serves the next client afterwards. Programs are generated
// here; none is checked in.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "libclient/client.h"
#include "tests/integration/daemon_process.h"

namespace jitd {
namespace {

using namespace std::chrono_literals;
using client::Client;

// x + 1, `n` times, on tensor<4xf32>.
std::string AddChain(int64_t n) {
  std::string text = "func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                     "  %c = stablehlo.constant dense<1.0> : tensor<4xf32>\n";
  text.reserve(static_cast<size_t>(n) * 56 + 200);
  std::string prev = "%x";
  for (int64_t i = 0; i < n; ++i) {
    const std::string v = "%v" + std::to_string(i);
    text += "  " + v + " = stablehlo.add " + prev + ", %c : tensor<4xf32>\n";
    prev = v;
  }
  return text + "  return " + prev + " : tensor<4xf32>\n}\n";
}

// The sum of x[0..n) (tensor<Nxf32>, integers) by a balanced tree of adds
// of slices: 2n - 1 ops, n of them slices at distinct offsets.
std::string SliceTree(int64_t n) {
  const std::string vec = "tensor<" + std::to_string(n) + "xf32>";
  std::string text = "func.func @main(%x: " + vec + ") -> tensor<1xf32> {\n";
  std::vector<std::string> level;
  for (int64_t i = 0; i < n; ++i) {
    level.push_back("%l" + std::to_string(i));
    text += "  " + level.back() + " = stablehlo.slice %x [" + std::to_string(i) + ":" +
            std::to_string(i + 1) + "] : (" + vec + ") -> tensor<1xf32>\n";
  }
  int64_t t = 0;
  while (level.size() > 1) {
    std::vector<std::string> next;
    for (size_t j = 0; j + 1 < level.size(); j += 2) {
      next.push_back("%t" + std::to_string(t++));
      text += "  " + next.back() + " = stablehlo.add " + level[j] + ", " + level[j + 1] +
              " : tensor<1xf32>\n";
    }
    if (level.size() % 2) next.push_back(level.back());
    level = std::move(next);
  }
  return text + "  return " + level[0] + " : tensor<1xf32>\n}\n";
}

// Regions nested `depth` deep (stablehlo.if in the first region of the one
// before).
std::string NestedIfs(int depth) {
  std::string s = "func.func @main(%p: tensor<i1>, %x: tensor<f32>) -> tensor<f32> {\n";
  for (int d = 0; d < depth; ++d) s += "%r" + std::to_string(d) + " = \"stablehlo.if\"(%p) ({\n";
  s += "stablehlo.return %x : tensor<f32>\n";
  for (int d = depth; d-- > 0;) {
    s += "}, {\nstablehlo.return %x : tensor<f32>\n}) : (tensor<i1>) -> tensor<f32>\n";
    s += d == 0 ? std::string("return %r0") : "stablehlo.return %r" + std::to_string(d);
    s += " : tensor<f32>\n";
  }
  return s + "}\n";
}

class DeepProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Program text travels through the client's segment: 64 MiB of
    // overhead room holds the 10^6-op chain (56 MB).
    ASSERT_TRUE(daemon_.Start({"--segment-bytes", std::to_string(uint64_t{256} << 20),
                               "--max-compile-time-ms", "300000"},
                              /*disk_cache=*/false));
  }

  std::unique_ptr<Client> Connect() {
    client::ClientOptions options;
    options.timeout = 300s;
    auto c = Client::Connect(daemon_.socket(), options);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return c.ok() ? std::move(c).value() : nullptr;
  }

  // Compiles `text` on `device`, runs it on `input` (f32) and returns the
  // f32 results, or the first error.
  StatusOr<std::vector<float>> Run(Client& c, const std::string& text, const std::string& device,
                                   const std::vector<float>& input) {
    client::CompileOptions options;
    options.device = device;
    JITD_ASSIGN_OR_RETURN(client::Executable exe, c.Compile(text, options));
    JITD_ASSIGN_OR_RETURN(client::Buffer in, c.AllocateBuffer(exe.arguments.at(0)));
    JITD_ASSIGN_OR_RETURN(client::Buffer out, c.AllocateBuffer(exe.results.at(0)));
    if (in.data.size() != input.size() * sizeof(float)) return Internal("unexpected argument size");
    std::memcpy(in.data.data(), input.data(), in.data.size());
    const uint64_t args[] = {in.handle};
    const uint64_t outs[] = {out.handle};
    JITD_RETURN_IF_ERROR(c.Execute(exe.handle, args, outs).status());
    std::vector<float> result(out.data.size() / sizeof(float));
    std::memcpy(result.data(), out.data.data(), out.data.size());
    JITD_RETURN_IF_ERROR(c.DestroyBuffer(in.handle));
    JITD_RETURN_IF_ERROR(c.DestroyBuffer(out.handle));
    JITD_RETURN_IF_ERROR(c.Release(exe.handle));
    return result;
  }

  // The daemon still runs and answers a fresh client.
  void ExpectAlive() {
    int status = 0;
    EXPECT_EQ(::waitpid(daemon_.pid(), &status, WNOHANG), 0) << "the daemon exited";
    auto c = Connect();
    ASSERT_TRUE(c);
    auto r = Run(*c, AddChain(3), "cpu", {0, 1, 2, 3});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, (std::vector<float>{3, 4, 5, 6}));
  }

  testing::DaemonProcess daemon_{JITD_BIN};
};

TEST_F(DeepProgramTest, ChainsRunOnEveryDevice) {
  auto c = Connect();
  ASSERT_TRUE(c);
  for (int64_t n : {int64_t{20'000}, int64_t{100'000}}) {
    for (const char* device : {"cpu", "interpreter"}) {
      auto r = Run(*c, AddChain(n), device, {0, 1, -3, 100});
      ASSERT_TRUE(r.ok()) << n << " on " << device << ": " << r.status().ToString();
      const float f = static_cast<float>(n);
      EXPECT_EQ(*r, (std::vector<float>{f, 1 + f, -3 + f, 100 + f})) << n << " on " << device;
    }
  }
  ExpectAlive();
}

TEST_F(DeepProgramTest, MillionOpChainRunsOnEveryDevice) {
  auto c = Connect();
  ASSERT_TRUE(c);
  const std::string text = AddChain(1'000'000);
  for (const char* device : {"cpu", "interpreter"}) {
    auto r = Run(*c, text, device, {0, 1, -3, 100});
    ASSERT_TRUE(r.ok()) << device << ": " << r.status().ToString();
    EXPECT_EQ(*r, (std::vector<float>{1e6f, 1 + 1e6f, -3 + 1e6f, 100 + 1e6f})) << device;
  }
  ExpectAlive();
}

TEST_F(DeepProgramTest, TreesRunOnEveryDevice) {
  auto c = Connect();
  ASSERT_TRUE(c);
  const int64_t n = 50'000;  // 10^5 ops
  std::vector<float> x(n);
  float sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    x[static_cast<size_t>(i)] = static_cast<float>(i % 7) - 3;
    sum += x[static_cast<size_t>(i)];
  }
  const std::string text = SliceTree(n);
  for (const char* device : {"cpu", "interpreter"}) {
    auto r = Run(*c, text, device, x);
    ASSERT_TRUE(r.ok()) << device << ": " << r.status().ToString();
    EXPECT_EQ(*r, std::vector<float>{sum}) << device;
  }
  ExpectAlive();
}

TEST_F(DeepProgramTest, NestingPastTheLimitIsRefused) {
  auto c = Connect();
  ASSERT_TRUE(c);
  for (const char* device : {"cpu", "interpreter"}) {
    client::CompileOptions options;
    options.device = device;
    auto exe = c->Compile(NestedIfs(64), options);
    EXPECT_TRUE(exe.ok()) << device << ": " << exe.status().ToString();
    for (int depth : {65, 100'000}) {
      auto refused = c->Compile(NestedIfs(depth), options);
      ASSERT_FALSE(refused.ok()) << device;
      EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(refused.status().message().find("66:28: regions nested deeper than the limit of 64 levels"),
                std::string::npos)
          << refused.status().message();
    }
  }
  ExpectAlive();
}

}  // namespace
}  // namespace jitd
