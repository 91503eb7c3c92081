// The cuda device over the fake driver: programs compiled for real (the
// cuda compiler, a cubin when an assembler is found, else PTX) and run on
// the fake, whose kernels the tests write on the host. What is tested is
// the glue: kernel lookup, buffers bound to parameters in order, arguments
// and constants copied in, results copied out, the deadline, and an
// execute after a context reset.
#include "devices/cuda/cuda_device.h"
#include "jit/frontend/testing.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "devices/cuda/fake_driver.h"
#include "jit/frontend/parser.h"

namespace jitd::devices::cuda {
namespace {

using frontend::testing::ParseOrFail;

using eval::RuntimeValue;

RuntimeValue F32(std::vector<float> values) {
  ir::Type type = ir::Type::Tensor(ir::DType::kF32, {static_cast<int64_t>(values.size())});
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  auto literal = ir::Literal::FromBytes(type, std::move(bytes));
  EXPECT_TRUE(literal.ok());
  return RuntimeValue(std::move(*literal));
}

std::vector<float> Floats(const RuntimeValue& v) {
  std::vector<float> out(v.literal().bytes().size() / 4);
  std::memcpy(out.data(), v.literal().bytes().data(), out.size() * 4);
  return out;
}

// A fake elementwise kernel over n floats: params are (a, b, out).
FakeDriver::Kernel Binary(uint64_t n, float (*f)(float, float)) {
  return [n, f](void** params, unsigned, unsigned) {
    auto at = [&](int i) { return reinterpret_cast<float*>(*static_cast<CUdeviceptr*>(params[i])); };
    for (uint64_t i = 0; i < n; ++i) at(2)[i] = f(at(0)[i], at(1)[i]);
    return CUDA_SUCCESS;
  };
}

struct Fixture {
  Fixture() {
    auto opened = CudaRuntime::Open(fake.symbols());
    EXPECT_TRUE(opened.ok()) << opened.status().ToString();
    runtime = std::move(*opened);
    device = CudaDevice::CreateForRuntime(runtime.get());
  }
  ~Fixture() {
    device.reset();
    runtime.reset();
  }
  FakeDriver fake;
  std::unique_ptr<CudaRuntime> runtime;
  std::unique_ptr<CudaDevice> device;
};

constexpr const char* kAdd = R"(
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.add %x, %y : tensor<4xf32>
  return %z : tensor<4xf32>
}
)";

TEST(CudaDevice, CompilesForTheGpusSmAndRuns) {
  Fixture f;
  EXPECT_EQ(f.device->sm(), "sm_90");
  f.fake.SetKernel("jitd_k0", Binary(4, [](float a, float b) { return a + b; }));
  std::vector<CompileDump> dumps;
  CompileOptions options;
  options.dumps = &dumps;
  auto exe = f.device->Compile(ParseOrFail(kAdd), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  EXPECT_EQ(f.fake.calls("cuModuleLoadData"), 1);
  ASSERT_FALSE(dumps.empty());
  EXPECT_EQ(dumps[0].name, "kernels.ptx");
  EXPECT_NE(dumps[0].text.find(".entry jitd_k0"), std::string::npos);
  EXPECT_TRUE((*exe)->runs_on_buffers());

  std::vector<RuntimeValue> args = {F32({1, 2, 3, 4}), F32({10, 20, 30, 40})};
  auto out = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(f.fake.launched(), std::vector<std::string>{"jitd_k0"});
  // Everything an execute allocated went back.
  EXPECT_EQ(f.fake.live_allocations(), 0u);

  // The raw-buffer path, twice (the stream comes from the pool).
  const size_t streams = f.fake.live_streams();
  for (int round = 0; round < 2; ++round) {
    float x[4] = {1, 1, 1, 1}, y[4] = {2, 3, 4, 5}, z[4] = {};
    const void* in[] = {x, y};
    void* res[] = {z};
    ASSERT_TRUE((*exe)->Run(in, res, ExecuteOptions{}).ok());
    EXPECT_EQ(std::vector<float>(z, z + 4), (std::vector<float>{3, 4, 5, 6}));
  }
  EXPECT_EQ(f.fake.live_streams(), streams);
}

// Elided weights (dense_resource without a blob) are filled per execute's
// seed and fill exactly as the evaluator fills them (what the cpu device and
// the interpreter run on), two different elided constants differently; no
// seed is refused naming the resource; a blob's bytes are a plain constant;
// the program serializes with its seeded constants.
TEST(CudaDevice, ElidedWeightsAreFilledPerSeedAsTheEvaluatorFillsThem) {
  Fixture f;
  constexpr const char* kElided = R"(
func.func @main() -> (tensor<3xf32>, tensor<2x2xi32>) {
  %a = stablehlo.constant dense_resource<__elided__> : tensor<3xf32>
  %b = stablehlo.constant dense_resource<__elided__> : tensor<2x2xi32>
  return %a, %b : tensor<3xf32>, tensor<2x2xi32>
}
)";
  auto reference = ParseOrFail(kElided);
  ASSERT_NE(reference, nullptr);
  auto exe = f.device->Compile(ParseOrFail(kElided), CompileOptions{});
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();

  auto unseeded = (*exe)->Execute({}, ExecuteOptions{});
  ASSERT_FALSE(unseeded.ok());
  EXPECT_EQ(unseeded.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unseeded.status().message().find("dense_resource<__elided__>"), std::string::npos)
      << unseeded.status().message();

  for (auto [seed, fill] : {std::pair{uint64_t{0}, eval::RandomFill::kWeights},
                            std::pair{uint64_t{7}, eval::RandomFill::kUniform}}) {
    ExecuteOptions options;
    options.resource_fill_seed = seed;
    options.resource_fill = fill;
    auto out = (*exe)->Execute({}, options);
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    eval::EvalOptions eval_options;
    eval_options.resource_fill_seed = seed;
    eval_options.resource_fill = fill;
    auto want = eval::EvaluateFunction(*reference, *reference->EntryFunction(), {}, eval_options);
    ASSERT_TRUE(want.ok()) << want.status().ToString();
    ASSERT_EQ(out->size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
      const auto got = (*out)[i].literal().bytes();
      const auto expected = (*want)[i].literal().bytes();
      EXPECT_TRUE(std::equal(got.begin(), got.end(), expected.begin(), expected.end()))
          << "result " << i << " for seed " << seed;
    }
  }

  // The seeded constants travel with the program (the disk cache).
  auto bytes = f.device->Serialize(**exe);
  ASSERT_TRUE(bytes.ok()) << bytes.status().ToString();
  auto program = DeserializeCudaProgram(*bytes);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  ASSERT_EQ(program->seeded.size(), 2u);
  EXPECT_EQ(program->seeded[0].handle, "__elided__");
  EXPECT_NE(program->seeded[0].place, program->seeded[1].place);
  EXPECT_EQ(program->seeded[1].type.ToString(), "tensor<2x2xi32>");
}

TEST(CudaDevice, ConstantsAreUploadedOnceAndReturnedArgumentsCopied) {
  Fixture f;
  f.fake.SetKernel("jitd_k0", Binary(4, [](float a, float b) { return a * b; }));
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %c = stablehlo.constant dense<[2.0, 3.0, 4.0, 5.0]> : tensor<4xf32>
  %z = stablehlo.multiply %x, %c : tensor<4xf32>
  return %z, %x : tensor<4xf32>, tensor<4xf32>
}
)"));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  for (int round = 0; round < 2; ++round) {
    std::vector<RuntimeValue> args = {F32({1, 2, 3, 4})};
    auto out = (*exe)->Execute(args, ExecuteOptions{});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{2, 6, 12, 20}));
    EXPECT_EQ(Floats((*out)[1]), (std::vector<float>{1, 2, 3, 4}));
  }
  EXPECT_EQ(f.fake.live_allocations(), 1u);  // the constant, kept by the executable
  exe->reset();
  EXPECT_EQ(f.fake.live_allocations(), 0u);
}

TEST(CudaDevice, ArgumentsAreChecked) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kAdd));
  ASSERT_TRUE(exe.ok());
  std::vector<RuntimeValue> one = {F32({1, 2, 3, 4})};
  EXPECT_EQ((*exe)->Execute(one, ExecuteOptions{}).status().code(), StatusCode::kInvalidArgument);
  std::vector<RuntimeValue> wrong = {F32({1, 2, 3}), F32({1, 2, 3})};
  auto refused = (*exe)->Execute(wrong, ExecuteOptions{});
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("argument 0"), std::string::npos);
}

TEST(CudaDevice, DeadlineIsCheckedBeforeLaunches) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kAdd));
  ASSERT_TRUE(exe.ok());
  ExecuteOptions options;
  options.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  std::vector<RuntimeValue> args = {F32({1, 2, 3, 4}), F32({1, 2, 3, 4})};
  EXPECT_EQ((*exe)->Execute(args, options).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(f.fake.launched().empty());
}

TEST(CudaDevice, AFaultResetsAndTheNextExecuteRuns) {
  Fixture f;
  bool fault = true;
  f.fake.SetKernel("jitd_k0", [&](void** params, unsigned g, unsigned b) {
    if (fault) return CUDA_ERROR_ILLEGAL_ADDRESS;
    return Binary(4, [](float a, float c) { return a * c; })(params, g, b);
  });
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<[2.0, 3.0, 4.0, 5.0]> : tensor<4xf32>
  %z = stablehlo.multiply %x, %c : tensor<4xf32>
  return %z : tensor<4xf32>
}
)"));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {F32({1, 1, 1, 1})};
  auto failed = (*exe)->Execute(args, ExecuteOptions{});
  EXPECT_EQ(failed.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(failed.status().message().find("CUDA_ERROR_ILLEGAL_ADDRESS"), std::string::npos);
  EXPECT_EQ(f.fake.context_resets(), 1);
  fault = false;
  auto out = (*exe)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  // The constant was uploaded again into the new context.
  EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{2, 3, 4, 5}));
}

TEST(CudaDevice, ExecutionsCountAgainstTheClientsAccount) {
  Fixture f;
  f.fake.SetKernel("jitd_k0", Binary(4, [](float a, float b) { return a + b; }));
  auto exe = f.device->Compile(ParseOrFail(kAdd));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {F32({1, 2, 3, 4}), F32({1, 1, 1, 1})};

  ExecuteOptions roomy;
  roomy.device_memory = std::make_shared<MemoryAccount>("session 1", 1 << 20);
  auto out = (*exe)->Execute(args, roomy);
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{2, 3, 4, 5}));
  // Two 16-byte arguments and at least the 16-byte result in the arena,
  // all given back at the end.
  EXPECT_GE(roomy.device_memory->peak_bytes(), 48u);
  EXPECT_EQ(roomy.device_memory->bytes_in_use(), 0u);

  ExecuteOptions tight;
  tight.device_memory = std::make_shared<MemoryAccount>("session 2 (pid 7)", 20);
  auto refused = (*exe)->Execute(args, tight);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--max-device-bytes"), std::string::npos);
  EXPECT_NE(refused.status().message().find("session 2 (pid 7)"), std::string::npos);
  EXPECT_EQ(tight.device_memory->bytes_in_use(), 0u);
  EXPECT_EQ(f.fake.live_allocations(), 0u);
}

TEST(CudaDevice, EachSessionHasItsOwnStream) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kAdd));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {F32({1, 2, 3, 4}), F32({1, 1, 1, 1})};
  const int made = f.fake.calls("cuStreamCreate");
  ExecuteOptions a, b;
  a.device_memory = std::make_shared<MemoryAccount>("session 1", 0);
  b.device_memory = std::make_shared<MemoryAccount>("session 2", 0);
  for (int round = 0; round < 3; ++round) {
    ASSERT_TRUE((*exe)->Execute(args, a).ok());
    ASSERT_TRUE((*exe)->Execute(args, b).ok());
  }
  EXPECT_EQ(f.fake.calls("cuStreamCreate"), made + 2);  // one each, reused
  EXPECT_EQ(f.device->session_streams(), 2u);
  const size_t streams = f.fake.live_streams();
  a.device_memory.reset();  // session 1 ends: its stream goes
  EXPECT_EQ(f.device->session_streams(), 1u);
  EXPECT_EQ(f.fake.live_streams(), streams - 1);
  // Without a session: a pooled stream, reused.
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.fake.calls("cuStreamCreate"), made + 3);
}

TEST(CudaDevice, ProfilesKernelsWithTimingEvents) {
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(kAdd));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::vector<RuntimeValue> args = {F32({1, 2, 3, 4}), F32({1, 1, 1, 1})};
  std::vector<ProfileEntry> profile = {{"stale", 1, 1}};
  ExecuteOptions options;
  options.profile = &profile;
  ASSERT_TRUE((*exe)->Execute(args, options).ok());
  ASSERT_EQ(profile.size(), 1u);
  EXPECT_EQ(profile[0].name.rfind("kernel jitd_k0 ", 0), 0u) << profile[0].name;
  EXPECT_EQ(profile[0].count, 1);
  EXPECT_EQ(profile[0].nanos, 500'000);  // the fake's 0.5 ms per launch
  EXPECT_EQ(f.fake.calls("cuEventElapsedTime"), 1);
  // Without a profile or device_nanos nothing is timed.
  ASSERT_TRUE((*exe)->Execute(args, ExecuteOptions{}).ok());
  EXPECT_EQ(f.fake.calls("cuEventElapsedTime"), 1);
  // The GPU time alone: between two events around the launches.
  int64_t nanos = -1;
  ExecuteOptions timed;
  timed.device_nanos = &nanos;
  ASSERT_TRUE((*exe)->Execute(args, timed).ok());
  EXPECT_EQ(nanos, 500'000);
  EXPECT_EQ(f.fake.calls("cuEventElapsedTime"), 2);
}

// stablehlo.while as host control flow: the cond kernel writes a pred,
// the executor reads its byte back and jumps. The fake runs the kernels
// written here on the host: cond is i < n, the body i + 1, copies copy.
constexpr const char* kCountToN = R"(
func.func @main(%n: tensor<i32>) -> tensor<i32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r = stablehlo.while(%i = %zero) : tensor<i32>
    cond {
      %c = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %next = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %next : tensor<i32>
    }
  return %r : tensor<i32>
}
)";

int32_t* Int32At(void** params, int i) {
  return reinterpret_cast<int32_t*>(*static_cast<CUdeviceptr*>(params[i]));
}

TEST(CudaDevice, WhileLoopsOnTheHostUntilTheCondKernelWritesFalse) {
  Fixture f;
  std::vector<CompileDump> dumps;
  CompileOptions options;
  options.dumps = &dumps;
  auto exe = f.device->Compile(ParseOrFail(kCountToN), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::string program;
  for (const CompileDump& d : dumps) {
    if (d.name == "program.txt") program = d.text;
  }
  if (std::getenv("JITD_TEST_PRINT_PROGRAM")) std::fprintf(stderr, "%s\n", program.c_str());
  ASSERT_NE(program.find("jump unless"), std::string::npos) << program;
  ASSERT_NE(program.find("launch jitd_k1 flat 1 elements: compare"), std::string::npos) << program;
  ASSERT_NE(program.find("launch jitd_k2 flat 1 elements: add"), std::string::npos) << program;
  int cond_calls = 0;  // a broken loop stops after 100 rounds (and fails below)
  // copy (operand into the loop value), cond, test, body, copy back, jump.
  f.fake.SetKernel("jitd_copy0", [](void** params, unsigned, unsigned) {
    *Int32At(params, 1) = *Int32At(params, 0);
    return CUDA_SUCCESS;
  });
  f.fake.SetKernel("jitd_k1", [&cond_calls](void** params, unsigned, unsigned) {  // (i, n) -> i < n
    *reinterpret_cast<uint8_t*>(*static_cast<CUdeviceptr*>(params[2])) =
        ++cond_calls < 100 && *Int32At(params, 0) < *Int32At(params, 1);
    return CUDA_SUCCESS;
  });
  f.fake.SetKernel("jitd_k2", [](void** params, unsigned, unsigned) {  // (i) -> i + 1
    *Int32At(params, 1) = *Int32At(params, 0) + 1;
    return CUDA_SUCCESS;
  });
  for (int32_t n : {0, 1, 5}) {
    SCOPED_TRACE(n);
    const size_t before = f.fake.launched().size();
    int32_t result = -1;
    const void* in[] = {&n};
    void* res[] = {&result};
    Status run = (*exe)->Run(in, res, ExecuteOptions{});
    ASSERT_TRUE(run.ok()) << run.ToString();
    EXPECT_EQ(result, n);
    // One copy in; n + 1 cond launches; n body launches and n copies back.
    std::vector<std::string> launched = f.fake.launched();
    launched.erase(launched.begin(), launched.begin() + static_cast<std::ptrdiff_t>(before));
    std::vector<std::string> expected = {"jitd_copy0", "jitd_k1"};
    for (int32_t k = 0; k < n; ++k) {
      for (const char* name : {"jitd_k2", "jitd_copy0", "jitd_k1"}) expected.push_back(name);
    }
    EXPECT_EQ(launched, expected);
  }
  EXPECT_EQ(f.fake.live_allocations(), 1u);  // the constant zero, kept with the executable
}

// The kernel a program report (program.txt) launches for `what` ("flat 4
// elements: add"): "jitd_k3".
std::string KernelDoing(const std::string& program, const std::string& what) {
  const size_t at = program.find(" " + what);
  if (at == std::string::npos) return "(no kernel for " + what + ")";
  const size_t start = program.rfind("launch ", at);
  return start == std::string::npos ? "" : program.substr(start + 7, at - start - 7);
}

// stablehlo.case on the host: the jitd_case kernel writes a predicate per
// branch but the last (here faked as the real one computes it: the index
// clamped to [0, 3), out of range the last), the executor tests them in
// order and runs one branch's kernels and its result copy.
constexpr const char* kCase = R"(
func.func @main(%i: tensor<i32>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.case"(%i) ({
    %a = stablehlo.add %x, %y : tensor<4xf32>
    stablehlo.return %a : tensor<4xf32>
  }, {
    %m = stablehlo.multiply %x, %y : tensor<4xf32>
    stablehlo.return %m : tensor<4xf32>
  }, {
    stablehlo.return %x : tensor<4xf32>
  }) : (tensor<i32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)";

TEST(CudaDevice, CaseRunsTheBranchItsIndexPicksOnTheHost) {
  Fixture f;
  std::vector<CompileDump> dumps;
  CompileOptions options;
  options.dumps = &dumps;
  auto exe = f.device->Compile(ParseOrFail(kCase), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::string program, ptx;
  for (const CompileDump& d : dumps) {
    if (d.name == "program.txt") program = d.text;
    if (d.name == "kernels.ptx") ptx = d.text;
  }
  if (std::getenv("JITD_TEST_PRINT_PROGRAM")) std::fprintf(stderr, "%s\n", program.c_str());
  ASSERT_NE(program.find("launch jitd_case3"), std::string::npos) << program;
  ASSERT_NE(program.find("skip unless index == 1"), std::string::npos) << program;
  ASSERT_NE(ptx.find(".entry jitd_case3"), std::string::npos);
  f.fake.SetKernel("jitd_case3", [](void** params, unsigned, unsigned) {
    int32_t i = *Int32At(params, 0);
    if (i < 0 || i > 2) i = 2;
    for (int k = 0; k < 2; ++k) *reinterpret_cast<uint8_t*>(*static_cast<CUdeviceptr*>(params[k + 1])) = i == k;
    return CUDA_SUCCESS;
  });
  const std::string add = KernelDoing(program, "flat 4 elements: add");
  const std::string multiply = KernelDoing(program, "flat 4 elements: multiply");
  f.fake.SetKernel(add, Binary(4, [](float a, float b) { return a + b; }));
  f.fake.SetKernel(multiply, Binary(4, [](float a, float b) { return a * b; }));
  f.fake.SetKernel("jitd_copy0", [](void** params, unsigned, unsigned) {
    std::memcpy(reinterpret_cast<void*>(*static_cast<CUdeviceptr*>(params[1])),
                reinterpret_cast<void*>(*static_cast<CUdeviceptr*>(params[0])), 16);
    return CUDA_SUCCESS;
  });
  struct Want {
    int32_t index;
    std::vector<float> result;
    std::vector<std::string> launched;
  };
  const std::vector<Want> wants = {
      {0, {3, 6, 9, 12}, {"jitd_case3", add, "jitd_copy0"}},
      {1, {2, 8, 18, 32}, {"jitd_case3", multiply, "jitd_copy0"}},
      {2, {1, 2, 3, 4}, {"jitd_case3", "jitd_copy0"}},
      {7, {1, 2, 3, 4}, {"jitd_case3", "jitd_copy0"}},    // out of range: the last branch
      {-1, {1, 2, 3, 4}, {"jitd_case3", "jitd_copy0"}},
  };
  for (const Want& want : wants) {
    SCOPED_TRACE(want.index);
    const size_t before = f.fake.launched().size();
    float x[4] = {1, 2, 3, 4}, y[4] = {2, 4, 6, 8}, z[4] = {};
    const void* in[] = {&want.index, x, y};
    void* res[] = {z};
    Status run = (*exe)->Run(in, res, ExecuteOptions{});
    ASSERT_TRUE(run.ok()) << run.ToString();
    EXPECT_EQ(std::vector<float>(z, z + 4), want.result);
    std::vector<std::string> launched = f.fake.launched();
    launched.erase(launched.begin(), launched.begin() + static_cast<std::ptrdiff_t>(before));
    EXPECT_EQ(launched, want.launched);
  }
}

// stablehlo.if: its pred is the test itself (no selector kernel).
TEST(CudaDevice, IfRunsOneBranchOnTheHost) {
  Fixture f;
  std::vector<CompileDump> dumps;
  CompileOptions options;
  options.dumps = &dumps;
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%p: tensor<i1>, %x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %r = "stablehlo.if"(%p) ({
    %a = stablehlo.add %x, %y : tensor<4xf32>
    stablehlo.return %a : tensor<4xf32>
  }, {
    %m = stablehlo.multiply %x, %y : tensor<4xf32>
    stablehlo.return %m : tensor<4xf32>
  }) : (tensor<i1>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
)"), options);
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  std::string program;
  for (const CompileDump& d : dumps) {
    if (d.name == "program.txt") program = d.text;
  }
  ASSERT_EQ(program.find("jitd_case"), std::string::npos) << program;
  const std::string add = KernelDoing(program, "flat 4 elements: add");
  const std::string multiply = KernelDoing(program, "flat 4 elements: multiply");
  f.fake.SetKernel(add, Binary(4, [](float a, float b) { return a + b; }));
  f.fake.SetKernel(multiply, Binary(4, [](float a, float b) { return a * b; }));
  f.fake.SetKernel("jitd_copy0", [](void** params, unsigned, unsigned) {
    std::memcpy(reinterpret_cast<void*>(*static_cast<CUdeviceptr*>(params[1])),
                reinterpret_cast<void*>(*static_cast<CUdeviceptr*>(params[0])), 16);
    return CUDA_SUCCESS;
  });
  for (uint8_t p : {uint8_t{1}, uint8_t{0}}) {
    SCOPED_TRACE(static_cast<int>(p));
    const size_t before = f.fake.launched().size();
    float x[4] = {1, 2, 3, 4}, y[4] = {2, 4, 6, 8}, z[4] = {};
    const void* in[] = {&p, x, y};
    void* res[] = {z};
    Status run = (*exe)->Run(in, res, ExecuteOptions{});
    ASSERT_TRUE(run.ok()) << run.ToString();
    EXPECT_EQ(std::vector<float>(z, z + 4),
              (p ? std::vector<float>{3, 6, 9, 12} : std::vector<float>{2, 8, 18, 32}));
    std::vector<std::string> launched = f.fake.launched();
    launched.erase(launched.begin(), launched.begin() + static_cast<std::ptrdiff_t>(before));
    EXPECT_EQ(launched, (std::vector<std::string>{p ? add : multiply, "jitd_copy0"}));
  }
}

// Device-resident buffers: allocated on the device (counted on the client's
// account), filled from host memory, read in place by an execute (no
// argument copy), results written on the device (a device-to-device copy,
// nothing copied to the host), read back, released; the account's limit
// applies; a buffer lost in a context reset is refused by name.
TEST(CudaDevice, DeviceBuffersStayOnTheDeviceAcrossExecutes) {
  Fixture f;
  f.fake.SetKernel("jitd_k0", Binary(4, [](float a, float b) { return a + b; }));
  auto exe = f.device->Compile(ParseOrFail(kAdd));
  ASSERT_TRUE(exe.ok()) << exe.status().ToString();
  const ir::Type f32x4 = ir::Type::Tensor(ir::DType::kF32, {4});
  auto account = std::make_shared<MemoryAccount>("client", 1024);  // the buffers and an arena
  auto x = f.device->AllocateBuffer(f32x4, account);
  auto y = f.device->AllocateBuffer(f32x4, account);
  auto z = f.device->AllocateBuffer(f32x4, account);
  ASSERT_TRUE(x.ok() && y.ok() && z.ok()) << x.status().ToString();
  EXPECT_EQ(account->bytes_in_use(), 48u);
  const float xs[4] = {1, 2, 3, 4}, ys[4] = {10, 20, 30, 40};
  ASSERT_TRUE((*x)->CopyFromHost(xs, 16).ok());
  ASSERT_TRUE((*y)->CopyFromHost(ys, 16).ok());
  EXPECT_NE((*x)->CopyFromHost(xs, 12).message().find("a copy of 12 bytes"), std::string::npos);

  const int h2d = f.fake.calls("cuMemcpyHtoDAsync"), d2h = f.fake.calls("cuMemcpyDtoHAsync");
  ExecuteOptions options;
  options.device_memory = account;
  // z = x + y, then x = z + y in place: all on the device.
  std::vector<RunBuffer> in = {{nullptr, x->get()}, {nullptr, y->get()}};
  std::vector<RunBuffer> out = {{nullptr, z->get()}};
  ASSERT_TRUE((*exe)->RunWithBuffers(in, out, options).ok());
  in = {{nullptr, z->get()}, {nullptr, y->get()}};
  out = {{nullptr, x->get()}};
  Status run = (*exe)->RunWithBuffers(in, out, options);
  ASSERT_TRUE(run.ok()) << run.ToString();
  EXPECT_EQ(f.fake.calls("cuMemcpyHtoDAsync"), h2d);  // no argument copies
  EXPECT_EQ(f.fake.calls("cuMemcpyDtoHAsync"), d2h);  // no result copies
  EXPECT_EQ(f.fake.calls("cuMemcpyDtoDAsync"), 2);
  float back[4] = {};
  ASSERT_TRUE((*x)->CopyToHost(back, 16).ok());
  EXPECT_EQ(std::vector<float>(back, back + 4), (std::vector<float>{21, 42, 63, 84}));
  // Mixed: a host argument and a host result beside a device one.
  float host_y[4] = {1, 1, 1, 1}, host_out[4] = {};
  in = {{nullptr, x->get()}, {host_y, nullptr}};
  out = {{host_out, nullptr}};
  ASSERT_TRUE((*exe)->RunWithBuffers(in, out, options).ok());
  EXPECT_EQ(std::vector<float>(host_out, host_out + 4), (std::vector<float>{22, 43, 64, 85}));

  // Wrong type, wrong count, neither host nor device: refused by name.
  auto small = f.device->AllocateBuffer(ir::Type::Tensor(ir::DType::kF32, {2}), account);
  ASSERT_TRUE(small.ok());
  in = {{nullptr, small->get()}, {nullptr, y->get()}};
  EXPECT_NE((*exe)->RunWithBuffers(in, out, options).message().find("argument 0 is tensor<2xf32>"),
            std::string::npos);
  in = {{nullptr, nullptr}, {nullptr, y->get()}};
  EXPECT_NE((*exe)->RunWithBuffers(in, out, options).message().find("exactly one"), std::string::npos);
  // Past the account's limit (1024 bytes, 56 held).
  auto over = f.device->AllocateBuffer(ir::Type::Tensor(ir::DType::kF32, {250}), account);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted);
  // Released: the account and the driver get the memory back.
  small->reset();
  z->reset();
  EXPECT_EQ(account->bytes_in_use(), 32u);
  // Lost in a context reset: refused, not read.
  f.fake.InjectStickyError(CUDA_ERROR_ILLEGAL_ADDRESS);
  in = {{nullptr, x->get()}, {nullptr, y->get()}};
  out = {{host_out, nullptr}};
  EXPECT_EQ((*exe)->RunWithBuffers(in, out, options).code(), StatusCode::kUnavailable);  // meets it, resets
  Status lost = (*exe)->RunWithBuffers(in, out, options);
  EXPECT_EQ(lost.code(), StatusCode::kFailedPrecondition) << lost.ToString();
  EXPECT_NE(lost.message().find("lost when the GPU's context was reset"), std::string::npos) << lost.message();
  EXPECT_EQ((*x)->CopyToHost(back, 16).code(), StatusCode::kFailedPrecondition);
}

// The disk cache's path: a compiled program's bytes load on a fresh device
// (another daemon) without compiling — the same cubin loaded as a module,
// the same launches — and a program assembled for another sm is refused.
TEST(CudaDevice, SerializedProgramsLoadWithoutCompiling) {
  std::string bytes;
  std::string target;
  {
    Fixture f;
    auto exe = f.device->Compile(ParseOrFail(kAdd));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    auto serialized = f.device->Serialize(**exe);
    ASSERT_TRUE(serialized.ok()) << serialized.status().ToString();
    bytes = std::move(*serialized);
    target = f.device->compile_target();
  }
  // Sm, LLVM and the assembler are in the key the daemon uses.
  EXPECT_EQ(target.rfind("sm_90 ", 0), 0u) << target;
  EXPECT_NE(target.find("LLVM "), std::string::npos) << target;
  auto program = DeserializeCudaProgram(bytes);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  if (!program->cubin.empty()) {  // assembled: the assembler and its version are in the key
    EXPECT_TRUE(target.find("nvjitlink ") != std::string::npos || target.find("ptxas ") != std::string::npos)
        << target;
  }

  Fixture f;  // a fresh driver: nothing loaded, nothing compiled
  f.fake.SetKernel("jitd_k0", Binary(4, [](float a, float b) { return a * b; }));
  auto loaded = f.device->Deserialize(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(f.fake.calls("cuModuleLoadData"), 1);
  EXPECT_EQ(f.fake.live_modules(), 1u);
  std::vector<RuntimeValue> args = {F32({1, 2, 3, 4}), F32({2, 2, 2, 2})};
  auto out = (*loaded)->Execute(args, ExecuteOptions{});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(Floats((*out)[0]), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(f.fake.launched(), std::vector<std::string>{"jitd_k0"});
  // Its own bytes again, unchanged (a re-serialized hit is the same entry).
  auto again = f.device->Serialize(**loaded);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, bytes);

}

TEST(CudaDevice, AnotherSmHasAnotherTargetAndRefusesForeignCubins) {
  std::string bytes;
  {
    Fixture f;
    auto exe = f.device->Compile(ParseOrFail(kAdd));
    ASSERT_TRUE(exe.ok()) << exe.status().ToString();
    bytes = *f.device->Serialize(**exe);
  }
  std::string sm90_target;
  {
    Fixture f;
    sm90_target = f.device->compile_target();
  }
  FakeDriverOptions options;
  options.sm_major = 10;
  options.sm_minor = 0;
  FakeDriver fake(options);
  auto runtime = CudaRuntime::Open(fake.symbols());
  ASSERT_TRUE(runtime.ok()) << runtime.status().ToString();
  auto device = CudaDevice::CreateForRuntime(runtime->get());
  EXPECT_EQ(device->sm(), "sm_100");
  EXPECT_EQ(device->compile_target().rfind("sm_100 ", 0), 0u) << device->compile_target();
  EXPECT_NE(device->compile_target(), sm90_target);
  auto loaded = device->Deserialize(bytes);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(loaded.status().message().find("assembled for sm_90, this GPU is sm_100"), std::string::npos)
      << loaded.status().message();
  EXPECT_EQ(fake.calls("cuModuleLoadData"), 0);
  // Corrupt bytes are an error, never a program.
  auto corrupt = device->Deserialize(bytes.substr(0, bytes.size() / 2));
  EXPECT_FALSE(corrupt.ok());
  device.reset();
  runtime->reset();
}

TEST(CudaDevice, RefusesWhatItCannotRunNamingTheOp) {
  // fft over two axes has no cuda lowering yet (see cuda_compiler.h): refused at compile,
  // naming the op, never run somewhere else.
  Fixture f;
  auto exe = f.device->Compile(ParseOrFail(R"(
func.func @main(%a: tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>> {
  %c = stablehlo.fft %a, type = FFT, length = [4, 8] : (tensor<4x8xcomplex<f32>>) -> tensor<4x8xcomplex<f32>>
  return %c : tensor<4x8xcomplex<f32>>
}
)"));
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(exe.status().message().find("fft"), std::string::npos) << exe.status().message();
}

}  // namespace
}  // namespace jitd::devices::cuda
