// RemoteServer: the daemon's TCP front door for clients on other machines
// (docs/REMOTE.md; security in docs/SECURITY.md, "Network").
//
// It listens on the --listen addresses, runs TLS 1.3 (Boost.Asio over
// OpenSSL; plaintext only with --insecure-loopback on loopback addresses),
// authenticates each client (a verified client certificate with
// --tls-client-ca, a bearer token in the hello with --token-file), and
// bridges each admitted connection into a daemon Session of its own: frames
// (ipc/stream_frame.h) carry the same RequestMessage / ReplyMessage as the
// rings; the bridge allocates in the session's heap for the client
// (RemoteHeap) and moves tensor bytes between the socket and the heap
// directly (DATA frames are read straight into the heap and written from
// it: no second copy in the daemon).
//
// Threads: `io_threads` threads run every socket, timer and TLS record, and
// each connection's handlers run on a strand of its own, so its frames are
// handled one at a time, in order. A request (Session::Handle: compiles,
// executes, feeds, which may block) runs on the thread that read its frame
// and that thread writes the reply: a tiny execute costs one wake-up each
// way, no hand-off between threads. While every thread has been inside a
// request for `stall`, a monitor starts a spare (up to `max_threads`), so a
// new connection or another client's frame is never stuck behind long
// requests; a spare exits after `spare_idle` without work.
//
// Hostility: a connection must complete TLS and send its HELLO within
// `handshake_timeout` (a silent client, or one sending a byte at a time, is
// dropped then); at most `max_pending_handshakes` connections may be in that
// state (more are closed at once). After the hello, a frame whose header has
// arrived must complete within `frame_timeout`. A malformed frame (bad
// header, unverifiable message, DATA outside an allocated range, a frame
// kind the client may not send) gets a best-effort ERROR frame and the
// connection is closed; counted in stats(). A closed connection frees its
// session at once, or when the request in progress ends (it is cancelled).
//
// Thread safety: Start/Stop from one controlling thread; addresses() and
// stats() from any. Lifetime: the Instance and the admission callbacks'
// owner must outlive the RemoteServer; Stop (or the destructor) closes
// every connection and waits for requests in progress.
#ifndef JITD_DAEMON_REMOTE_SERVER_H_
#define JITD_DAEMON_REMOTE_SERVER_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "daemon/instance.h"
#include "daemon/remote_auth.h"
#include "daemon/session.h"

namespace jitd::daemon {

// Options of the remote listener (jitd serve --listen ...). Plain value.
struct RemoteOptions {
  std::vector<std::string> listen;  // "tcp://ADDR:PORT"; empty = no listener
  std::string tls_cert;             // PEM certificate chain of the daemon
  std::string tls_key;              // PEM private key
  std::string tls_client_ca;        // PEM CA(s): client certificates required
  std::string token_file;           // "NAME TOKEN" lines: tokens required
  bool insecure_loopback = false;   // plaintext, loopback addresses only
  std::chrono::milliseconds handshake_timeout{5'000};
  std::chrono::milliseconds frame_timeout{30'000};
  uint64_t max_pending_handshakes = 64;
  int io_threads = 2;                     // threads that always run connections
  int max_threads = 256;                  // spares included (0 = io_threads)
  std::chrono::milliseconds stall{5};     // all busy this long: start a spare
  std::chrono::milliseconds spare_idle{1'000};
  int log_level = 1;
};

// OK when `options` can run (see docs/REMOTE.md): every address parses; TLS
// has a certificate and key, or --insecure-loopback with loopback addresses
// only; clients must authenticate (client CA and/or token file; plaintext
// needs the token file). The error names the flag to give.
Status CheckRemoteOptions(const RemoteOptions& options);

// How remote sessions are admitted and served, supplied by the Server.
struct RemoteAdmission {
  // Counts a session of `identity` against the daemon's limits
  // (RESOURCE_EXHAUSTED naming the limit); `release` undoes it.
  std::function<Status(const std::string& identity)> reserve;
  std::function<void(const std::string& identity)> release;
  // A fresh session id (shared with the Unix-socket sessions).
  std::function<uint64_t()> next_session_id;
};

// Counters since start. Plain value.
struct RemoteStats {
  uint64_t connections = 0;         // accepted TCP connections
  uint64_t sessions_opened = 0;     // admitted (HELLO_REPLY sent)
  uint64_t sessions_open = 0;       // admitted and not yet closed
  uint64_t refused = 0;             // TLS or authentication failures, limits
  uint64_t handshake_timeouts = 0;  // dropped before their hello
  uint64_t frame_timeouts = 0;      // a frame that did not complete in time
  uint64_t malformed_frames = 0;    // protocol errors (connection closed)
  uint64_t bytes_in = 0, bytes_out = 0;  // frame bytes (after TLS)
  uint64_t threads = 0;                  // running connections' handlers now
  uint64_t spares_started = 0;           // by the monitor, since start
};

template <class Stream>
class RemoteConnection;  // remote_server.cc

class RemoteServer {
 public:
  // Checks the options, loads certificates and tokens, binds and listens on
  // every address (port 0 = any free port; see addresses()). Errors name the
  // file or address at fault.
  static StatusOr<std::unique_ptr<RemoteServer>> Create(Instance* instance,
                                                        const SessionOptions& session,
                                                        const RemoteOptions& options,
                                                        RemoteAdmission admission);
  ~RemoteServer();
  RemoteServer(const RemoteServer&) = delete;
  RemoteServer& operator=(const RemoteServer&) = delete;

  // The bound addresses, with their actual ports.
  std::vector<ListenAddress> addresses() const;
  // Starts the IO thread: connections are accepted from then on.
  void Start();
  // Stops accepting, closes every connection (cancelling requests in
  // progress) and waits for them. Idempotent.
  void Stop();
  RemoteStats stats() const;
  // stats() as a JSON object (for `jitd stats`).
  std::string StatsJson() const;

 private:
  template <class Stream>
  friend class RemoteConnection;
  struct Impl;
  explicit RemoteServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_REMOTE_SERVER_H_
