// RemoteLink: libclient's transport to a daemon on another machine
// (`Client::Connect("tcp://HOST:PORT")`; the wire is docs/REMOTE.md).
//
// A local client shares memory with its daemon: its buffers are spans of
// the shared heap that the daemon reads and writes in place. A remote client
// cannot, so the Client keeps a *mirror*: a private ipc::Segment of the
// daemon heap's size, allocated by the same Client code as a local segment,
// whose spans the caller fills and reads exactly as before. The link maps
// each mirror block a request names onto a block of the daemon's heap and
// moves the bytes around the request:
//
//  - blocks the daemon reads (program text, CreateBuffer data, the argument
//    buffers of an Execute, infeed data) are sent as DATA frames before the
//    REQUEST, in <= 1 MiB chunks straight from the mirror;
//  - blocks the daemon writes (the result buffers of an Execute, the
//    library-allocated results, outfeed data, dumps) are read back after the
//    reply (a ReadRequest pipelined behind the REQUEST), straight into the
//    mirror, and only when the request succeeded;
//  - a buffer's daemon block lives as long as the buffer (CreateBuffer or an
//    Execute's result_data until DestroyBuffer); every other block lives for
//    one call. Frees ride along with the next call's frames.
//
// So one Execute is one network round trip: arguments up, request, results
// down. The price of keeping the span API: every argument buffer is sent on
// every Execute that names it (the link cannot see writes into a span), and
// every result buffer is read back.
//
// Transport: TCP (TCP_NODELAY) with TLS 1.3 through OpenSSL memory BIOs (the
// link does its own socket I/O: poll() deadlines, send(MSG_NOSIGNAL)), the
// server certificate verified against ClientOptions::tls_ca_file (or the
// system's CAs) and the host name or IP address; optionally a client
// certificate (mutual TLS) and/or a bearer token. Plaintext only on a
// loopback address with ClientOptions::insecure_loopback (tests).
//
// Thread safety: none; the Client calls it under its mutex. Lifetime: the
// mirror segment passed to AttachMirror must outlive the link's calls.
#ifndef JITD_LIBCLIENT_REMOTE_LINK_H_
#define JITD_LIBCLIENT_REMOTE_LINK_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "ipc/segment.h"
#include "libclient/client.h"

namespace jitd::client {

// "tcp://HOST:PORT" (HOST a name, an IPv4 address or a bracketed IPv6
// address, "tcp://[::1]:7000"). Plain value.
struct RemoteAddress {
  std::string host;  // without brackets
  uint16_t port = 0;
  bool loopback() const;  // 127.0.0.0/8, ::1 or "localhost"
  std::string ToString() const;  // "host:port", IPv6 bracketed
};
// True when `address` names a remote daemon (starts with "tcp://").
bool IsRemoteAddress(std::string_view address);
// INVALID_ARGUMENT naming what is wrong (no port, port out of range, ...).
StatusOr<RemoteAddress> ParseRemoteAddress(std::string_view address);

class RemoteStream;  // remote_link.cc: TCP + optional TLS with deadlines

class RemoteLink {
 public:
  // Connects, runs the TLS handshake and the remote HELLO (the token from
  // options.token_file). Errors: UNAVAILABLE (nothing listens, the
  // connection broke), PERMISSION_DENIED (the server's certificate does not
  // verify, the daemon refused our certificate or token), INVALID_ARGUMENT
  // (unreadable certificate/key/token files, plaintext to a non-loopback
  // address), each naming the address or the file.
  static StatusOr<std::unique_ptr<RemoteLink>> Connect(const std::string& address,
                                                       const ClientOptions& options);
  ~RemoteLink();
  RemoteLink(const RemoteLink&) = delete;
  RemoteLink& operator=(const RemoteLink&) = delete;

  // From the daemon's HELLO_REPLY.
  uint64_t session_id() const { return session_id_; }
  uint64_t heap_bytes() const { return heap_bytes_; }
  const std::string& identity() const { return identity_; }  // e.g. "token:alice"

  // The Client's mirror segment; HeapRefs in requests are its offsets.
  void AttachMirror(ipc::Segment* mirror) { mirror_ = mirror; }

  // Sends `request` (a wire::RequestMessage naming mirror blocks), moving
  // the blocks' bytes as described above, and returns the reply's bytes in
  // `reply` (8-byte aligned, not yet verified by the caller). A reply that
  // does not come within `timeout` is DEADLINE_EXCEEDED, and the connection
  // is then unusable (UNAVAILABLE afterwards): the stream is out of step.
  // UNIMPLEMENTED for requests the link does not know.
  Status Call(std::span<const uint8_t> request, std::chrono::milliseconds timeout,
              std::vector<uint8_t>* reply);

 private:
  struct Block {  // a range of the daemon's heap
    uint64_t remote = 0;
    uint64_t length = 0;
  };
  struct Transfer {  // bytes moved for one HeapRef of a request
    uint64_t local = 0;
    uint64_t remote = 0;
    uint64_t length = 0;
  };

  RemoteLink(std::string address, std::unique_ptr<RemoteStream> stream);
  Status Hello(const ClientOptions& options, std::chrono::steady_clock::time_point deadline);
  // The daemon block for mirror range [local, local + length): inside a
  // buffer's block, or a fresh one (recorded in `fresh`; allocated by
  // AllocatePending in one round trip).
  Status AllocateFresh(std::span<Transfer* const> fresh, std::chrono::steady_clock::time_point deadline);
  bool FindBufferBlock(uint64_t local, uint64_t length, uint64_t* remote) const;
  std::span<uint8_t> MirrorBytes(uint64_t local, uint64_t length) const;
  Status Broken(const std::string& what);
  // Reads the HEAP_REPLYs of frees sent earlier.
  Status DrainFreeReplies(std::chrono::steady_clock::time_point deadline);

  const std::string address_;
  std::unique_ptr<RemoteStream> stream_;
  ipc::Segment* mirror_ = nullptr;
  uint64_t session_id_ = 0;
  uint64_t heap_bytes_ = 0;
  std::string identity_;
  uint64_t next_heap_id_ = 1;
  Status broken_;  // set once the stream is out of step or closed
  // Buffers: mirror block offset -> daemon block, and handle -> mirror offset.
  std::map<uint64_t, Block> buffer_blocks_;
  std::unordered_map<uint64_t, uint64_t> buffer_handles_;
  // Daemon blocks to free with the next call's frames, and how many free
  // replies are still to be read.
  std::vector<uint64_t> pending_frees_;
  uint64_t unread_free_replies_ = 0;
  std::vector<uint8_t> out_;      // frames of one call, written at once
  std::vector<uint8_t> scratch_;  // payloads
};

}  // namespace jitd::client

#endif  // JITD_LIBCLIENT_REMOTE_LINK_H_
