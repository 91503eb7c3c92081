#include "libclient/remote_link.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include "base/unique_fd.h"
#include "ipc/protocol.h"
#include "ipc/stream_frame.h"

namespace jitd::client {
namespace {

using Clock = std::chrono::steady_clock;

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}
Status PermissionDenied(std::string message) {
  return Status(StatusCode::kPermissionDenied, std::move(message));
}

// OpenSSL's queued errors as one line ("" when none), clearing the queue.
std::string TlsErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof(text));
    if (!out.empty()) out += "; ";
    out += text;
  }
  return out;
}

int MillisLeft(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count(), 0, 1 << 30));
}

// The first "TOKEN" or "NAME TOKEN" line of a token file (blank lines and
// '#' comments skipped): its last field.
StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("token file '" + path + "': cannot read it");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string field, last;
    while (fields >> field) last = field;
    if (last.empty() || line.find_first_not_of(" \t") == line.find('#')) continue;
    return last;
  }
  return InvalidArgument("token file '" + path + "' holds no token");
}

// This process's number for RemoteHello.client_process: random, picked
// once per process (again in a forked child, which is another client), so
// that the daemon gives all of this process's connections one set of feed
// queues, as it does a local process's.
uint64_t ClientProcessNumber() {
  static std::mutex mu;
  static pid_t owner = 0;
  static uint64_t number = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (owner != ::getpid() || number == 0) {
    std::random_device random;
    do {
      number = (uint64_t{random()} << 32 | random()) & ~(uint64_t{3} << 62);
    } while (number == 0);
    owner = ::getpid();
  }
  return number;
}

}  // namespace

// ---- Addresses ------------------------------------------------------------

bool IsRemoteAddress(std::string_view address) { return address.starts_with("tcp://"); }

bool RemoteAddress::loopback() const {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1 && (ntohl(v4.s_addr) >> 24) == 127;
}

std::string RemoteAddress::ToString() const {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

StatusOr<RemoteAddress> ParseRemoteAddress(std::string_view address) {
  const std::string quoted = "remote address '" + std::string(address) + "'";
  if (!IsRemoteAddress(address)) return InvalidArgument(quoted + " does not start with tcp://");
  std::string_view rest = address.substr(6);
  RemoteAddress out;
  std::string_view port;
  if (rest.starts_with("[")) {
    const size_t close = rest.find(']');
    if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return InvalidArgument(quoted + ": an IPv6 address is written [ADDR]:PORT");
    }
    out.host = std::string(rest.substr(1, close - 1));
    port = rest.substr(close + 2);
  } else {
    const size_t colon = rest.rfind(':');
    if (colon == std::string_view::npos) return InvalidArgument(quoted + " has no :PORT");
    out.host = std::string(rest.substr(0, colon));
    if (out.host.find(':') != std::string::npos) {
      return InvalidArgument(quoted + ": write an IPv6 address in brackets, tcp://[ADDR]:PORT");
    }
    port = rest.substr(colon + 1);
  }
  if (out.host.empty()) return InvalidArgument(quoted + " has no host");
  if (port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return InvalidArgument(quoted + ": the port must be a number 1..65535");
  }
  const int number = std::stoi(std::string(port));
  if (number < 1 || number > 65535) {
    return InvalidArgument(quoted + ": the port must be a number 1..65535");
  }
  out.port = static_cast<uint16_t>(number);
  return out;
}

// ---- The byte stream --------------------------------------------------------

// TCP, with TLS through memory BIOs when `ssl_` is set. Every wait is a
// poll() against the caller's deadline.
class RemoteStream {
 public:
  static StatusOr<std::unique_ptr<RemoteStream>> Open(const RemoteAddress& address,
                                                      const ClientOptions& options,
                                                      Clock::time_point deadline);
  ~RemoteStream() {
    if (ssl_ != nullptr) SSL_free(ssl_);  // frees the BIOs too
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
  }

  Status Write(std::span<const uint8_t> bytes, Clock::time_point deadline) {
    if (ssl_ == nullptr) return SendAll(bytes.data(), bytes.size(), deadline);
    while (!bytes.empty()) {
      const int n = static_cast<int>(std::min<size_t>(bytes.size(), 1 << 20));
      const int written = SSL_write(ssl_, bytes.data(), n);  // memory BIO: never blocks
      if (written <= 0) return Unavailable("TLS write to " + where_ + " failed: " + TlsErrors());
      bytes = bytes.subspan(static_cast<size_t>(written));
      JITD_RETURN_IF_ERROR(FlushTls(deadline));
    }
    return Status::Ok();
  }

  Status ReadExact(uint8_t* dst, size_t n, Clock::time_point deadline) {
    if (ssl_ != nullptr) {
      while (n > 0) {
        const int got = SSL_read(ssl_, dst, static_cast<int>(std::min<size_t>(n, 1 << 30)));
        if (got > 0) {
          dst += got;
          n -= static_cast<size_t>(got);
          continue;
        }
        const int error = SSL_get_error(ssl_, got);
        if (error == SSL_ERROR_WANT_READ) {
          JITD_RETURN_IF_ERROR(FlushTls(deadline));  // e.g. a key update's answer
          JITD_RETURN_IF_ERROR(FillTls(deadline));
          continue;
        }
        if (error == SSL_ERROR_ZERO_RETURN) {
          return Unavailable("the jitd daemon at tcp://" + where_ +
                             " has gone away (it closed the connection)");
        }
        return TlsFailure("TLS read from " + where_);
      }
      return Status::Ok();
    }
    while (n > 0) {
      if (read_pos_ < read_end_) {
        const size_t take = std::min(n, read_end_ - read_pos_);
        std::memcpy(dst, read_buffer_.data() + read_pos_, take);
        read_pos_ += take;
        dst += take;
        n -= take;
        continue;
      }
      // Large reads go straight to their destination.
      const bool direct = n >= read_buffer_.size();
      JITD_ASSIGN_OR_RETURN(size_t got, Receive(direct ? dst : read_buffer_.data(),
                                                direct ? n : read_buffer_.size(), deadline));
      if (direct) {
        dst += got;
        n -= got;
      } else {
        read_pos_ = 0;
        read_end_ = got;
      }
    }
    return Status::Ok();
  }

 private:
  explicit RemoteStream(std::string where) : where_(std::move(where)) {}

  Status Wait(short events, Clock::time_point deadline, const char* what) {
    for (;;) {
      pollfd p{fd_.get(), events, 0};
      const int ready = ::poll(&p, 1, MillisLeft(deadline));
      if (ready > 0) return Status::Ok();
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return Unavailable(std::string("poll(): ") + std::strerror(errno));
      return Status(StatusCode::kDeadlineExceeded,
                    std::string("no ") + what + " from the jitd daemon at " + where_ +
                        " before the deadline");
    }
  }

  Status SendAll(const uint8_t* data, size_t n, Clock::time_point deadline) {
    while (n > 0) {
      const ssize_t sent = ::send(fd_.get(), data, n, MSG_NOSIGNAL);
      if (sent > 0) {
        data += sent;
        n -= static_cast<size_t>(sent);
      } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        JITD_RETURN_IF_ERROR(Wait(POLLOUT, deadline, "room to send"));
      } else if (sent < 0 && errno != EINTR) {
        return Unavailable("the jitd daemon at tcp://" + where_ + " has gone away (" +
                           std::strerror(errno) + ")");
      }
    }
    return Status::Ok();
  }

  StatusOr<size_t> Receive(uint8_t* data, size_t n, Clock::time_point deadline) {
    for (;;) {
      const ssize_t got = ::recv(fd_.get(), data, n, 0);
      if (got > 0) return static_cast<size_t>(got);
      if (got == 0) return Unavailable("the jitd daemon at tcp://" + where_ +
                             " has gone away (it closed the connection)");
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        JITD_RETURN_IF_ERROR(Wait(POLLIN, deadline, "reply"));
      } else if (errno != EINTR) {
        return Unavailable("the jitd daemon at tcp://" + where_ + " has gone away (" +
                           std::strerror(errno) + ")");
      }
    }
  }

  // Sends what TLS has encrypted.
  Status FlushTls(Clock::time_point deadline) {
    char* pending = nullptr;
    const long n = BIO_get_mem_data(wbio_, &pending);
    if (n <= 0) return Status::Ok();
    JITD_RETURN_IF_ERROR(SendAll(reinterpret_cast<const uint8_t*>(pending),
                                 static_cast<size_t>(n), deadline));
    (void)BIO_reset(wbio_);
    return Status::Ok();
  }
  // Hands TLS what the socket has.
  Status FillTls(Clock::time_point deadline) {
    JITD_ASSIGN_OR_RETURN(size_t got, Receive(read_buffer_.data(), read_buffer_.size(), deadline));
    if (BIO_write(rbio_, read_buffer_.data(), static_cast<int>(got)) != static_cast<int>(got)) {
      return Internal("TLS: cannot buffer received bytes");
    }
    return Status::Ok();
  }

  // A TLS failure: PERMISSION_DENIED when it is about certificates (ours
  // refused, theirs not verified), else UNAVAILABLE.
  Status TlsFailure(const std::string& what) {
    const long verify = SSL_get_verify_result(ssl_);
    if (verify != X509_V_OK) {
      TlsErrors();
      return PermissionDenied(what + ": the daemon's certificate does not verify (" +
                              X509_verify_cert_error_string(verify) + "); check the CA file (" +
                              (ca_file_.empty() ? "none given: the system's CAs" : ca_file_) +
                              "; ClientOptions::tls_ca_file, $JITD_TLS_CA) and the host name");
    }
    const std::string errors = TlsErrors();
    if (errors.find("alert") != std::string::npos || errors.find("certificate") != std::string::npos) {
      return PermissionDenied(what + " failed: the daemon refused this client's TLS handshake (" +
                              errors + "); a daemon run with --tls-client-ca needs a client "
                              "certificate it trusts (tls_cert_file/tls_key_file, "
                              "$JITD_TLS_CERT/$JITD_TLS_KEY)");
    }
    return Unavailable(what + " failed" + (errors.empty() ? std::string() : ": " + errors));
  }

  Status SetUpTls(const RemoteAddress& address, const ClientOptions& options);

  const std::string where_;
  UniqueFd fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  BIO* rbio_ = nullptr;  // network -> TLS
  BIO* wbio_ = nullptr;  // TLS -> network
  std::string ca_file_;
  std::vector<uint8_t> read_buffer_ = std::vector<uint8_t>(256 << 10);
  size_t read_pos_ = 0, read_end_ = 0;  // plaintext bytes buffered
};

Status RemoteStream::SetUpTls(const RemoteAddress& address, const ClientOptions& options) {
  ctx_ = SSL_CTX_new(TLS_client_method());
  if (ctx_ == nullptr) return Internal("TLS: SSL_CTX_new failed: " + TlsErrors());
  SSL_CTX_set_min_proto_version(ctx_, TLS1_3_VERSION);
  ca_file_ = options.tls_ca_file;
  if (!ca_file_.empty()) {
    if (SSL_CTX_load_verify_locations(ctx_, ca_file_.c_str(), nullptr) != 1) {
      return InvalidArgument("TLS CA file '" + ca_file_ + "' (tls_ca_file, $JITD_TLS_CA): " +
                             "cannot load it: " + TlsErrors());
    }
  } else if (SSL_CTX_set_default_verify_paths(ctx_) != 1) {
    return InvalidArgument("TLS: no CA file given and the system's CAs do not load: " +
                           TlsErrors());
  }
  SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return InvalidArgument("TLS: a client certificate needs both tls_cert_file and tls_key_file "
                           "($JITD_TLS_CERT, $JITD_TLS_KEY); got only the " +
                           std::string(options.tls_cert_file.empty() ? "key" : "certificate"));
  }
  if (!options.tls_cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx_, options.tls_cert_file.c_str()) != 1) {
      return InvalidArgument("TLS client certificate '" + options.tls_cert_file +
                             "': cannot load it: " + TlsErrors());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx_, options.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx_) != 1) {
      return InvalidArgument("TLS client key '" + options.tls_key_file +
                             "': cannot load it or it does not match the certificate: " +
                             TlsErrors());
    }
  }
  ssl_ = SSL_new(ctx_);
  rbio_ = BIO_new(BIO_s_mem());
  wbio_ = BIO_new(BIO_s_mem());
  if (ssl_ == nullptr || rbio_ == nullptr || wbio_ == nullptr) {
    return Internal("TLS: cannot create the connection: " + TlsErrors());
  }
  BIO_set_mem_eof_return(rbio_, -1);  // empty = "want more", not EOF
  SSL_set_bio(ssl_, rbio_, wbio_);
  // The certificate must name what we connected to: the IP address or the
  // host name (then also sent as SNI).
  in6_addr ip{};
  if (::inet_pton(AF_INET, address.host.c_str(), &ip) == 1 ||
      ::inet_pton(AF_INET6, address.host.c_str(), &ip) == 1) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl_), address.host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl_, address.host.c_str());
    SSL_set1_host(ssl_, address.host.c_str());
  }
  SSL_set_connect_state(ssl_);
  return Status::Ok();
}

StatusOr<std::unique_ptr<RemoteStream>> RemoteStream::Open(const RemoteAddress& address,
                                                           const ClientOptions& options,
                                                           Clock::time_point deadline) {
  std::unique_ptr<RemoteStream> stream(new RemoteStream(address.ToString()));
  const std::string& where = stream->where_;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(address.port);
  if (int rc = ::getaddrinfo(address.host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return Unavailable("cannot resolve '" + address.host + "': " + ::gai_strerror(rc));
  }
  std::string failures;
  for (addrinfo* a = found; a != nullptr && !stream->fd_.valid(); a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) continue;
    int rc = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      rc = ::poll(&p, 1, MillisLeft(deadline)) == 1 ? 0 : (errno = ETIMEDOUT, -1);
      int error = 0;
      socklen_t len = sizeof(error);
      if (rc == 0 && ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error) {
        errno = error;
        rc = -1;
      }
    }
    if (rc != 0) {
      failures += std::string(failures.empty() ? "" : "; ") + std::strerror(errno);
      continue;
    }
    const int one = 1;
    ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    stream->fd_ = std::move(fd);
  }
  ::freeaddrinfo(found);
  if (!stream->fd_.valid()) {
    return Unavailable("no jitd daemon answers at tcp://" + where + " (" + failures +
                       "); start one with `jitd serve --listen tcp://ADDR:PORT ...`");
  }
  if (options.insecure_loopback) return stream;
  JITD_RETURN_IF_ERROR(stream->SetUpTls(address, options));
  for (;;) {
    const int rc = SSL_do_handshake(stream->ssl_);
    JITD_RETURN_IF_ERROR(stream->FlushTls(deadline));
    if (rc == 1) break;
    if (SSL_get_error(stream->ssl_, rc) != SSL_ERROR_WANT_READ) {
      Status failed = stream->TlsFailure("TLS handshake with tcp://" + where);
      if (failed.message().find("wrong version number") != std::string::npos) {
        // What OpenSSL says when the answer is not TLS at all.
        return Status(failed.code(), failed.message() +
                                         " (the daemon may be serving plaintext: a daemon run "
                                         "with --insecure-loopback takes insecure_loopback "
                                         "clients, $JITD_INSECURE_LOOPBACK=1)");
      }
      return failed;
    }
    JITD_RETURN_IF_ERROR(stream->FillTls(deadline));
  }
  return stream;
}

// ---- The link ---------------------------------------------------------------

RemoteLink::RemoteLink(std::string address, std::unique_ptr<RemoteStream> stream)
    : address_(std::move(address)), stream_(std::move(stream)) {}

RemoteLink::~RemoteLink() = default;

StatusOr<std::unique_ptr<RemoteLink>> RemoteLink::Connect(const std::string& address,
                                                          const ClientOptions& options) {
  JITD_ASSIGN_OR_RETURN(RemoteAddress parsed, ParseRemoteAddress(address));
  if (options.insecure_loopback && !parsed.loopback()) {
    return InvalidArgument("plaintext (insecure_loopback) is only for loopback addresses, not " +
                           address + "; use TLS");
  }
  const Clock::time_point deadline = Clock::now() + options.connect_timeout;
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<RemoteStream> stream,
                        RemoteStream::Open(parsed, options, deadline));
  std::unique_ptr<RemoteLink> link(new RemoteLink(address, std::move(stream)));
  JITD_RETURN_IF_ERROR(link->Hello(options, deadline));
  return link;
}

namespace {

// Appends a frame header + payload to `out`.
void AppendFrameTo(std::vector<uint8_t>* out, ipc::FrameKind kind,
                   std::span<const uint8_t> payload) {
  (void)ipc::AppendFrame(out, kind, payload);  // payloads here are small
}

struct FrameIn {
  ipc::FrameKind kind = ipc::FrameKind::kError;
  uint32_t length = 0;
};

}  // namespace

Status RemoteLink::Broken(const std::string& what) {
  // "has gone away", as a local client's Client::Gone says: callers (the
  // Python package) reconnect on it.
  broken_ = Unavailable("the jitd daemon at " + address_ + " has gone away for this connection (" +
                        what + "); reconnect");
  return broken_;
}

Status RemoteLink::Hello(const ClientOptions& options, Clock::time_point deadline) {
  std::string token;
  if (!options.token_file.empty()) {
    JITD_ASSIGN_OR_RETURN(token, ReadToken(options.token_file));
  }
  flatbuffers::FlatBufferBuilder fbb(256);
  auto name = fbb.CreateString(options.client_name);
  auto token_offset = token.empty() ? 0 : fbb.CreateString(token);
  fbb.Finish(remote::CreateRemoteHello(fbb, ipc::kRemoteProtocolVersion, name, token_offset,
                                       ClientProcessNumber()),
             remote::HeapRequestIdentifier());  // the file's identifier, "JTR1"
  out_.clear();
  AppendFrameTo(&out_, ipc::FrameKind::kHello, {fbb.GetBufferPointer(), fbb.GetSize()});
  JITD_RETURN_IF_ERROR(stream_->Write(out_, deadline));
  std::array<uint8_t, ipc::kFrameHeaderBytes> header{};
  Status read = stream_->ReadExact(header.data(), header.size(), deadline);
  if (!read.ok()) {
    if (read.code() == StatusCode::kUnavailable && token.empty() && !options.insecure_loopback) {
      return Status(read.code(), read.message() +
                                     " during the hello: if the daemon runs with --token-file, "
                                     "give a token (token_file, $JITD_TOKEN_FILE)");
    }
    if (read.code() == StatusCode::kUnavailable && options.insecure_loopback) {
      // A TLS daemon drops a plaintext hello without a word.
      return Status(read.code(), read.message() +
                                     " during the plaintext hello: if the daemon serves TLS "
                                     "(--tls-cert), connect without insecure_loopback");
    }
    return read;
  }
  JITD_ASSIGN_OR_RETURN(ipc::FrameHeader decoded, ipc::DecodeFrameHeader(header));
  scratch_.resize(decoded.length);
  JITD_RETURN_IF_ERROR(stream_->ReadExact(scratch_.data(), scratch_.size(), deadline));
  if (decoded.kind == ipc::FrameKind::kError) {
    const Status refused = ipc::DecodeErrorPayload(scratch_);
    return Status(refused.code(), "the jitd daemon at " + address_ +
                                      " refused the connection: " + refused.message());
  }
  if (decoded.kind != ipc::FrameKind::kHelloReply) {
    return Unavailable("the peer at " + address_ + " is not a jitd daemon (it answered the hello "
                       "with a " + ipc::FrameKindName(static_cast<uint8_t>(decoded.kind)) +
                       " frame)");
  }
  JITD_ASSIGN_OR_RETURN(const remote::RemoteHelloReply* reply,
                        ipc::VerifyRemoteHelloReply(scratch_));
  session_id_ = reply->session_id();
  heap_bytes_ = reply->heap_bytes();
  if (reply->identity()) identity_ = reply->identity()->str();
  return Status::Ok();
}

bool RemoteLink::FindBufferBlock(uint64_t local, uint64_t length, uint64_t* remote) const {
  auto it = buffer_blocks_.upper_bound(local);
  if (it == buffer_blocks_.begin()) return false;
  --it;
  const uint64_t start = it->first;
  if (local - start > it->second.length || length > it->second.length - (local - start)) {
    return false;
  }
  *remote = it->second.remote + (local - start);
  return true;
}

std::span<uint8_t> RemoteLink::MirrorBytes(uint64_t local, uint64_t length) const {
  StatusOr<std::span<uint8_t>> span = mirror_->HeapBytes(ipc::RingHeapRef{local, length});
  return span.ok() ? *span : std::span<uint8_t>();
}

Status RemoteLink::DrainFreeReplies(Clock::time_point deadline) {
  while (unread_free_replies_ > 0) {
    std::array<uint8_t, ipc::kFrameHeaderBytes> header{};
    JITD_RETURN_IF_ERROR(stream_->ReadExact(header.data(), header.size(), deadline));
    JITD_ASSIGN_OR_RETURN(ipc::FrameHeader decoded, ipc::DecodeFrameHeader(header));
    scratch_.resize(decoded.length);
    JITD_RETURN_IF_ERROR(stream_->ReadExact(scratch_.data(), scratch_.size(), deadline));
    if (decoded.kind == ipc::FrameKind::kError) return ipc::DecodeErrorPayload(scratch_);
    if (decoded.kind != ipc::FrameKind::kHeapReply) {
      return Internal("expected the reply to a heap free, got a " +
                      ipc::FrameKindName(static_cast<uint8_t>(decoded.kind)) + " frame");
    }
    --unread_free_replies_;  // a failed free leaks daemon heap until close; nothing to do
  }
  return Status::Ok();
}

Status RemoteLink::AllocateFresh(std::span<Transfer* const> fresh, Clock::time_point deadline) {
  if (fresh.empty()) return Status::Ok();
  out_.clear();
  const uint64_t first_id = next_heap_id_;
  for (Transfer* t : fresh) {
    flatbuffers::FlatBufferBuilder fbb(64);
    auto op = remote::CreateAllocateRequest(fbb, std::max<uint64_t>(t->length, 1));
    fbb.Finish(remote::CreateHeapRequest(fbb, next_heap_id_++, remote::HeapOp_AllocateRequest,
                                         op.Union()),
               remote::HeapRequestIdentifier());
    AppendFrameTo(&out_, ipc::FrameKind::kHeapRequest, {fbb.GetBufferPointer(), fbb.GetSize()});
  }
  JITD_RETURN_IF_ERROR(stream_->Write(out_, deadline));
  JITD_RETURN_IF_ERROR(DrainFreeReplies(deadline));
  Status first_error;
  for (size_t i = 0; i < fresh.size(); ++i) {
    std::array<uint8_t, ipc::kFrameHeaderBytes> header{};
    JITD_RETURN_IF_ERROR(stream_->ReadExact(header.data(), header.size(), deadline));
    JITD_ASSIGN_OR_RETURN(ipc::FrameHeader decoded, ipc::DecodeFrameHeader(header));
    scratch_.resize(decoded.length);
    JITD_RETURN_IF_ERROR(stream_->ReadExact(scratch_.data(), scratch_.size(), deadline));
    if (decoded.kind == ipc::FrameKind::kError) return ipc::DecodeErrorPayload(scratch_);
    if (decoded.kind != ipc::FrameKind::kHeapReply) return Internal("expected a HEAP_REPLY");
    JITD_ASSIGN_OR_RETURN(const remote::HeapReply* reply, ipc::VerifyHeapReply(scratch_));
    if (reply->id() != first_id + i) return Internal("a HEAP_REPLY out of order");
    if (reply->code() != 0) {
      if (first_error.ok()) {
        first_error = Status(static_cast<StatusCode>(reply->code()),
                             "the jitd daemon at " + address_ + " has no room for " +
                                 std::to_string(fresh[i]->length) +
                                 " bytes in this connection's heap of " +
                                 std::to_string(heap_bytes_) + " bytes (" +
                                 (reply->message() ? reply->message()->str() : "") +
                                 "); jitd serve --segment-bytes raises it");
      }
      fresh[i]->remote = UINT64_MAX;
      continue;
    }
    fresh[i]->remote = reply->offset();
  }
  if (!first_error.ok()) {
    for (Transfer* t : fresh) {
      if (t->remote != UINT64_MAX) pending_frees_.push_back(t->remote);
    }
  }
  return first_error;
}

Status RemoteLink::Call(std::span<const uint8_t> request, std::chrono::milliseconds timeout,
                        std::vector<uint8_t>* reply_bytes) {
  if (!broken_.ok()) return broken_;
  const Clock::time_point deadline = Clock::now() + timeout;
  // A private, aligned copy: the HeapRefs are rewritten in it.
  std::vector<uint8_t> message(request.begin(), request.end());
  JITD_ASSIGN_OR_RETURN(const wire::RequestMessage* parsed, ipc::VerifyRequest(message));

  // What the request reads (ins) and writes (outs), as mirror -> daemon ranges.
  std::vector<Transfer> transfers;
  std::vector<std::pair<const wire::HeapRef*, size_t>> refs;  // to rewrite, transfer index
  std::vector<size_t> ins, outs, fresh_indices;
  // The transfer's index, or SIZE_MAX when there is nothing to move.
  auto add_ref = [&](const wire::HeapRef* ref, bool read_by_daemon) -> size_t {
    if (ref == nullptr) return SIZE_MAX;
    if (ref->length() == 0) {  // no bytes (an empty tensor, no initial data)
      *const_cast<wire::HeapRef*>(ref) = wire::HeapRef(0, 0);
      return SIZE_MAX;
    }
    Transfer t{ref->offset(), 0, ref->length()};
    const size_t index = transfers.size();
    if (!FindBufferBlock(t.local, t.length, &t.remote)) fresh_indices.push_back(index);
    transfers.push_back(t);
    refs.emplace_back(ref, index);
    (read_by_daemon ? ins : outs).push_back(index);
    return index;
  };
  auto add_buffer = [&](uint64_t handle, bool read_by_daemon) {
    auto it = buffer_handles_.find(handle);
    if (it == buffer_handles_.end()) return;  // not ours, or device-resident: nothing to move
    const Block& block = buffer_blocks_.at(it->second);
    (read_by_daemon ? ins : outs).push_back(transfers.size());
    transfers.push_back(Transfer{it->second, block.remote, block.length});
  };
  std::vector<size_t> result_slots;  // Execute.result_data: transfer per result
  switch (parsed->request_type()) {
    case wire::Request_Hello:
    case wire::Request_ReleaseRequest:
    case wire::Request_DestroyBufferRequest:
      break;
    case wire::Request_StatsRequest:
      add_ref(parsed->request_as_StatsRequest()->data(), false);
      break;
    case wire::Request_CompileRequest:
      add_ref(parsed->request_as_CompileRequest()->program(), true);
      break;
    case wire::Request_CreateBufferRequest:
      add_ref(parsed->request_as_CreateBufferRequest()->data(), true);
      break;
    case wire::Request_ExecuteRequest: {
      const wire::ExecuteRequest* execute = parsed->request_as_ExecuteRequest();
      for (uint64_t h : ipc::ReadVector(execute->arguments())) add_buffer(h, true);
      for (uint64_t h : ipc::ReadVector(execute->results())) add_buffer(h, false);
      if (execute->result_data() != nullptr) {
        for (const wire::HeapRef* ref : *execute->result_data()) {
          result_slots.push_back(add_ref(ref, false));
        }
      }
      break;
    }
    case wire::Request_TransferToInfeedRequest:
      add_ref(parsed->request_as_TransferToInfeedRequest()->data(), true);
      break;
    case wire::Request_TransferFromOutfeedRequest:
      add_ref(parsed->request_as_TransferFromOutfeedRequest()->data(), false);
      break;
    case wire::Request_ReadDumpRequest:
      add_ref(parsed->request_as_ReadDumpRequest()->data(), false);
      break;
    case wire::Request_CopyBufferRequest: {
      const wire::CopyBufferRequest* copy = parsed->request_as_CopyBufferRequest();
      add_ref(copy->data(), copy->to_device());
      break;
    }
    default:
      return Unimplemented(std::string("a ") + wire::EnumNameRequest(parsed->request_type()) +
                           " request cannot be sent to a remote daemon yet (" + address_ + ")");
  }

  std::vector<Transfer*> fresh;
  for (size_t i : fresh_indices) fresh.push_back(&transfers[i]);
  if (Status allocated = AllocateFresh(fresh, deadline); !allocated.ok()) {
    if (allocated.code() == StatusCode::kResourceExhausted) return allocated;
    return Broken(allocated.message());
  }
  // The daemon's offsets in place of the mirror's.
  for (const auto& [ref, index] : refs) {
    *const_cast<wire::HeapRef*>(ref) = wire::HeapRef(transfers[index].remote, ref->length());
  }

  // One batch: frees from earlier calls, DATA for what the daemon reads,
  // the REQUEST, reads of what it writes.
  auto write_batch = [&]() -> Status {
    out_.clear();
    for (uint64_t offset : pending_frees_) {
      flatbuffers::FlatBufferBuilder fbb(64);
      auto op = remote::CreateFreeRequest(fbb, offset);
      fbb.Finish(remote::CreateHeapRequest(fbb, next_heap_id_++, remote::HeapOp_FreeRequest,
                                           op.Union()),
                 remote::HeapRequestIdentifier());
      AppendFrameTo(&out_, ipc::FrameKind::kHeapRequest, {fbb.GetBufferPointer(), fbb.GetSize()});
    }
    unread_free_replies_ += pending_frees_.size();
    pending_frees_.clear();
    constexpr size_t kInlineData = 64 << 10;  // smaller chunks are copied into the batch
    for (size_t i : ins) {
      const Transfer& t = transfers[i];
      std::span<uint8_t> bytes = MirrorBytes(t.local, t.length);
      if (bytes.size() != t.length) return Internal("a request names bytes outside the mirror");
      uint64_t offset = t.remote;
      while (!bytes.empty()) {
        const size_t n = std::min<size_t>(bytes.size(), ipc::kMaxDataChunk);
        const auto prefix = ipc::EncodeDataPrefix(offset, static_cast<uint32_t>(n));
        out_.insert(out_.end(), prefix.begin(), prefix.end());
        if (n <= kInlineData) {
          out_.insert(out_.end(), bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
        } else {
          JITD_RETURN_IF_ERROR(stream_->Write(out_, deadline));
          out_.clear();
          JITD_RETURN_IF_ERROR(stream_->Write(bytes.first(n), deadline));
        }
        bytes = bytes.subspan(n);
        offset += n;
      }
    }
    AppendFrameTo(&out_, ipc::FrameKind::kRequest, message);
    for (size_t i : outs) {
      flatbuffers::FlatBufferBuilder fbb(64);
      auto op = remote::CreateReadRequest(fbb, transfers[i].remote, transfers[i].length);
      fbb.Finish(remote::CreateHeapRequest(fbb, next_heap_id_++, remote::HeapOp_ReadRequest,
                                           op.Union()),
                 remote::HeapRequestIdentifier());
      AppendFrameTo(&out_, ipc::FrameKind::kHeapRequest, {fbb.GetBufferPointer(), fbb.GetSize()});
    }
    return stream_->Write(out_, deadline);
  };
  auto fail = [&](const Status& status) -> Status {
    if (status.code() == StatusCode::kDeadlineExceeded) {
      (void)Broken("a call timed out and its reply may still come");
      return status;
    }
    return Broken(status.message());
  };
  if (Status written = write_batch(); !written.ok()) return fail(written);
  if (Status drained = DrainFreeReplies(deadline); !drained.ok()) return fail(drained);

  auto read_frame = [&](FrameIn* frame) -> Status {
    std::array<uint8_t, ipc::kFrameHeaderBytes> header{};
    JITD_RETURN_IF_ERROR(stream_->ReadExact(header.data(), header.size(), deadline));
    JITD_ASSIGN_OR_RETURN(ipc::FrameHeader decoded, ipc::DecodeFrameHeader(header));
    frame->kind = decoded.kind;
    frame->length = decoded.length;
    return Status::Ok();
  };
  // The REPLY.
  FrameIn frame;
  if (Status r = read_frame(&frame); !r.ok()) return fail(r);
  reply_bytes->resize(frame.length);
  if (Status r = stream_->ReadExact(reply_bytes->data(), frame.length, deadline); !r.ok()) {
    return fail(r);
  }
  if (frame.kind == ipc::FrameKind::kError) {
    const Status status = ipc::DecodeErrorPayload(*reply_bytes);
    (void)Broken("it sent an error: " + status.ToString());
    return status;
  }
  if (frame.kind != ipc::FrameKind::kReply) {
    return Broken("expected a REPLY, got a " + ipc::FrameKindName(static_cast<uint8_t>(frame.kind)));
  }
  StatusOr<const wire::ReplyMessage*> reply = ipc::VerifyReply(*reply_bytes);
  if (!reply.ok()) return Broken("malformed reply: " + reply.status().message());
  const bool succeeded = ipc::FromWire((*reply)->status()).ok();

  // The bytes it wrote, into the mirror (dropped when the request failed).
  for (size_t i : outs) {
    const Transfer& t = transfers[i];
    for (;;) {
      if (Status r = read_frame(&frame); !r.ok()) return fail(r);
      if (frame.kind == ipc::FrameKind::kData) {
        std::array<uint8_t, ipc::kDataOffsetBytes> prefix{};
        if (frame.length < prefix.size()) return Broken("a DATA frame without its offset");
        if (Status r = stream_->ReadExact(prefix.data(), prefix.size(), deadline); !r.ok()) {
          return fail(r);
        }
        uint64_t offset = 0;
        std::memcpy(&offset, prefix.data(), sizeof(offset));  // little-endian hosts only
        const uint64_t n = frame.length - prefix.size();
        if (offset < t.remote || offset - t.remote > t.length || n > t.length - (offset - t.remote)) {
          return Broken("the daemon sent DATA outside the range read");
        }
        uint8_t* dst = nullptr;
        if (succeeded) {
          dst = MirrorBytes(t.local + (offset - t.remote), n).data();
        } else {
          scratch_.resize(n);
          dst = scratch_.data();
        }
        if (dst == nullptr && n != 0) return Broken("a result outside the mirror");
        if (Status r = stream_->ReadExact(dst, n, deadline); !r.ok()) return fail(r);
        continue;
      }
      scratch_.resize(frame.length);
      if (Status r = stream_->ReadExact(scratch_.data(), frame.length, deadline); !r.ok()) {
        return fail(r);
      }
      if (frame.kind == ipc::FrameKind::kError) {
        const Status status = ipc::DecodeErrorPayload(scratch_);
        (void)Broken("it sent an error: " + status.ToString());
        return status;
      }
      if (frame.kind != ipc::FrameKind::kHeapReply) return Broken("expected a HEAP_REPLY");
      StatusOr<const remote::HeapReply*> heap = ipc::VerifyHeapReply(scratch_);
      if (!heap.ok()) return Broken(heap.status().message());
      if ((*heap)->code() != 0 && succeeded) {
        return Broken("reading results back failed: " +
                      ((*heap)->message() ? (*heap)->message()->str() : std::string()));
      }
      break;
    }
  }

  // Bookkeeping: buffers born or gone; one-call blocks freed with the next call.
  std::vector<bool> kept(transfers.size(), false);
  if (succeeded) {
    const wire::ReplyMessage* r = *reply;
    if (parsed->request_type() == wire::Request_CreateBufferRequest && !fresh_indices.empty() &&
        r->body_as_CreateBufferReply() != nullptr) {
      const Transfer& t = transfers[fresh_indices[0]];
      buffer_blocks_[t.local] = Block{t.remote, t.length};
      buffer_handles_[r->body_as_CreateBufferReply()->buffer()] = t.local;
      kept[fresh_indices[0]] = true;
    }
    if (!result_slots.empty() && r->body_as_ExecuteReply() != nullptr) {
      const std::vector<uint64_t> handles = ipc::ReadVector(r->body_as_ExecuteReply()->results());
      for (size_t k = 0; k < handles.size() && k < result_slots.size(); ++k) {
        const size_t index = result_slots[k];
        if (index == SIZE_MAX ||
            std::find(fresh_indices.begin(), fresh_indices.end(), index) == fresh_indices.end()) {
          continue;
        }
        const Transfer& t = transfers[index];
        buffer_blocks_[t.local] = Block{t.remote, t.length};
        buffer_handles_[handles[k]] = t.local;
        kept[index] = true;
      }
    }
    if (parsed->request_type() == wire::Request_DestroyBufferRequest) {
      const uint64_t handle = parsed->request_as_DestroyBufferRequest()->buffer();
      if (auto it = buffer_handles_.find(handle); it != buffer_handles_.end()) {
        pending_frees_.push_back(buffer_blocks_.at(it->second).remote);
        buffer_blocks_.erase(it->second);
        buffer_handles_.erase(it);
      }
    }
  }
  for (size_t i : fresh_indices) {
    if (!kept[i]) pending_frees_.push_back(transfers[i].remote);
  }
  return Status::Ok();
}

// ---- Client over a RemoteLink -------------------------------------------------

namespace {
void DefaultFromEnv(std::string* field, const char* name) {
  if (field->empty()) {
    if (const char* value = std::getenv(name); value != nullptr) *field = value;
  }
}
}  // namespace

StatusOr<std::unique_ptr<Client>> Client::ConnectRemote(const std::string& address,
                                                        ClientOptions options) {
  DefaultFromEnv(&options.tls_ca_file, "JITD_TLS_CA");
  DefaultFromEnv(&options.tls_cert_file, "JITD_TLS_CERT");
  DefaultFromEnv(&options.tls_key_file, "JITD_TLS_KEY");
  DefaultFromEnv(&options.token_file, "JITD_TOKEN_FILE");
  if (const char* plain = std::getenv("JITD_INSECURE_LOOPBACK");
      plain != nullptr && std::string_view(plain) == "1") {
    options.insecure_loopback = true;
  }
  JITD_ASSIGN_OR_RETURN(std::unique_ptr<RemoteLink> link, RemoteLink::Connect(address, options));
  // The mirror: a private segment with the daemon heap's room (tiny rings:
  // nothing travels through them).
  ipc::SegmentLayout layout;
  layout.request_ring = {2, 16};
  layout.reply_ring = {2, 16};
  const uint64_t size =
      std::max<uint64_t>(link->heap_bytes(), ipc::Segment::kMinHeapSize) + (64 << 10);
  StatusOr<std::unique_ptr<ipc::Segment>> mirror = ipc::Segment::Create(size, layout);
  if (!mirror.ok()) {
    return Status(mirror.status().code(), "cannot make the local mirror of the remote heap (" +
                                              std::to_string(size) + " bytes): " +
                                              mirror.status().message());
  }
  const uint64_t session_id = link->session_id();
  std::unique_ptr<Client> client(
      new Client(address, std::move(options), UniqueFd(), std::move(*mirror), session_id));
  link->AttachMirror(client->segment_.get());
  client->remote_ = std::move(link);
  JITD_RETURN_IF_ERROR(client->SayHello());
  return client;
}

StatusOr<Client::Reply> Client::CallRemoteLocked(std::span<const uint8_t> request, uint64_t id,
                                                 std::chrono::milliseconds extra_wait) {
  JITD_RETURN_IF_ERROR(remote_->Call(request, options_.timeout + extra_wait, &reply_.bytes));
  StatusOr<const wire::ReplyMessage*> verified = ipc::VerifyReply(reply_.bytes);
  if (!verified.ok()) return Internal("malformed reply: " + verified.status().message());
  if ((*verified)->id() != id && (*verified)->id() != 0) {
    return Internal("a reply for request " + std::to_string((*verified)->id()) + " came for " +
                    std::to_string(id));
  }
  JITD_RETURN_IF_ERROR(ipc::FromWire((*verified)->status()));
  return Reply{*verified};
}

const std::string& Client::remote_identity() const {
  static const std::string kNone;
  return remote_ != nullptr ? remote_->identity() : kNone;
}

}  // namespace jitd::client
