#include "daemon/remote_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <future>
#include <list>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "base/unique_fd.h"
#include "daemon/remote_heap.h"
#include "ipc/protocol.h"
#include "ipc/segment.h"
#include "ipc/stream_frame.h"

namespace jitd::daemon {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

Status CheckRemoteOptions(const RemoteOptions& options) {
  if (options.listen.empty()) return Status::Ok();
  for (const std::string& text : options.listen) {
    JITD_ASSIGN_OR_RETURN(ListenAddress address, ParseListenAddress(text));
    if (options.insecure_loopback && !IsLoopbackHost(address.host)) {
      return InvalidArgument("--insecure-loopback serves plaintext on loopback addresses only; " +
                             address.ToString() +
                             " is not one (give --tls-cert/--tls-key for other addresses)");
    }
  }
  if (options.insecure_loopback) {
    if (!options.tls_cert.empty() || !options.tls_key.empty() || !options.tls_client_ca.empty()) {
      return InvalidArgument(
          "--insecure-loopback (plaintext) and --tls-cert/--tls-key/--tls-client-ca "
          "contradict each other: pick one");
    }
    if (options.token_file.empty()) {
      return Status(StatusCode::kFailedPrecondition,
                    "--listen with --insecure-loopback still needs client authentication: give "
                    "--token-file FILE (plaintext has no client certificates)");
    }
    return Status::Ok();
  }
  if (options.tls_cert.empty() || options.tls_key.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "--listen needs TLS: give --tls-cert FILE and --tls-key FILE (plaintext only "
                  "with --insecure-loopback on a loopback address, for tests)");
  }
  if (options.tls_client_ca.empty() && options.token_file.empty()) {
    return Status(StatusCode::kFailedPrecondition,
                  "--listen refuses to serve unauthenticated clients: give --tls-client-ca FILE "
                  "(client certificates) and/or --token-file FILE (bearer tokens)");
  }
  return Status::Ok();
}

namespace {

std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(e, text, sizeof(text));
    out += (out.empty() ? "" : "; ") + std::string(text);
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

// Printable ASCII only, for identities built from certificates.
std::string Printable(std::string_view text) {
  std::string out;
  for (char c : text) out += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? c : '?';
  return out;
}

}  // namespace

struct RemoteServer::Impl {
  using Strand = asio::strand<asio::io_context::executor_type>;

  Impl(Instance* instance, SessionOptions session, RemoteOptions options,
       RemoteAdmission admission)
      : instance(instance),
        session_options(std::move(session)),
        options(std::move(options)),
        admission(std::move(admission)),
        tls(ssl::context::tls_server) {}

  void Log(int level, const char* format, ...) __attribute__((format(printf, 3, 4))) {
    if (level > options.log_level) return;
    std::va_list args;
    va_start(args, format);
    char line[1024];
    std::vsnprintf(line, sizeof(line), format, args);
    va_end(args);
    std::fprintf(stderr, "jitd: remote: %s\n", line);
  }

  Status SetUpTls() {
    SSL_CTX* ctx = tls.native_handle();
    if (SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) != 1 ||
        SSL_CTX_set_max_proto_version(ctx, TLS1_3_VERSION) != 1) {
      return Internal("cannot restrict TLS to 1.3: " + OpenSslErrors());
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET);
    if (SSL_CTX_use_certificate_chain_file(ctx, options.tls_cert.c_str()) != 1) {
      return InvalidArgument("--tls-cert " + options.tls_cert +
                             ": cannot load a PEM certificate chain: " + OpenSslErrors());
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, options.tls_key.c_str(), SSL_FILETYPE_PEM) != 1) {
      return InvalidArgument("--tls-key " + options.tls_key +
                             ": cannot load a PEM private key: " + OpenSslErrors());
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
      return InvalidArgument("--tls-key " + options.tls_key + " does not match --tls-cert " +
                             options.tls_cert);
    }
    if (!options.tls_client_ca.empty()) {
      if (SSL_CTX_load_verify_locations(ctx, options.tls_client_ca.c_str(), nullptr) != 1) {
        return InvalidArgument("--tls-client-ca " + options.tls_client_ca +
                               ": cannot load PEM CA certificates: " + OpenSslErrors());
      }
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    } else {
      SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    }
    return Status::Ok();
  }

  Status Bind(const ListenAddress& address) {
    boost::system::error_code ec;
    asio::ip::address ip = address.host == "localhost"
                               ? asio::ip::make_address("127.0.0.1", ec)
                               : asio::ip::make_address(address.host, ec);
    if (ec) return InvalidArgument("--listen " + address.ToString() + ": " + ec.message());
    auto acceptor = std::make_unique<tcp::acceptor>(accept_strand);
    tcp::endpoint endpoint(ip, address.port);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status(StatusCode::kUnavailable,
                    "cannot listen on " + address.ToString() + ": " + ec.message());
    }
    ListenAddress bound = address;
    bound.port = acceptor->local_endpoint().port();
    bound_addresses.push_back(bound);
    acceptors.push_back(std::move(acceptor));
    return Status::Ok();
  }

  void Accept(tcp::acceptor* acceptor);
  template <class Stream>
  void Launch(tcp::socket socket, std::string peer, Strand strand);

  // Threads (see remote_server.h): `options.io_threads` run `io` for the
  // server's life; a request runs on the thread that read it. While every
  // running thread is inside a blocking request for `stall`, the monitor
  // starts a spare (at most `max_threads`), which exits after
  // `spare_idle` without work while another thread is free.
  void StartThreads();
  struct Spare;
  void RunSpare(Spare* self);
  void Monitor();
  void StopThreads();
  // Brackets work that may block (a request, a session's set-up). Lock-free
  // on the way of every request: the monitor polls these counters (see
  // Monitor) and is woken only when it sleeps and work begins.
  void BeginBlocking() {
    busy.fetch_add(1);
    if (monitor_asleep.load()) {
      std::lock_guard<std::mutex> lock(threads_mu);
      threads_cv.notify_all();
    }
  }
  void EndBlocking() {
    finished.fetch_add(1);
    busy.fetch_sub(1);
  }

  Instance* instance;
  SessionOptions session_options;
  RemoteOptions options;
  RemoteAdmission admission;
  std::optional<TokenTable> tokens;
  ssl::context tls;
  bool use_tls = true;
  asio::io_context io;
  // The acceptors and `connections` are touched on this strand only.
  Strand accept_strand{asio::make_strand(io)};
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::vector<ListenAddress> bound_addresses;
  bool started = false;
  std::atomic<bool> stopped{false};
  std::atomic<uint64_t> pending_handshakes{0};

  // Every live connection, to close them at Stop (accept_strand only).
  struct ConnectionBase {
    virtual ~ConnectionBase() = default;
    // Closes the connection on its own strand; `done` runs after.
    virtual void CloseThen(std::function<void()> done) = 0;
  };
  std::list<std::weak_ptr<ConnectionBase>> connections;

  std::mutex threads_mu;  // below
  std::condition_variable threads_cv;
  std::vector<std::thread> threads;  // the io_threads, joined at Stop
  // Spares; an exited one is joined by the monitor's next start of one.
  struct Spare {
    std::thread thread;
    bool exited = false;  // under threads_mu
  };
  std::list<Spare> spares;
  std::atomic<int> running{0};       // threads in `io` (changed under threads_mu)
  std::atomic<int> busy{0};          // of them inside blocking work
  std::atomic<uint64_t> finished{0};  // blocking work done, since start
  std::atomic<bool> monitor_asleep{false};
  uint64_t spares_started = 0;
  bool stopping_threads = false;
  std::thread monitor;

  struct Counters {
    std::atomic<uint64_t> connections{0}, sessions_opened{0}, sessions_open{0}, refused{0},
        handshake_timeouts{0}, frame_timeouts{0}, malformed_frames{0}, bytes_in{0},
        bytes_out{0};
  } counters;
};

namespace {

// The lowest layer of either stream type.
tcp::socket& Socket(tcp::socket& s) { return s; }
tcp::socket& Socket(ssl::stream<tcp::socket>& s) { return s.next_layer(); }

}  // namespace

// One remote client: its stream, deadlines, session and heap. All members
// are touched on the IO thread only, except `session` during a Handle on a
// worker (the IO thread then waits: frames are handled one at a time).
template <class Stream>
class RemoteConnection : public RemoteServer::Impl::ConnectionBase,
                         public std::enable_shared_from_this<RemoteConnection<Stream>> {
 public:
  using Impl = RemoteServer::Impl;

  template <class... Args>
  RemoteConnection(Impl* server, std::string peer, Impl::Strand strand, Args&&... args)
      : server_(server),
        stream_(std::forward<Args>(args)...),
        timer_(strand),
        peer_(std::move(peer)),
        fd_(Socket(stream_).native_handle()),
        strand_(strand) {}

  ~RemoteConnection() override {
    if (pending_) --server_->pending_handshakes;
    session_.reset();
    mapping_.reset();
    // Released before the counter drops: sessions_open == 0 means every
    // session is gone and uncounted.
    if (reserved_) server_->admission.release(identity_);
    if (admitted_) {
      server_->counters.sessions_open.fetch_sub(1, std::memory_order_relaxed);
      server_->Log(1, "session %llu closed (%s from %s)", static_cast<unsigned long long>(id_),
                   identity_.c_str(), peer_.c_str());
    }
  }

  void Start() {
    pending_ = true;
    ++server_->pending_handshakes;
    SetDeadline(Clock::now() + server_->options.handshake_timeout);
    WatchDeadline();
    if constexpr (std::is_same_v<Stream, ssl::stream<tcp::socket>>) {
      stream_.async_handshake(
          ssl::stream_base::server,
          [self = this->shared_from_this()](const boost::system::error_code& ec) {
            self->OnTlsHandshake(ec);
          });
    } else {
      ReadHeader();
    }
  }

  // From any thread: a request in progress is cancelled at once (the strand
  // is busy with it), the rest happens on the strand.
  void CloseThen(std::function<void()> done) override {
    if (handling_ && session_) session_->Cancel();
    asio::post(strand_, [self = this->shared_from_this(), done = std::move(done)] {
      self->Close();
      done();
    });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    boost::system::error_code ignored;
    timer_.cancel();
    Socket(stream_).shutdown(tcp::socket::shutdown_both, ignored);
    Socket(stream_).close(ignored);
    if (session_) session_->Cancel();
  }

 private:
  using Self = RemoteConnection<Stream>;
  static constexpr uint32_t kMaxHelloBytes = 16 * 1024;
  static constexpr size_t kQueuedBytes = 256 * 1024;     // most output held back (SendFrame)
  static constexpr uint64_t kCopiedReadBytes = 64 * 1024;  // reads this small are copied

  // The timer is moved only to an earlier time: a later deadline is seen
  // when the timer fires (WatchDeadline re-arms), so a frame costs no
  // timer system call.
  void SetDeadline(Clock::time_point when) {
    deadline_ = when;
    if (when < timer_.expiry()) timer_.expires_at(when);
  }
  void ClearDeadline() { deadline_ = Clock::time_point::max(); }

  // One wait at a time; re-armed until the connection closes.
  void WatchDeadline() {
    timer_.expires_at(deadline_);
    timer_.async_wait([self = this->shared_from_this()](const boost::system::error_code&) {
      if (self->closed_) return;
      if (self->deadline_ <= Clock::now()) {
        if (self->closing_) {
          // The ERROR frame did not go out in time: close anyway.
        } else if (!self->admitted_) {
          self->server_->counters.handshake_timeouts.fetch_add(1, std::memory_order_relaxed);
          self->server_->Log(1, "dropped %s: no hello within %lld ms", self->peer_.c_str(),
                             static_cast<long long>(
                                 self->server_->options.handshake_timeout.count()));
        } else {
          self->server_->counters.frame_timeouts.fetch_add(1, std::memory_order_relaxed);
          self->server_->Log(1, "dropped %s (%s): a frame did not complete within %lld ms",
                             self->peer_.c_str(), self->identity_.c_str(),
                             static_cast<long long>(
                                 self->server_->options.frame_timeout.count()));
        }
        self->Close();
        return;
      }
      self->WatchDeadline();
    });
  }

  void OnTlsHandshake(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) {
      server_->counters.refused.fetch_add(1, std::memory_order_relaxed);
      server_->Log(1, "TLS handshake with %s failed: %s", peer_.c_str(), ec.message().c_str());
      Close();
      return;
    }
    if constexpr (std::is_same_v<Stream, ssl::stream<tcp::socket>>) {
      if (!server_->options.tls_client_ca.empty()) {
        X509* cert = SSL_get1_peer_certificate(stream_.native_handle());
        CertificateIdentity id = IdentityOf(cert);
        X509_free(cert);
        cert_cn_ = Printable(id.common_name);
        cert_sha256_ = id.sha256;
      }
    }
    ReadHeader();
  }

  void ReadHeader() {
    if (closed_) return;
    if (admitted_) ClearDeadline();  // idle between frames is allowed
    asio::async_read(stream_, asio::buffer(header_),
                     [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                       size_t) { self->OnHeader(ec); });
  }

  void OnHeader(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) {
      if (ec != asio::error::eof && ec != asio::error::operation_aborted &&
          ec != asio::error::connection_reset) {
        server_->Log(2, "%s: read failed: %s", peer_.c_str(), ec.message().c_str());
      }
      Close();
      return;
    }
    server_->counters.bytes_in.fetch_add(ipc::kFrameHeaderBytes, std::memory_order_relaxed);
    StatusOr<ipc::FrameHeader> header = ipc::DecodeFrameHeader(header_);
    if (!header.ok()) return Malformed(header.status());
    kind_ = header->kind;
    length_ = header->length;
    if (admitted_) SetDeadline(Clock::now() + server_->options.frame_timeout);
    if (kind_ == ipc::FrameKind::kData && admitted_) {
      if (length_ < ipc::kDataOffsetBytes) {
        return Malformed(InvalidArgument("DATA frame of " + std::to_string(length_) +
                                         " bytes lacks its 8-byte heap offset"));
      }
      asio::async_read(stream_, asio::buffer(data_offset_),
                       [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                         size_t) { self->OnDataOffset(ec); });
      return;
    }
    if (!admitted_ && kind_ != ipc::FrameKind::kHello) {
      return Malformed(InvalidArgument("the first frame must be HELLO, not " +
                                       ipc::FrameKindName(static_cast<uint8_t>(kind_))));
    }
    // Before authentication a connection may make the daemon hold little.
    if (!admitted_ && length_ > kMaxHelloBytes) {
      return Malformed(InvalidArgument("HELLO frame of " + std::to_string(length_) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(kMaxHelloBytes)));
    }
    payload_.resize(length_);
    asio::async_read(stream_, asio::buffer(payload_),
                     [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                       size_t) { self->OnPayload(ec); });
  }

  // A DATA frame: the bytes go straight from the socket into the heap.
  void OnDataOffset(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) return Close();
    uint64_t offset = 0;
    for (int i = 7; i >= 0; --i) offset = (offset << 8) | data_offset_[i];
    const uint64_t length = length_ - ipc::kDataOffsetBytes;
    if (Status in = heap_->CheckRange(offset, length); !in.ok()) {
      return Malformed(Status(in.code(), "DATA frame: " + in.message()));
    }
    StatusOr<std::span<uint8_t>> bytes = mapping_->HeapBytes({offset, length});
    if (!bytes.ok()) return Malformed(bytes.status());
    asio::async_read(stream_, asio::buffer(bytes->data(), bytes->size()),
                     [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                       size_t n) {
                       if (self->closed_) return;
                       if (ec) return self->Close();
                       self->server_->counters.bytes_in.fetch_add(n + ipc::kDataOffsetBytes,
                                                                  std::memory_order_relaxed);
                       self->ReadHeader();
                     });
  }

  void OnPayload(const boost::system::error_code& ec) {
    if (closed_) return;
    if (ec) return Close();
    server_->counters.bytes_in.fetch_add(payload_.size(), std::memory_order_relaxed);
    // The frame is in; handling it (an execute, a compile) has no deadline
    // here: the session's own limits bound it.
    if (admitted_) ClearDeadline();
    switch (kind_) {
      case ipc::FrameKind::kHello:
        if (admitted_) return Malformed(InvalidArgument("a second HELLO frame"));
        return OnHello();
      case ipc::FrameKind::kRequest:
        return OnRequest();
      case ipc::FrameKind::kHeapRequest:
        return OnHeapRequest();
      default:
        return Malformed(InvalidArgument("frame kind " +
                                         ipc::FrameKindName(static_cast<uint8_t>(kind_)) +
                                         " is sent by the daemon, not to it"));
    }
  }

  void OnHello() {
    StatusOr<const remote::RemoteHello*> hello = ipc::VerifyRemoteHello(payload_);
    if (!hello.ok()) return Malformed(hello.status());
    const uint32_t version = (*hello)->protocol_version();
    if (version == 0) {
      return Refuse(InvalidArgument("HELLO: protocol_version 0 is not a version"));
    }
    client_process_ = (*hello)->client_process();
    client_name_ = (*hello)->client_name() ? Printable((*hello)->client_name()->string_view())
                                           : std::string();
    if (client_name_.size() > 128) client_name_.resize(128);
    // Who is it? A token when the daemon has a token file (required then),
    // else the verified client certificate.
    if (server_->tokens) {
      const flatbuffers::String* token = (*hello)->token();
      if (token == nullptr || token->size() == 0) {
        return Refuse(Status(StatusCode::kPermissionDenied,
                             "this jitd daemon requires a bearer token in the hello (its "
                             "--token-file); the client sent none"));
      }
      std::optional<std::string> name = server_->tokens->Match(token->string_view());
      if (!name) {
        return Refuse(Status(StatusCode::kPermissionDenied,
                             "the bearer token is not one this jitd daemon accepts"));
      }
      identity_ = "token:" + *name;
    } else {
      if (cert_cn_.empty()) {
        return Refuse(Status(StatusCode::kPermissionDenied,
                             "the client certificate has no subject common name (CN), which "
                             "jitd uses as the client's identity"));
      }
      identity_ = "cert:" + cert_cn_;
    }
    if (Status room = server_->admission.reserve(identity_); !room.ok()) return Refuse(room);
    reserved_ = true;
    id_ = server_->admission.next_session_id();
    // Creating the session maps a segment: blocking work, on this thread.
    server_->BeginBlocking();
    StatusOr<std::unique_ptr<Session>> session =
        Session::Create(server_->instance, id_, server_->session_options);
    StatusOr<std::unique_ptr<ipc::Segment>> mapping = Status::Ok();
    if (session.ok()) {
      (*session)->SetPeer(/*pid=*/-1, RemoteUid(identity_));
      (*session)->SetRemotePeer(identity_, peer_);
      (*session)->SetRemoteProcess(client_process_);
      // The bridge's own view of the segment, for the heap's bytes.
      mapping = ipc::Segment::Attach(UniqueFd(::dup((*session)->segment_fd())));
    }
    server_->EndBlocking();
    if (closed_) return;
    if (!session.ok()) return Refuse(session.status());
    if (!mapping.ok()) return Refuse(mapping.status());
    session_ = std::move(session).value();
    mapping_ = std::move(mapping).value();
    heap_.emplace(mapping_->heap_size());
    Admitted();
  }

  void Admitted() {
    admitted_ = true;
    pending_ = false;
    --server_->pending_handshakes;
    ClearDeadline();
    server_->counters.sessions_opened.fetch_add(1, std::memory_order_relaxed);
    server_->counters.sessions_open.fetch_add(1, std::memory_order_relaxed);
    if (!cert_sha256_.empty()) {
      server_->Log(1, "session %llu opened for %s from %s (client certificate CN=%s sha256=%s)",
                   static_cast<unsigned long long>(id_), identity_.c_str(), peer_.c_str(),
                   cert_cn_.c_str(), cert_sha256_.c_str());
    } else {
      server_->Log(1, "session %llu opened for %s from %s", static_cast<unsigned long long>(id_),
                   identity_.c_str(), peer_.c_str());
    }
    flatbuffers::FlatBufferBuilder fbb(256);
    auto identity = fbb.CreateString(identity_);
    auto reply = remote::CreateRemoteHelloReply(
        fbb, ipc::kRemoteProtocolVersion, id_, heap_->size(), identity, ipc::kMaxFramePayload,
        ipc::kMaxDataChunk, ipc::kProtocolVersion);
    fbb.Finish(reply, remote::HeapRequestIdentifier());
    SendFrame(ipc::FrameKind::kHelloReply, {fbb.GetBufferPointer(), fbb.GetSize()});
  }

  void OnRequest() {
    // Session::Handle verifies (ipc::VerifyRequest) and answers every
    // message, well-formed or not, with one ReplyMessage. It runs here, on
    // the thread that read the frame (no hand-off: a tiny execute costs one
    // wake-up each way); the monitor adds a thread when it blocks long.
    handling_.store(true);
    StartHangupWatch();
    server_->BeginBlocking();
    std::vector<uint8_t> reply = session_->Handle(payload_);
    server_->EndBlocking();
    handling_.store(false);
    if (closed_) return;
    SendFrame(ipc::FrameKind::kReply, reply);
  }

  // While a request runs (an execute waiting on a feed, a long compile), a
  // client that goes away cancels it at once, as local clients' hang-ups do
  // (dispatcher.h): the socket turning readable with nothing to read (a
  // peek finds EOF) or an error cancels the session's request and closes
  // the connection. Readable with bytes (a pipelined frame) ends the watch:
  // the frame is read after the reply. The connection's strand is busy
  // with the request meanwhile, so the watch runs off it, on a descriptor
  // of its own (a dup of the socket's): one wait at a time (`watching_`),
  // re-armed by its own handler, touching only atomics, that descriptor
  // and Session::Cancel (any thread). Close's shutdown ends a pending wait.
  void StartHangupWatch() {
    if (!watching_.exchange(true)) WaitForHangup();
  }

  void WaitForHangup() {
    if (!hangup_) {
      const int fd = ::dup(fd_);
      if (fd < 0) {
        watching_ = false;
        return;  // no watch: a hang-up is then seen after the request
      }
      hangup_.emplace(server_->io, fd);
    }
    hangup_->async_wait(asio::posix::descriptor_base::wait_read,
                        [self = this->shared_from_this()](const boost::system::error_code& ec) {
                          self->OnHangupWait(ec);
                        });
  }

  void OnHangupWait(const boost::system::error_code& ec) {
    if (ec == asio::error::operation_aborted) {
      watching_ = false;
      return;
    }
    if (closed_ || !handling_) return EndHangupWatch();
    uint8_t byte = 0;
    const ssize_t n = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || ec) {
      return CancelForHangup();
    }
    if (n < 0) return WaitForHangup();  // a spurious wake-up: still watching
    // Bytes wait behind the request (the client's batch: reads of the
    // results after the REQUEST), so a hang-up would not make the socket
    // newly readable: look for the peer's FIN (POLLRDHUP) every 20 ms.
    pollfd p{fd_, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      return CancelForHangup();
    }
    if (!hangup_timer_) hangup_timer_.emplace(server_->io);
    hangup_timer_->expires_after(std::chrono::milliseconds(20));
    hangup_timer_->async_wait([self = this->shared_from_this()](const boost::system::error_code& e) {
      self->OnHangupWait(e);
    });
  }

  void CancelForHangup() {
    server_->Log(1, "%s (%s) went away during a request: cancelling it", peer_.c_str(),
                 identity_.c_str());
    if (session_) session_->Cancel();
    watching_ = false;
    asio::post(strand_, [self = this->shared_from_this()] { self->Close(); });
  }

  // No request in progress: the watch ends, unless a request began
  // meanwhile (its StartHangupWatch found `watching_` still set).
  void EndHangupWatch() {
    watching_ = false;
    if (!closed_ && handling_ && !watching_.exchange(true)) WaitForHangup();
  }

  void OnHeapRequest() {
    StatusOr<const remote::HeapRequest*> verified = ipc::VerifyHeapRequest(payload_);
    if (!verified.ok()) return Malformed(verified.status());
    const remote::HeapRequest* request = *verified;
    const uint64_t id = request->id();
    // A union type with no table (the Verifier lets a union value be absent).
    if (request->op() == nullptr) {
      return Malformed(InvalidArgument("HEAP_REQUEST " + std::to_string(id) +
                                       " names no operation"));
    }
    switch (request->op_type()) {
      case remote::HeapOp_AllocateRequest: {
        const uint64_t bytes = request->op_as_AllocateRequest()->bytes();
        StatusOr<uint64_t> offset = heap_->Allocate(bytes);
        if (!offset.ok()) return SendHeapReply(id, offset.status(), 0, 0);
        const uint64_t rounded =
            (std::max<uint64_t>(bytes, 1) + RemoteHeap::kAlignment - 1) / RemoteHeap::kAlignment *
            RemoteHeap::kAlignment;
        return SendHeapReply(id, Status::Ok(), *offset, rounded);
      }
      case remote::HeapOp_FreeRequest:
        return SendHeapReply(id, heap_->Free(request->op_as_FreeRequest()->offset()), 0, 0);
      case remote::HeapOp_ReadRequest: {
        const uint64_t offset = request->op_as_ReadRequest()->offset();
        const uint64_t length = request->op_as_ReadRequest()->length();
        if (Status in = heap_->CheckRange(offset, length); !in.ok()) {
          return SendHeapReply(id, in, 0, 0);
        }
        read_id_ = id;
        read_offset_ = offset;
        read_end_ = offset + length;
        read_length_ = length;
        return SendReadChunk();
      }
      default:
        return Malformed(InvalidArgument("HEAP_REQUEST " + std::to_string(id) +
                                         " names no operation"));
    }
  }

  // Sends the read range, a DATA frame at a time, then the HEAP_REPLY. A
  // small range is copied into the queued output (it leaves with the
  // REPLY before it, in one write); a large one streams straight from the
  // heap, after what is queued.
  void SendReadChunk() {
    if (closed_) return;
    if (read_offset_ == read_end_) {
      return SendHeapReply(read_id_, Status::Ok(), read_end_ - read_length_, read_length_);
    }
    const uint64_t n = std::min<uint64_t>(read_end_ - read_offset_, ipc::kMaxDataChunk);
    StatusOr<std::span<uint8_t>> bytes = mapping_->HeapBytes({read_offset_, n});
    if (!bytes.ok()) return Malformed(bytes.status());
    data_prefix_ = ipc::EncodeDataPrefix(read_offset_, static_cast<uint32_t>(n));
    read_offset_ += n;
    if (read_length_ <= kCopiedReadBytes) {
      queued_.insert(queued_.end(), data_prefix_.begin(), data_prefix_.end());
      queued_.insert(queued_.end(), bytes->begin(), bytes->end());
      return SendReadChunk();
    }
    if (!queued_.empty()) {
      read_offset_ -= n;  // sent on the next turn, after the queue
      return Flush([this] { SendReadChunk(); });
    }
    std::array<asio::const_buffer, 2> buffers{asio::buffer(data_prefix_),
                                              asio::buffer(bytes->data(), bytes->size())};
    asio::async_write(stream_, buffers,
                      [self = this->shared_from_this()](const boost::system::error_code& ec,
                                                        size_t written) {
                        if (self->closed_) return;
                        if (ec) return self->Close();
                        self->server_->counters.bytes_out.fetch_add(written,
                                                                    std::memory_order_relaxed);
                        self->SendReadChunk();
                      });
  }

  void SendHeapReply(uint64_t id, const Status& status, uint64_t offset, uint64_t length) {
    flatbuffers::FlatBufferBuilder fbb(128);
    flatbuffers::Offset<flatbuffers::String> message;
    if (!status.ok()) message = fbb.CreateString(status.message());
    auto reply = remote::CreateHeapReply(fbb, id, static_cast<int32_t>(ipc::ToWire(status.code())),
                                         message, offset, length);
    fbb.Finish(reply, remote::HeapRequestIdentifier());
    SendFrame(ipc::FrameKind::kHeapReply, {fbb.GetBufferPointer(), fbb.GetSize()});
  }

  // Queues one frame, then reads the next frame when the client has already
  // sent more (a batch: DATA, REQUEST, reads of the results), else writes
  // what is queued first. So a batch's answers leave in one write (one TLS
  // record, one wake-up of the client) instead of one per frame. At most
  // kQueuedBytes wait: a client that sends without reading cannot make the
  // daemon hold more.
  void SendFrame(ipc::FrameKind kind, std::span<const uint8_t> payload) {
    (void)ipc::AppendFrame(&queued_, kind, payload);  // payloads here are within the limit
    if (queued_.size() < kQueuedBytes && InputWaiting()) return ReadHeader();
    Flush([this] { ReadHeader(); });
  }

  // Whether bytes of the client's next frame are already here (decrypted,
  // inside TLS, or in the socket): a hint, a miss only costs a write.
  bool InputWaiting() {
    boost::system::error_code ec;
    if (Socket(stream_).available(ec) > 0 && !ec) return true;
    if constexpr (std::is_same_v<Stream, ssl::stream<tcp::socket>>) {
      SSL* ssl = stream_.native_handle();
      return SSL_pending(ssl) > 0 || BIO_ctrl_pending(SSL_get_rbio(ssl)) > 0;
    }
    return false;
  }

  // Writes what is queued, then runs `next` (on this strand, with the
  // connection alive).
  void Flush(std::function<void()> next) {
    out_.swap(queued_);
    queued_.clear();
    asio::async_write(stream_, asio::buffer(out_),
                      [self = this->shared_from_this(), next = std::move(next)](
                          const boost::system::error_code& ec, size_t written) {
                        if (self->closed_) return;
                        if (ec) return self->Close();
                        self->server_->counters.bytes_out.fetch_add(written,
                                                                    std::memory_order_relaxed);
                        next();
                      });
  }

  // A refusal before admission: the ERROR frame, then close.
  void Refuse(const Status& status) {
    server_->counters.refused.fetch_add(1, std::memory_order_relaxed);
    server_->Log(1, "refused %s%s%s: %s", peer_.c_str(), identity_.empty() ? "" : " as ",
                 identity_.c_str(), status.ToString().c_str());
    SendErrorAndClose(status);
  }

  void Malformed(const Status& status) {
    server_->counters.malformed_frames.fetch_add(1, std::memory_order_relaxed);
    server_->Log(1, "closing %s%s%s: %s", peer_.c_str(), identity_.empty() ? "" : " (",
                 identity_.empty() ? "" : (identity_ + ")").c_str(), status.ToString().c_str());
    SendErrorAndClose(status);
  }

  // Best effort, after what is queued: the write gets at most a second,
  // then the connection closes.
  void SendErrorAndClose(const Status& status) {
    closing_ = true;
    (void)ipc::AppendFrame(&queued_, ipc::FrameKind::kError, ipc::EncodeErrorPayload(status));
    out_.swap(queued_);
    queued_.clear();
    SetDeadline(Clock::now() + std::chrono::seconds(1));
    asio::async_write(stream_, asio::buffer(out_),
                      [self = this->shared_from_this()](const boost::system::error_code&,
                                                        size_t) { self->Close(); });
  }

  Impl* const server_;
  Stream stream_;
  asio::steady_timer timer_;
  Clock::time_point deadline_ = Clock::time_point::max();
  const std::string peer_;
  const int fd_;  // the socket's descriptor (read by the hang-up watch)
  const Impl::Strand strand_;  // the socket's and timer's executor: every handler but the hang-up watch
  std::atomic<bool> closed_{false};
  bool closing_ = false;                // an ERROR frame is on its way out
  std::atomic<bool> handling_{false};  // a REQUEST is in Session::Handle
  std::atomic<bool> watching_{false};  // a hang-up wait is pending (see StartHangupWatch)
  // The hang-up watch's descriptor: touched only by the one pending wait's
  // chain (and destroyed with the connection).
  std::optional<asio::posix::stream_descriptor> hangup_;
  std::optional<asio::steady_timer> hangup_timer_;  // the same chain's re-checks
  bool pending_ = false;   // counted in pending_handshakes
  bool admitted_ = false;  // HELLO_REPLY sent
  bool reserved_ = false;  // counted against the session limits
  std::string identity_, client_name_, cert_cn_, cert_sha256_;
  uint64_t client_process_ = 0;  // RemoteHello.client_process
  uint64_t id_ = 0;
  std::unique_ptr<Session> session_;
  std::unique_ptr<ipc::Segment> mapping_;
  std::optional<RemoteHeap> heap_;

  std::array<uint8_t, ipc::kFrameHeaderBytes> header_{};
  ipc::FrameKind kind_ = ipc::FrameKind::kError;
  uint32_t length_ = 0;
  std::array<uint8_t, ipc::kDataOffsetBytes> data_offset_{};
  std::vector<uint8_t> payload_;  // the frame being handled (8-byte aligned storage)
  std::vector<uint8_t> queued_;   // frames waiting for the next write (SendFrame)
  std::vector<uint8_t> out_;      // the frames being written
  std::array<uint8_t, ipc::kFrameHeaderBytes + ipc::kDataOffsetBytes> data_prefix_{};
  uint64_t read_id_ = 0, read_offset_ = 0, read_end_ = 0, read_length_ = 0;
};

void RemoteServer::Impl::Accept(tcp::acceptor* acceptor) {
  // Each connection's socket runs its handlers on a strand of its own.
  Strand strand = asio::make_strand(io);
  acceptor->async_accept(strand, [this, acceptor, strand](const boost::system::error_code& ec,
                                                          tcp::socket socket) {
    if (stopped) return;
    if (ec) {
      if (ec != asio::error::operation_aborted) {
        Log(0, "accept failed: %s", ec.message().c_str());
        Accept(acceptor);
      }
      return;
    }
    counters.connections.fetch_add(1, std::memory_order_relaxed);
    boost::system::error_code ignored;
    std::string peer = "?";
    tcp::endpoint remote = socket.remote_endpoint(ignored);
    if (!ignored) {
      peer = remote.address().is_v6() ? "[" + remote.address().to_string() + "]"
                                       : remote.address().to_string();
      peer += ":" + std::to_string(remote.port());
    }
    if (options.max_pending_handshakes != 0 && pending_handshakes >= options.max_pending_handshakes) {
      counters.refused.fetch_add(1, std::memory_order_relaxed);
      Log(1, "refused %s: %llu connections are already in their handshake", peer.c_str(),
          static_cast<unsigned long long>(pending_handshakes));
      socket.close(ignored);
    } else {
      socket.set_option(tcp::no_delay(true), ignored);
      if (use_tls) {
        Launch<ssl::stream<tcp::socket>>(std::move(socket), std::move(peer), strand);
      } else {
        Launch<tcp::socket>(std::move(socket), std::move(peer), strand);
      }
    }
    Accept(acceptor);
  });
}

template <class Stream>
void RemoteServer::Impl::Launch(tcp::socket socket, std::string peer, Strand strand) {
  std::shared_ptr<RemoteConnection<Stream>> connection;
  if constexpr (std::is_same_v<Stream, ssl::stream<tcp::socket>>) {
    connection = std::make_shared<RemoteConnection<Stream>>(this, std::move(peer), strand,
                                                            std::move(socket), tls);
  } else {
    connection = std::make_shared<RemoteConnection<Stream>>(this, std::move(peer), strand,
                                                            std::move(socket));
  }
  // Forget connections that are gone, then remember this one.
  connections.remove_if([](const std::weak_ptr<ConnectionBase>& c) { return c.expired(); });
  connections.push_back(connection);
  asio::dispatch(strand, [connection] { connection->Start(); });
}

void RemoteServer::Impl::StartThreads() {
  std::lock_guard<std::mutex> lock(threads_mu);
  for (int i = 0; i < std::max(1, options.io_threads); ++i) {
    running.fetch_add(1);
    threads.emplace_back([this] {
      auto guard = asio::make_work_guard(io);
      io.run();
      std::lock_guard<std::mutex> lock(threads_mu);
      running.fetch_sub(1);
    });
  }
  monitor = std::thread([this] { Monitor(); });
}

// While any thread is inside blocking work the monitor looks every
// `stall`: when every thread is inside it and none finished any since the
// last look, it starts a spare. With nothing blocking it sleeps until
// BeginBlocking wakes it.
void RemoteServer::Impl::Monitor() {
  std::unique_lock<std::mutex> lock(threads_mu);
  bool logged_cap = false;
  while (!stopping_threads) {
    if (busy.load() == 0) {
      monitor_asleep.store(true);
      threads_cv.wait(lock, [this] { return stopping_threads || busy.load() > 0; });
      monitor_asleep.store(false);
      continue;
    }
    const uint64_t seen = finished.load();
    if (threads_cv.wait_for(lock, options.stall, [this] { return stopping_threads; })) break;
    if (busy.load() < running.load() || finished.load() != seen) {
      logged_cap = false;
      continue;
    }
    const int cap = options.max_threads > 0 ? options.max_threads : std::max(1, options.io_threads);
    if (running.load() >= cap) {
      // At the cap: new frames wait for a thread (logged once per stall).
      if (!logged_cap) Log(1, "all %d remote threads are inside requests; new frames wait", cap);
      logged_cap = true;
      continue;
    }
    running.fetch_add(1);
    ++spares_started;
    for (auto it = spares.begin(); it != spares.end();) {
      if (!it->exited) {
        ++it;
        continue;
      }
      it->thread.join();  // it has returned, or is about to
      it = spares.erase(it);
    }
    Spare& spare = spares.emplace_back();
    spare.thread = std::thread([this, &spare] { RunSpare(&spare); });
  }
}

void RemoteServer::Impl::RunSpare(Spare* self) {
  for (;;) {
    const size_t handled = io.run_one_for(options.spare_idle);
    std::lock_guard<std::mutex> lock(threads_mu);
    if (stopping_threads || io.stopped() ||
        (handled == 0 && running.load() - busy.load() > 1)) {
      running.fetch_sub(1);
      self->exited = true;
      return;
    }
  }
}

void RemoteServer::Impl::StopThreads() {
  {
    std::lock_guard<std::mutex> lock(threads_mu);
    stopping_threads = true;
    threads_cv.notify_all();
  }
  if (monitor.joinable()) monitor.join();
  io.stop();
  // The monitor is gone: `threads` no longer grows.
  for (std::thread& t : threads) {
    if (t.joinable()) t.join();
  }
  threads.clear();
  for (Spare& spare : spares) spare.thread.join();
  spares.clear();
}

RemoteServer::RemoteServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RemoteServer::~RemoteServer() { Stop(); }

StatusOr<std::unique_ptr<RemoteServer>> RemoteServer::Create(Instance* instance,
                                                             const SessionOptions& session,
                                                             const RemoteOptions& options,
                                                             RemoteAdmission admission) {
  JITD_RETURN_IF_ERROR(CheckRemoteOptions(options));
  if (options.listen.empty()) return InvalidArgument("RemoteServer without --listen addresses");
  if (!admission.reserve || !admission.release || !admission.next_session_id) {
    return InvalidArgument("RemoteServer: admission callbacks missing");
  }
  auto impl = std::make_unique<Impl>(instance, session, options, std::move(admission));
  if (!options.token_file.empty()) {
    JITD_ASSIGN_OR_RETURN(TokenTable tokens, TokenTable::Load(options.token_file));
    impl->tokens.emplace(std::move(tokens));
  }
  impl->use_tls = !options.insecure_loopback;
  if (impl->use_tls) JITD_RETURN_IF_ERROR(impl->SetUpTls());
  for (const std::string& text : options.listen) {
    JITD_ASSIGN_OR_RETURN(ListenAddress address, ParseListenAddress(text));
    JITD_RETURN_IF_ERROR(impl->Bind(address));
  }
  return std::unique_ptr<RemoteServer>(new RemoteServer(std::move(impl)));
}

std::vector<ListenAddress> RemoteServer::addresses() const { return impl_->bound_addresses; }

void RemoteServer::Start() {
  Impl& impl = *impl_;
  if (impl.started || impl.stopped) return;
  impl.started = true;
  for (auto& acceptor : impl.acceptors) impl.Accept(acceptor.get());
  for (const ListenAddress& address : impl.bound_addresses) {
    impl.Log(1, "serving remote clients on %s (%s)", address.ToString().c_str(),
             impl.use_tls ? (impl.options.tls_client_ca.empty()
                                 ? "TLS 1.3, bearer tokens"
                                 : (impl.tokens ? "TLS 1.3, client certificates and tokens"
                                                : "TLS 1.3, client certificates"))
                          : "PLAINTEXT on loopback, bearer tokens");
  }
  impl.StartThreads();
}

void RemoteServer::Stop() {
  Impl& impl = *impl_;
  if (impl.stopped) return;
  if (!impl.started) {
    impl.stopped = true;
    return;
  }
  // Stop accepting, close every connection (which cancels its request in
  // progress) and wait until each has closed on its strand.
  struct Pending {
    std::mutex mu;
    std::condition_variable cv;
    uint64_t count = 1;  // the accept strand's own turn
  };
  auto pending = std::make_shared<Pending>();
  auto one_done = [pending] {
    std::lock_guard<std::mutex> lock(pending->mu);
    if (--pending->count == 0) pending->cv.notify_all();
  };
  asio::post(impl.accept_strand, [&impl, pending, one_done] {
    impl.stopped = true;
    boost::system::error_code ignored;
    for (auto& acceptor : impl.acceptors) acceptor->close(ignored);
    for (auto& weak : impl.connections) {
      if (auto connection = weak.lock()) {
        {
          std::lock_guard<std::mutex> lock(pending->mu);
          ++pending->count;
        }
        connection->CloseThen(one_done);
      }
    }
    one_done();
  });
  {
    std::unique_lock<std::mutex> lock(pending->mu);
    pending->cv.wait(lock, [&pending] { return pending->count == 0; });
  }
  impl.StopThreads();
  // Handlers still queued hold connections; destroying them here (not in
  // the io_context's destructor, after other members went) frees sessions
  // while the Instance and the admission callbacks are alive.
  impl.io.restart();
  impl.io.poll();
  impl.connections.clear();
}

RemoteStats RemoteServer::stats() const {
  const auto& c = impl_->counters;
  RemoteStats s;
  s.connections = c.connections.load(std::memory_order_relaxed);
  s.sessions_opened = c.sessions_opened.load(std::memory_order_relaxed);
  s.sessions_open = c.sessions_open.load(std::memory_order_relaxed);
  s.refused = c.refused.load(std::memory_order_relaxed);
  s.handshake_timeouts = c.handshake_timeouts.load(std::memory_order_relaxed);
  s.frame_timeouts = c.frame_timeouts.load(std::memory_order_relaxed);
  s.malformed_frames = c.malformed_frames.load(std::memory_order_relaxed);
  s.bytes_in = c.bytes_in.load(std::memory_order_relaxed);
  s.bytes_out = c.bytes_out.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(impl_->threads_mu);
  s.threads = static_cast<uint64_t>(impl_->running.load());
  s.spares_started = impl_->spares_started;
  return s;
}

std::string RemoteServer::StatsJson() const {
  const RemoteStats s = stats();
  std::ostringstream out;
  out << "{\"listen\":[";
  bool first = true;
  for (const ListenAddress& a : impl_->bound_addresses) {
    out << (first ? "" : ",") << "\"" << a.ToString() << "\"";
    first = false;
  }
  out << "],\"tls\":" << (impl_->use_tls ? "true" : "false")
      << ",\"connections\":" << s.connections << ",\"sessions_opened\":" << s.sessions_opened
      << ",\"sessions_open\":" << s.sessions_open << ",\"refused\":" << s.refused
      << ",\"handshake_timeouts\":" << s.handshake_timeouts
      << ",\"frame_timeouts\":" << s.frame_timeouts
      << ",\"malformed_frames\":" << s.malformed_frames << ",\"bytes_in\":" << s.bytes_in
      << ",\"bytes_out\":" << s.bytes_out << ",\"threads\":" << s.threads
      << ",\"spares_started\":" << s.spares_started << "}";
  return out.str();
}

}  // namespace jitd::daemon
