#include "devices/cuda/cuda_device.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <unordered_map>

#include "devices/cuda/cuda_compiler.h"
#include "devices/cuda/cuda_libraries.h"
#include "devices/cuda/cuda_program.h"
#include "devices/cuda/ptx_compiler.h"
#include "jit/codegen/fusion.h"
#include "jit/eval/eval.h"
#include "jit/passes/fusion.h"

namespace jitd::devices::cuda {

// What a device's executables share. Thread-safe.
struct CudaDevice::Shared {
  CudaRuntime* runtime = nullptr;
  // Device memory of the executables' constants, and of executions that
  // name no account (ExecuteOptions::device_memory); no limit.
  std::shared_ptr<CudaMemoryAccount> account;

  std::mutex mu;
  // A stream per client session: executions that name the session's
  // account (ExecuteOptions::device_memory) run on its stream; entries go
  // when their account (the session) does. An execution without one, or
  // while its session's stream is taken, gets a stream from the pool.
  struct SessionStream {
    std::weak_ptr<CudaMemoryAccount> session;
    std::unique_ptr<CudaStream> stream;
    bool busy = false;
  };
  std::map<const CudaMemoryAccount*, SessionStream> session_streams;
  std::vector<std::unique_ptr<CudaStream>> free_streams;
  bool assembler_tried = false;
  std::unique_ptr<PtxCompiler> assembler;  // null: PTX goes to the driver's JIT
  std::string assembler_missing;
  std::once_flag target_once;
  std::string target;  // compile_target(), once made
  // cuBLASLt / cuFFT (injected by tests, else the process's), and one
  // cuBLASLt handle for the device, made in the context on first use and
  // again after a context reset.
  const CudaLibraries* injected_libraries = nullptr;
  std::mutex lt_mu;
  cublasLtHandle_t lt_handle = nullptr;
  uint64_t lt_generation = 0;
  // Handles dropped after a failed call, with their generations.
  std::vector<std::pair<cublasLtHandle_t, uint64_t>> retired_lt_handles;
  // cuDNN handles, a pool: a handle is bound to one stream at a time
  // (cudnnSetStream), so a call takes one of its own for the call, and
  // calls of different clients run side by side. Handles are made in the
  // context on first need and again after a context reset (the pool then
  // holds those of dnn_generation's context only).
  std::mutex dnn_mu;  // the pool, never held across a call
  std::vector<cudnnHandle_t> dnn_free;
  uint64_t dnn_generation = 0;

  // A cuDNN handle for one call, made when none is idle (the context is
  // current: call inside CudaRuntime::WithStream), with the generation of
  // the context it was made in.
  StatusOr<std::pair<cudnnHandle_t, uint64_t>> TakeDnnHandle(const CudnnSymbols& dnn) {
    const uint64_t generation = runtime->generation();
    {
      std::lock_guard<std::mutex> lock(dnn_mu);
      if (dnn_generation != generation) {
        dnn_free.clear();  // made in a context that is gone: not destroyed
        dnn_generation = generation;
      }
      if (!dnn_free.empty()) {
        const cudnnHandle_t handle = dnn_free.back();
        dnn_free.pop_back();
        return std::make_pair(handle, generation);
      }
    }
    cudnnHandle_t handle = nullptr;
    if (cudnnStatus_t st = dnn.cudnnCreate(&handle); st != CUDNN_STATUS_SUCCESS) {
      return Internal("cuDNN: cudnnCreate failed (status " + std::to_string(static_cast<int>(st)) + ")");
    }
    return std::make_pair(handle, generation);
  }

  // Back to the pool after its call; a handle whose call failed is suspect
  // and destroyed (the next call makes another), one of a context that has
  // since gone is dropped.
  void GiveBackDnnHandle(const CudnnSymbols& dnn, std::pair<cudnnHandle_t, uint64_t> taken, bool suspect) {
    std::lock_guard<std::mutex> lock(dnn_mu);
    if (taken.second != runtime->generation()) return;
    if (suspect) {
      dnn.cudnnDestroy(taken.first);
      return;
    }
    if (dnn_generation != taken.second) {
      dnn_free.clear();
      dnn_generation = taken.second;
    }
    dnn_free.push_back(taken.first);
  }

  // The same for the cuBLASLt handle `used` (unless another call made a
  // new one meanwhile); other sessions' calls may still be using it (they
  // hold no lock), so it is retired, destroyed with the device.
  void DropLtHandle(cublasLtHandle_t used) {
    std::lock_guard<std::mutex> lock(lt_mu);
    if (lt_handle != used || !lt_handle) return;
    retired_lt_handles.push_back({lt_handle, lt_generation});
    lt_handle = nullptr;
  }

  const CudaLibraries& Libraries() const {
    if (injected_libraries) return *injected_libraries;
    // Said once per process, where the daemon logs: which libraries ops
    // call, or why not and that jitd's own kernels run them instead.
    static std::once_flag logged;
    const CudaLibraries& libraries = SharedCudaLibraries();
    std::call_once(logged, [&] {
      if (!GetCudaDeviceSettings().use_libraries) {
        std::fprintf(stderr, "jitd: cuda: CUDA libraries off (--cuda-no-libraries): jitd's own kernels for every op\n");
      } else {
        std::fprintf(stderr, "jitd: cuda: %s\n", libraries.Describe().c_str());
      }
    });
    return libraries;
  }
  // The cuBLASLt handle (the context must be current: call inside
  // CudaRuntime::WithStream).
  StatusOr<cublasLtHandle_t> LtHandle(const CublasLtSymbols& lt) {
    std::lock_guard<std::mutex> lock(lt_mu);
    if (lt_handle && lt_generation == runtime->generation()) return lt_handle;
    // A handle from before a context reset is dropped, not destroyed (its
    // context is gone).
    lt_handle = nullptr;
    if (cublasStatus_t st = lt.cublasLtCreate(&lt_handle); st != CUBLAS_STATUS_SUCCESS) {
      lt_handle = nullptr;
      // NOT_INITIALIZED: the library found no usable CUDA driver / device
      // of its own (it loads libcuda.so.1 itself).
      return Internal("cuBLASLt: cublasLtCreate failed: " + CublasStatusText(st));
    }
    lt_generation = runtime->generation();
    return lt_handle;
  }
  ~Shared() {
    if (lt_handle && lt_generation == runtime->generation()) {
      if (const CublasLtSymbols* lt = Libraries().cublaslt()) lt->cublasLtDestroy(lt_handle);
    }
    for (const auto& [handle, generation] : retired_lt_handles) {
      if (generation != runtime->generation()) continue;  // its context is gone
      if (const CublasLtSymbols* lt = Libraries().cublaslt()) lt->cublasLtDestroy(handle);
    }
    if (dnn_generation == runtime->generation()) {
      if (const CudnnSymbols* dnn = Libraries().cudnn()) {
        for (cudnnHandle_t handle : dnn_free) dnn->cudnnDestroy(handle);
      }
    }
  }

  // A stream for one execution and how to give it back.
  struct Lease {
    CudaStream* stream = nullptr;
    const CudaMemoryAccount* session = nullptr;  // set: the session's own
    std::unique_ptr<CudaStream> pooled;
  };

  StatusOr<Lease> AcquireStream(const std::shared_ptr<CudaMemoryAccount>& session) {
    Lease lease;
    {
      std::lock_guard<std::mutex> lock(mu);
      std::erase_if(session_streams, [](const auto& e) { return e.second.session.expired(); });
      if (session) {
        auto it = session_streams.find(session.get());
        if (it != session_streams.end() && !it->second.busy) {
          it->second.busy = true;
          lease.stream = it->second.stream.get();
          lease.session = session.get();
          return lease;
        }
        if (it == session_streams.end()) {
          // The session's first execution: its stream is made below.
          lease.session = session.get();
        }
      }
      if (!lease.session && !free_streams.empty()) {
        lease.pooled = std::move(free_streams.back());
        free_streams.pop_back();
        lease.stream = lease.pooled.get();
        return lease;
      }
    }
    JITD_ASSIGN_OR_RETURN(std::unique_ptr<CudaStream> made, runtime->CreateStream());
    if (!lease.session) {
      lease.pooled = std::move(made);
      lease.stream = lease.pooled.get();
      return lease;
    }
    std::lock_guard<std::mutex> lock(mu);
    SessionStream& entry = session_streams[lease.session];
    entry.session = session;
    entry.stream = std::move(made);
    entry.busy = true;
    lease.stream = entry.stream.get();
    return lease;
  }
  void ReleaseStream(Lease lease) {
    std::lock_guard<std::mutex> lock(mu);
    if (lease.session) {
      auto it = session_streams.find(lease.session);
      if (it != session_streams.end()) it->second.busy = false;
    } else if (lease.pooled) {
      free_streams.push_back(std::move(lease.pooled));
    }
  }
  size_t session_stream_count() {
    std::lock_guard<std::mutex> lock(mu);
    std::erase_if(session_streams, [](const auto& e) { return e.second.session.expired(); });
    return session_streams.size();
  }
  const PtxCompiler* Assembler() {
    std::lock_guard<std::mutex> lock(mu);
    if (!assembler_tried) {
      assembler_tried = true;
      // $JITD_PTX_ASSEMBLER picks one (auto, nvjitlink, ptxas); ptxas
      // itself is found as PtxCompilerOptions says ($JITD_PTXAS first).
      PtxCompilerOptions options;
      if (const char* which = std::getenv("JITD_PTX_ASSEMBLER"); which && *which) options.assembler = which;
      StatusOr<std::unique_ptr<PtxCompiler>> created = PtxCompiler::Create(options);
      if (created.ok()) {
        assembler = std::move(*created);
      } else {
        assembler_missing = created.status().message();
      }
      // Said once per device, where the daemon logs: which path PTX takes.
      std::fprintf(stderr, "jitd: cuda: PTX -> cubin: %s\n",
                   DescribePtxAssembly(assembler.get(), assembler_missing).c_str());
    }
    return assembler.get();
  }
  static std::string DescribePtxAssembly(const PtxCompiler* assembler, const std::string& missing) {
    if (assembler) {
      const PtxToolchain& t = assembler->toolchain();
      return t.Describe() + (t.assembler == "nvjitlink" ? " (in process)" : " (subprocess)");
    }
    return "the driver's JIT (cuModuleLoadData of the PTX): " + missing;
  }
};

namespace {

std::mutex settings_mu;
CudaDeviceSettings* settings = nullptr;  // guarded by settings_mu

}  // namespace

CudaDeviceSettings GetCudaDeviceSettings() {
  std::lock_guard<std::mutex> lock(settings_mu);
  if (!settings) {
    settings = new CudaDeviceSettings();
    auto on = [](const char* name) {
      const char* v = std::getenv(name);
      return v && *v && std::string(v) != "0";
    };
    settings->exact_f32 = on("JITD_CUDA_EXACT_F32");
    settings->use_libraries = !on("JITD_CUDA_NO_LIBRARIES");
    if (const char* v = std::getenv("JITD_CUDA_LIBRARY_MIN_MULTIPLY_ADDS"); v && *v) {
      char* end = nullptr;
      const long long n = std::strtoll(v, &end, 10);
      if (end && *end == '\0' && n >= 0) {
        settings->library_min_multiply_adds = n;
      } else {
        std::fprintf(stderr, "jitd: cuda: ignoring JITD_CUDA_LIBRARY_MIN_MULTIPLY_ADDS='%s' (not a count)\n", v);
      }
    }
  }
  return *settings;
}

void SetCudaDeviceSettings(const CudaDeviceSettings& s) {
  GetCudaDeviceSettings();
  std::lock_guard<std::mutex> lock(settings_mu);
  *settings = s;
}

namespace {

// Whether this build turns modules into CudaPrograms and runs them.
constexpr bool kCanCompile = true;

CudaProbe Probe() {
  CudaProbe probe;
  StatusOr<std::unique_ptr<CudaDriverLibrary>> driver = LoadCudaDriver();
  if (!driver.ok()) {
    probe.reason = driver.status().message();
    return probe;
  }
  probe.driver_path = (*driver)->path();
  // Both live until exit: the device and its clients may run to the end.
  CudaDriverLibrary* library = driver->release();
  CudaRuntimeOptions options;
  // The cap on pinned host memory (client segments registered at attach +
  // the staging pool): $JITD_CUDA_MAX_PINNED_BYTES, default 1 GiB.
  if (const char* cap = std::getenv("JITD_CUDA_MAX_PINNED_BYTES"); cap && *cap) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long bytes = std::strtoull(cap, &end, 10);
    if (errno != 0 || end == cap || *end != '\0' || cap[0] == '-') {
      probe.reason = std::string("JITD_CUDA_MAX_PINNED_BYTES='") + cap + "': expected a number of bytes";
      return probe;
    }
    options.max_pinned_bytes = bytes;
  }
  StatusOr<std::unique_ptr<CudaRuntime>> runtime = CudaRuntime::Open(library->symbols(), options);
  if (!runtime.ok()) {
    probe.reason = runtime.status().message();
    return probe;
  }
  probe.runtime = runtime->release();
  if (!kCanCompile) {
    const CudaDeviceInfo& info = probe.runtime->info();
    probe.reason = "GPU 0 (" + info.name + ", sm_" + std::to_string(info.sm_major) +
                   std::to_string(info.sm_minor) +
                   ") is there, but this build cannot compile programs for it";
    return probe;
  }
  probe.available = true;
  return probe;
}

// A library-call step's decoded plan (Load checks it against its buffers).
struct LibraryStep {
  std::optional<CublasLtMatmulPlan> matmul;
  std::optional<CufftPlan> fft;
  std::optional<CudnnConvPlan> conv;
};

// A device-resident buffer: one allocation from the runtime's pool, counted
// on the account it was made with; copies on a pooled stream.
class CudaDeviceBuffer final : public DeviceBuffer {
 public:
  CudaDeviceBuffer(std::shared_ptr<CudaDevice::Shared> shared, ir::Type type,
                   std::unique_ptr<CudaAllocation> allocation)
      : shared_(std::move(shared)), type_(std::move(type)), allocation_(std::move(allocation)) {}
  const ir::Type& type() const override { return type_; }
  uint64_t bytes() const override { return static_cast<uint64_t>(type_.byte_size()); }
  CUdeviceptr pointer() const { return allocation_->pointer(); }
  const CudaRuntime* runtime() const { return shared_->runtime; }
  Status Check() const { return shared_->runtime->CheckAllocation(*allocation_); }

  Status CopyFromHost(const void* src, uint64_t bytes) override {
    JITD_RETURN_IF_ERROR(CheckCopy(bytes));
    return WithStream([&](CudaStream& stream) {
      JITD_RETURN_IF_ERROR(shared_->runtime->CopyToDevice(pointer(), src, bytes, stream));
      return shared_->runtime->Synchronize(stream);
    });
  }
  Status CopyToHost(void* dst, uint64_t bytes) const override {
    JITD_RETURN_IF_ERROR(CheckCopy(bytes));
    return WithStream([&](CudaStream& stream) {
      JITD_RETURN_IF_ERROR(shared_->runtime->CopyToHost(dst, pointer(), bytes, stream));
      return shared_->runtime->Synchronize(stream);
    });
  }

 private:
  Status CheckCopy(uint64_t bytes) const {
    if (bytes != this->bytes()) {
      return InvalidArgument("cuda: a copy of " + std::to_string(bytes) + " bytes to or from a device buffer of " +
                             std::to_string(this->bytes()) + " bytes (" + type_.ToString() + ")");
    }
    return Check();
  }
  template <typename F>
  Status WithStream(F&& body) const {
    JITD_ASSIGN_OR_RETURN(CudaDevice::Shared::Lease lease, shared_->AcquireStream(nullptr));
    Status status = body(*lease.stream);
    shared_->ReleaseStream(std::move(lease));
    return status;
  }

  std::shared_ptr<CudaDevice::Shared> shared_;
  ir::Type type_;
  std::unique_ptr<CudaAllocation> allocation_;
};

// A compiled CudaProgram loaded on the GPU.
class CudaProgramExecutable final : public Executable {
 public:
  CudaProgramExecutable(std::shared_ptr<CudaDevice::Shared> shared, CudaProgram program,
                        std::shared_ptr<CudaModule> module, std::vector<size_t> function_of_step,
                        std::vector<LibraryStep> library_steps = {})
      : shared_(std::move(shared)),
        program_(std::move(program)),
        module_(std::move(module)),
        function_of_step_(std::move(function_of_step)),
        library_steps_(std::move(library_steps)),
        choices_(library_steps_.size()) {
    for (const LibraryStep& l : library_steps_) {
      if (l.fft && !fft_plans_ && shared_->Libraries().cufft()) {
        fft_plans_ = std::make_unique<CufftPlanCache>(*shared_->Libraries().cufft());
      }
    }
  }

  StatusOr<std::vector<eval::RuntimeValue>> Execute(std::span<const eval::RuntimeValue> args,
                                                    const ExecuteOptions& options) const override {
    if (args.size() != program_.argument_types.size()) {
      return InvalidArgument("cuda: the program takes " +
                             std::to_string(program_.argument_types.size()) + " arguments, got " +
                             std::to_string(args.size()));
    }
    std::vector<const void*> in(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      if (!args[i].is_tensor() || !(args[i].literal().type() == program_.argument_types[i])) {
        return InvalidArgument("cuda: argument " + std::to_string(i) + " is " +
                               args[i].type().ToString() + ", the program takes " +
                               program_.argument_types[i].ToString());
      }
      in[i] = args[i].literal().bytes().data();
    }
    std::vector<ir::Literal> literals;
    std::vector<void*> out;
    for (const ir::Type& type : program_.result_types) {
      JITD_ASSIGN_OR_RETURN(ir::Literal literal, ir::Literal::Create(type));
      literals.push_back(std::move(literal));
    }
    for (ir::Literal& literal : literals) out.push_back(literal.mutable_bytes().data());
    JITD_RETURN_IF_ERROR(Run(in, out, options));
    std::vector<eval::RuntimeValue> results;
    for (ir::Literal& literal : literals) results.emplace_back(std::move(literal));
    return results;
  }

  bool runs_on_buffers() const override { return true; }
  // Arguments go to GPU memory before the first launch, results come back
  // after the last (RunOn), so the daemon passes its segment directly.
  bool copies_arguments() const override { return true; }

  Status Run(std::span<const void* const> args, std::span<void* const> results,
             const ExecuteOptions& options) const override {
    if (args.size() != program_.argument_types.size() ||
        results.size() != program_.result_types.size()) {
      return InvalidArgument("cuda: Run with " + std::to_string(args.size()) + " arguments and " +
                             std::to_string(results.size()) + " results; the program has " +
                             std::to_string(program_.argument_types.size()) + " and " +
                             std::to_string(program_.result_types.size()));
    }
    std::vector<RunBuffer> in(args.size()), out(results.size());
    for (size_t i = 0; i < args.size(); ++i) in[i].host = const_cast<void*>(args[i]);
    for (size_t r = 0; r < results.size(); ++r) out[r].host = results[r];
    return RunWithStream(in, out, options);
  }

  Status RunWithBuffers(std::span<const RunBuffer> args, std::span<const RunBuffer> results,
                        const ExecuteOptions& options) const override {
    if (args.size() != program_.argument_types.size() ||
        results.size() != program_.result_types.size()) {
      return InvalidArgument("cuda: RunWithBuffers with " + std::to_string(args.size()) +
                             " arguments and " + std::to_string(results.size()) +
                             " results; the program has " + std::to_string(program_.argument_types.size()) +
                             " and " + std::to_string(program_.result_types.size()));
    }
    auto check = [&](const RunBuffer& b, const ir::Type& type, const std::string& what) -> Status {
      if ((b.device == nullptr) == (b.host == nullptr)) {
        return InvalidArgument("cuda: " + what + " must be host memory or a device buffer (exactly one)");
      }
      if (b.device == nullptr) return Status::Ok();
      const auto* d = dynamic_cast<const CudaDeviceBuffer*>(b.device);
      if (d == nullptr || d->runtime() != shared_->runtime) {
        return InvalidArgument("cuda: " + what + " is a buffer of another device");
      }
      if (!(d->type() == type)) {
        return InvalidArgument("cuda: " + what + " is " + d->type().ToString() + ", the program has " +
                               type.ToString());
      }
      return d->Check();
    };
    for (size_t i = 0; i < args.size(); ++i) {
      JITD_RETURN_IF_ERROR(check(args[i], program_.argument_types[i], "argument " + std::to_string(i)));
    }
    for (size_t r = 0; r < results.size(); ++r) {
      JITD_RETURN_IF_ERROR(check(results[r], program_.result_types[r], "result " + std::to_string(r)));
    }
    return RunWithStream(args, results, options);
  }

  const CudaProgram& program() const { return program_; }
  const std::vector<ir::Type>& argument_types() const override { return program_.argument_types; }
  const std::vector<ir::Type>& result_types() const override { return program_.result_types; }

  uint64_t size_bytes() const override {
    uint64_t bytes = sizeof(*this) + program_.ptx.size() + program_.cubin.size() +
                     program_.assembler_log.size() + (module_ ? module_->image_bytes() : 0);
    for (const std::string& c : program_.constants) bytes += c.size();
    for (const CudaStep& step : program_.steps) {
      bytes += sizeof(step) + step.description.size() + step.launch.function.size() +
               4 * step.launch.buffers.size();
    }
    return bytes + sizeof(CudaBuffer) * program_.buffers.size();
  }

 private:
  // Uploads the constants (again, after a context reset lost them).
  Status EnsureConstants(CudaStream& stream) const {
    CudaRuntime& rt = *shared_->runtime;
    std::lock_guard<std::mutex> lock(constants_mu_);
    bool current = constants_.size() == program_.constants.size();
    for (const auto& c : constants_) current = current && (!c || rt.CheckAllocation(*c).ok());
    if (current) return Status::Ok();
    constants_.clear();
    for (const std::string& bytes : program_.constants) {
      if (bytes.empty()) {
        constants_.push_back(nullptr);
        continue;
      }
      JITD_ASSIGN_OR_RETURN(std::unique_ptr<CudaAllocation> a,
                            rt.Allocate(shared_->account, bytes.size(), stream));
      JITD_RETURN_IF_ERROR(rt.CopyToDevice(a->pointer(), bytes.data(), bytes.size(), stream));
      constants_.push_back(std::move(a));
    }
    // Other streams read them: the copies finish first.
    return rt.Synchronize(stream);
  }

  // The seeded constants' device buffers for the execute's seed and fill:
  // filled on the host as the evaluator fills elided weights
  // (eval::ResourceFillLiteral) and uploaded once per (seed, fill); the
  // last few pairs are kept. An execute holds its set until it ends.
  using SeededSet = std::vector<std::unique_ptr<CudaAllocation>>;
  StatusOr<std::shared_ptr<const SeededSet>> EnsureSeeded(CudaStream& stream, const ExecuteOptions& options) const {
    if (program_.seeded.empty()) return std::shared_ptr<const SeededSet>();
    if (!options.resource_fill_seed) {
      return InvalidArgument("cuda: dense_resource<" + program_.seeded[0].handle +
                             "> has no data in the program (elided weights); supply a fill seed (jitd run "
                             "--resource-seed, an execute's resource_seed)");
    }
    CudaRuntime& rt = *shared_->runtime;
    const std::pair<uint64_t, eval::RandomFill> key{*options.resource_fill_seed, options.resource_fill};
    std::lock_guard<std::mutex> lock(constants_mu_);
    if (auto it = seeded_.find(key); it != seeded_.end()) {
      bool current = true;
      for (const auto& a : *it->second) current = current && rt.CheckAllocation(*a).ok();
      if (current) return it->second;
      seeded_.erase(it);  // lost in a context reset: filled again
    }
    auto set = std::make_shared<SeededSet>();
    for (const CudaSeededConstant& c : program_.seeded) {
      JITD_ASSIGN_OR_RETURN(ir::Literal values,
                            eval::ResourceFillLiteral(c.type, c.handle, c.place, key.first, key.second));
      const std::span<const uint8_t> bytes = values.bytes();
      JITD_ASSIGN_OR_RETURN(std::unique_ptr<CudaAllocation> a,
                            rt.Allocate(shared_->account, std::max<uint64_t>(bytes.size(), 1), stream));
      JITD_RETURN_IF_ERROR(rt.CopyToDevice(a->pointer(), bytes.data(), bytes.size(), stream));
      set->push_back(std::move(a));
    }
    JITD_RETURN_IF_ERROR(rt.Synchronize(stream));  // other streams read them; the host bytes go
    if (seeded_.size() >= 4) seeded_.clear();       // bounded: executes keep theirs alive
    seeded_[key] = set;
    return std::shared_ptr<const SeededSet>(std::move(set));
  }

  Status RunWithStream(std::span<const RunBuffer> args, std::span<const RunBuffer> results,
                       const ExecuteOptions& options) const {
    if (options.profile) options.profile->clear();
    JITD_RETURN_IF_ERROR(CheckStop(options));
    JITD_ASSIGN_OR_RETURN(CudaDevice::Shared::Lease lease,
                          shared_->AcquireStream(options.device_memory));
    Status status = RunOn(*lease.stream, args, results, options);
    shared_->ReleaseStream(std::move(lease));  // made again by the runtime after a reset
    return status;
  }

  // Arguments and results each host bytes (copied in before the first
  // launch, out after the last) or a CudaDeviceBuffer (read in place;
  // written by a device-to-device copy after the last launch).
  Status RunOn(CudaStream& stream, std::span<const RunBuffer> args,
               std::span<const RunBuffer> results, const ExecuteOptions& options) const {
    CudaRuntime& rt = *shared_->runtime;
    JITD_RETURN_IF_ERROR(EnsureConstants(stream));
    JITD_ASSIGN_OR_RETURN(std::shared_ptr<const SeededSet> seeded, EnsureSeeded(stream, options));
    // The client's account when the daemon gives one (--max-device-bytes).
    const std::shared_ptr<CudaMemoryAccount>& account =
        options.device_memory ? options.device_memory : shared_->account;
    std::unique_ptr<CudaAllocation> arena;
    if (program_.arena_bytes > 0) {
      JITD_ASSIGN_OR_RETURN(arena, rt.Allocate(account,
                                               static_cast<uint64_t>(program_.arena_bytes), stream));
    }
    std::vector<std::unique_ptr<CudaAllocation>> arguments(args.size());
    std::vector<CUdeviceptr> pointer(program_.buffers.size(), 0);
    {
      std::lock_guard<std::mutex> lock(constants_mu_);
      for (size_t b = 0; b < program_.buffers.size(); ++b) {
        const CudaBuffer& buffer = program_.buffers[b];
        if (buffer.bytes == 0) continue;
        switch (buffer.kind) {
          case CudaBuffer::Kind::kArgument: {
            const size_t i = static_cast<size_t>(buffer.index);
            if (args[i].device != nullptr) {  // device-resident: read in place
              pointer[b] = static_cast<const CudaDeviceBuffer*>(args[i].device)->pointer();
              break;
            }
            if (!arguments[i]) {
              JITD_ASSIGN_OR_RETURN(arguments[i],
                                    rt.Allocate(account, static_cast<uint64_t>(buffer.bytes), stream));
              JITD_RETURN_IF_ERROR(rt.CopyToDevice(arguments[i]->pointer(), args[i].host,
                                                   static_cast<uint64_t>(buffer.bytes), stream));
            }
            pointer[b] = arguments[i]->pointer();
            break;
          }
          case CudaBuffer::Kind::kConstant:
            pointer[b] = constants_[static_cast<size_t>(buffer.index)]->pointer();
            break;
          case CudaBuffer::Kind::kTemporary:
            pointer[b] = arena->pointer() + static_cast<CUdeviceptr>(buffer.offset);
            break;
          case CudaBuffer::Kind::kSeeded:
            pointer[b] = (*seeded)[static_cast<size_t>(buffer.index)]->pointer();
            break;
        }
      }
    }
    // With a profile: a timing event before the first launch and after
    // each, so each launch's GPU time is the time between two.
    std::vector<std::unique_ptr<CudaEvent>> marks;
    auto mark = [&]() -> Status {
      JITD_ASSIGN_OR_RETURN(std::unique_ptr<CudaEvent> e, rt.RecordEvent(stream, /*timing=*/true));
      marks.push_back(std::move(e));
      return Status::Ok();
    };
    const bool timed = (options.profile || options.device_nanos) && !program_.steps.empty();
    if (options.device_nanos) *options.device_nanos = 0;
    if (timed) JITD_RETURN_IF_ERROR(mark());
    std::vector<CUdeviceptr> values;
    std::vector<void*> params;
    std::vector<size_t> launched;  // step per launch, in order (a loop's again each time)
    for (size_t s = 0; s < program_.steps.size(); ++s) {
      JITD_RETURN_IF_ERROR(CheckStop(options));
      const CudaStep& step = program_.steps[s];
      if (step.kind == CudaStep::Kind::kJump) {
        s = static_cast<size_t>(step.target) - 1;  // the loop's ++s
        continue;
      }
      if (step.kind == CudaStep::Kind::kJumpUnless) {
        // Control flow on the host: the predicate's byte, once the kernels
        // before it are done.
        uint8_t predicate = 0;
        JITD_RETURN_IF_ERROR(rt.CopyToHost(&predicate, pointer[static_cast<size_t>(step.predicate)], 1, stream));
        JITD_RETURN_IF_ERROR(rt.Synchronize(stream));
        if (predicate == 0) s = static_cast<size_t>(step.target) - 1;
        continue;
      }
      if (step.kind == CudaStep::Kind::kLibraryCall) {
        JITD_RETURN_IF_ERROR(RunLibraryCall(s, pointer, account, stream));
        launched.push_back(s);
        if (options.profile) JITD_RETURN_IF_ERROR(mark());
        continue;
      }
      const CudaKernelLaunch& launch = step.launch;
      values.assign(launch.buffers.size(), 0);
      params.assign(launch.buffers.size(), nullptr);
      for (size_t p = 0; p < launch.buffers.size(); ++p) {
        values[p] = pointer[static_cast<size_t>(launch.buffers[p])];
        params[p] = &values[p];
      }
      JITD_RETURN_IF_ERROR(rt.Launch(*module_, function_of_step_[s],
                                     Dim3{launch.grid[0], launch.grid[1], launch.grid[2]},
                                     Dim3{launch.block[0], launch.block[1], launch.block[2]},
                                     launch.shared_bytes, params, stream));
      launched.push_back(s);
      // Per launch for a profile (then the marks bracket each launch).
      if (options.profile) JITD_RETURN_IF_ERROR(mark());
    }
    // Once after the last launch for the total only.
    if (timed && !options.profile) JITD_RETURN_IF_ERROR(mark());
    for (size_t r = 0; r < results.size(); ++r) {
      const CudaBuffer& buffer = program_.buffers[static_cast<size_t>(program_.results[r])];
      if (buffer.bytes == 0) continue;
      const CUdeviceptr from = pointer[static_cast<size_t>(program_.results[r])];
      if (results[r].device != nullptr) {  // stays on the device
        JITD_RETURN_IF_ERROR(rt.CopyOnDevice(static_cast<const CudaDeviceBuffer*>(results[r].device)->pointer(),
                                             from, static_cast<uint64_t>(buffer.bytes), stream));
        continue;
      }
      JITD_RETURN_IF_ERROR(rt.CopyToHost(results[r].host, from, static_cast<uint64_t>(buffer.bytes), stream));
    }
    JITD_RETURN_IF_ERROR(rt.Synchronize(stream));
    if (options.device_nanos && marks.size() >= 2) {
      JITD_ASSIGN_OR_RETURN(float ms, rt.ElapsedMillis(*marks.front(), *marks.back()));
      *options.device_nanos = static_cast<int64_t>(static_cast<double>(ms) * 1e6);
    }
    if (options.profile && !marks.empty()) {
      // One row per kernel and call site (the step's description), summed.
      std::map<std::string, ProfileEntry> rows;
      for (size_t i = 0; i < launched.size(); ++i) {
        const size_t s = launched[i];
        JITD_ASSIGN_OR_RETURN(float ms, rt.ElapsedMillis(*marks[i], *marks[i + 1]));
        ProfileEntry& row = rows[program_.steps[s].description];
        row.name = (program_.steps[s].kind == CudaStep::Kind::kLibraryCall ? "library " : "kernel ") +
                   program_.steps[s].description;
        row.count += 1;
        row.nanos += static_cast<int64_t>(static_cast<double>(ms) * 1e6);
      }
      for (auto& [unused, row] : rows) options.profile->push_back(std::move(row));
      SortProfile(*options.profile);
    }
    return Status::Ok();
  }

  // What a library step runs with (choices_).
  struct LibraryChoice {
    bool made = false;
    CublasLtChoice matmul;
    CudnnConvChoice conv;
  };

  // Step `s`'s choice: at its first call `ask` asks the library and
  // StoreChoice's it (calls racing to be first each ask; the same answer),
  // later calls read it.
  StatusOr<LibraryChoice> Choice(size_t s, const std::function<Status()>& ask) const {
    {
      std::lock_guard<std::mutex> lock(choices_mu_);
      if (choices_[s].made) return choices_[s];
    }
    JITD_RETURN_IF_ERROR(ask());
    std::lock_guard<std::mutex> lock(choices_mu_);
    return choices_[s];
  }
  template <typename Set>
  void StoreChoice(size_t s, const Set& set) const {
    std::lock_guard<std::mutex> lock(choices_mu_);
    set(choices_[s]);
    choices_[s].made = true;
  }

  // Step `s`, a library call, on `stream`: a cuBLASLt matmul (its
  // workspace from the account's pool for the call) or a cuFFT transform.
  Status RunLibraryCall(size_t s, const std::vector<CUdeviceptr>& pointer,
                        const std::shared_ptr<CudaMemoryAccount>& account, CudaStream& stream) const {
    CudaRuntime& rt = *shared_->runtime;
    const CudaLibraryCall& call = program_.steps[s].library;
    const LibraryStep& library = library_steps_[s];
    auto at = [&](size_t i) { return pointer[static_cast<size_t>(call.buffers[i])]; };
    if (library.matmul) {
      const CublasLtSymbols* lt = shared_->Libraries().cublaslt();
      if (!lt) return Internal("cuda: cuBLASLt went away after the program was loaded");
      const StatusOr<LibraryChoice> choice = Choice(s, [&]() -> Status {
        return rt.WithStream(stream, [&](CUstream) -> Status {
          JITD_ASSIGN_OR_RETURN(cublasLtHandle_t lt_handle, shared_->LtHandle(*lt));
          JITD_ASSIGN_OR_RETURN(CublasLtChoice made, ChooseCublasLtMatmul(*lt, lt_handle, *library.matmul));
          StoreChoice(s, [&](LibraryChoice& c) { c.matmul = made; });
          return Status::Ok();
        });
      });
      JITD_RETURN_IF_ERROR(choice.status());
      // The workspace the algorithm asks for, from the pool, for the call alone.
      std::unique_ptr<CudaAllocation> workspace;
      if (choice->matmul.workspace_bytes > 0) {
        JITD_ASSIGN_OR_RETURN(workspace, rt.Allocate(account, choice->matmul.workspace_bytes, stream));
      }
      const CUdeviceptr work = workspace ? workspace->pointer() : 0;
      return rt.WithStream(stream, [&](CUstream handle) -> Status {
        JITD_ASSIGN_OR_RETURN(cublasLtHandle_t lt_handle, shared_->LtHandle(*lt));
        Status ran = RunCublasLtMatmul(*lt, lt_handle, *library.matmul, at(0), at(1), at(2), work, handle,
                                       &choice->matmul);
        // A failed call leaves its handle suspect: made again next time.
        if (!ran.ok()) shared_->DropLtHandle(lt_handle);
        return ran;
      });
    }
    if (library.conv) {
      const CudnnSymbols* dnn = shared_->Libraries().cudnn();
      if (!dnn) return Internal("cuda: cuDNN went away after the program was loaded");
      const StatusOr<LibraryChoice> choice = Choice(s, [&]() -> Status {
        return rt.WithStream(stream, [&](CUstream) -> Status {
          JITD_ASSIGN_OR_RETURN(auto taken, shared_->TakeDnnHandle(*dnn));
          StatusOr<CudnnConvChoice> made = ChooseCudnnConvolution(*dnn, taken.first, *library.conv);
          shared_->GiveBackDnnHandle(*dnn, taken, /*suspect=*/false);
          JITD_RETURN_IF_ERROR(made.status());
          StoreChoice(s, [&](LibraryChoice& c) { c.conv = *made; });
          return Status::Ok();
        });
      });
      JITD_RETURN_IF_ERROR(choice.status());
      std::unique_ptr<CudaAllocation> workspace;
      if (choice->conv.workspace_bytes > 0) {
        JITD_ASSIGN_OR_RETURN(workspace, rt.Allocate(account, choice->conv.workspace_bytes, stream));
      }
      const CUdeviceptr work = workspace ? workspace->pointer() : 0;
      return rt.WithStream(stream, [&](CUstream handle) -> Status {
        JITD_ASSIGN_OR_RETURN(auto taken, shared_->TakeDnnHandle(*dnn));
        Status ran = RunCudnnConvolution(*dnn, taken.first, *library.conv, at(0), at(1), at(2), work, handle,
                                         &choice->conv);
        // A failed call leaves its handle suspect: destroyed, not reused.
        shared_->GiveBackDnnHandle(*dnn, taken, /*suspect=*/!ran.ok());
        return ran;
      });
    }
    if (library.fft) {
      if (!fft_plans_) return Internal("cuda: cuFFT went away after the program was loaded");
      // cuFFT's work area from the pool, counted against the client's
      // quota, for the call alone (freed in stream order after it).
      uint64_t work_bytes = 0;
      JITD_RETURN_IF_ERROR(rt.WithStream(stream, [&](CUstream) -> Status {
        JITD_ASSIGN_OR_RETURN(work_bytes, fft_plans_->WorkAreaBytes(s, *library.fft, rt.generation()));
        return Status::Ok();
      }));
      std::unique_ptr<CudaAllocation> work;
      if (work_bytes > 0) {
        JITD_ASSIGN_OR_RETURN(work, rt.Allocate(account, work_bytes, stream));
      }
      const CUdeviceptr area = work ? work->pointer() : 0;
      return rt.WithStream(stream, [&](CUstream handle) -> Status {
        return fft_plans_->Run(s, *library.fft, at(0), at(1), handle, rt.generation(), area);
      });
    }
    return Internal("cuda: step " + std::to_string(s) + " is a library call without a plan");
  }

  std::shared_ptr<CudaDevice::Shared> shared_;
  CudaProgram program_;
  std::shared_ptr<CudaModule> module_;
  std::vector<size_t> function_of_step_;  // index into module_'s functions
  std::vector<LibraryStep> library_steps_;  // per step; set for library calls
  std::unique_ptr<CufftPlanCache> fft_plans_;
  // Per step: the algorithm and workspace its library call runs with,
  // asked of the library's heuristic at the step's first call, then kept.
  mutable std::mutex choices_mu_;
  mutable std::vector<LibraryChoice> choices_;
  mutable std::mutex constants_mu_;
  mutable std::vector<std::unique_ptr<CudaAllocation>> constants_;
  mutable std::map<std::pair<uint64_t, eval::RandomFill>, std::shared_ptr<const SeededSet>> seeded_;
};

}  // namespace

const CudaProbe& ProbeCuda() {
  static const CudaProbe probe = Probe();
  return probe;
}

CudaDevice::CudaDevice(CudaRuntime* runtime)
    : runtime_(runtime), shared_(std::make_shared<Shared>()) {
  shared_->runtime = runtime;
  shared_->account = runtime->CreateAccount("cuda executions", 0);
}

CudaDevice::~CudaDevice() = default;

StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create() {
  const CudaProbe& probe = ProbeCuda();
  if (!probe.available) return NotFound("cuda: unavailable (" + probe.reason + ")");
  return std::unique_ptr<CudaDevice>(new CudaDevice(probe.runtime));
}

std::unique_ptr<CudaDevice> CudaDevice::CreateForRuntime(CudaRuntime* runtime, const CudaLibraries* libraries) {
  std::unique_ptr<CudaDevice> device(new CudaDevice(runtime));
  // Tests over a fake driver: no real library behind it unless given.
  static const CudaLibraries* none = CudaLibraries::ForTables(nullptr, nullptr).release();
  device->shared_->injected_libraries = libraries ? libraries : none;
  return device;
}

std::string CudaLibrariesLine() {
  const CudaDeviceSettings settings = GetCudaDeviceSettings();
  if (!settings.use_libraries) return "CUDA libraries off (--cuda-no-libraries): jitd's own kernels for every op";
  return SharedCudaLibraries().Describe() + (settings.exact_f32 ? "; f32 matmuls exact (--cuda-exact-f32)" : "");
}

std::string CudaPtxAssemblyLine() {
  static const std::string line = [] {
    PtxCompilerOptions options;
    if (const char* which = std::getenv("JITD_PTX_ASSEMBLER"); which && *which) options.assembler = which;
    StatusOr<std::unique_ptr<PtxCompiler>> created = PtxCompiler::Create(options);
    return CudaDevice::Shared::DescribePtxAssembly(created.ok() ? created->get() : nullptr,
                                                   created.ok() ? std::string() : created.status().message());
  }();
  return line;
}

std::string CudaDevice::ptx_assembly() const {
  const PtxCompiler* assembler = shared_->Assembler();
  std::lock_guard<std::mutex> lock(shared_->mu);
  return Shared::DescribePtxAssembly(assembler, shared_->assembler_missing);
}

std::string CudaDevice::libraries() const {
  const CudaDeviceSettings settings = GetCudaDeviceSettings();
  if (!settings.use_libraries) return "CUDA libraries off (--cuda-no-libraries): jitd's own kernels for every op";
  return shared_->Libraries().Describe() + (settings.exact_f32 ? "; f32 matmuls exact (--cuda-exact-f32)" : "");
}

size_t CudaDevice::session_streams() const { return shared_->session_stream_count(); }

std::string CudaDevice::sm() const {
  const CudaDeviceInfo& info = runtime_->info();
  return "sm_" + std::to_string(info.sm_major) + std::to_string(info.sm_minor);
}

CudaCompileOptions CudaDevice::MakeCompileOptions(bool dumps) const {
  CudaCompileOptions compile;
  compile.sm = sm();
  compile.assembler = shared_->Assembler();
  compile.assemble = compile.assembler != nullptr;  // else PTX for the driver's JIT
  // Dumps carry the assembler's register / spill report (same cubin).
  compile.verbose_assembly = dumps && compile.assemble;
  // Library calls where the libraries loaded (else jitd's own kernels).
  const CudaDeviceSettings settings = GetCudaDeviceSettings();
  compile.use_cublaslt = settings.use_libraries && shared_->Libraries().cublaslt() != nullptr;
  compile.use_cufft = settings.use_libraries && shared_->Libraries().cufft() != nullptr;
  compile.use_cudnn = settings.use_libraries && shared_->Libraries().cudnn() != nullptr;
  compile.exact_f32 = settings.exact_f32;
  compile.library_min_multiply_adds = settings.library_min_multiply_adds;
  // devices::CompileProgram ran this device's pipeline (or the caller's).
  compile.pipeline = "";
  return compile;
}

void CudaDevice::ConfigurePipeline(passes::PipelineOptions& options) const {
  options.fusion = std::make_shared<const passes::FusionPolicy>(codegen::NvptxFusionPolicy());
  options.lower_quantized = true;
}

StatusOr<std::unique_ptr<DeviceBuffer>> CudaDevice::AllocateBuffer(
    const ir::Type& type, std::shared_ptr<MemoryAccount> account) const {
  if (!type.is_tensor()) return InvalidArgument("cuda: a device buffer holds a tensor, not " + type.ToString());
  const int64_t bytes = type.byte_size();
  if (bytes < 0) return InvalidArgument("cuda: a device buffer of " + type.ToString() + " has no fixed size");
  JITD_ASSIGN_OR_RETURN(CudaDevice::Shared::Lease lease, shared_->AcquireStream(nullptr));
  // At least one byte: the pool hands out no empty allocations.
  StatusOr<std::unique_ptr<CudaAllocation>> allocation = runtime_->Allocate(
      account ? account : shared_->account, static_cast<uint64_t>(std::max<int64_t>(bytes, 1)), *lease.stream);
  shared_->ReleaseStream(std::move(lease));
  if (!allocation.ok()) return allocation.status();
  return std::unique_ptr<DeviceBuffer>(new CudaDeviceBuffer(shared_, type, std::move(allocation).value()));
}

std::string CudaDevice::compile_target() const {
  // Fixed once the assembler is chosen: made once (a cache key asks per compile).
  std::call_once(shared_->target_once,
                 [&] { shared_->target = CudaCompileFingerprint(MakeCompileOptions(/*dumps=*/false)); });
  return shared_->target;
}

StatusOr<std::string> CudaDevice::Serialize(const Executable& executable) const {
  const auto* cuda = dynamic_cast<const CudaProgramExecutable*>(&executable);
  if (cuda == nullptr) return InvalidArgument("cuda: Serialize was given another device's executable");
  return SerializeCudaProgram(cuda->program());
}

StatusOr<std::unique_ptr<Executable>> CudaDevice::Deserialize(std::string_view bytes) const {
  JITD_ASSIGN_OR_RETURN(CudaProgram program, DeserializeCudaProgram(bytes));
  if (program.sm != sm()) {
    return Status(StatusCode::kFailedPrecondition, "cuda: the serialized program was assembled for " + program.sm +
                              ", this GPU is " + sm());
  }
  return Load(std::move(program));
}

StatusOr<std::unique_ptr<Executable>> CudaDevice::Compile(std::shared_ptr<const ir::Module> module,
                                                          const CompileOptions& options) const {
  JITD_ASSIGN_OR_RETURN(CudaProgram program,
                        CompileCuda(*module, MakeCompileOptions(options.dumps != nullptr)));
  if (options.dumps) {
    options.dumps->push_back({"kernels.ptx", program.ptx});
    options.dumps->push_back({"program.txt", DescribeCudaProgram(program)});
    if (!program.assembler_log.empty()) options.dumps->push_back({"ptxas.log", program.assembler_log});
  }
  return Load(std::move(program));
}

StatusOr<std::unique_ptr<Executable>> CudaDevice::Load(CudaProgram program) const {
  // The module's kernels: each unique name once, in first-launch order.
  std::vector<std::string> names;
  std::unordered_map<std::string, size_t> index_of;
  std::vector<size_t> function_of_step;
  std::vector<LibraryStep> library_steps;
  // A library call's plan decoded and checked against its buffers, and its
  // library loaded here (a program from the disk cache may have been
  // compiled where it was).
  auto CheckLibraryCall = [&](const CudaProgram& p, const CudaStep& step) -> StatusOr<LibraryStep> {
    const CudaLibraryCall& call = step.library;
    auto bytes = [&](size_t i) { return p.buffers[static_cast<size_t>(call.buffers[i])].bytes; };
    LibraryStep out;
    if (call.library == CudaLibraryCall::Library::kCublasLt) {
      if (!shared_->Libraries().cublaslt()) {
        return Status(StatusCode::kFailedPrecondition, "cuda: the program calls cuBLASLt ('" + step.description +
                                                           "'), which is not loaded here: " +
                                                           shared_->Libraries().cublaslt_state().reason);
      }
      JITD_ASSIGN_OR_RETURN(CublasLtMatmulPlan plan, DecodeMatmulPlan(call.plan));
      if (call.buffers.size() != 3) return InvalidArgument("cuda: a cuBLASLt call with " + std::to_string(call.buffers.size()) + " buffers");
      JITD_RETURN_IF_ERROR(CheckMatmulBuffers(plan, bytes(0), bytes(1), bytes(2)));
      out.matmul = plan;
    } else if (call.library == CudaLibraryCall::Library::kCudnn) {
      if (!shared_->Libraries().cudnn()) {
        return Status(StatusCode::kFailedPrecondition, "cuda: the program calls cuDNN ('" + step.description +
                                                           "'), which is not loaded here: " +
                                                           shared_->Libraries().cudnn_state().reason);
      }
      JITD_ASSIGN_OR_RETURN(CudnnConvPlan plan, DecodeConvPlan(call.plan));
      if (call.buffers.size() != 3) return InvalidArgument("cuda: a cuDNN call with " + std::to_string(call.buffers.size()) + " buffers");
      JITD_RETURN_IF_ERROR(CheckConvBuffers(plan, bytes(0), bytes(1), bytes(2)));
      out.conv = plan;
    } else {
      if (!shared_->Libraries().cufft()) {
        return Status(StatusCode::kFailedPrecondition, "cuda: the program calls cuFFT ('" + step.description +
                                                           "'), which is not loaded here: " +
                                                           shared_->Libraries().cufft_state().reason);
      }
      JITD_ASSIGN_OR_RETURN(CufftPlan plan, DecodeFftPlan(call.plan));
      if (call.buffers.size() != 2) return InvalidArgument("cuda: a cuFFT call with " + std::to_string(call.buffers.size()) + " buffers");
      JITD_RETURN_IF_ERROR(CheckFftBuffers(plan, bytes(0), bytes(1)));
      out.fft = plan;
    }
    return out;
  };
  for (const CudaStep& step : program.steps) {
    if (step.kind == CudaStep::Kind::kJump || step.kind == CudaStep::Kind::kJumpUnless) {
      function_of_step.push_back(SIZE_MAX);  // no kernel
      continue;
    }
    if (step.kind == CudaStep::Kind::kLibraryCall) {
      function_of_step.push_back(SIZE_MAX);
      library_steps.resize(function_of_step.size());
      JITD_ASSIGN_OR_RETURN(library_steps.back(), CheckLibraryCall(program, step));
      continue;
    }
    if (step.kind != CudaStep::Kind::kLaunch) {
      return Unimplemented("cuda: step '" + step.description +
                           "' is of a kind this executable does not run");
    }
    auto [it, added] = index_of.try_emplace(step.launch.function, names.size());
    if (added) names.push_back(step.launch.function);
    function_of_step.push_back(it->second);
  }
  std::shared_ptr<CudaModule> loaded;
  if (!names.empty()) {
    std::string image = program.cubin.empty() ? program.ptx : program.cubin;
    JITD_ASSIGN_OR_RETURN(loaded, runtime_->LoadModule(std::move(image), std::move(names)));
  }
  library_steps.resize(function_of_step.size());
  return std::unique_ptr<Executable>(new CudaProgramExecutable(
      shared_, std::move(program), std::move(loaded), std::move(function_of_step), std::move(library_steps)));
}

}  // namespace jitd::devices::cuda
