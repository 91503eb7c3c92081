#include "jit/cache/disk_cache.h"

#include "base/unique_fd.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <xxhash.h>

namespace jitd::cache {
namespace {

constexpr size_t kFixedHeaderBytes = 40;
constexpr size_t kHeaderChecksumBytes = 8;
constexpr std::string_view kTempPrefix = ".tmp-";
// Temp files older than this are leftovers of crashed writers.
constexpr auto kStaleTempAge = std::chrono::hours(1);

Status ErrnoStatus(const std::string& what, int err) {
  std::string message = what + ": " + std::strerror(err);
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS:
      return Status(StatusCode::kFailedPrecondition, std::move(message));
    case ENOSPC:
    case EDQUOT:
      return ResourceExhausted(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

void PutU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

// Reads exactly n bytes at `offset`; returns the count read (< n at EOF) or
// -errno.
ssize_t PreadFull(int fd, char* buf, size_t n, off_t offset) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, buf + done, n - done, offset + static_cast<off_t>(done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(done);
}

int WriteFull(int fd, const char* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, buf + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    done += static_cast<size_t>(w);
  }
  return 0;
}

std::chrono::system_clock::time_point MtimeOf(const struct stat& st) {
  return std::chrono::system_clock::time_point(
      std::chrono::duration_cast<std::chrono::system_clock::duration>(
          std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

// Unlinks `path` if it still names the file `st` describes (another writer
// may have renamed a fresh entry over it meanwhile).
void UnlinkIfSame(const std::string& path, const struct stat& st) {
  struct stat now;
  if (::lstat(path.c_str(), &now) == 0 && now.st_dev == st.st_dev && now.st_ino == st.st_ino) {
    ::unlink(path.c_str());
  }
}

// Encodes the header (everything before the payload).
std::string EncodeHeader(const CacheKeyParts& parts, std::string_view payload) {
  std::string keys;
  for (size_t i = 0; i < kNumKeyParts; ++i) {
    const std::string& part = KeyPart(parts, i);
    PutU32(keys, static_cast<uint32_t>(part.size()));
    keys += part;
  }
  std::string header(kDiskMagic, sizeof kDiskMagic);
  PutU32(header, kDiskFormatVersion);
  PutU32(header, static_cast<uint32_t>(keys.size()));
  PutU64(header, payload.size());
  PutU64(header, XXH3_64bits(payload.data(), payload.size()));
  PutU64(header, 0);  // reserved
  header += keys;
  PutU64(header, XXH3_64bits(header.data(), header.size()));
  return header;
}

// Parses the key section; false when it is malformed.
bool DecodeKeyParts(std::string_view keys, CacheKeyParts& parts) {
  size_t pos = 0;
  for (size_t i = 0; i < kNumKeyParts; ++i) {
    if (keys.size() - pos < 4) return false;
    uint32_t len = GetU32(keys.data() + pos);
    pos += 4;
    if (keys.size() - pos < len) return false;
    KeyPart(parts, i).assign(keys.data() + pos, len);
    pos += len;
  }
  return pos == keys.size();
}

std::string RandomSuffix() {
  static std::atomic<uint64_t> counter{0};
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    return (static_cast<uint64_t>(rd()) << 32) ^ rd() ^
           std::hash<std::thread::id>()(std::this_thread::get_id());
  }());
  uint64_t v = rng() ^ (counter.fetch_add(1) * 0x9E3779B97F4A7C15ull);
  return std::to_string(::getpid()) + "-" + Fingerprint(v, counter.load()).ToHex().substr(0, 24);
}

Status MakeDirs(const std::string& dir) {
  std::string prefix;
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t slash = dir.find('/', pos);
    if (slash == std::string::npos) slash = dir.size();
    prefix = dir.substr(0, slash);
    pos = slash + 1;
    if (prefix.empty()) continue;
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return ErrnoStatus("cannot create cache directory " + prefix, errno);
    }
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus("cannot stat " + dir, errno);
  if (!S_ISDIR(st.st_mode)) {
    return Status(StatusCode::kFailedPrecondition, "cache path " + dir + " is not a directory");
  }
  return Status::Ok();
}

bool IsFingerprintName(const char* name) {
  return std::strlen(name) == 32 && Fingerprint::Parse(name).ok();
}

}  // namespace

StatusOr<std::string> DefaultDiskCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/jitd";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/jitd";
  return Status(StatusCode::kFailedPrecondition,
                "no cache directory: neither XDG_CACHE_HOME (absolute) nor HOME is set");
}

std::string DiskCacheStats::ToString() const {
  return std::to_string(hits) + " hits, " + std::to_string(misses) + " misses, " +
         std::to_string(writes) + " writes, " + std::to_string(evictions) + " evictions, " +
         std::to_string(corrupt_dropped) + " corrupt dropped, " + std::to_string(rejected) +
         " rejected";
}

StatusOr<std::unique_ptr<DiskCache>> DiskCache::Open(DiskCacheOptions options) {
  if (options.dir.empty()) return InvalidArgument("disk cache directory is empty");
  while (options.dir.size() > 1 && options.dir.back() == '/') options.dir.pop_back();
  JITD_RETURN_IF_ERROR(MakeDirs(options.dir));
  return std::unique_ptr<DiskCache>(new DiskCache(std::move(options)));
}

std::string DiskCache::PathFor(const Fingerprint& key) const {
  return options_.dir + "/" + key.ToHex();
}

DiskCacheStats DiskCache::stats() const {
  DiskCacheStats s;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.corrupt_dropped = corrupt_dropped_.load();
  s.writes = writes_.load();
  s.rejected = rejected_.load();
  s.evictions = evictions_.load();
  return s;
}

StatusOr<std::optional<DiskEntryInfo>> DiskCache::ReadEntry(const Fingerprint& key,
                                                            bool want_payload, bool touch,
                                                            std::string* payload) {
  const std::string path = PathFor(key);
  int raw_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (raw_fd < 0) {
    int err = errno;
    if (err == ENOENT) return std::optional<DiskEntryInfo>();
    if (err == ELOOP) {  // a symlink where an entry belongs: never follow it
      ::unlink(path.c_str());
      ++corrupt_dropped_;
      return std::optional<DiskEntryInfo>();
    }
    return ErrnoStatus("cannot open cache entry " + path, err);
  }
  UniqueFd fd(raw_fd);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus("cannot stat " + path, errno);
  if (!S_ISREG(st.st_mode)) return std::optional<DiskEntryInfo>();

  auto invalid = [&]() -> StatusOr<std::optional<DiskEntryInfo>> {
    UnlinkIfSame(path, st);
    ++corrupt_dropped_;
    return std::optional<DiskEntryInfo>();
  };
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < kFixedHeaderBytes + kHeaderChecksumBytes) return invalid();

  char fixed[kFixedHeaderBytes];
  ssize_t r = PreadFull(fd.get(), fixed, sizeof fixed, 0);
  if (r < 0) return ErrnoStatus("cannot read " + path, static_cast<int>(-r));
  if (static_cast<size_t>(r) != sizeof fixed) return invalid();
  if (std::memcmp(fixed, kDiskMagic, sizeof kDiskMagic) != 0) return invalid();
  if (GetU32(fixed + 8) != kDiskFormatVersion) return invalid();
  const uint32_t key_bytes = GetU32(fixed + 12);
  const uint64_t payload_bytes = GetU64(fixed + 16);
  const uint64_t payload_checksum = GetU64(fixed + 24);
  if (GetU64(fixed + 32) != 0) return invalid();
  if (key_bytes > kMaxKeySectionBytes) return invalid();
  const uint64_t header_bytes = kFixedHeaderBytes + key_bytes + kHeaderChecksumBytes;
  // Sizes must add up exactly: a truncated or extended file is invalid, and
  // nothing is allocated beyond what the file holds.
  if (header_bytes > size || size - header_bytes != payload_bytes) return invalid();

  std::string header(fixed, sizeof fixed);
  header.resize(header_bytes);
  r = PreadFull(fd.get(), header.data() + kFixedHeaderBytes,
                header_bytes - kFixedHeaderBytes, kFixedHeaderBytes);
  if (r < 0) return ErrnoStatus("cannot read " + path, static_cast<int>(-r));
  if (static_cast<uint64_t>(r) != header_bytes - kFixedHeaderBytes) return invalid();
  const size_t checked = kFixedHeaderBytes + key_bytes;
  if (XXH3_64bits(header.data(), checked) != GetU64(header.data() + checked)) return invalid();

  DiskEntryInfo info;
  if (!DecodeKeyParts(std::string_view(header).substr(kFixedHeaderBytes, key_bytes),
                      info.parts)) {
    return invalid();
  }
  // The file must hold the entry its name says (no misplaced files).
  if (Fingerprint::Of(info.parts) != key) return invalid();
  info.fingerprint = key;
  info.file_bytes = size;
  info.payload_bytes = payload_bytes;
  info.last_use = MtimeOf(st);

  if (want_payload) {
    payload->resize(payload_bytes);
    r = PreadFull(fd.get(), payload->data(), payload_bytes, static_cast<off_t>(header_bytes));
    if (r < 0) return ErrnoStatus("cannot read " + path, static_cast<int>(-r));
    if (static_cast<uint64_t>(r) != payload_bytes ||
        XXH3_64bits(payload->data(), payload->size()) != payload_checksum) {
      payload->clear();
      return invalid();
    }
  }
  if (touch && ::futimens(fd.get(), nullptr) == 0) {
    info.last_use = std::chrono::system_clock::now();
  }
  return std::optional<DiskEntryInfo>(std::move(info));
}

StatusOr<std::optional<DiskEntry>> DiskCache::Get(const Fingerprint& key) {
  std::string payload;
  JITD_ASSIGN_OR_RETURN(std::optional<DiskEntryInfo> info,
                        ReadEntry(key, /*want_payload=*/true, /*touch=*/true, &payload));
  if (!info) {
    ++misses_;
    return std::optional<DiskEntry>();
  }
  ++hits_;
  return std::optional<DiskEntry>(DiskEntry{std::move(info->parts), std::move(payload)});
}

StatusOr<std::optional<DiskEntry>> DiskCache::Get(const CacheKeyParts& parts) {
  const Fingerprint key = Fingerprint::Of(parts);
  std::string payload;
  JITD_ASSIGN_OR_RETURN(std::optional<DiskEntryInfo> info,
                        ReadEntry(key, /*want_payload=*/true, /*touch=*/true, &payload));
  if (!info || info->parts != parts) {
    ++misses_;
    return std::optional<DiskEntry>();
  }
  ++hits_;
  return std::optional<DiskEntry>(DiskEntry{std::move(info->parts), std::move(payload)});
}

StatusOr<Fingerprint> DiskCache::Put(const CacheKeyParts& parts, std::string_view payload) {
  uint64_t key_section = 0;
  for (size_t i = 0; i < kNumKeyParts; ++i) key_section += 4 + KeyPart(parts, i).size();
  if (key_section > kMaxKeySectionBytes) {
    return InvalidArgument("cache key parts total " + std::to_string(key_section) +
                           " bytes, more than the limit of " +
                           std::to_string(kMaxKeySectionBytes));
  }
  const uint64_t file_bytes =
      kFixedHeaderBytes + key_section + kHeaderChecksumBytes + payload.size();
  if (file_bytes > options_.max_bytes) {
    ++rejected_;
    return ResourceExhausted("cache entry of " + std::to_string(file_bytes) +
                             " bytes exceeds the disk cache bound of " +
                             std::to_string(options_.max_bytes) + " bytes");
  }
  const Fingerprint key = Fingerprint::Of(parts);
  const std::string header = EncodeHeader(parts, payload);
  const std::string final_path = PathFor(key);

  std::string temp_path;
  int raw_fd = -1;
  for (int attempt = 0; attempt < 16 && raw_fd < 0; ++attempt) {
    temp_path = options_.dir + "/" + std::string(kTempPrefix) + key.ToHex() + "-" + RandomSuffix();
    raw_fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                    0600);
    if (raw_fd < 0 && errno != EEXIST) {
      return ErrnoStatus("cannot create temp file in " + options_.dir, errno);
    }
  }
  if (raw_fd < 0) return Internal("cannot find a free temp file name in " + options_.dir);
  UniqueFd fd(raw_fd);
  auto fail = [&](const std::string& what, int err) {
    ::unlink(temp_path.c_str());
    return ErrnoStatus(what + " " + temp_path, err);
  };
  if (int err = WriteFull(fd.get(), header.data(), header.size())) return fail("cannot write", err);
  if (int err = WriteFull(fd.get(), payload.data(), payload.size())) {
    return fail("cannot write", err);
  }
  if (options_.fsync && ::fsync(fd.get()) != 0) return fail("cannot fsync", errno);
  if (fd.Close() != 0) return fail("cannot close", errno);
  if (::rename(temp_path.c_str(), final_path.c_str()) != 0) {
    return fail("cannot rename to " + final_path + ":", errno);
  }
  if (options_.fsync) {
    int dir_fd = ::open(options_.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir_fd >= 0) {
      ::fsync(dir_fd);
      ::close(dir_fd);
    }
  }
  ++writes_;
  JITD_RETURN_IF_ERROR(Evict());
  return key;
}

Status DiskCache::Erase(const Fingerprint& key) {
  const std::string path = PathFor(key);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return ErrnoStatus("cannot remove " + path, errno);
  }
  return Status::Ok();
}

StatusOr<std::vector<DiskEntryInfo>> DiskCache::List() {
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return ErrnoStatus("cannot list " + options_.dir, errno);
  std::vector<Fingerprint> keys;
  while (struct dirent* e = ::readdir(d)) {
    if (IsFingerprintName(e->d_name)) keys.push_back(*Fingerprint::Parse(e->d_name));
  }
  ::closedir(d);
  std::vector<DiskEntryInfo> out;
  for (const Fingerprint& key : keys) {
    JITD_ASSIGN_OR_RETURN(std::optional<DiskEntryInfo> info,
                          ReadEntry(key, /*want_payload=*/false, /*touch=*/false, nullptr));
    if (info) out.push_back(std::move(*info));
  }
  std::sort(out.begin(), out.end(), [](const DiskEntryInfo& a, const DiskEntryInfo& b) {
    if (a.last_use != b.last_use) return a.last_use < b.last_use;
    return a.fingerprint < b.fingerprint;
  });
  return out;
}

StatusOr<std::optional<DiskEntryInfo>> DiskCache::FindNearest(const CacheKeyParts& want) {
  return FindNearest(want, [](const CacheKeyParts&) { return true; });
}

StatusOr<std::optional<DiskEntryInfo>> DiskCache::FindNearest(
    const CacheKeyParts& want, const std::function<bool(const CacheKeyParts&)>& accept) {
  JITD_ASSIGN_OR_RETURN(std::vector<DiskEntryInfo> entries, List());
  std::optional<DiskEntryInfo> best;
  int best_score = -1;
  // Least recently used first, so `>=` prefers the most recent on ties.
  for (DiskEntryInfo& e : entries) {
    if (e.parts == want || !accept(e.parts)) continue;
    int score = CountEqualParts(e.parts, want) +
                (e.parts.program_hash == want.program_hash ? static_cast<int>(kNumKeyParts) : 0);
    if (score >= best_score) {
      best_score = score;
      best = std::move(e);
    }
  }
  return best;
}

Status DiskCache::Evict() {
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return ErrnoStatus("cannot list " + options_.dir, errno);
  struct File {
    std::string path;
    uint64_t bytes;
    std::chrono::system_clock::time_point mtime;
  };
  std::vector<File> files;
  uint64_t total = 0;
  const auto now = std::chrono::system_clock::now();
  while (struct dirent* e = ::readdir(d)) {
    const bool is_entry = IsFingerprintName(e->d_name);
    const bool is_temp = std::string_view(e->d_name).starts_with(kTempPrefix);
    if (!is_entry && !is_temp) continue;
    std::string path = options_.dir + "/" + e->d_name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (is_temp) {
      if (now - MtimeOf(st) > kStaleTempAge) ::unlink(path.c_str());
      continue;
    }
    files.push_back({std::move(path), static_cast<uint64_t>(st.st_size), MtimeOf(st)});
    total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  if (total <= options_.max_bytes) return Status::Ok();
  std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
    if (a.mtime != b.mtime) return a.mtime < b.mtime;
    return a.path < b.path;
  });
  for (const File& f : files) {
    if (total <= options_.max_bytes) break;
    if (::unlink(f.path.c_str()) == 0) {
      ++evictions_;
    } else if (errno != ENOENT) {
      return ErrnoStatus("cannot evict " + f.path, errno);
    }
    total -= f.bytes;
  }
  return Status::Ok();
}

}  // namespace jitd::cache
