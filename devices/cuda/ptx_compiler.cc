#include "devices/cuda/ptx_compiler.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

extern char** environ;

namespace jitd::devices::cuda {

namespace {

// nvJitLink's C API (nvJitLink.h), the few calls used: declared here so
// that building needs no toolkit header and running needs no toolkit.
using NvJitLinkHandle = void*;
using NvJitLinkResult = int;  // 0 = NVJITLINK_SUCCESS
constexpr int kNvJitLinkInputPtx = 2;  // NVJITLINK_INPUT_PTX

struct NvJitLink {
  void* library = nullptr;
  std::string path;
  NvJitLinkResult (*create)(NvJitLinkHandle*, uint32_t, const char**) = nullptr;
  NvJitLinkResult (*destroy)(NvJitLinkHandle*) = nullptr;
  NvJitLinkResult (*add_data)(NvJitLinkHandle, int, const void*, size_t, const char*) = nullptr;
  NvJitLinkResult (*complete)(NvJitLinkHandle) = nullptr;
  NvJitLinkResult (*cubin_size)(NvJitLinkHandle, size_t*) = nullptr;
  NvJitLinkResult (*cubin)(NvJitLinkHandle, void*) = nullptr;
  NvJitLinkResult (*error_log_size)(NvJitLinkHandle, size_t*) = nullptr;
  NvJitLinkResult (*error_log)(NvJitLinkHandle, char*) = nullptr;
  NvJitLinkResult (*info_log_size)(NvJitLinkHandle, size_t*) = nullptr;
  NvJitLinkResult (*info_log)(NvJitLinkHandle, char*) = nullptr;
  NvJitLinkResult (*version)(unsigned*, unsigned*) = nullptr;
};

std::vector<std::string> ToolkitRoots() {
  std::vector<std::string> roots;
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* env = std::getenv(var); env && *env) roots.push_back(env);
  }
  roots.push_back("/usr/local/cuda");
  roots.push_back("/usr/lib/cuda");
  return roots;
}

template <typename F>
bool Bind(void* library, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(library, name));
  return out != nullptr;
}

// nvJitLink from the loader's path, then the toolkit's lib64; nullptr (and
// `why`) when none loads or one lacks a symbol.
std::unique_ptr<NvJitLink> LoadNvJitLink(std::string* why) {
  std::vector<std::string> candidates = {"libnvJitLink.so.13", "libnvJitLink.so.12", "libnvJitLink.so"};
  for (const std::string& root : ToolkitRoots()) {
    candidates.push_back(root + "/lib64/libnvJitLink.so");
    candidates.push_back(root + "/lib/libnvJitLink.so");
  }
  for (const std::string& name : candidates) {
    void* library = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) continue;
    auto jl = std::make_unique<NvJitLink>();
    jl->library = library;
    jl->path = name;
    const bool ok = Bind(library, "nvJitLinkCreate", jl->create) && Bind(library, "nvJitLinkDestroy", jl->destroy) &&
                    Bind(library, "nvJitLinkAddData", jl->add_data) &&
                    Bind(library, "nvJitLinkComplete", jl->complete) &&
                    Bind(library, "nvJitLinkGetLinkedCubinSize", jl->cubin_size) &&
                    Bind(library, "nvJitLinkGetLinkedCubin", jl->cubin) &&
                    Bind(library, "nvJitLinkGetErrorLogSize", jl->error_log_size) &&
                    Bind(library, "nvJitLinkGetErrorLog", jl->error_log) &&
                    Bind(library, "nvJitLinkGetInfoLogSize", jl->info_log_size) &&
                    Bind(library, "nvJitLinkGetInfoLog", jl->info_log) &&
                    Bind(library, "nvJitLinkVersion", jl->version);
    if (ok) return jl;
    *why = name + " lacks an nvJitLink symbol";
    dlclose(library);
  }
  if (why->empty()) *why = "libnvJitLink.so not found (the loader's path, CUDA_HOME, /usr/local/cuda/lib64)";
  return nullptr;
}

bool IsExecutable(const std::string& path) { return !path.empty() && access(path.c_str(), X_OK) == 0; }

std::string FindPtxas(const std::string& given) {
  if (!given.empty()) return IsExecutable(given) ? given : "";
  if (const char* env = std::getenv("JITD_PTXAS"); env && *env) return IsExecutable(env) ? env : "";
  for (const std::string& root : ToolkitRoots()) {
    if (IsExecutable(root + "/bin/ptxas")) return root + "/bin/ptxas";
  }
  if (const char* path = std::getenv("PATH")) {
    std::stringstream dirs(path);
    std::string dir;
    while (std::getline(dirs, dir, ':')) {
      if (IsExecutable(dir + "/ptxas")) return dir + "/ptxas";
    }
  }
  return "";
}

// Runs argv with stdout and stderr into `log_path`; the exit status, or -1
// when it could not start.
int Run(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0].c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// "release 13.0" in ptxas --version -> {13, 0}.
bool ParseRelease(const std::string& text, int* major, int* minor) {
  const size_t at = text.find("release ");
  return at != std::string::npos && std::sscanf(text.c_str() + at, "release %d.%d", major, minor) == 2;
}

// A directory of its own under $TMPDIR, removed with the object.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/jitd-ptxas-XXXXXX";
    if (mkdtemp(pattern.data())) path_ = pattern;
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

std::string PtxToolchain::Describe() const {
  return assembler + " " + version + (assembler == "ptxas" ? " " + path : "");
}

int MaxPtxVersionOfCudaRelease(int major, int minor) {
  // The PTX ISA each CUDA release introduced (PTX ISA document, "Release
  // History").
  static const struct {
    int major, minor, ptx;
  } kTable[] = {{11, 0, 70}, {11, 1, 71}, {11, 2, 72}, {11, 3, 73}, {11, 4, 74}, {11, 5, 75},
                {11, 6, 76}, {11, 7, 77}, {11, 8, 78}, {12, 0, 80}, {12, 1, 81}, {12, 2, 82},
                {12, 3, 83}, {12, 4, 84}, {12, 5, 85}, {12, 6, 85}, {12, 8, 87}, {12, 9, 88},
                {13, 0, 90}};
  int best = 0;
  for (const auto& row : kTable) {
    if (major > row.major || (major == row.major && minor >= row.minor)) best = row.ptx;
  }
  return best;
}

struct PtxCompiler::Impl {
  PtxCompilerOptions options;
  PtxToolchain toolchain;
  std::unique_ptr<NvJitLink> jitlink;

  ~Impl() {
    if (jitlink && jitlink->library) dlclose(jitlink->library);
  }

  StatusOr<PtxAssembly> WithNvJitLink(std::string_view ptx, std::string_view sm, bool verbose) const {
    const std::string arch = "-arch=" + std::string(sm);
    const std::string opt = "-O" + std::to_string(options.opt_level);
    std::vector<const char*> flags = {arch.c_str(), opt.c_str()};
    if (verbose) flags.push_back("-verbose");
    NvJitLinkHandle handle = nullptr;
    if (jitlink->create(&handle, static_cast<uint32_t>(flags.size()), flags.data()) != 0) {
      return InvalidArgument("nvJitLink refused the options " + arch + " " + opt);
    }
    auto log_of = [&](bool error) {
      size_t size = 0;
      std::string text;
      if ((error ? jitlink->error_log_size : jitlink->info_log_size)(handle, &size) == 0 && size > 0) {
        text.resize(size);
        (error ? jitlink->error_log : jitlink->info_log)(handle, text.data());
        while (!text.empty() && (text.back() == '\0' || text.back() == '\n')) text.pop_back();
      }
      return text;
    };
    std::string source(ptx);  // nvJitLink reads PTX up to its terminating NUL
    NvJitLinkResult rc = jitlink->add_data(handle, kNvJitLinkInputPtx, source.c_str(), source.size() + 1, "jitd.ptx");
    if (rc == 0) rc = jitlink->complete(handle);
    if (rc != 0) {
      const std::string log = log_of(true);
      jitlink->destroy(&handle);
      return InvalidArgument("nvJitLink could not assemble the PTX for " + std::string(sm) + " (error " +
                             std::to_string(rc) + "): " + log);
    }
    PtxAssembly out;
    size_t size = 0;
    if (jitlink->cubin_size(handle, &size) != 0 || size == 0) {
      jitlink->destroy(&handle);
      return Internal("nvJitLink produced no cubin");
    }
    out.cubin.resize(size);
    jitlink->cubin(handle, out.cubin.data());
    out.log = log_of(false);
    jitlink->destroy(&handle);
    return out;
  }

  StatusOr<PtxAssembly> WithPtxas(std::string_view ptx, std::string_view sm, bool verbose) const {
    TempDir dir;
    if (dir.path().empty()) return Internal(std::string("ptxas: cannot create a temporary directory: ") + std::strerror(errno));
    const std::string in = dir.path() + "/kernels.ptx";
    const std::string out = dir.path() + "/kernels.cubin";
    const std::string log = dir.path() + "/ptxas.log";
    {
      std::ofstream f(in, std::ios::binary);
      f.write(ptx.data(), static_cast<std::streamsize>(ptx.size()));
      if (!f) return Internal("ptxas: cannot write " + in);
    }
    std::vector<std::string> argv = {toolchain.path, "-arch=" + std::string(sm), "-O" + std::to_string(options.opt_level),
                                     in, "-o", out};
    if (verbose) argv.push_back("-v");
    const int rc = Run(argv, log);
    if (rc != 0) {
      return InvalidArgument(toolchain.path + " could not assemble the PTX for " + std::string(sm) +
                             (rc < 0 ? " (it did not run)" : " (exit " + std::to_string(rc) + ")") + ": " + ReadFile(log));
    }
    PtxAssembly result;
    result.cubin = ReadFile(out);
    result.log = ReadFile(log);
    if (result.cubin.empty()) return Internal(toolchain.path + " wrote no cubin");
    return result;
  }
};

PtxCompiler::PtxCompiler(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
PtxCompiler::~PtxCompiler() = default;

const PtxToolchain& PtxCompiler::toolchain() const { return impl_->toolchain; }

StatusOr<std::unique_ptr<PtxCompiler>> PtxCompiler::Create(const PtxCompilerOptions& options) {
  if (options.assembler != "auto" && options.assembler != "nvjitlink" && options.assembler != "ptxas") {
    return InvalidArgument("PTX assembler '" + options.assembler + "': expected auto, nvjitlink or ptxas");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  std::string jitlink_why;
  if (options.assembler != "ptxas") {
    impl->jitlink = LoadNvJitLink(&jitlink_why);
    if (impl->jitlink) {
      unsigned major = 0, minor = 0;
      impl->jitlink->version(&major, &minor);
      impl->toolchain.assembler = "nvjitlink";
      impl->toolchain.version = std::to_string(major) + "." + std::to_string(minor);
      impl->toolchain.path = impl->jitlink->path;
      impl->toolchain.max_ptx_version = MaxPtxVersionOfCudaRelease(static_cast<int>(major), static_cast<int>(minor));
      return std::unique_ptr<PtxCompiler>(new PtxCompiler(std::move(impl)));
    }
    if (options.assembler == "nvjitlink") return NotFound("nvJitLink: " + jitlink_why);
  }
  const std::string ptxas = FindPtxas(options.ptxas_path);
  if (ptxas.empty()) {
    return NotFound("no PTX assembler: " + (jitlink_why.empty() ? std::string() : "nvJitLink: " + jitlink_why + "; ") +
                    "ptxas not found (" +
                    (options.ptxas_path.empty() ? "JITD_PTXAS, CUDA_HOME/bin, /usr/local/cuda/bin, PATH"
                                                : options.ptxas_path) +
                    ")");
  }
  TempDir dir;
  const std::string log = (dir.path().empty() ? std::string("/tmp") : dir.path()) + "/version.txt";
  if (Run({ptxas, "--version"}, log) != 0) return NotFound(ptxas + " --version failed: " + ReadFile(log));
  int major = 0, minor = 0;
  const std::string text = ReadFile(log);
  if (!ParseRelease(text, &major, &minor)) return NotFound(ptxas + " --version printed no release: " + text);
  impl->toolchain.assembler = "ptxas";
  impl->toolchain.version = std::to_string(major) + "." + std::to_string(minor);
  impl->toolchain.path = ptxas;
  impl->toolchain.max_ptx_version = MaxPtxVersionOfCudaRelease(major, minor);
  return std::unique_ptr<PtxCompiler>(new PtxCompiler(std::move(impl)));
}

StatusOr<PtxAssembly> PtxCompiler::Assemble(std::string_view ptx, std::string_view sm, bool verbose) const {
  if (impl_->jitlink) return impl_->WithNvJitLink(ptx, sm, verbose);
  return impl_->WithPtxas(ptx, sm, verbose);
}

}  // namespace jitd::devices::cuda
