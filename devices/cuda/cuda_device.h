// The cuda device: the daemon's one GPU (GPU 0) behind devices/device.h.
//
// The first use in a process probes the machine once (ProbeCuda): loads
// libcuda (cuda_symbols.h), opens GPU 0 with its primary context and pool
// (cuda_runtime.h). What it found is kept for the process's life and
// shared: every CudaDevice uses that one runtime.
//
// Thread safety: ProbeCuda and CudaDevice are thread-safe.
#ifndef JITD_DEVICES_CUDA_CUDA_DEVICE_H_
#define JITD_DEVICES_CUDA_CUDA_DEVICE_H_

#include <memory>
#include <string>

#include "base/status.h"
#include "devices/cuda/cuda_program.h"
#include "devices/cuda/cuda_runtime.h"
#include "devices/device.h"

namespace jitd::devices::cuda {

struct CudaCompileOptions;
class CudaLibraries;

// What the probe found. Plain value, fixed once made.
struct CudaProbe {
  // The device can run programs: a driver, a GPU, and a code generator.
  bool available = false;
  // Why not ("" when available): "libcuda.so.1 not found (searched ...)",
  // "no CUDA device", "driver too old: ...", ...
  std::string reason;
  // GPU 0, opened, when the driver and a GPU are there (even when the
  // device is not available for another reason); lives until exit.
  CudaRuntime* runtime = nullptr;
  std::string driver_path;  // the libcuda loaded ("" when none)
};

// Probes once per process (later calls return the same result).
const CudaProbe& ProbeCuda();

// Process-wide settings of the cuda device (`jitd serve`'s flags), read by
// the compiles after they are set (set them before the first compile: the
// compile target is fixed then).
struct CudaDeviceSettings {
  // f32 matmuls exact (no TF32) whatever precision_config says, so results
  // can match cpu: `jitd serve --cuda-exact-f32` (or $JITD_CUDA_EXACT_F32=1).
  bool exact_f32 = false;
  // false: no library calls, jitd's own kernels for every op
  // (`--cuda-no-libraries`, $JITD_CUDA_NO_LIBRARIES=1).
  bool use_libraries = true;
  // CudaCompileOptions::library_min_multiply_adds: smaller dots and
  // convolutions run jitd's exact kernels ($JITD_CUDA_LIBRARY_MIN_MULTIPLY_ADDS).
  int64_t library_min_multiply_adds = kLibraryMinMultiplyAdds;
};
void SetCudaDeviceSettings(const CudaDeviceSettings& settings);
CudaDeviceSettings GetCudaDeviceSettings();

// The process's CUDA libraries as `jitd stats` shows them, the settings
// included ("cuBLASLt 130000 (...); cuFFT ...; cuDNN absent: ..., convolutions
// use jitd's own kernels"). Loads them on first use.
std::string CudaLibrariesLine();

// How PTX becomes a cubin in this process, as `jitd stats` shows it: "nvjitlink
// 13.0 (in process)", "ptxas 13.0 /usr/local/cuda/bin/ptxas (subprocess)",
// or "the driver's JIT (cuModuleLoadData of the PTX): no PTX assembler:
// <why>". $JITD_PTX_ASSEMBLER / $JITD_PTXAS as the device reads them.
std::string CudaPtxAssemblyLine();

// Compiles with the cuda compiler (cuda_compiler.h: a CudaProgram of NVPTX
// kernels, assembled to a cubin for this GPU's sm, or PTX for the driver's
// JIT when no assembler is found) and runs the program on the runtime:
// the executable loads the module and uploads the constants once; each
// execute runs on its client session's stream (one per session, keyed by
// ExecuteOptions::device_memory; a pooled one without it), allocates the
// arena and the arguments (counted against that account), copies in, launches
// the steps in order, copies results out and synchronizes. The deadline
// and cancel flag are checked between launches (a kernel is not cut).
// After a context reset the module is reloaded by the runtime and the
// constants are uploaded again on the next execute.
class CudaDevice final : public Device {
 public:
  // NOT_FOUND "cuda: unavailable (<reason>)" when ProbeCuda says so.
  static StatusOr<std::unique_ptr<CudaDevice>> Create();
  // Over `runtime` (borrowed, must outlive the device and its
  // executables), whatever ProbeCuda says: for tests with a fake driver.
  // `libraries` (borrowed too): the cuBLASLt / cuFFT tables to plan and
  // call (fakes in tests); null: none (jitd's own kernels).
  static std::unique_ptr<CudaDevice> CreateForRuntime(CudaRuntime* runtime,
                                                      const CudaLibraries* libraries = nullptr);
  // "cuBLASLt 130000 (...); cuFFT absent: ..., ffts use jitd's own kernels".
  std::string libraries() const;
  // This device's PTX -> cubin path, as CudaPtxAssemblyLine says it.
  std::string ptx_assembly() const;
  ~CudaDevice() override;

  std::string_view name() const override { return "cuda"; }
  // jit/passes' default pipeline runs in front of code generation
  // (devices::CompileProgram: --pipeline replaces it, dumps show each pass).
  std::string_view pipeline() const override { return "default"; }
  // The pipeline ends with jit/passes' fusion under the NVPTX policy and
  // lowers quantized ops.
  void ConfigurePipeline(passes::PipelineOptions& options) const override;
  using Device::Compile;
  // Code generation only: the module has been through the pipeline
  // (devices::CompileProgram). One without fusion ops is fused first.
  StatusOr<std::unique_ptr<Executable>> Compile(std::shared_ptr<const ir::Module> module,
                                                const CompileOptions& options) const override;
  // The executable's CudaProgram (cubin included) for the disk cache:
  // SerializeCudaProgram's bytes. INVALID_ARGUMENT for another device's.
  StatusOr<std::string> Serialize(const Executable& executable) const override;
  // Loads serialized bytes without compiling: the program checked
  // (DeserializeCudaProgram), its cubin loaded as a module. FAILED_PRECONDITION
  // when it was assembled for another sm than this GPU's (the daemon then
  // compiles the program again).
  StatusOr<std::unique_ptr<Executable>> Deserialize(std::string_view bytes) const override;
  // CudaCompileFingerprint of this device's compiles: "sm_90 ptx85 LLVM
  // 19.1.7 nvjitlink 13.0 pipeline=default ...".
  std::string compile_target() const override;
  // Device-resident buffers (CudaDeviceBuffer): memory from the pool,
  // counted on `account` (--max-device-bytes), that RunWithBuffers reads
  // and writes in place.
  StatusOr<std::unique_ptr<DeviceBuffer>> AllocateBuffer(const ir::Type& type,
                                                         std::shared_ptr<MemoryAccount> account) const override;
  CudaRuntime& runtime() const { return *runtime_; }
  // The sm this device compiles for ("sm_90").
  std::string sm() const;
  // Client sessions that have a stream of their own now.
  size_t session_streams() const;

  struct Shared;  // what the device's executables share (streams, account)

 private:
  explicit CudaDevice(CudaRuntime* runtime);
  CudaCompileOptions MakeCompileOptions(bool dumps) const;
  StatusOr<std::unique_ptr<Executable>> Load(CudaProgram program) const;
  CudaRuntime* runtime_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_DEVICE_H_
