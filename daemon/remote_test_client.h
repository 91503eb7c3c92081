// A minimal blocking client of the remote wire (docs/REMOTE.md), for the
// daemon's tests only: it speaks frames over plain TCP or TLS so the tests
// can drive a RemoteServer (or a `jitd serve --listen` process) frame by
// frame, including frames no real client would send. Not a client library
// (libclient has the real one).
#ifndef JITD_DAEMON_REMOTE_TEST_CLIENT_H_
#define JITD_DAEMON_REMOTE_TEST_CLIENT_H_

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "base/status.h"
#include "ipc/protocol.h"
#include "ipc/stream_frame.h"

namespace jitd::daemon::testing {

inline constexpr char kAliceToken[] = "alice-0123456789abcdef0123456789";
inline constexpr char kBobToken[] = "bob-fedcba9876543210fedcba987654";

// A scratch directory with a token file (mode 600) and, when the openssl
// command exists, a throwaway CA, server and client certificates.
class Scratch {
 public:
  Scratch() {
    char pattern[] = "/tmp/jitd-remote-test-XXXXXX";
    dir_ = ::mkdtemp(pattern);
    std::ofstream(dir_ / "tokens") << "# test tokens\nalice " << kAliceToken << "\n\nbob "
                                   << kBobToken << "\n";
    ::chmod((dir_ / "tokens").c_str(), 0600);
  }
  ~Scratch() { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // ca, server (CN=localhost, SAN localhost + 127.0.0.1), alice (signed by
  // ca), rogue-ca and mallory (signed by rogue-ca). False when openssl is
  // missing or fails.
  bool MakeCertificates() {
    if (std::system("command -v openssl >/dev/null 2>&1") != 0) return false;
    const std::string d = dir_.string();
    std::ofstream(dir_ / "server.ext") << "subjectAltName=DNS:localhost,IP:127.0.0.1\n";
    std::ofstream(dir_ / "client.ext") << "extendedKeyUsage=clientAuth\n";
    auto run = [&](const std::string& command) {
      return std::system(("cd '" + d + "' && " + command + " >/dev/null 2>&1").c_str()) == 0;
    };
    const std::string key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    auto ca = [&](const std::string& name, const std::string& cn) {
      return run("openssl req -x509 " + key + " -keyout " + name + ".key -out " + name +
                 ".pem -days 2 -subj '/CN=" + cn + "'");
    };
    auto leaf = [&](const std::string& name, const std::string& cn, const std::string& issuer,
                    const std::string& ext) {
      return run("openssl req " + key + " -keyout " + name + ".key -out " + name +
                 ".csr -subj '/CN=" + cn + "'") &&
             run("openssl x509 -req -in " + name + ".csr -CA " + issuer + ".pem -CAkey " +
                 issuer + ".key -CAcreateserial -days 2 -out " + name + ".pem -extfile " + ext);
    };
    return ca("ca", "jitd test CA") && ca("rogue-ca", "rogue CA") &&
           leaf("server", "localhost", "ca", "server.ext") &&
           leaf("alice", "alice", "ca", "client.ext") &&
           leaf("mallory", "mallory", "rogue-ca", "client.ext");
  }

 private:
  std::filesystem::path dir_;
};

class RemoteTestClient {
 public:
  using tcp = boost::asio::ip::tcp;

  // Connects to 127.0.0.1:port; with `tls`, runs a TLS handshake using that
  // client context (its certificate, if any). The handshake's error, if any,
  // is in handshake_error().
  RemoteTestClient(uint16_t port, boost::asio::ssl::context* tls) {
    tcp::socket socket(io_);
    boost::system::error_code ec;
    socket.connect(tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), port), ec);
    connect_error_ = ec;
    socket.set_option(tcp::no_delay(true), ec);
    if (tls != nullptr) {
      tls_.emplace(std::move(socket), *tls);
      SSL_set_tlsext_host_name(tls_->native_handle(), "localhost");
      tls_->handshake(boost::asio::ssl::stream_base::client, handshake_error_);
    } else {
      plain_.emplace(std::move(socket));
    }
  }

  bool connected() const { return !connect_error_; }
  const boost::system::error_code& handshake_error() const { return handshake_error_; }

  bool WriteRaw(std::span<const uint8_t> bytes) {
    boost::system::error_code ec;
    if (tls_) {
      boost::asio::write(*tls_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    } else {
      boost::asio::write(*plain_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    }
    return !ec;
  }
  bool ReadRaw(std::span<uint8_t> bytes) {
    boost::system::error_code ec;
    if (tls_) {
      boost::asio::read(*tls_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    } else {
      boost::asio::read(*plain_, boost::asio::buffer(bytes.data(), bytes.size()), ec);
    }
    return !ec;
  }

  bool WriteFrame(ipc::FrameKind kind, std::span<const uint8_t> payload) {
    std::vector<uint8_t> frame;
    if (!ipc::AppendFrame(&frame, kind, payload).ok()) return false;
    return WriteRaw(frame);
  }
  // The next frame; false at EOF or on a malformed one.
  bool ReadFrame(ipc::FrameKind* kind, std::vector<uint8_t>* payload) {
    std::array<uint8_t, ipc::kFrameHeaderBytes> header{};
    if (!ReadRaw(header)) return false;
    StatusOr<ipc::FrameHeader> decoded = ipc::DecodeFrameHeader(header);
    if (!decoded.ok()) return false;
    *kind = decoded->kind;
    payload->resize(decoded->length);
    return ReadRaw(*payload);
  }

  // HELLO -> HELLO_REPLY: OK with the identity, or the ERROR frame's status.
  StatusOr<std::string> Hello(const std::string& token, const std::string& name = "test",
                              uint64_t client_process = 0) {
    flatbuffers::FlatBufferBuilder fbb;
    auto n = fbb.CreateString(name);
    auto t = token.empty() ? 0 : fbb.CreateString(token);
    fbb.Finish(remote::CreateRemoteHello(fbb, ipc::kRemoteProtocolVersion, n, t, client_process),
               remote::HeapRequestIdentifier());
    if (!WriteFrame(ipc::FrameKind::kHello, {fbb.GetBufferPointer(), fbb.GetSize()})) {
      return Status(StatusCode::kUnavailable, "cannot send the hello");
    }
    ipc::FrameKind kind;
    std::vector<uint8_t> payload;
    if (!ReadFrame(&kind, &payload)) {
      return Status(StatusCode::kUnavailable, "connection closed before the hello reply");
    }
    if (kind == ipc::FrameKind::kError) return ipc::DecodeErrorPayload(payload);
    if (kind != ipc::FrameKind::kHelloReply) return Internal("unexpected frame after hello");
    StatusOr<const remote::RemoteHelloReply*> reply = ipc::VerifyRemoteHelloReply(payload);
    if (!reply.ok()) return reply.status();
    heap_bytes_ = (*reply)->heap_bytes();
    return (*reply)->identity() ? (*reply)->identity()->str() : std::string();
  }
  uint64_t heap_bytes() const { return heap_bytes_; }

  // One HEAP_REQUEST and its HEAP_REPLY (DATA frames of a read land in
  // `read_into`).
  StatusOr<std::pair<uint64_t, uint64_t>> Heap(flatbuffers::FlatBufferBuilder& fbb,
                                               std::vector<uint8_t>* read_into = nullptr) {
    if (!WriteFrame(ipc::FrameKind::kHeapRequest, {fbb.GetBufferPointer(), fbb.GetSize()})) {
      return Status(StatusCode::kUnavailable, "cannot send");
    }
    while (true) {
      ipc::FrameKind kind;
      std::vector<uint8_t> payload;
      if (!ReadFrame(&kind, &payload)) return Status(StatusCode::kUnavailable, "closed");
      if (kind == ipc::FrameKind::kData) {
        StatusOr<ipc::DataChunk> chunk = ipc::ParseDataPayload(payload);
        if (!chunk.ok() || read_into == nullptr) return Internal("unexpected DATA");
        read_into->insert(read_into->end(), chunk->bytes.begin(), chunk->bytes.end());
        continue;
      }
      if (kind == ipc::FrameKind::kError) return ipc::DecodeErrorPayload(payload);
      if (kind != ipc::FrameKind::kHeapReply) return Internal("unexpected frame");
      StatusOr<const remote::HeapReply*> reply = ipc::VerifyHeapReply(payload);
      if (!reply.ok()) return reply.status();
      if ((*reply)->code() != 0) {
        return Status(static_cast<StatusCode>((*reply)->code()),
                      (*reply)->message() ? (*reply)->message()->str() : "");
      }
      return std::make_pair((*reply)->offset(), (*reply)->length());
    }
  }
  StatusOr<uint64_t> Allocate(uint64_t bytes) {
    flatbuffers::FlatBufferBuilder fbb;
    auto op = remote::CreateAllocateRequest(fbb, bytes);
    fbb.Finish(remote::CreateHeapRequest(fbb, ++next_id_, remote::HeapOp_AllocateRequest,
                                         op.Union()),
               remote::HeapRequestIdentifier());
    JITD_ASSIGN_OR_RETURN(auto reply, Heap(fbb));
    return reply.first;
  }
  Status Free(uint64_t offset) {
    flatbuffers::FlatBufferBuilder fbb;
    auto op = remote::CreateFreeRequest(fbb, offset);
    fbb.Finish(remote::CreateHeapRequest(fbb, ++next_id_, remote::HeapOp_FreeRequest, op.Union()),
               remote::HeapRequestIdentifier());
    return Heap(fbb).status();
  }
  StatusOr<std::vector<uint8_t>> Read(uint64_t offset, uint64_t length) {
    flatbuffers::FlatBufferBuilder fbb;
    auto op = remote::CreateReadRequest(fbb, offset, length);
    fbb.Finish(remote::CreateHeapRequest(fbb, ++next_id_, remote::HeapOp_ReadRequest, op.Union()),
               remote::HeapRequestIdentifier());
    std::vector<uint8_t> out;
    out.reserve(length);
    JITD_RETURN_IF_ERROR(Heap(fbb, &out).status());
    return out;
  }
  // DATA frames (no reply).
  bool Write(uint64_t offset, std::span<const uint8_t> bytes) {
    while (!bytes.empty()) {
      const size_t n = std::min<size_t>(bytes.size(), ipc::kMaxDataChunk);
      auto prefix = ipc::EncodeDataPrefix(offset, static_cast<uint32_t>(n));
      if (!WriteRaw(prefix) || !WriteRaw(bytes.first(n))) return false;
      bytes = bytes.subspan(n);
      offset += n;
    }
    return true;
  }

  // REQUEST -> REPLY: the reply's bytes (verified), or the ERROR frame's
  // status / the connection's end.
  StatusOr<std::vector<uint8_t>> Request(flatbuffers::FlatBufferBuilder& fbb, wire::Request type,
                                         flatbuffers::Offset<void> body) {
    fbb.Finish(wire::CreateRequestMessage(fbb, ++next_id_, type, body),
               wire::RequestMessageIdentifier());
    if (!WriteFrame(ipc::FrameKind::kRequest, {fbb.GetBufferPointer(), fbb.GetSize()})) {
      return Status(StatusCode::kUnavailable, "cannot send");
    }
    ipc::FrameKind kind;
    std::vector<uint8_t> payload;
    if (!ReadFrame(&kind, &payload)) return Status(StatusCode::kUnavailable, "closed");
    if (kind == ipc::FrameKind::kError) return ipc::DecodeErrorPayload(payload);
    if (kind != ipc::FrameKind::kReply) return Internal("unexpected frame");
    JITD_RETURN_IF_ERROR(ipc::VerifyReply(payload).status());
    return payload;
  }

  // Closes with a TCP reset (SO_LINGER 0): as a killed process's socket.
  // Half-closes: a FIN, the connection still open for reading.
  void ShutdownSend() {
    tcp::socket& s = tls_ ? tls_->next_layer() : *plain_;
    boost::system::error_code ec;
    s.shutdown(tcp::socket::shutdown_send, ec);
  }

  void Abort() {
    tcp::socket& s = tls_ ? tls_->next_layer() : *plain_;
    boost::system::error_code ec;
    s.set_option(boost::asio::socket_base::linger(true, 0), ec);
    s.close(ec);
  }

 private:
  boost::asio::io_context io_;
  std::optional<tcp::socket> plain_;
  std::optional<boost::asio::ssl::stream<tcp::socket>> tls_;
  boost::system::error_code connect_error_, handshake_error_;
  uint64_t heap_bytes_ = 0;
  uint64_t next_id_ = 0;
};

}  // namespace jitd::daemon::testing

#endif  // JITD_DAEMON_REMOTE_TEST_CLIENT_H_
