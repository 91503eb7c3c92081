#include "tools/npy.h"

#include "base/unique_fd.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <optional>

namespace jitd::tools {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

std::string Prefixed(std::string_view name, std::string_view message) {
  std::string out(name);
  out += ": ";
  out += message;
  return out;
}

// One dtype numpy and jitd share: numpy's kind letter and item size.
struct NpyKind {
  char kind;
  int item_bytes;
  ir::DType dtype;
};

constexpr NpyKind kKinds[] = {
    {'b', 1, ir::DType::kPred}, {'i', 1, ir::DType::kS8},   {'i', 2, ir::DType::kS16},
    {'i', 4, ir::DType::kS32},  {'i', 8, ir::DType::kS64},  {'u', 1, ir::DType::kU8},
    {'u', 2, ir::DType::kU16},  {'u', 4, ir::DType::kU32},  {'u', 8, ir::DType::kU64},
    {'f', 2, ir::DType::kF16},  {'f', 4, ir::DType::kF32},  {'f', 8, ir::DType::kF64},
    {'c', 8, ir::DType::kC64},  {'c', 16, ir::DType::kC128},
};

// Maps a descr such as "<f4" to a DType; the message says why not otherwise.
StatusOr<ir::DType> DTypeFromDescr(std::string_view descr) {
  if (descr.empty()) return InvalidArgument("empty 'descr' (no dtype)");
  char order = descr[0];
  std::string_view rest = descr;
  if (order == '<' || order == '>' || order == '|' || order == '=') {
    rest.remove_prefix(1);
  } else {
    order = '=';
  }
  if (rest.size() < 2 || rest.size() > 3) {
    return InvalidArgument("unsupported dtype '" + std::string(descr) +
                           "' (supported: b1, i1-i8, u1-u8, f2, f4, f8, c8, c16)");
  }
  int size = 0;
  for (char c : rest.substr(1)) {
    if (c < '0' || c > '9') {
      return InvalidArgument("unsupported dtype '" + std::string(descr) + "'");
    }
    size = size * 10 + (c - '0');
  }
  for (const NpyKind& k : kKinds) {
    if (k.kind == rest[0] && k.item_bytes == size) {
      if (order == '>' && size > 1) {
        return InvalidArgument("big-endian data ('" + std::string(descr) +
                               "') is not supported; save it little-endian, e.g. "
                               "np.save(f, a.astype(a.dtype.newbyteorder('<')))");
      }
      return k.dtype;
    }
  }
  return InvalidArgument("unsupported dtype '" + std::string(descr) +
                         "' (supported: b1, i1-i8, u1-u8, f2, f4, f8, c8, c16)");
}

// A strict reader of the Python dict literal numpy writes.
class DictParser {
 public:
  explicit DictParser(std::string_view text) : text_(text) {}

  Status Parse(std::string& descr, bool& fortran_order, std::vector<int64_t>& shape) {
    bool have_descr = false, have_fortran = false, have_shape = false;
    SkipSpace();
    if (!Consume('{')) return Error("header does not start with '{'");
    for (;;) {
      SkipSpace();
      if (Consume('}')) break;
      JITD_ASSIGN_OR_RETURN(std::string key, ParseString());
      SkipSpace();
      if (!Consume(':')) return Error("expected ':' after '" + key + "'");
      SkipSpace();
      if (key == "descr") {
        if (have_descr) return Error("duplicate key 'descr'");
        have_descr = true;
        if (Peek() == '[') {
          return InvalidArgument("structured dtypes (a list as 'descr') are not supported");
        }
        JITD_ASSIGN_OR_RETURN(descr, ParseString());
      } else if (key == "fortran_order") {
        if (have_fortran) return Error("duplicate key 'fortran_order'");
        have_fortran = true;
        if (ConsumeWord("True")) {
          fortran_order = true;
        } else if (ConsumeWord("False")) {
          fortran_order = false;
        } else {
          return Error("'fortran_order' must be True or False");
        }
      } else if (key == "shape") {
        if (have_shape) return Error("duplicate key 'shape'");
        have_shape = true;
        JITD_RETURN_IF_ERROR(ParseShape(shape));
      } else {
        return Error("unexpected key '" + key +
                     "' (an .npy header has exactly 'descr', 'fortran_order', 'shape')");
      }
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return Error("expected ',' or '}'");
    }
    // Padding: spaces, then (as numpy writes it) a newline; nothing else.
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
        return Error("unexpected characters after the header dict");
      }
    }
    if (!have_descr) return Error("header lacks 'descr'");
    if (!have_fortran) return Error("header lacks 'fortran_order'");
    if (!have_shape) return Error("header lacks 'shape'");
    return Status::Ok();
  }

 private:
  Status Error(std::string what) const {
    return InvalidArgument("malformed .npy header at byte " + std::to_string(pos_) +
                           " of the dict: " + what);
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool Consume(char c) {
    if (Peek() != c || pos_ >= text_.size()) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  // 'abc' or "abc" of printable ASCII, no escapes (numpy's keys and simple
  // descrs never need any).
  StatusOr<std::string> ParseString() {
    char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] != quote) {
      char c = text_[pos_];
      if (c == '\\' || c < 0x20 || c > 0x7e) return Error("unsupported character in a string");
      ++pos_;
      if (pos_ - start > 64) return Error("string too long");
    }
    if (pos_ >= text_.size()) return Error("unterminated string");
    std::string s(text_.substr(start, pos_ - start));
    ++pos_;
    return s;
  }
  // "()", "(3,)", "(2, 3)", "(2, 3,)"; Python 2's "3L" is accepted.
  Status ParseShape(std::vector<int64_t>& shape) {
    shape.clear();
    if (!Consume('(')) return Error("'shape' must be a tuple");
    SkipSpace();
    if (Consume(')')) return Status::Ok();
    for (;;) {
      SkipSpace();
      if (Peek() < '0' || Peek() > '9') return Error("shape entries must be non-negative integers");
      int64_t v = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        v = v * 10 + (Peek() - '0');
        ++pos_;
        if (v > ir::kMaxElements) return Error("a dimension is too large");
      }
      Consume('L');
      shape.push_back(v);
      if (static_cast<int>(shape.size()) > ir::kMaxRank) {
        return Error("rank above " + std::to_string(ir::kMaxRank));
      }
      SkipSpace();
      if (Consume(')')) {
        if (shape.size() == 1) return Error("a one-element shape tuple needs a trailing comma");
        return Status::Ok();
      }
      if (!Consume(',')) return Error("expected ',' or ')' in 'shape'");
      SkipSpace();
      if (Consume(')')) return Status::Ok();
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

uint32_t ReadLe(std::span<const uint8_t> bytes, size_t offset, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | bytes[offset + static_cast<size_t>(i)];
  return v;
}

std::string ShapeTuple(const std::vector<int64_t>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  if (dims.size() == 1) s += ',';
  s += ')';
  return s;
}

// Reads up to `n` bytes at the current position; fewer only at end of file.
StatusOr<size_t> ReadFully(int fd, uint8_t* out, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd, out + done, n - done);
    if (r == 0) break;
    if (r < 0) {
      if (errno == EINTR) continue;
      return InvalidArgument(Prefixed(path, std::string("read error: ") + std::strerror(errno)));
    }
    done += static_cast<size_t>(r);
  }
  return done;
}

// numpy stores bools as bytes; a Literal's predicates must be exactly 0 or 1.
void NormalizePredicates(ir::Literal& literal) {
  if (literal.dtype() != ir::DType::kPred) return;
  for (uint8_t& b : literal.mutable_bytes()) b = b != 0 ? 1 : 0;
}

}  // namespace

StatusOr<NpyHeader> ParseNpyHeader(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.size() < kMagicBytes + 2 || std::memcmp(bytes.data(), kMagic, kMagicBytes) != 0) {
    return InvalidArgument(Prefixed(name, "not an .npy file (no \\x93NUMPY magic)"));
  }
  const int major = bytes[6];
  const int minor = bytes[7];
  size_t length_bytes;
  if (major == 1) {
    length_bytes = 2;
  } else if (major == 2 || major == 3) {
    length_bytes = 4;
  } else {
    return InvalidArgument(Prefixed(name, "unsupported .npy format version " +
                                              std::to_string(major) + "." +
                                              std::to_string(minor) + " (known: 1.0, 2.0, 3.0)"));
  }
  if (minor != 0) {
    return InvalidArgument(Prefixed(name, "unsupported .npy format version " +
                                              std::to_string(major) + "." + std::to_string(minor)));
  }
  const size_t prefix = kMagicBytes + 2 + length_bytes;
  if (bytes.size() < prefix) return InvalidArgument(Prefixed(name, "truncated .npy header"));
  const uint32_t header_len = ReadLe(bytes, kMagicBytes + 2, static_cast<int>(length_bytes));
  if (header_len > kNpyMaxHeaderBytes) {
    return InvalidArgument(Prefixed(name, ".npy header of " + std::to_string(header_len) +
                                              " bytes is longer than the limit of " +
                                              std::to_string(kNpyMaxHeaderBytes)));
  }
  if (bytes.size() - prefix < header_len) {
    return InvalidArgument(Prefixed(name, "truncated .npy header: it announces " +
                                              std::to_string(header_len) + " bytes, the file has " +
                                              std::to_string(bytes.size() - prefix)));
  }
  std::string_view text(reinterpret_cast<const char*>(bytes.data() + prefix), header_len);

  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> dims;
  Status status = DictParser(text).Parse(descr, fortran_order, dims);
  if (!status.ok()) return InvalidArgument(Prefixed(name, status.message()));
  StatusOr<ir::DType> dtype = DTypeFromDescr(descr);
  if (!dtype.ok()) return InvalidArgument(Prefixed(name, dtype.status().message()));
  if (fortran_order) {
    bool trivial = dims.size() <= 1;
    if (!trivial) {
      return InvalidArgument(Prefixed(
          name, "fortran_order True is not supported; save a C-ordered array "
                "(np.save(f, np.ascontiguousarray(a)))"));
    }
  }
  StatusOr<ir::Type> type = ir::Type::CheckedTensor(*dtype, dims);
  if (!type.ok()) {
    return InvalidArgument(Prefixed(name, "shape " + ShapeTuple(dims) + ": " +
                                              type.status().message()));
  }
  NpyHeader header;
  header.type = *type;
  header.descr = descr;
  header.data_offset = static_cast<int64_t>(prefix + header_len);
  header.data_bytes = type->byte_size();
  return header;
}

StatusOr<ir::Literal> ParseNpy(std::span<const uint8_t> bytes, std::string_view name) {
  JITD_ASSIGN_OR_RETURN(NpyHeader header, ParseNpyHeader(bytes, name));
  const int64_t available = static_cast<int64_t>(bytes.size()) - header.data_offset;
  if (available != header.data_bytes) {
    return InvalidArgument(Prefixed(
        name, (available < header.data_bytes ? "truncated data: " : "trailing bytes: ") +
                  header.type.ToString() + " needs " + std::to_string(header.data_bytes) +
                  " bytes after the header, the file has " + std::to_string(available)));
  }
  std::vector<uint8_t> data(bytes.begin() + header.data_offset, bytes.end());
  JITD_ASSIGN_OR_RETURN(ir::Literal literal, ir::Literal::FromBytes(header.type, std::move(data)));
  NormalizePredicates(literal);
  return literal;
}

StatusOr<std::string> NpyDescr(ir::DType dtype) {
  for (const NpyKind& k : kKinds) {
    if (k.dtype != dtype) continue;
    std::string descr(1, k.item_bytes == 1 ? '|' : '<');
    descr += k.kind;
    descr += std::to_string(k.item_bytes);
    return descr;
  }
  if (dtype == ir::DType::kBF16) {
    return InvalidArgument(
        "bf16 has no NumPy dtype, so it cannot be written to .npy; convert it in the "
        "program (stablehlo.convert to f32) before returning it");
  }
  return InvalidArgument(std::string(ir::DTypeName(dtype)) +
                         " has no NumPy dtype, so it cannot be written to .npy; convert it "
                         "in the program (stablehlo.convert to a wider type) first");
}

StatusOr<std::vector<uint8_t>> SerializeNpy(const ir::Literal& literal) {
  if (!literal.type().is_tensor()) {
    return InvalidArgument("only tensors can be written to .npy, not " +
                           literal.type().ToString());
  }
  JITD_ASSIGN_OR_RETURN(std::string descr, NpyDescr(literal.dtype()));
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " +
                     ShapeTuple(literal.type().dims()) + ", }";
  // Pad with spaces so that magic + version + length + dict + '\n' is a
  // multiple of 64 (what numpy >= 1.14 writes; aligned data for mmap).
  size_t length_bytes = 2;
  int major = 1;
  auto padded_size = [&](size_t prefix) {
    size_t total = prefix + dict.size() + 1;
    return (total + 63) / 64 * 64 - prefix;
  };
  size_t header_len = padded_size(kMagicBytes + 2 + 2);
  if (header_len > 65535) {
    length_bytes = 4;
    major = 2;
    header_len = padded_size(kMagicBytes + 2 + 4);
  }
  std::vector<uint8_t> out;
  const std::span<const uint8_t> data = literal.bytes();
  out.reserve(kMagicBytes + 2 + length_bytes + header_len + data.size());
  out.insert(out.end(), kMagic, kMagic + kMagicBytes);
  out.push_back(static_cast<uint8_t>(major));
  out.push_back(0);
  for (size_t i = 0; i < length_bytes; ++i) {
    out.push_back(static_cast<uint8_t>((header_len >> (8 * i)) & 0xff));
  }
  out.insert(out.end(), dict.begin(), dict.end());
  out.insert(out.end(), header_len - dict.size() - 1, ' ');
  out.push_back('\n');
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

StatusOr<ir::Literal> ReadNpyFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NotFound(Prefixed(path, std::string("cannot open: ") + std::strerror(errno)));
  UniqueFd closer(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    return InvalidArgument(Prefixed(path, std::string("cannot stat: ") + std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) return InvalidArgument(Prefixed(path, "is a directory"));

  // The header: at most the prefix plus kNpyMaxHeaderBytes.
  std::vector<uint8_t> head(kMagicBytes + 2 + 4 + kNpyMaxHeaderBytes);
  JITD_ASSIGN_OR_RETURN(size_t got, ReadFully(fd, head.data(), head.size(), path));
  head.resize(got);
  JITD_ASSIGN_OR_RETURN(NpyHeader header, ParseNpyHeader(head, path));

  // The data: what is already read past the header, then the rest, never
  // more than the header announced plus one byte (to detect trailing data).
  const int64_t data_bytes = header.data_bytes;
  if (S_ISREG(st.st_mode) && st.st_size - header.data_offset < data_bytes) {
    return InvalidArgument(Prefixed(
        path, "truncated data: " + header.type.ToString() + " needs " +
                  std::to_string(data_bytes) + " bytes after the header, the file has " +
                  std::to_string(st.st_size - header.data_offset)));
  }
  const size_t in_head = head.size() - static_cast<size_t>(header.data_offset);
  if (static_cast<int64_t>(in_head) > data_bytes) {
    return InvalidArgument(Prefixed(path, "trailing bytes after the " + header.type.ToString() +
                                              " data"));
  }
  // Grow in chunks as bytes arrive, so a pipe that announces a huge shape
  // and then ends costs no more memory than it delivered.
  std::vector<uint8_t> data(head.begin() + header.data_offset, head.end());
  constexpr size_t kChunk = size_t{64} << 20;
  while (static_cast<int64_t>(data.size()) < data_bytes) {
    const size_t have = data.size();
    const size_t want = std::min(kChunk, static_cast<size_t>(data_bytes) - have);
    data.resize(have + want);
    JITD_ASSIGN_OR_RETURN(size_t got_now, ReadFully(fd, data.data() + have, want, path));
    if (got_now < want) {
      return InvalidArgument(Prefixed(
          path, "truncated data: " + header.type.ToString() + " needs " +
                    std::to_string(data_bytes) + " bytes after the header, the file has " +
                    std::to_string(have + got_now)));
    }
  }
  uint8_t extra;
  JITD_ASSIGN_OR_RETURN(size_t trailing, ReadFully(fd, &extra, 1, path));
  if (trailing != 0) {
    return InvalidArgument(Prefixed(path, "trailing bytes after the " + header.type.ToString() +
                                              " data"));
  }
  StatusOr<ir::Literal> literal = ir::Literal::FromBytes(header.type, std::move(data));
  if (!literal.ok()) return InvalidArgument(Prefixed(path, literal.status().message()));
  NormalizePredicates(*literal);
  return std::move(literal).value();
}

Status WriteNpyFile(const std::string& path, const ir::Literal& literal) {
  StatusOr<std::vector<uint8_t>> bytes = SerializeNpy(literal);
  if (!bytes.ok()) return InvalidArgument(Prefixed(path, bytes.status().message()));
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return InvalidArgument(Prefixed(path, std::string("cannot create: ") + std::strerror(errno)));
  }
  UniqueFd closer(fd);
  size_t done = 0;
  while (done < bytes->size()) {
    ssize_t w = ::write(fd, bytes->data() + done, bytes->size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return InvalidArgument(Prefixed(path, std::string("write error: ") + std::strerror(errno)));
    }
    done += static_cast<size_t>(w);
  }
  if (::close(closer.Release()) != 0) {
    return InvalidArgument(Prefixed(path, std::string("write error: ") + std::strerror(errno)));
  }
  return Status::Ok();
}

}  // namespace jitd::tools
