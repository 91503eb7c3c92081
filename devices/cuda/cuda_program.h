// CudaProgram: what the cuda compiler (cuda_compiler.h) makes of a module
// and what a CudaExecutable runs — plain data, no driver objects, so it is
// built, tested, serialized and cached on a machine without a GPU.
//
// Running it (the runtime's part, devices/cuda/cuda_runtime.h):
//   1. load `cubin` as a module (cuModuleLoadData) and look up every
//      CudaKernelLaunch::function in it (cuModuleGetFunction);
//   2. allocate one device arena of `arena_bytes` (256-byte aligned) for the
//      temporaries, and device copies of the `constants` (once per load);
//   3. resolve every CudaBuffer to a device pointer: argument i -> the
//      caller's i-th argument, constant k -> constants[k]'s copy,
//      temporary -> arena + offset;
//   4. run `steps` in order on one stream: a launch passes its `buffers`'
//      device pointers as the kernel's parameters, in order (each a
//      CUdeviceptr, 8 bytes), with grid, block and shared_bytes as given;
//      jumps (CudaStep) read a predicate back and go elsewhere;
//   5. result i is buffer results[i] (it may be an argument or a constant
//      when the program returns one unchanged: copy it).
// Kernels never read and write overlapping buffers: the arena's layout
// (jit/passes/buffer_assignment.h) keeps a step's inputs and outputs apart.
#ifndef JITD_DEVICES_CUDA_CUDA_PROGRAM_H_
#define JITD_DEVICES_CUDA_CUDA_PROGRAM_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

#include "jit/ir/type.h"

namespace jitd::devices::cuda {

// Where one value of the program lives.
struct CudaBuffer {
  // kSeeded: an elided dense_resource constant (weights left out of the
  // program), filled per execute's seed (ExecuteOptions::resource_fill_seed).
  enum class Kind : uint8_t { kArgument, kConstant, kTemporary, kSeeded };
  Kind kind = Kind::kTemporary;
  int64_t index = 0;   // kArgument: argument number; kConstant: into constants; kSeeded: into seeded
  int64_t offset = 0;  // kTemporary: byte offset in the arena
  int64_t bytes = 0;
};

// One kernel launch (cuLaunchKernel).
struct CudaKernelLaunch {
  std::string function;                // entry name in the cubin
  std::array<uint32_t, 3> grid{1, 1, 1};
  std::array<uint32_t, 3> block{1, 1, 1};
  uint32_t shared_bytes = 0;           // static shared memory (declared in the kernel)
  std::vector<int32_t> buffers;        // CudaProgram::buffers, one per kernel parameter
};

// One call into a CUDA library. `plan` is the library's own plan, encoded
// (cublaslt_plan.h's EncodeMatmulPlan, cufft_plan.h's EncodeFftPlan,
// cudnn_plan.h's EncodeConvPlan) and
// checked again when the executable is made; `buffers` are the call's
// operands then its results, as that plan says.
struct CudaLibraryCall {
  enum class Library : uint8_t { kCublasLt, kCufft, kCudnn };
  Library library = Library::kCublasLt;
  std::vector<int64_t> plan;
  std::vector<int32_t> buffers;  // CudaProgram::buffers
};

// One step of the program. Steps run in order but for jumps, which make
// control flow (stablehlo.while) on the host:
//   kLaunch     — `launch`;
//   kJumpUnless — copy the 1-byte predicate in buffer `predicate` to the
//                 host (the stream synchronized), continue at step `target`
//                 when it is 0, else at the next step;
//   kJump       — continue at step `target`.
//   kLibraryCall — `library`: a call into a CUDA library loaded at run time
//                 (cuda_libraries.h) on the same stream.
// A `target` equal to the number of steps is the program's end.
struct CudaStep {
  enum class Kind : uint8_t { kLaunch, kJumpUnless, kJump, kLibraryCall };
  Kind kind = Kind::kLaunch;
  CudaKernelLaunch launch;
  CudaLibraryCall library;  // kLibraryCall
  int32_t predicate = -1;   // kJumpUnless: CudaProgram::buffers index (1 byte)
  int32_t target = 0;       // kJumpUnless / kJump: a step index, or steps.size()
  std::string description;  // "jitd_k0 flat 1024 elements: add multiply" for reports
};

// Dots and convolutions of fewer multiply-adds run jitd's exact kernels,
// not a library call (CudaCompileOptions::library_min_multiply_adds).
inline constexpr int64_t kLibraryMinMultiplyAdds = int64_t{1} << 16;

// An elided dense_resource constant: what eval::ResourceFillLiteral fills it
// with for a seed, as the cpu device and the interpreter do.
struct CudaSeededConstant {
  ir::Type type;
  std::string handle;  // the resource's name
  uint64_t place = 0;  // eval::ComputeOpPlaces's number of its op
};

struct CudaProgram {
  std::string sm;            // "sm_90": the cubin runs on that architecture
  int ptx_version = 0;       // 85 = PTX ISA 8.5
  std::string toolchain;     // LLVM's and the assembler's versions (a cache-key part)
  std::string ptx;           // every kernel, one PTX module
  std::string cubin;         // ptx assembled for `sm`; empty when not assembled
  std::string assembler_log; // the assembler's info log
  std::vector<CudaBuffer> buffers;
  std::vector<std::string> constants;  // the bytes of each kConstant buffer
  std::vector<CudaSeededConstant> seeded;  // each kSeeded buffer's fill
  int64_t arena_bytes = 0;
  std::vector<CudaStep> steps;
  std::vector<int32_t> results;        // buffers index per result
  std::vector<ir::Type> argument_types;
  std::vector<ir::Type> result_types;
  int64_t unique_kernels = 0;          // entries in the cubin (equal kernels shared)
  int64_t launches = 0;                // steps of kind kLaunch (a loop's run once each)
  int64_t library_calls = 0;           // steps of kind kLibraryCall
};

// Checks that `program` is self-consistent (every index in range, every
// temporary inside the arena, constants of their buffers' sizes, launch
// dimensions nonzero): INVALID_ARGUMENT naming the first broken rule. A
// runtime may then index without checking.
Status ValidateCudaProgram(const CudaProgram& program);

// Bytes for a disk cache (jit/cache; Device::Serialize): "JITDCUDA", a
// format version, then every field, little-endian. Deserialize checks the
// magic, version, every length against the bytes left, and then
// ValidateCudaProgram: corrupt or foreign bytes are an error, never a
// program. The cache key is the caller's: it must hold the program's
// fingerprint and CudaCompileFingerprint (cuda_compiler.h).
inline constexpr uint32_t kCudaProgramFormatVersion = 4;  // 2: jump steps, 3: library calls, 4: seeded constants
std::string SerializeCudaProgram(const CudaProgram& program);
StatusOr<CudaProgram> DeserializeCudaProgram(std::string_view bytes);

}  // namespace jitd::devices::cuda

#endif  // JITD_DEVICES_CUDA_CUDA_PROGRAM_H_
