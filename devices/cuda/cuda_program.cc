#include "devices/cuda/cuda_program.h"

#include <cstring>

namespace jitd::devices::cuda {

namespace {

constexpr char kMagic[8] = {'J', 'I', 'T', 'D', 'C', 'U', 'D', 'A'};

class Writer {
 public:
  void U64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Bytes(std::string_view s) {
    U64(s.size());
    out_.append(s);
  }
  void Type(const ir::Type& t) {
    U64(static_cast<uint64_t>(t.dtype()));
    U64(t.dims().size());
    for (int64_t d : t.dims()) I64(d);
  }
  std::string& out() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool U64(uint64_t& v) {
    if (in_.size() < 8) return false;
    v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<uint8_t>(in_[static_cast<size_t>(i)])) << (8 * i);
    in_.remove_prefix(8);
    return true;
  }
  bool I64(int64_t& v) {
    uint64_t u = 0;
    if (!U64(u)) return false;
    v = static_cast<int64_t>(u);
    return true;
  }
  // A count of items of at least `min_bytes` each: never more than the
  // bytes left could hold.
  bool Count(uint64_t& n, uint64_t min_bytes) { return U64(n) && n <= in_.size() / std::max<uint64_t>(min_bytes, 1); }
  bool Bytes(std::string& s) {
    uint64_t n = 0;
    if (!U64(n) || n > in_.size()) return false;
    s.assign(in_.data(), static_cast<size_t>(n));
    in_.remove_prefix(static_cast<size_t>(n));
    return true;
  }
  bool Type(ir::Type& t) {
    uint64_t dtype = 0, rank = 0;
    if (!U64(dtype) || dtype >= static_cast<uint64_t>(ir::kNumDTypes) || !Count(rank, 8) ||
        rank > static_cast<uint64_t>(ir::kMaxRank)) {
      return false;
    }
    std::vector<int64_t> dims(static_cast<size_t>(rank));
    for (int64_t& d : dims) {
      if (!I64(d)) return false;
    }
    StatusOr<ir::Type> checked = ir::Type::CheckedTensor(static_cast<ir::DType>(dtype), std::move(dims));
    if (!checked.ok()) return false;
    t = *checked;
    return true;
  }
  bool empty() const { return in_.empty(); }

 private:
  std::string_view in_;
};

Status Broken(const std::string& what) { return InvalidArgument("cuda program: " + what); }

}  // namespace

Status ValidateCudaProgram(const CudaProgram& p) {
  const int64_t nbuffers = static_cast<int64_t>(p.buffers.size());
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const CudaBuffer& b = p.buffers[i];
    const std::string name = "buffer " + std::to_string(i);
    if (b.bytes < 0) return Broken(name + " has a negative size");
    switch (b.kind) {
      case CudaBuffer::Kind::kArgument:
        if (b.index < 0 || b.index >= static_cast<int64_t>(p.argument_types.size())) {
          return Broken(name + " names argument " + std::to_string(b.index) + " of " +
                        std::to_string(p.argument_types.size()));
        }
        if (p.argument_types[static_cast<size_t>(b.index)].byte_size() != b.bytes) {
          return Broken(name + " is not the size of argument " + std::to_string(b.index));
        }
        break;
      case CudaBuffer::Kind::kConstant:
        if (b.index < 0 || b.index >= static_cast<int64_t>(p.constants.size())) {
          return Broken(name + " names constant " + std::to_string(b.index) + " of " +
                        std::to_string(p.constants.size()));
        }
        if (static_cast<int64_t>(p.constants[static_cast<size_t>(b.index)].size()) != b.bytes) {
          return Broken(name + " is not the size of constant " + std::to_string(b.index));
        }
        break;
      case CudaBuffer::Kind::kSeeded:
        if (b.index < 0 || b.index >= static_cast<int64_t>(p.seeded.size())) {
          return Broken(name + " names seeded constant " + std::to_string(b.index) + " of " +
                        std::to_string(p.seeded.size()));
        }
        if (p.seeded[static_cast<size_t>(b.index)].type.byte_size() != b.bytes) {
          return Broken(name + " is not the size of seeded constant " + std::to_string(b.index));
        }
        break;
      case CudaBuffer::Kind::kTemporary:
        if (b.offset < 0 || b.offset > p.arena_bytes || b.bytes > p.arena_bytes - b.offset) {
          return Broken(name + " at offset " + std::to_string(b.offset) + " does not fit the arena of " +
                        std::to_string(p.arena_bytes) + " bytes");
        }
        break;
      default:
        return Broken(name + " has an unknown kind");
    }
  }
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const CudaStep& step = p.steps[s];
    const std::string name = "step " + std::to_string(s);
    if (step.kind == CudaStep::Kind::kJump || step.kind == CudaStep::Kind::kJumpUnless) {
      if (step.target < 0 || static_cast<size_t>(step.target) > p.steps.size()) {
        return Broken(name + " jumps to step " + std::to_string(step.target));
      }
      if (step.kind == CudaStep::Kind::kJumpUnless &&
          (step.predicate < 0 || step.predicate >= nbuffers ||
           p.buffers[static_cast<size_t>(step.predicate)].bytes != 1)) {
        return Broken(name + " reads predicate buffer " + std::to_string(step.predicate) +
                      ", which is not a 1-byte buffer");
      }
      continue;
    }
    if (step.kind == CudaStep::Kind::kLibraryCall) {
      const CudaLibraryCall& call = step.library;
      if (call.library != CudaLibraryCall::Library::kCublasLt && call.library != CudaLibraryCall::Library::kCufft &&
          call.library != CudaLibraryCall::Library::kCudnn) {
        return Broken(name + " calls an unknown library");
      }
      if (call.plan.empty()) return Broken(name + " has an empty library plan");
      for (int32_t b : call.buffers) {
        if (b < 0 || b >= nbuffers) return Broken(name + " passes buffer " + std::to_string(b));
      }
      continue;
    }
    if (step.kind != CudaStep::Kind::kLaunch) return Broken(name + " has an unknown kind");
    const CudaKernelLaunch& l = step.launch;
    if (l.function.empty()) return Broken(name + " names no kernel");
    for (int k = 0; k < 3; ++k) {
      if (l.grid[static_cast<size_t>(k)] == 0 || l.block[static_cast<size_t>(k)] == 0) {
        return Broken(name + " launches an empty grid or block");
      }
    }
    for (int32_t b : l.buffers) {
      if (b < 0 || b >= nbuffers) return Broken(name + " passes buffer " + std::to_string(b));
    }
  }
  if (p.results.size() != p.result_types.size()) return Broken("results and result types differ in number");
  for (size_t r = 0; r < p.results.size(); ++r) {
    if (p.results[r] < 0 || p.results[r] >= nbuffers) return Broken("result " + std::to_string(r) + " names no buffer");
    if (p.buffers[static_cast<size_t>(p.results[r])].bytes != p.result_types[r].byte_size()) {
      return Broken("result " + std::to_string(r) + " is not the size of its type");
    }
  }
  if (p.launches > 0 && p.cubin.empty() && p.ptx.empty()) return Broken("kernel launches but no code");
  return Status::Ok();
}

std::string SerializeCudaProgram(const CudaProgram& p) {
  Writer w;
  w.out().append(kMagic, sizeof kMagic);
  w.U64(kCudaProgramFormatVersion);
  w.Bytes(p.sm);
  w.I64(p.ptx_version);
  w.Bytes(p.toolchain);
  w.Bytes(p.ptx);
  w.Bytes(p.cubin);
  w.Bytes(p.assembler_log);
  w.U64(p.buffers.size());
  for (const CudaBuffer& b : p.buffers) {
    w.U64(static_cast<uint64_t>(b.kind));
    w.I64(b.index);
    w.I64(b.offset);
    w.I64(b.bytes);
  }
  w.U64(p.constants.size());
  for (const std::string& c : p.constants) w.Bytes(c);
  w.U64(p.seeded.size());
  for (const CudaSeededConstant& c : p.seeded) {
    w.Type(c.type);
    w.Bytes(c.handle);
    w.U64(c.place);
  }
  w.I64(p.arena_bytes);
  w.U64(p.steps.size());
  for (const CudaStep& s : p.steps) {
    w.U64(static_cast<uint64_t>(s.kind));
    w.Bytes(s.launch.function);
    for (uint32_t v : s.launch.grid) w.U64(v);
    for (uint32_t v : s.launch.block) w.U64(v);
    w.U64(s.launch.shared_bytes);
    w.U64(s.launch.buffers.size());
    for (int32_t b : s.launch.buffers) w.I64(b);
    w.I64(s.predicate);
    w.I64(s.target);
    w.Bytes(s.description);
    w.U64(static_cast<uint64_t>(s.library.library));
    w.U64(s.library.plan.size());
    for (int64_t v : s.library.plan) w.I64(v);
    w.U64(s.library.buffers.size());
    for (int32_t b : s.library.buffers) w.I64(b);
  }
  w.U64(p.results.size());
  for (int32_t r : p.results) w.I64(r);
  w.U64(p.argument_types.size());
  for (const ir::Type& t : p.argument_types) w.Type(t);
  w.U64(p.result_types.size());
  for (const ir::Type& t : p.result_types) w.Type(t);
  w.I64(p.unique_kernels);
  w.I64(p.launches);
  w.I64(p.library_calls);
  return std::move(w.out());
}

StatusOr<CudaProgram> DeserializeCudaProgram(std::string_view bytes) {
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    return Broken("not a serialized cuda program (bad magic)");
  }
  Reader r(bytes.substr(sizeof kMagic));
  uint64_t version = 0;
  if (!r.U64(version) || version != kCudaProgramFormatVersion) {
    return Broken("format version " + std::to_string(version) + ", expected " +
                  std::to_string(kCudaProgramFormatVersion));
  }
  CudaProgram p;
  auto truncated = [] { return Broken("truncated or corrupt"); };
  int64_t ptx_version = 0;
  if (!r.Bytes(p.sm) || !r.I64(ptx_version) || !r.Bytes(p.toolchain) || !r.Bytes(p.ptx) || !r.Bytes(p.cubin) ||
      !r.Bytes(p.assembler_log)) {
    return truncated();
  }
  p.ptx_version = static_cast<int>(ptx_version);
  uint64_t n = 0;
  if (!r.Count(n, 32)) return truncated();
  p.buffers.resize(static_cast<size_t>(n));
  for (CudaBuffer& b : p.buffers) {
    uint64_t kind = 0;
    if (!r.U64(kind) || kind > static_cast<uint64_t>(CudaBuffer::Kind::kSeeded) || !r.I64(b.index) ||
        !r.I64(b.offset) || !r.I64(b.bytes)) {
      return truncated();
    }
    b.kind = static_cast<CudaBuffer::Kind>(kind);
  }
  if (!r.Count(n, 8)) return truncated();
  p.constants.resize(static_cast<size_t>(n));
  for (std::string& c : p.constants) {
    if (!r.Bytes(c)) return truncated();
  }
  if (!r.Count(n, 24)) return truncated();
  p.seeded.resize(static_cast<size_t>(n));
  for (CudaSeededConstant& c : p.seeded) {
    if (!r.Type(c.type) || !r.Bytes(c.handle) || !r.U64(c.place)) return truncated();
  }
  if (!r.I64(p.arena_bytes) || p.arena_bytes < 0 || !r.Count(n, 80)) return truncated();
  p.steps.resize(static_cast<size_t>(n));
  for (CudaStep& s : p.steps) {
    uint64_t kind = 0, v = 0, count = 0;
    if (!r.U64(kind) || kind > static_cast<uint64_t>(CudaStep::Kind::kLibraryCall) || !r.Bytes(s.launch.function)) {
      return truncated();
    }
    s.kind = static_cast<CudaStep::Kind>(kind);
    for (uint32_t& g : s.launch.grid) {
      if (!r.U64(v) || v > UINT32_MAX) return truncated();
      g = static_cast<uint32_t>(v);
    }
    for (uint32_t& g : s.launch.block) {
      if (!r.U64(v) || v > UINT32_MAX) return truncated();
      g = static_cast<uint32_t>(v);
    }
    if (!r.U64(v) || v > UINT32_MAX || !r.Count(count, 8)) return truncated();
    s.launch.shared_bytes = static_cast<uint32_t>(v);
    s.launch.buffers.resize(static_cast<size_t>(count));
    for (int32_t& b : s.launch.buffers) {
      int64_t x = 0;
      if (!r.I64(x) || x < INT32_MIN || x > INT32_MAX) return truncated();
      b = static_cast<int32_t>(x);
    }
    int64_t predicate = 0, target = 0;
    if (!r.I64(predicate) || predicate < INT32_MIN || predicate > INT32_MAX || !r.I64(target) ||
        target < INT32_MIN || target > INT32_MAX) {
      return truncated();
    }
    s.predicate = static_cast<int32_t>(predicate);
    s.target = static_cast<int32_t>(target);
    if (!r.Bytes(s.description)) return truncated();
    uint64_t library = 0;
    if (!r.U64(library) || library > static_cast<uint64_t>(CudaLibraryCall::Library::kCudnn) || !r.Count(count, 8)) {
      return truncated();
    }
    s.library.library = static_cast<CudaLibraryCall::Library>(library);
    s.library.plan.resize(static_cast<size_t>(count));
    for (int64_t& x : s.library.plan) {
      if (!r.I64(x)) return truncated();
    }
    if (!r.Count(count, 8)) return truncated();
    s.library.buffers.resize(static_cast<size_t>(count));
    for (int32_t& b : s.library.buffers) {
      int64_t x = 0;
      if (!r.I64(x) || x < INT32_MIN || x > INT32_MAX) return truncated();
      b = static_cast<int32_t>(x);
    }
  }
  if (!r.Count(n, 8)) return truncated();
  p.results.resize(static_cast<size_t>(n));
  for (int32_t& b : p.results) {
    int64_t x = 0;
    if (!r.I64(x) || x < INT32_MIN || x > INT32_MAX) return truncated();
    b = static_cast<int32_t>(x);
  }
  for (std::vector<ir::Type>* types : {&p.argument_types, &p.result_types}) {
    if (!r.Count(n, 16)) return truncated();
    types->resize(static_cast<size_t>(n));
    for (ir::Type& t : *types) {
      if (!r.Type(t)) return truncated();
    }
  }
  if (!r.I64(p.unique_kernels) || !r.I64(p.launches) || !r.I64(p.library_calls) || !r.empty()) return truncated();
  JITD_RETURN_IF_ERROR(ValidateCudaProgram(p));
  return p;
}

}  // namespace jitd::devices::cuda
