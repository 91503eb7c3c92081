// The daemon's side of one execute, without IPC: where the hot round trip's
// time goes (bench/daemon_bench.cc measures the whole round trip).
//
//   session/execute     Session::Handle of an ExecuteRequest for the tiny
//                       program (f32[4] add): verify, look up handles, copy
//                       the arguments out of the heap into literals, run the
//                       interpreter, write the result, build the reply
//   device/execute      the interpreter's Executable::Execute alone, on
//                       ready literals (what the device costs)
//   protocol/verify     ipc::VerifyRequest of that ExecuteRequest
//   protocol/build      building the ExecuteRequest (the client's part)
//   device/cpu_tuple/flat:{0,1}
//                       a cpu program with tuples in and out: the work
//                       around the device on the old literal path (0) and
//                       on the buffer path of its flattened signature (1)
//
// Reproduce: see BENCHMARKS.md.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstring>
#include <memory>

#include "base/unique_fd.h"
#include "daemon/instance.h"
#include "daemon/session.h"
#include "daemon/value_tree.h"
#include "devices/compile.h"
#include "jit/frontend/parser.h"
#include "ipc/protocol.h"

namespace jitd::daemon {
namespace {

constexpr char kAdd[] = R"(func.func public @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
)";

// A session with the tiny program compiled and three f32[4] buffers.
struct Setup {
  std::unique_ptr<Instance> instance;
  std::unique_ptr<Session> session;
  std::unique_ptr<ipc::Segment> client_segment;
  uint64_t exe = 0;
  uint64_t buffers[3] = {};
  std::vector<uint8_t> execute_request;

  static uint64_t Handle(const std::vector<uint8_t>& reply, bool compile) {
    auto r = ipc::VerifyReply(reply);
    if (!r.ok() || (*r)->status() != nullptr) std::abort();
    return compile ? (*r)->body_as_CompileReply()->executable()
                   : (*r)->body_as_CreateBufferReply()->buffer();
  }

  Setup() {
    instance = std::move(Instance::Create({})).value();
    SessionOptions options;
    options.segment_bytes = 4 << 20;
    session = std::move(Session::Create(instance.get(), 1, options)).value();
    client_segment =
        std::move(ipc::Segment::Attach(UniqueFd(::dup(session->segment_fd())))).value();
    auto text = client_segment->Allocate(sizeof(kAdd));
    std::memcpy(client_segment->HeapBytes(*text)->data(), kAdd, sizeof(kAdd) - 1);
    {
      flatbuffers::FlatBufferBuilder fbb;
      wire::HeapRef program(text->offset, sizeof(kAdd) - 1);
      auto body = wire::CreateCompileRequest(fbb, wire::ProgramFormat_STABLEHLO_TEXT, &program);
      fbb.Finish(wire::CreateRequestMessage(fbb, 1, wire::Request_CompileRequest, body.Union()),
                 wire::RequestMessageIdentifier());
      exe = Handle(session->Handle({fbb.GetBufferPointer(), fbb.GetSize()}), true);
    }
    for (uint64_t& b : buffers) {
      auto ref = client_segment->Allocate(16);
      float values[4] = {1, 2, 3, 4};
      std::memcpy(client_segment->HeapBytes(*ref)->data(), values, 16);
      flatbuffers::FlatBufferBuilder fbb;
      const int64_t dims[] = {4};
      auto shape = wire::CreateTensorShape(fbb, wire::ElementType_F32, fbb.CreateVector(dims, 1));
      wire::HeapRef data(ref->offset, 16);
      auto body = wire::CreateCreateBufferRequest(fbb, shape, &data);
      fbb.Finish(wire::CreateRequestMessage(fbb, 2, wire::Request_CreateBufferRequest,
                                            body.Union()),
                 wire::RequestMessageIdentifier());
      b = Handle(session->Handle({fbb.GetBufferPointer(), fbb.GetSize()}), false);
    }
    execute_request = BuildExecute();
  }

  std::vector<uint8_t> BuildExecute() const {
    flatbuffers::FlatBufferBuilder fbb(256);
    auto args = fbb.CreateVector(buffers, 2);
    auto outs = fbb.CreateVector(buffers + 2, 1);
    auto body = wire::CreateExecuteRequest(fbb, exe, args, outs, 0);
    fbb.Finish(wire::CreateRequestMessage(fbb, 3, wire::Request_ExecuteRequest, body.Union()),
               wire::RequestMessageIdentifier());
    return {fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()};
  }
};

void BM_SessionExecute(benchmark::State& state) {
  Setup setup;
  for (auto _ : state) {
    std::vector<uint8_t> reply = setup.session->Handle(setup.execute_request);
    benchmark::DoNotOptimize(reply.data());
  }
}
BENCHMARK(BM_SessionExecute)->Name("session/execute");

void BM_DeviceExecute(benchmark::State& state) {
  Setup setup;
  auto outcome = setup.instance->Compile(kAdd, {});
  if (!outcome.ok()) std::abort();
  const float values[4] = {1, 2, 3, 4};
  std::vector<uint8_t> bytes(16);
  std::memcpy(bytes.data(), values, 16);
  const ir::Type type = outcome->program->argument_types[0];
  std::vector<eval::RuntimeValue> args;
  args.emplace_back(std::move(ir::Literal::FromBytes(type, bytes)).value());
  args.emplace_back(std::move(ir::Literal::FromBytes(type, bytes)).value());
  devices::ExecuteOptions options;
  for (auto _ : state) {
    auto results = outcome->program->executable->Execute(args, options);
    benchmark::DoNotOptimize(results);
  }
}
BENCHMARK(BM_DeviceExecute)->Name("device/execute");

// A tiny cpu program with tuples in and out (two f32[4] leaves each way):
// the daemon's per-call work around the device on each path (issue 16).
//   literal  what HandleExecute did for such programs before the
//            flatten-signature pass: each leaf copied out of the heap into a
//            literal, the trees rebuilt (AssembleValues), Executable::Execute
//            on the program as written, the result leaves (ValueLeaves)
//            copied back
//   buffers  what it does now: the flattened program's Executable::Run on
//            private copies of the leaves, results copied back
constexpr char kTuple[] = R"(func.func public @main(%p: tuple<tensor<4xf32>, tensor<4xf32>>) -> tuple<tensor<4xf32>, tensor<4xf32>> {
  %a = stablehlo.get_tuple_element %p[0] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %b = stablehlo.get_tuple_element %p[1] : (tuple<tensor<4xf32>, tensor<4xf32>>) -> tensor<4xf32>
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.multiply %a, %b : tensor<4xf32>
  %t = stablehlo.tuple %0, %1 : tuple<tensor<4xf32>, tensor<4xf32>>
  return %t : tuple<tensor<4xf32>, tensor<4xf32>>
}
)";

void BM_CpuTuple(benchmark::State& state) {
  const bool flat = state.range(0) == 1;
  auto device = devices::CreateDevice("cpu");
  auto module = frontend::ParseModule(kTuple);
  if (!device.ok() || !module.ok()) std::abort();
  devices::ProgramCompileOptions options;
  options.flatten_signature = flat;
  auto exe = devices::CompileProgram(**device, std::move(module).value(), options);
  if (!exe.ok()) std::abort();
  const devices::Executable& e = **exe;
  if (flat != e.runs_on_buffers()) std::abort();
  const ir::Type leaf = ir::Type::Tensor(ir::DType::kF32, {4});
  // The client's heap: two argument leaves, two result leaves.
  std::vector<std::vector<uint8_t>> heap(4, std::vector<uint8_t>(16));
  for (int i = 0; i < 2; ++i) {
    const float values[4] = {1, 2, 3, static_cast<float>(i)};
    std::memcpy(heap[i].data(), values, 16);
  }
  std::vector<std::vector<uint8_t>> scratch(4, std::vector<uint8_t>(16));
  devices::ExecuteOptions run_options;
  for (auto _ : state) {
    if (flat) {
      for (int i = 0; i < 2; ++i) std::memcpy(scratch[i].data(), heap[i].data(), 16);
      const void* in[] = {scratch[0].data(), scratch[1].data()};
      void* out[] = {scratch[2].data(), scratch[3].data()};
      if (!e.Run(in, out, run_options).ok()) std::abort();
      for (int j = 0; j < 2; ++j) std::memcpy(heap[2 + j].data(), scratch[2 + j].data(), 16);
    } else {
      std::vector<ir::Literal> leaves;
      for (int i = 0; i < 2; ++i) leaves.push_back(std::move(ir::Literal::FromBytes(leaf, heap[i])).value());
      auto args = AssembleValues(e.argument_types(), std::move(leaves));
      if (!args.ok()) std::abort();
      auto results = e.Execute(*args, run_options);
      if (!results.ok()) std::abort();
      std::vector<const ir::Literal*> out = ValueLeaves(*results);
      for (size_t j = 0; j < out.size(); ++j) {
        std::memcpy(heap[2 + j].data(), out[j]->bytes().data(), 16);
      }
    }
    benchmark::DoNotOptimize(heap[2].data());
  }
  float check[4];
  std::memcpy(check, heap[3].data(), 16);
  if (check[3] != 0.0f || check[0] != 1.0f) std::abort();  // a * b
}
BENCHMARK(BM_CpuTuple)->Name("device/cpu_tuple")->ArgName("flat")->Arg(0)->Arg(1);

void BM_Verify(benchmark::State& state) {
  Setup setup;
  for (auto _ : state) benchmark::DoNotOptimize(ipc::VerifyRequest(setup.execute_request));
}
BENCHMARK(BM_Verify)->Name("protocol/verify");

void BM_Build(benchmark::State& state) {
  Setup setup;
  for (auto _ : state) benchmark::DoNotOptimize(setup.BuildExecute());
}
BENCHMARK(BM_Build)->Name("protocol/build");

}  // namespace
}  // namespace jitd::daemon

BENCHMARK_MAIN();
