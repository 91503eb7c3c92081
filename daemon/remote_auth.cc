#include "daemon/remote_auth.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

namespace jitd::daemon {

std::string ListenAddress::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return "tcp://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

StatusOr<ListenAddress> ParseListenAddress(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  constexpr std::string_view kScheme = "tcp://";
  if (text.substr(0, kScheme.size()) != kScheme) {
    return InvalidArgument("listen address " + quoted + " must start with tcp://");
  }
  std::string_view rest = text.substr(kScheme.size());
  ListenAddress out;
  std::string_view port_text;
  if (!rest.empty() && rest[0] == '[') {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return InvalidArgument("listen address " + quoted + ": write IPv6 as tcp://[ADDR]:PORT");
    }
    out.host = std::string(rest.substr(1, close - 1));
    port_text = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) {
      return InvalidArgument("listen address " + quoted + " lacks a port (tcp://ADDR:PORT)");
    }
    out.host = std::string(rest.substr(0, colon));
    port_text = rest.substr(colon + 1);
    if (out.host.find(':') != std::string::npos) {
      return InvalidArgument("listen address " + quoted + ": write IPv6 as tcp://[ADDR]:PORT");
    }
  }
  unsigned port = 0;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() ||
      port > 65535) {
    return InvalidArgument("listen address " + quoted + ": port '" + std::string(port_text) +
                           "' is not a number from 0 to 65535");
  }
  out.port = static_cast<uint16_t>(port);
  if (out.host.empty()) {
    return InvalidArgument("listen address " + quoted +
                           " lacks a host (use 0.0.0.0 for every IPv4 interface)");
  }
  if (out.host != "localhost") {
    in_addr v4{};
    in6_addr v6{};
    if (::inet_pton(AF_INET, out.host.c_str(), &v4) != 1 &&
        ::inet_pton(AF_INET6, out.host.c_str(), &v6) != 1) {
      return InvalidArgument("listen address " + quoted + ": host '" + out.host +
                             "' is not an IP address (names other than localhost are not "
                             "resolved)");
    }
  }
  return out;
}

bool IsLoopbackHost(std::string_view host) {
  if (host == "localhost") return true;
  const std::string h(host);
  in_addr v4{};
  if (::inet_pton(AF_INET, h.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, h.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
  }
  return false;
}

std::vector<uint8_t> Sha256(std::string_view bytes) {
  std::vector<uint8_t> out(32);
  unsigned int n = 0;
  EVP_Digest(bytes.data(), bytes.size(), out.data(), &n, EVP_sha256(), nullptr);
  out.resize(n);
  return out;
}

std::string HexString(const std::vector<uint8_t>& bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    out += kHex[b >> 4];
    out += kHex[b & 15];
  }
  return out;
}

StatusOr<TokenTable> TokenTable::Load(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "cannot read the token file " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    return Status(StatusCode::kFailedPrecondition,
                  "the token file " + path +
                      " is accessible by group or others (mode " +
                      std::to_string(st.st_mode & 0777) + " octal " +
                      [&] {
                        char m[8];
                        std::snprintf(m, sizeof(m), "%03o", st.st_mode & 0777);
                        return std::string(m);
                      }() +
                      "); chmod 600 it");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status(StatusCode::kFailedPrecondition, "cannot read the token file " + path);
  }
  std::stringstream text;
  text << in.rdbuf();
  return Parse(text.str(), path);
}

StatusOr<TokenTable> TokenTable::Parse(std::string_view text, const std::string& origin) {
  TokenTable table;
  std::unordered_set<std::string> names;
  std::unordered_set<std::string> digests;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    const std::string where = origin + ":" + std::to_string(line_no);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const size_t first = line.find_first_not_of(" \t");
    if (first == std::string_view::npos || line[first] == '#') continue;
    line = line.substr(first);
    const size_t space = line.find_first_of(" \t");
    if (space == std::string_view::npos) {
      return InvalidArgument(where + ": expected \"NAME TOKEN\"");
    }
    const std::string_view name = line.substr(0, space);
    std::string_view token = line.substr(space);
    token.remove_prefix(std::min(token.size(), token.find_first_not_of(" \t")));
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) token.remove_suffix(1);
    for (char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && std::strchr("_.@-", c) == nullptr) {
        return InvalidArgument(where + ": name '" + std::string(name) +
                               "' may hold only letters, digits and _.@-");
      }
    }
    if (token.find_first_of(" \t") != std::string_view::npos) {
      return InvalidArgument(where + ": expected \"NAME TOKEN\" (the token has a space)");
    }
    if (token.size() < kMinTokenBytes) {
      return InvalidArgument(where + ": the token of '" + std::string(name) + "' is " +
                             std::to_string(token.size()) + " characters, at least " +
                             std::to_string(kMinTokenBytes) +
                             " are required (e.g. openssl rand -hex 32)");
    }
    for (char c : token) {
      if (c < 0x21 || c > 0x7e) {
        return InvalidArgument(where + ": the token of '" + std::string(name) +
                               "' holds a non-printable character");
      }
    }
    if (!names.insert(std::string(name)).second) {
      return InvalidArgument(where + ": name '" + std::string(name) + "' appears twice");
    }
    Entry entry{std::string(name), Sha256(token)};
    if (!digests.insert(HexString(entry.digest)).second) {
      return InvalidArgument(where + ": the token of '" + std::string(name) +
                             "' is also another name's");
    }
    table.entries_.push_back(std::move(entry));
  }
  if (table.entries_.empty()) {
    return InvalidArgument(origin + ": no \"NAME TOKEN\" line");
  }
  return table;
}

std::optional<std::string> TokenTable::Match(std::string_view token) const {
  const std::vector<uint8_t> digest = Sha256(token);
  const Entry* found = nullptr;
  for (const Entry& entry : entries_) {
    // No early exit: every entry costs the same whatever matches.
    const bool equal = CRYPTO_memcmp(entry.digest.data(), digest.data(), digest.size()) == 0;
    if (equal) found = &entry;
  }
  if (found == nullptr) return std::nullopt;
  return found->name;
}

CertificateIdentity IdentityOf(X509* certificate) {
  CertificateIdentity out;
  if (certificate == nullptr) return out;
  X509_NAME* subject = X509_get_subject_name(certificate);
  const int index = subject ? X509_NAME_get_index_by_NID(subject, NID_commonName, -1) : -1;
  if (index >= 0) {
    ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index));
    unsigned char* utf8 = nullptr;
    const int n = ASN1_STRING_to_UTF8(&utf8, data);
    if (n > 0) out.common_name.assign(reinterpret_cast<char*>(utf8), static_cast<size_t>(n));
    OPENSSL_free(utf8);
  }
  std::vector<uint8_t> digest(EVP_MAX_MD_SIZE);
  unsigned int n = 0;
  if (X509_digest(certificate, EVP_sha256(), digest.data(), &n) == 1) {
    digest.resize(n);
    out.sha256 = HexString(digest);
  }
  return out;
}

int64_t RemoteUid(std::string_view identity) {
  const std::vector<uint8_t> digest = Sha256(identity);
  uint64_t bits = 0;
  for (int i = 0; i < 8; ++i) bits = (bits << 8) | digest[i];
  return static_cast<int64_t>((uint64_t{1} << 62) | (bits & ((uint64_t{1} << 62) - 1)));
}

}  // namespace jitd::daemon
