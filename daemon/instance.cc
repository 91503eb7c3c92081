#include "daemon/instance.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <sstream>
#include <utility>

#include "base/duration_text.h"
#include "daemon/program_key.h"
#include "daemon/value_tree.h"
#include "devices/compile.h"
#include "jit/passes/flatten_signature.h"
#include "jit/passes/refine_shapes.h"
#include "devices/platforms.h"
#include "jit/ir/module.h"

namespace jitd::daemon {
namespace {

using Clock = std::chrono::steady_clock;

uint64_t MicrosSince(Clock::time_point start) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
}

std::string JsonEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

// Bytes an entry counts against the memory budget: what its executable
// keeps (code, data, constants, module: Executable::size_bytes), the program
// text and the entry itself.
uint64_t EntryBytes(const CompiledProgram& p) {
  uint64_t bytes = sizeof(CompiledProgram) + p.program_text.size() + p.executable->size_bytes();
  for (size_t i = 0; i < cache::kNumKeyParts; ++i) bytes += cache::KeyPart(p.key_parts, i).size();
  for (const ir::Type& t : p.argument_types) bytes += sizeof(t) + 8 * static_cast<uint64_t>(t.rank());
  for (const ir::Type& t : p.result_types) bytes += sizeof(t) + 8 * static_cast<uint64_t>(t.rank());
  return bytes;
}

// Disk payloads: the program text alone (devices without a compiled form,
// e.g. the interpreter), or an envelope holding the text and the device's
// serialized executable (Device::Serialize), so that a cached program loads
// without code generation. The text stays in the envelope: it is what the
// program hash covers (canonically: the program as first sent, StableHLO text
// or a FlatBuffers module) and the fallback when the blob cannot be loaded (a
// host with other CPU features).
constexpr std::string_view kEnvelopeMagic = "JITDEXE1";

std::string Envelope(std::string_view text, std::string_view blob) {
  std::string out(kEnvelopeMagic);
  const uint64_t n = text.size();
  out.append(reinterpret_cast<const char*>(&n), sizeof(n));
  out.append(text);
  out.append(blob);
  return out;
}

// A device blob of a program with tuples or tokens in its signature carries
// its structure strings in front (the blob's executable has the flattened
// signature): magic, then each string as u64 length + bytes. Blobs of other
// programs are the device's bytes alone.
constexpr std::string_view kStructureMagic = "JITDSIG1";

std::string WithStructures(std::string_view arguments, std::string_view results,
                           std::string_view blob) {
  std::string out(kStructureMagic);
  for (std::string_view s : {arguments, results}) {
    const uint64_t n = s.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof(n));
    out.append(s);
  }
  out.append(blob);
  return out;
}

// Takes the structures off the front of `blob` (left as it is, structures
// empty, when it has none); false for a truncated header.
bool TakeStructures(std::string_view* blob, std::string* arguments, std::string* results) {
  arguments->clear();
  results->clear();
  if (blob->substr(0, kStructureMagic.size()) != kStructureMagic) return true;
  std::string_view rest = blob->substr(kStructureMagic.size());
  for (std::string* s : {arguments, results}) {
    uint64_t n = 0;
    if (rest.size() < sizeof(n)) return false;
    std::memcpy(&n, rest.data(), sizeof(n));
    rest.remove_prefix(sizeof(n));
    if (rest.size() < n) return false;
    s->assign(rest.substr(0, n));
    rest.remove_prefix(n);
  }
  *blob = rest;
  return true;
}

// Splits a payload into program text and device blob (empty when none).
void OpenPayload(std::string_view payload, std::string_view* text, std::string_view* blob) {
  *text = payload;
  *blob = {};
  if (payload.substr(0, kEnvelopeMagic.size()) != kEnvelopeMagic) return;
  std::string_view rest = payload.substr(kEnvelopeMagic.size());
  uint64_t n = 0;
  if (rest.size() < sizeof(n)) return;
  std::memcpy(&n, rest.data(), sizeof(n));
  rest.remove_prefix(sizeof(n));
  if (rest.size() < n) return;
  *text = rest.substr(0, n);
  *blob = rest.substr(n);
}

// InstanceOptions::log's lines (level 2, debug).
void LogLine(const InstanceOptions& options, const std::string& line) {
  if (options.log) options.log(2, line);
}

// "compiled @main on cpu in 189 ms (31174 bytes, 1a2b3c4d5e6f)": one build;
// `how` ("", " from the disk cache") follows the device.
std::string BuildLine(const CompiledProgram& p, const char* verb, const char* how = "") {
  const std::string_view identity = cache::ProgramIdentity(p.key_parts);
  return std::string(verb) + " " + std::string(identity.substr(0, identity.find('('))) + " on " +
         p.device + how + " in " + DurationText(static_cast<double>(p.build_micros)) + " (" +
         std::to_string(EntryBytes(p)) + " bytes, " + p.fingerprint.ToHex().substr(0, 12) + ")";
}

}  // namespace

Instance::Instance(InstanceOptions options)
    : options_(std::move(options)),
      daemon_uid_(::geteuid()),
      feeds_(options_.max_feed_bytes_per_client),
      memory_cache_(options_.memory_cache_bytes),
      aliases_(options_.alias_map_bytes),
      execute_gate_(options_.execute_slots > 0
                        ? options_.execute_slots
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))) {}

Instance::~Instance() {
  {
    std::lock_guard<std::mutex> lock(compile_mu_);
    compile_stop_ = true;
  }
  compile_cv_.notify_all();
  for (std::thread& t : compile_threads_) t.join();
}

void Instance::CompileThreadLoop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(compile_mu_);
      compile_cv_.wait(lock, [&] { return compile_stop_ || !compile_queue_.empty(); });
      // Queued compiles finish even at shutdown: their waiters (if any) are
      // owed an answer.
      if (compile_queue_.empty()) return;
      task = std::move(compile_queue_.front());
      compile_queue_.pop_front();
    }
    task();
  }
}

StatusOr<CompileOutcome> Instance::RunCompileWithLimit(
    std::function<StatusOr<CompileOutcome>()> work, std::chrono::milliseconds limit,
    std::shared_ptr<PendingCompile>* abandoned) {
  if (limit.count() <= 0) return work();
  auto pending = std::make_shared<PendingCompile>();
  {
    std::lock_guard<std::mutex> lock(compile_mu_);
    if (compile_stop_) return Status(StatusCode::kUnavailable, "the daemon is shutting down");
    if (compile_threads_.empty()) {
      const unsigned n = std::max(2u, std::thread::hardware_concurrency());
      for (unsigned i = 0; i < n; ++i) compile_threads_.emplace_back([this] { CompileThreadLoop(); });
    }
    compile_queue_.push_back([pending, work = std::move(work)] {
      StatusOr<CompileOutcome> result = work();
      {
        std::lock_guard<std::mutex> lock(pending->mu_);
        pending->result_.emplace(std::move(result));
      }
      pending->done_.store(true, std::memory_order_release);
      pending->cv_.notify_all();
    });
  }
  compile_cv_.notify_one();
  std::unique_lock<std::mutex> lock(pending->mu_);
  if (!pending->cv_.wait_for(lock, limit, [&] { return pending->result_.has_value(); })) {
    if (abandoned != nullptr) *abandoned = pending;
    return Status(StatusCode::kDeadlineExceeded,
                  "Compile: ran past this client's compile time limit (max_compile_time) of " +
                      std::to_string(limit.count()) +
                      " ms; the compile goes on in the daemon and its result will be cached, "
                      "so a retry later may hit");
  }
  return std::move(*pending->result_);
}

std::shared_ptr<ClientCounters> Instance::RegisterClient(uint64_t session_id) {
  auto counters = std::make_shared<ClientCounters>();
  counters->session_id = session_id;
  std::lock_guard<std::mutex> lock(clients_mu_);
  clients_[session_id] = counters;
  return counters;
}

void Instance::UnregisterClient(uint64_t session_id) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  clients_.erase(session_id);
}

StatusOr<std::unique_ptr<Instance>> Instance::Create(InstanceOptions options) {
  std::unique_ptr<Instance> instance(new Instance(std::move(options)));
  if (!instance->options_.disk_cache_dir.empty()) {
    cache::DiskCacheOptions disk;
    disk.dir = instance->options_.disk_cache_dir;
    disk.max_bytes = instance->options_.disk_cache_max_bytes;
    disk.fsync = instance->options_.disk_cache_fsync;
    JITD_ASSIGN_OR_RETURN(instance->disk_cache_, cache::DiskCache::Open(std::move(disk)));
  }
  JITD_RETURN_IF_ERROR(instance->GetDevice(instance->options_.default_device).status());
  return instance;
}

std::string Instance::DefaultDevice() const {
  if (!options_.default_device_is_auto) return options_.default_device;
  const std::string lost = devices::DeviceLost(options_.default_device);
  if (lost.empty()) return options_.default_device;
  // Lost for good: the next of the default order, found (probing every
  // device) and said once.
  std::call_once(default_replaced_once_, [&] {
    StatusOr<std::string> next = devices::ResolveDevice("auto", nullptr);
    // Nothing else: the lost device, and its own error at each request.
    default_replacement_ = next.ok() ? *next : options_.default_device;
    std::fprintf(stderr, "jitd: the default device %s can run nothing more (%s); requests naming no device go to %s\n",
                 options_.default_device.c_str(), lost.c_str(), default_replacement_.c_str());
  });
  return default_replacement_;
}

StatusOr<const devices::Device*> Instance::GetDevice(const std::string& name) {
  std::lock_guard<std::mutex> lock(devices_mu_);
  auto it = devices_.find(name);
  if (it != devices_.end()) return it->second.get();
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<devices::Device> device, devices::CreateDevice(name));
  const devices::Device* raw = device.get();
  devices_.emplace(name, std::move(device));
  return raw;
}

// Appended to the options part of every cache key when the cache is not
// shared across uids: ",uid=N", the uid whose entry it is. Disk entries keep
// it in their key parts, so a restarted daemon still knows whose they are.
constexpr std::string_view kUidOption = ",uid=";

// The uid an entry's options part names, or -1 when it names none (a shared
// entry, or one written before entries had owners: the daemon's own).
static int64_t UidOfOptions(std::string_view options) {
  const size_t at = options.find(kUidOption);
  if (at == std::string_view::npos) return -1;
  std::string_view digits = options.substr(at + kUidOption.size());
  digits = digits.substr(0, digits.find(','));
  if (digits.empty() || digits.size() > 18) return -1;
  int64_t uid = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return -1;
    uid = uid * 10 + (c - '0');
  }
  return uid;
}

cache::CacheKeyParts Instance::KeyParts(std::string program_part,
                                        const CompileSpec& spec) {
  cache::CacheKeyParts parts;
  parts.program_hash = std::move(program_part);
  parts.argument_shapes = spec.argument_shapes;
  parts.options = std::string("profile=") + (spec.profile ? "1" : "0");
  if (!options_.share_cache_across_uids) {
    parts.options += std::string(kUidOption) + std::to_string(ResolveUid(spec.uid));
  }
  parts.device = spec.device.empty() ? DefaultDevice() : spec.device;
  parts.compiler_build_id = options_.compiler_build_id;
  // What else decides the device's code (cuda: sm, LLVM's and the PTX
  // assembler's versions, flags): another GPU or toolchain misses the
  // cache, and ExplainMiss names the difference.
  if (StatusOr<const devices::Device*> device = GetDevice(parts.device); device.ok()) {
    if (std::string target = (*device)->compile_target(); !target.empty()) {
      parts.options += ",target=" + target;
    }
  }
  return parts;
}

std::string Instance::AliasKey(std::string_view bytes, const CompileSpec& spec) const {
  std::string key = cache::HashProgram(bytes);
  key += spec.flatbuffer_module ? ",fb" : ",text";
  // Per uid unless shared: one uid's parse must not speed up another's.
  if (!options_.share_cache_across_uids) key += "," + std::to_string(ResolveUid(spec.uid));
  return key;
}

std::string Instance::ExplainMiss(const cache::CacheKeyParts& want) {
  const std::string_view identity = cache::ProgramIdentity(want);
  if (identity.empty()) return {};
  // Only entries of the same program and the same owner: another uid's
  // entry would tell this one what that uid compiled.
  const int64_t owner = UidOfOptions(want.options);
  const auto same_program = [&](const cache::CacheKeyParts& p) {
    return cache::ProgramIdentity(p) == identity && UidOfOptions(p.options) == owner;
  };
  std::optional<cache::CacheKeyParts> best;
  int best_score = -1;
  // Most recently used first, so `>` keeps the most recent on ties.
  for (const cache::MemoryCacheEntryInfo& e : memory_cache_.Entries()) {
    const auto* program = static_cast<const CompiledProgram*>(e.value.get());
    if (program == nullptr || program->key_parts == want || !same_program(program->key_parts)) {
      continue;
    }
    const int score = cache::CountEqualParts(program->key_parts, want);
    if (score > best_score) {
      best_score = score;
      best = program->key_parts;
    }
  }
  if (disk_cache_ != nullptr) {
    StatusOr<std::optional<cache::DiskEntryInfo>> nearest =
        disk_cache_->FindNearest(want, same_program);
    if (nearest.ok() && nearest->has_value() &&
        cache::CountEqualParts((*nearest)->parts, want) > best_score) {
      best = (*nearest)->parts;
    }
  }
  return best.has_value() ? cache::Explain(want, *best) : std::string();
}

namespace {

// `parsed` (the module's name when Build parsed it), else the name of a text
// program's module (`module @name` before its first func.func), else "".
std::string ModuleNameOf(const std::string& parsed, std::string_view text,
                                   bool flatbuffer) {
  if (!parsed.empty() || flatbuffer) return parsed;
  const std::string_view head = text.substr(0, text.find("func.func"));
  const size_t at = head.find("module @");
  if (at == std::string_view::npos) return "";
  std::string name;
  for (size_t i = at + 8; i < head.size() && name.size() < 128; ++i) {
    const char c = head[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '$' ||
          c == '-')) {
      break;
    }
    name += c;
  }
  return name;
}

// An alias-map value is the program part, a newline and the module's
// declared grid (EncodeDeclaredGrid): splits it in place.
Status SplitAlias(std::string* value, DeclaredGrid* declared) {
  const size_t newline = value->rfind('\n');
  if (newline == std::string::npos) return Internal("alias map value without a process grid");
  JITD_ASSIGN_OR_RETURN(*declared, DecodeDeclaredGrid(std::string_view(*value).substr(newline + 1)));
  value->resize(newline);
  return Status::Ok();
}

}  // namespace

StatusOr<std::shared_ptr<const CompiledProgram>> Instance::Build(
    const cache::CacheKeyParts& parts, const cache::Fingerprint& fingerprint,
    const std::string& device_name, std::string text,
    std::string_view blob, std::string* serialized, const BuildOptions& build_options) {
  JITD_ASSIGN_OR_RETURN(const devices::Device* device, GetDevice(device_name));
  const Clock::time_point start = Clock::now();
  std::unique_ptr<devices::Executable> executable;
  std::string module_name;
  std::string argument_structure, result_structure;
  auto tensors_only = [](const devices::Executable& e) {
    return passes::AllTensorTypes(e.argument_types()) && passes::AllTensorTypes(e.result_types());
  };
  if (!blob.empty()) {
    // A cached executable: no code generation. Any failure (other CPU
    // features, a corrupt blob, a signature that is not flat) falls back
    // to compiling the program.
    std::string_view device_blob = blob;
    std::string refused;
    if (!TakeStructures(&device_blob, &argument_structure, &result_structure)) {
      refused = "its signature header is truncated";
    } else {
      StatusOr<std::unique_ptr<devices::Executable>> loaded = device->Deserialize(device_blob);
      if (!loaded.ok()) {
        refused = loaded.status().ToString();
      } else if (!tensors_only(**loaded)) {
        refused = "its executable's signature is not flat (cached before flatten-signature)";
      } else {
        executable = std::move(loaded).value();
      }
    }
    if (build_options.blob_refused != nullptr) *build_options.blob_refused = std::move(refused);
  }
  if (!executable) {
    StatusOr<std::unique_ptr<ir::Module>> module =
        build_options.parsed != nullptr && *build_options.parsed != nullptr
            ? StatusOr<std::unique_ptr<ir::Module>>(std::move(*build_options.parsed))
            : ParseProgram(text, build_options.flatbuffer_module);
    if (!module.ok()) return module.status();
    module_name = (*module)->name();
    // Tuples and tokens in the entry's signature: compiled flattened into
    // their tensor leaves, so that the executable runs on buffers like any
    // other (issue 16); the structures say how the leaves make the trees.
    // A type that cannot cross the wire (a future) is CompileProgram's to
    // refuse.
    argument_structure.clear();
    result_structure.clear();
    if (const ir::Function* entry = (*module)->EntryFunction()) {
      StatusOr<ValueTree> arguments = FlattenTypes(entry->arg_types(), "argument");
      StatusOr<ValueTree> results = FlattenTypes(entry->result_types(), "result");
      if (arguments.ok() && results.ok() && !(arguments->flat && results->flat)) {
        argument_structure = arguments->flat ? "" : std::move(arguments->structure);
        result_structure = results->flat ? "" : std::move(results->structure);
      }
    }
    devices::ProgramCompileOptions compile_options;
    compile_options.dumps = build_options.dumps;
    compile_options.flatten_signature = true;
    // A program with dynamic shapes compiles for the argument shapes the
    // client declared (part of the cache key: one entry per concrete shape).
    if (!parts.argument_shapes.empty() && passes::HasDynamicShapes(**module)) {
      JITD_ASSIGN_OR_RETURN(compile_options.argument_types,
                            passes::ParseArgumentTypes(parts.argument_shapes));
    }
    JITD_ASSIGN_OR_RETURN(executable,
                          devices::CompileProgram(*device, std::move(module).value(), compile_options));
    if (serialized) {
      StatusOr<std::string> bytes = device->Serialize(*executable);
      if (bytes.ok()) {
        *serialized = argument_structure.empty() && result_structure.empty()
                          ? std::move(bytes).value()
                          : WithStructures(argument_structure, result_structure, *bytes);
      }
    }
  }
  if (!tensors_only(*executable)) {
    return Internal("the executable of @" + module_name +
                    " takes or returns values that are not tensors after flatten-signature");
  }
  auto program = std::make_shared<CompiledProgram>();
  program->fingerprint = fingerprint;
  program->key_parts = parts;
  program->device = device_name;
  program->argument_types = executable->argument_types();
  program->result_types = executable->result_types();
  program->argument_structure = std::move(argument_structure);
  program->result_structure = std::move(result_structure);
  program->executable = std::move(executable);
  program->program_text = std::move(text);
  program->profile = build_options.profile;
  program->grid = GridFromKeyOptions(parts.options);
  program->module_name =
      ModuleNameOf(module_name, program->program_text, build_options.flatbuffer_module);
  const uint64_t nanos = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count());
  program->build_micros = nanos / 1000;
  compile_latency_.Record(nanos);
  return std::shared_ptr<const CompiledProgram>(std::move(program));
}

StatusOr<CompileOutcome> Instance::Compile(std::string_view program_text,
                                           const CompileSpec& spec) {
  const Clock::time_point start = Clock::now();
  // A device this daemon lacks: what clients that probe for platforms (the
  // Python package) ask about; NOT_FOUND, counted apart from failed compiles
  // and before the cache sees a miss.
  if (StatusOr<const devices::Device*> device =
          GetDevice(spec.device.empty() ? DefaultDevice() : spec.device);
      !device.ok()) {
    ++unknown_device_compiles_;
    return device.status();
  }
  // The program's canonical key: remembered for these bytes, or parsed and
  // printed (the module then serves the compile, if one follows).
  std::unique_ptr<ir::Module> parsed;
  const std::string alias_key = AliasKey(program_text, spec);
  std::optional<std::string> program_part = aliases_.Find(alias_key);
  DeclaredGrid declared;
  if (program_part.has_value()) {
    JITD_RETURN_IF_ERROR(SplitAlias(&*program_part, &declared));
  } else {
    StatusOr<std::unique_ptr<ir::Module>> module =
        ParseProgram(program_text, spec.flatbuffer_module);
    if (!module.ok()) {
      ++compile_errors_;
      return module.status();
    }
    parsed = std::move(module).value();
    StatusOr<DeclaredGrid> module_grid = DeclaredProcessGrid(*parsed);
    if (!module_grid.ok()) {
      ++compile_errors_;
      return module_grid.status();
    }
    declared = *module_grid;
    program_part = MakeProgramKey(*parsed).Part();
    aliases_.Put(alias_key, *program_part + '\n' + EncodeDeclaredGrid(declared));
  }
  // The process grid (issue 17): the client's counts against the module's.
  StatusOr<eval::ProcessGrid> grid = ResolveProcessGrid(spec.grid, declared);
  if (!grid.ok()) return Status(grid.status().code(), "Compile: " + grid.status().message());
  cache::CacheKeyParts parts = KeyParts(std::move(*program_part), spec);
  parts.options += GridKeyOption(*grid);
  const cache::Fingerprint fingerprint = cache::Fingerprint::Of(parts);
  bool from_disk = false;
  std::string explain;
  std::vector<devices::CompileDump> dumps;
  BuildOptions build_options{spec.flatbuffer_module, spec.profile,
                             spec.dumps ? &dumps : nullptr, &parsed};
  auto compute = [&]() -> StatusOr<cache::MemoryCache<CompiledProgram>::Sized> {
    std::string text(program_text);
    std::string cached_blob;
    // A compile for dumps compiles even when the disk has the program.
    if (disk_cache_ != nullptr && !spec.dumps) {
      StatusOr<std::optional<cache::DiskEntry>> entry = disk_cache_->Get(parts);
      std::string_view cached_text, blob;
      if (entry.ok() && entry->has_value()) OpenPayload((*entry)->payload, &cached_text, &blob);
      // The key is canonical: the entry is this program however it was
      // spelled when cached (if its blob cannot be loaded, the client's
      // bytes are compiled).
      if (entry.ok() && entry->has_value()) {
        from_disk = true;
        cached_blob.assign(blob);
      }
    }
    if (!from_disk) explain = ExplainMiss(parts);
    std::string serialized;
    std::string blob_refused;
    build_options.blob_refused = &blob_refused;
    StatusOr<std::shared_ptr<const CompiledProgram>> program =
        Build(parts, fingerprint, parts.device, std::move(text), cached_blob,
              disk_cache_ != nullptr ? &serialized : nullptr, build_options);
    if (!program.ok()) {
      ++compile_errors_;
      LogLine(options_, "compile failed: " + program.status().ToString());
      return program.status();
    }
    // A disk entry whose executable this daemon cannot load (another CPU,
    // an older format) was compiled again: it is replaced below, so the
    // next start loads it instead of compiling it every time.
    const bool stale = from_disk && !blob_refused.empty();
    // A text-only entry (written when the device had no serialized form)
    // gains the executable the device now has.
    const bool gained_blob = from_disk && cached_blob.empty() && !serialized.empty();
    if (stale) from_disk = false;
    ++(from_disk ? disk_loads_ : compiles_);
    if (options_.log) {
      LogLine(options_, from_disk ? BuildLine(**program, "loaded", " from the disk cache")
                        : stale ? BuildLine(**program, "compiled") +
                                      "; the disk cache's copy could not be loaded (" +
                                      blob_refused + "): replaced"
                                : BuildLine(**program, "compiled") + "; miss: " +
                                      (explain.empty() ? "a new program" : explain));
    }
    if (disk_cache_ != nullptr && (!from_disk || gained_blob)) {
      const uint64_t disk_evictions_before = disk_cache_->stats().evictions;
      StatusOr<cache::Fingerprint> put = disk_cache_->Put(
          parts, serialized.empty() ? (*program)->program_text
                                    : Envelope((*program)->program_text, serialized));
      if (!put.ok()) {
        std::fprintf(stderr, "jitd: disk cache write failed: %s\n",
                     put.status().ToString().c_str());
      }
      if (uint64_t n = disk_cache_->stats().evictions - disk_evictions_before; n > 0) {
        LogLine(options_, "evicted " + std::to_string(n) +
                              " program(s) from the disk cache (--disk-cache-bytes)");
      }
    }
    const uint64_t bytes = EntryBytes(**program);
    return cache::MemoryCache<CompiledProgram>::Sized{std::move(program).value(), bytes};
  };
  const uint64_t evictions_before = memory_cache_.stats().evictions;
  JITD_ASSIGN_OR_RETURN(auto lookup, memory_cache_.GetOrCompute(fingerprint, compute));
  if (uint64_t evicted = memory_cache_.stats().evictions - evictions_before; evicted > 0) {
    LogLine(options_, "evicted " + std::to_string(evicted) +
                          " program(s) from the memory cache (--memory-cache-bytes)");
  }
  CompileOutcome outcome;
  outcome.program = std::move(lookup.value);
  switch (lookup.source) {
    case cache::CacheSource::kHit: outcome.source = "memory"; break;
    case cache::CacheSource::kJoined: outcome.source = "joined"; break;
    case cache::CacheSource::kComputed: outcome.source = from_disk ? "disk" : "compiled"; break;
  }
  if (spec.dumps && lookup.source != cache::CacheSource::kComputed) {
    // The cache had it (or another session was compiling it): compile once
    // more, for the dumps, and hand out that executable; the cache keeps its own.
    build_options.parsed = nullptr;  // the compute may have taken it
    JITD_ASSIGN_OR_RETURN(outcome.program, Build(parts, fingerprint, parts.device,
                                                 std::string(program_text), {}, nullptr,
                                                 build_options));
    ++compiles_;
    outcome.source = "compiled";
  }
  outcome.cache_hit = outcome.source != "compiled";
  // This uid has sent the text: its fingerprint-only compiles may find it.
  outcome.program->suppliers.Add(ResolveUid(spec.uid));
  outcome.explain = std::move(explain);
  outcome.dumps = std::move(dumps);
  outcome.compile_micros = MicrosSince(start);
  return outcome;
}

std::optional<CompileOutcome> Instance::CompileFromMemory(std::string_view program_text,
                                                          const CompileSpec& spec) {
  const Clock::time_point start = Clock::now();  // the hash counts in compile_micros
  // Bytes never seen (or forgotten) need a parse to find their canonical
  // key: that is Compile's work, off this thread.
  std::optional<std::string> program_part = aliases_.Find(AliasKey(program_text, spec));
  if (!program_part.has_value()) return std::nullopt;
  DeclaredGrid declared;
  if (!SplitAlias(&*program_part, &declared).ok()) return std::nullopt;
  // A grid the module contradicts is Compile's error to report.
  StatusOr<eval::ProcessGrid> grid = ResolveProcessGrid(spec.grid, declared);
  if (!grid.ok()) return std::nullopt;
  cache::CacheKeyParts parts = KeyParts(std::move(*program_part), spec);
  parts.options += GridKeyOption(*grid);
  return ProbeMemory(cache::Fingerprint::Of(parts), start,
                     spec.uid, /*must_have_sent=*/false);
}

std::optional<CompileOutcome> Instance::CompileByFingerprintFromMemory(
    const cache::Fingerprint& fingerprint, int64_t uid) {
  return ProbeMemory(fingerprint, Clock::now(), uid, /*must_have_sent=*/true);
}

std::optional<CompileOutcome> Instance::ProbeMemory(const cache::Fingerprint& fingerprint,
                                                    Clock::time_point start, int64_t uid,
                                                    bool must_have_sent) {
  std::shared_ptr<const CompiledProgram> hit = memory_cache_.Probe(fingerprint);
  if (hit == nullptr) return std::nullopt;
  if (must_have_sent) {
    if (!TrustedUid(uid) && !hit->suppliers.Has(uid)) return std::nullopt;
  } else {
    hit->suppliers.Add(ResolveUid(uid));
  }
  CompileOutcome outcome;
  outcome.program = std::move(hit);
  outcome.source = "memory";
  outcome.cache_hit = true;
  outcome.compile_micros = MicrosSince(start);
  return outcome;
}

StatusOr<CompileOutcome> Instance::CompileByFingerprint(const cache::Fingerprint& fingerprint,
                                                         int64_t uid) {
  const Clock::time_point start = Clock::now();
  CompileOutcome outcome;
  // A program this uid may not see answers exactly as a missing one: the
  // answer must not tell whether another uid compiled it.
  const auto not_found = [&] {
    return NotFound("no program with fingerprint " + fingerprint.ToHex() +
                    " that this user sent is cached; send the program text");
  };
  if (auto hit = memory_cache_.Get(fingerprint)) {
    if (TrustedUid(uid) || hit->suppliers.Has(uid)) {
      outcome.program = std::move(hit);
      outcome.source = "memory";
      outcome.cache_hit = true;
      outcome.compile_micros = MicrosSince(start);
      return outcome;
    }
  }
  if (disk_cache_ == nullptr) return not_found();
  JITD_ASSIGN_OR_RETURN(std::optional<cache::DiskEntry> entry, disk_cache_->Get(fingerprint));
  if (!entry.has_value()) return not_found();
  // Disk entries carry their uid in their key (unshared caches); one without
  // (a shared cache's, or an older one) is the daemon's: after a restart
  // nobody knows who sent its text, so other uids send it again (a disk hit).
  const int64_t owner = UidOfOptions(entry->parts.options);
  if (!TrustedUid(uid) && owner != uid) return not_found();
  if (entry->parts.compiler_build_id != options_.compiler_build_id) {
    return NotFound("the cached program " + fingerprint.ToHex() + " was built by '" +
                    entry->parts.compiler_build_id + "', this daemon is '" +
                    options_.compiler_build_id + "'; send the program text");
  }
  std::string_view cached_text, cached_blob;
  OpenPayload(entry->payload, &cached_text, &cached_blob);
  // The stored program (text or FlatBuffers, as first sent) must still be
  // the program its key names: its canonical key is checked.
  const bool flatbuffer = IsFlatBufferModule(cached_text);
  StatusOr<std::unique_ptr<ir::Module>> parsed = ParseProgram(cached_text, flatbuffer);
  if (!parsed.ok() || MakeProgramKey(**parsed).Part() != entry->parts.program_hash) {
    return NotFound("the cached program " + fingerprint.ToHex() +
                    " does not match its hash; send the program text");
  }
  std::unique_ptr<ir::Module> module = std::move(parsed).value();
  bool computed = false;
  auto compute = [&]() -> StatusOr<cache::MemoryCache<CompiledProgram>::Sized> {
    computed = true;
    StatusOr<std::shared_ptr<const CompiledProgram>> program =
        Build(entry->parts, fingerprint, entry->parts.device, std::string(cached_text),
              cached_blob, nullptr,
              BuildOptions{flatbuffer, entry->parts.options.rfind("profile=1", 0) == 0, nullptr,
                           &module});
    if (!program.ok()) {
      ++compile_errors_;
      return program.status();
    }
    ++disk_loads_;
    LogLine(options_, BuildLine(**program, "loaded", " from the disk cache (by fingerprint)"));
    if (owner >= 0) (*program)->suppliers.Add(owner);
    const uint64_t bytes = EntryBytes(**program);
    return cache::MemoryCache<CompiledProgram>::Sized{std::move(program).value(), bytes};
  };
  JITD_ASSIGN_OR_RETURN(auto lookup, memory_cache_.GetOrCompute(fingerprint, compute));
  outcome.program = std::move(lookup.value);
  outcome.source = computed ? "disk" : (lookup.source == cache::CacheSource::kJoined ? "joined"
                                                                                     : "memory");
  outcome.cache_hit = true;
  outcome.compile_micros = MicrosSince(start);
  return outcome;
}

// One memory-cache entry for `jitd stats --keys`: its fingerprint, the
// program's entry name, device, argument shapes, hits, build time, bytes and
// last use (Unix milliseconds).
void Instance::AppendKeyJson(std::ostringstream& out, const cache::MemoryCacheEntryInfo& entry) {
  const auto* program = static_cast<const CompiledProgram*>(entry.value.get());
  out << "{\"fingerprint\":\"" << entry.key.ToHex() << "\"";
  if (program != nullptr) {
    const std::string_view identity = cache::ProgramIdentity(program->key_parts);
    const std::string_view name = identity.substr(0, identity.find('('));
    std::string shapes;
    for (size_t i = 0; i < program->argument_types.size(); ++i) {
      if (i) shapes += ", ";
      program->argument_types[i].AppendTo(shapes);
    }
    out << ",\"program\":\"" << JsonEscape(name) << "\",\"device\":\""
        << JsonEscape(program->device) << "\",\"argument_shapes\":\"" << JsonEscape(shapes)
        << "\",\"compile_micros\":" << program->build_micros;
  }
  out << ",\"hits\":" << entry.hits << ",\"bytes\":" << entry.bytes << ",\"last_use_unix_ms\":"
      << std::chrono::duration_cast<std::chrono::milliseconds>(
             entry.last_use.time_since_epoch())
             .count()
      << "}";
}

// ,"clients":[...],"executables":N,"buffers":N of `clients`.
void Instance::AppendClientsJson(std::ostringstream& out,
                                 const std::vector<std::shared_ptr<ClientCounters>>& clients) {
  uint64_t executables = 0, buffers = 0;
  out << ",\"clients\":[";
  for (size_t i = 0; i < clients.size(); ++i) {
    const ClientCounters& c = *clients[i];
    executables += c.executables.load(std::memory_order_relaxed);
    buffers += c.buffers.load(std::memory_order_relaxed);
    out << (i ? "," : "") << "{\"session\":" << c.session_id
        << ",\"pid\":" << c.pid.load(std::memory_order_relaxed)
        << ",\"uid\":" << c.uid.load(std::memory_order_relaxed) << ",\"name\":\""
        << JsonEscape(c.name()) << "\"";
    if (const std::string remote = c.remote_identity(); !remote.empty()) {
      out << ",\"remote\":\"" << JsonEscape(remote) << "\",\"address\":\""
          << JsonEscape(c.remote_address()) << "\"";
    }
    out << ",\"requests\":" << c.requests.load(std::memory_order_relaxed)
        << ",\"compiles\":" << c.compiles.load(std::memory_order_relaxed)
        << ",\"executes\":" << c.executes.load(std::memory_order_relaxed)
        << ",\"errors\":" << c.errors.load(std::memory_order_relaxed)
        << ",\"executables\":" << c.executables.load(std::memory_order_relaxed)
        << ",\"buffers\":" << c.buffers.load(std::memory_order_relaxed)
        << ",\"buffer_bytes\":" << c.buffer_bytes.load(std::memory_order_relaxed)
        << ",\"execute_micros\":" << c.execute_micros.load(std::memory_order_relaxed)
        << ",\"device_bytes\":" << c.device_bytes.load(std::memory_order_relaxed)
        << ",\"device_peak_bytes\":" << c.device_peak_bytes.load(std::memory_order_relaxed)
        << ",\"device_micros\":" << c.device_micros.load(std::memory_order_relaxed)
        << ",\"programs\":[";
    const std::vector<std::string> programs = c.programs();
    for (size_t k = 0; k < programs.size(); ++k) {
      out << (k ? "," : "") << "\"" << JsonEscape(programs[k]) << "\"";
    }
    out << "]}";
  }
  out << "],\"executables\":" << executables << ",\"buffers\":" << buffers;
}

InstanceStats Instance::stats() const {
  InstanceStats s;
  s.compiles = compiles_;
  s.disk_loads = disk_loads_;
  s.compile_errors = compile_errors_;
  s.unknown_device_compiles = unknown_device_compiles_;
  s.sessions_opened = sessions_opened_;
  s.sessions_closed = sessions_closed_;
  s.requests = requests_;
  s.bad_requests = bad_requests_;
  s.executes = executes_;
  s.execute_errors = execute_errors_;
  return s;
}

void Instance::SetStatsSection(const std::string& name, std::function<std::string()> json) {
  std::lock_guard<std::mutex> lock(sections_mu_);
  if (json) {
    stats_sections_[name] = std::move(json);
  } else {
    stats_sections_.erase(name);
  }
}

std::string Instance::StatsJson(bool list_keys, const StatsViewer& viewer) const {
  if (!TrustedUid(viewer.uid)) {
    // Another uid: its own uid's sessions and its own programs, nothing of
    // anyone else's (not even daemon-wide counters, which move with other
    // clients' work).
    std::vector<std::shared_ptr<ClientCounters>> clients;
    {
      std::lock_guard<std::mutex> lock(clients_mu_);
      for (const auto& [id, c] : clients_) {
        if (c->uid.load(std::memory_order_relaxed) == viewer.uid) clients.push_back(c);
      }
    }
    std::ostringstream out;
    out << "{\"version\":\"" << kDaemonVersion << "\",\"view\":\"uid\",\"uid\":" << viewer.uid
        << ",\"sessions_active\":" << clients.size();
    AppendClientsJson(out, clients);
    if (list_keys) {
      out << ",\"keys\":[";
      const std::vector<cache::MemoryCacheEntryInfo> entries = memory_cache_.Entries();
      for (size_t i = 0; i < viewer.own_keys.size() && i < 256; ++i) {
        out << (i ? "," : "");
        auto it = std::find_if(entries.begin(), entries.end(), [&](const auto& e) {
          return e.key == viewer.own_keys[i];
        });
        if (it != entries.end()) {
          AppendKeyJson(out, *it);
        } else {
          out << "{\"fingerprint\":\"" << viewer.own_keys[i].ToHex() << "\"}";
        }
      }
      out << "]";
    }
    out << "}";
    return out.str();
  }
  const InstanceStats s = stats();
  const cache::MemoryCacheStats m = memory_cache_.stats();
  std::ostringstream out;
  out << "{\"version\":\"" << kDaemonVersion << "\",\"view\":\"all\""
      << ",\"compiles\":" << s.compiles << ",\"disk_loads\":" << s.disk_loads
      << ",\"compile_errors\":" << s.compile_errors
      << ",\"unknown_device_compiles\":" << s.unknown_device_compiles
      << ",\"sessions_active\":" << (s.sessions_opened - s.sessions_closed)
      << ",\"sessions_opened\":" << s.sessions_opened << ",\"requests\":" << s.requests
      << ",\"bad_requests\":" << s.bad_requests << ",\"executes\":" << s.executes
      << ",\"execute_errors\":" << s.execute_errors << ",\"memory_cache\":{\"hits\":" << m.hits
      << ",\"misses\":" << m.misses << ",\"computes\":" << m.computes
      << ",\"joined\":" << m.joined << ",\"evictions\":" << m.evictions
      << ",\"entries\":" << m.entries << ",\"bytes\":" << m.bytes
      << ",\"budget_bytes\":" << m.budget_bytes << "}";
  out << ",\"devices\":" << devices::DevicesJson();
  if (disk_cache_ != nullptr) {
    const cache::DiskCacheStats d = disk_cache_->stats();
    out << ",\"disk_cache\":{\"dir\":\"" << JsonEscape(disk_cache_->dir())
        << "\",\"hits\":" << d.hits << ",\"misses\":" << d.misses
        << ",\"writes\":" << d.writes << ",\"corrupt_dropped\":" << d.corrupt_dropped
        << ",\"evictions\":" << d.evictions << "}";
  } else {
    out << ",\"disk_cache\":null";
  }
  out << ",\"compile_latency\":" << SummaryJson(compile_latency_.Summarize())
      << ",\"execute_latency\":" << SummaryJson(execute_latency_.Summarize())
      << ",\"execute_slots\":" << execute_gate_.slots()
      << ",\"execute_waits\":" << execute_gate_.waited()
      << ",\"execute_express\":" << execute_gate_.express();
  {
    std::vector<std::shared_ptr<ClientCounters>> clients;
    {
      std::lock_guard<std::mutex> lock(clients_mu_);
      for (const auto& [id, c] : clients_) clients.push_back(c);
    }
    AppendClientsJson(out, clients);
  }
  out << ",\"feed_clients\":" << feeds_.clients();
  {
    std::lock_guard<std::mutex> lock(sections_mu_);
    for (const auto& [name, json] : stats_sections_) {
      out << ",\"" << JsonEscape(name) << "\":" << json();
    }
  }
  if (list_keys) {
    out << ",\"keys\":[";
    const std::vector<cache::MemoryCacheEntryInfo> entries = memory_cache_.Entries();
    for (size_t i = 0; i < entries.size() && i < 256; ++i) {
      out << (i ? "," : "");
      AppendKeyJson(out, entries[i]);
    }
    out << "]";
  }
  out << "}";
  return out.str();
}

}  // namespace jitd::daemon
