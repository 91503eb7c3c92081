// Who a remote client is (docs/SECURITY.md, "Network"): listen addresses,
// bearer tokens, client-certificate identities, and the uid a remote
// identity acts as inside the daemon.
//
// Thread safety: TokenTable is immutable after Load (Match may be called
// from any thread); the free functions are stateless.
#ifndef JITD_DAEMON_REMOTE_AUTH_H_
#define JITD_DAEMON_REMOTE_AUTH_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

typedef struct x509_st X509;

namespace jitd::daemon {

// "tcp://HOST:PORT": HOST is an IPv4 address, a bracketed IPv6 address
// ("[::1]"), or "localhost". Plain value.
struct ListenAddress {
  std::string host;  // without brackets
  uint16_t port = 0;
  std::string ToString() const;  // "tcp://HOST:PORT" (IPv6 bracketed)
};
// INVALID_ARGUMENT naming what is wrong ("tcp://" missing, no port, port out
// of range, a host that is not an address).
StatusOr<ListenAddress> ParseListenAddress(std::string_view text);
// Whether `host` is a loopback address (127.0.0.0/8, ::1, "localhost").
bool IsLoopbackHost(std::string_view host);

// Bearer tokens (--token-file): one "NAME TOKEN" per line; blank lines and
// lines starting with '#' are skipped. Names are [A-Za-z0-9_.@-]+, unique;
// tokens are at least kMinTokenBytes printable characters, unique.
class TokenTable {
 public:
  static constexpr size_t kMinTokenBytes = 16;

  // Reads `path`: INVALID_ARGUMENT naming the file and line of the first bad
  // one; FAILED_PRECONDITION when the file is readable or writable by group
  // or others (chmod 600 it), or cannot be read.
  static StatusOr<TokenTable> Load(const std::string& path);
  static StatusOr<TokenTable> Parse(std::string_view text, const std::string& origin);

  // The name of the entry whose token is `token`, compared in constant time
  // (every entry is compared, through SHA-256 digests, so neither the
  // position nor the length of a match shows in the timing).
  std::optional<std::string> Match(std::string_view token) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string name;
    std::vector<uint8_t> digest;  // SHA-256 of the token
  };
  std::vector<Entry> entries_;
};

// SHA-256 of `bytes`.
std::vector<uint8_t> Sha256(std::string_view bytes);
std::string HexString(const std::vector<uint8_t>& bytes);

// A client certificate's identity: its subject's common name (empty when it
// has none) and its SHA-256 fingerprint (hex, for logs).
struct CertificateIdentity {
  std::string common_name;
  std::string sha256;
};
CertificateIdentity IdentityOf(X509* certificate);

// The uid a remote identity acts as inside the daemon — what per-uid cache
// visibility, stats views and feed ownership key on. It is 2^62 plus 62
// bits of SHA-256(identity): never a real uid (those are below 2^32), the
// same across restarts (disk cache entries stay the identity's), distinct
// identities collide with probability ~2^-62.
int64_t RemoteUid(std::string_view identity);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_REMOTE_AUTH_H_
