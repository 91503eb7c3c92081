// Server: the daemon's front door — a Unix stream socket (Boost.Asio) where
// clients connect and receive their shared segment.
//
// On each connection the server checks the peer's credentials (SO_PEERCRED,
// and SO_PEERGROUPS for its supplementary groups) against the PeerPolicy
// (CheckPeer below: the daemon's own uid, plus --allow-uid / --allow-gid);
// a refused peer gets a PERMISSION_DENIED failure payload and the refusal is
// logged. Otherwise it creates a Session and sends the session's memfd with
// a handshake payload (ipc::SendWithFd):
//
//   success: "JITD" | u32 protocol version | u64 session id   (LE, 16 bytes)
//   failure: "JITE" | Status::ToString() ("CODE: message")      (no descriptor)
//
// After the handshake the connection carries only doorbell bytes from the
// client (its request ring's wake-ups, see dispatcher.h); its close (the
// client exits or crashes) is how the server learns the client is gone, and
// the session is torn down, freeing everything the client held.
//
// The accept thread only accepts, checks the peer and counts sessions
// against the limits (max_sessions, max_sessions_per_uid: the next one is
// refused RESOURCE_EXHAUSTED naming the flag); setting a session up, serving
// it and tearing it down happen on the Dispatcher's workers, so a new client
// is answered whatever the other sessions are doing.
//
// Start-up: the socket's directory is created (mode 0700) when missing and
// must be the daemon's own, writable by nobody else, under safe ancestors
// (daemon/socket_dir.h: FAILED_PRECONDITION otherwise). The
// server first takes an exclusive lock (flock) on PATH.lock beside the
// socket and holds it for its lifetime: a second daemon for the same path is
// refused (ALREADY_EXISTS) even when both start at the same moment, so only
// the lock holder ever removes or binds the socket. A socket path where
// another daemon answers is refused (ALREADY_EXISTS); a stale socket file
// (nobody answers) is removed; anything else at that path is refused
// (FAILED_PRECONDITION). The socket file is removed on exit (the lock file
// stays: removing it would race with a starting daemon).
//
// Thread safety: Run blocks the calling thread, which accepts connections; Stop may be called from any thread (or by SIGTERM/SIGINT
// when ServerOptions::handle_signals). Lifetime: the Instance must outlive
// the Server; Run returns after every session is stopped.
#ifndef JITD_DAEMON_SERVER_H_
#define JITD_DAEMON_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "daemon/dispatcher.h"
#include "daemon/instance.h"
#include "daemon/remote_server.h"
#include "daemon/session.h"
#include "daemon/socket_dir.h"

namespace jitd::daemon {

// DefaultSocketPath() is in daemon/socket_dir.h (included above).

// Who may connect. Plain value.
struct PeerPolicy {
  // The uid the daemon serves; -1 = its effective uid (geteuid()). Always
  // allowed.
  int64_t owner_uid = -1;
  // Further users allowed (--allow-uid), and groups whose members are
  // allowed (--allow-gid: the peer's primary or a supplementary group).
  std::vector<uid_t> allow_uids;
  std::vector<gid_t> allow_gids;
};

// OK when a peer with `uid`, primary `gid` and supplementary `groups` may
// connect under `policy`; PERMISSION_DENIED otherwise, with a message that
// names the peer and says how to allow it.
Status CheckPeer(const PeerPolicy& policy, uid_t uid, gid_t gid, std::span<const gid_t> groups);

// Options of a Server. Plain value.
struct ServerOptions {
  std::string socket_path;  // empty = DefaultSocketPath()
  SessionOptions session;
  // Whether Run stops on SIGTERM and SIGINT.
  bool handle_signals = true;
  // 0: errors only; 1: connections and start/stop; 2: more.
  int log_level = 1;
  // Who may connect.
  PeerPolicy peers;
  // Sessions open at once, in all and per peer uid; the next is refused
  // RESOURCE_EXHAUSTED. 0 = no limit.
  uint64_t max_sessions = 1024;
  uint64_t max_sessions_per_uid = 256;
  // The worker pool serving every session's requests.
  DispatcherOptions dispatcher;
  // Remote clients over TCP + TLS (daemon/remote_server.h; off unless
  // remote.listen names addresses). Their sessions count against
  // max_sessions, and max_sessions_per_uid applies per remote identity.
  RemoteOptions remote;
};

class Server {
 public:
  // Prepares the socket path and starts listening (see the file comment).
  static StatusOr<std::unique_ptr<Server>> Create(Instance* instance, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  const std::string& socket_path() const;
  // Serves until Stop or a handled signal; then stops every session (each
  // finishes the request in progress), removes the socket file and returns.
  Status Run();
  // Makes Run return. Thread-safe; may be called before Run.
  void Stop();
  // The remote listener's bound addresses (empty without one).
  std::vector<ListenAddress> remote_addresses() const;
  // The remote listener's counters as JSON, "null" without one.
  std::string RemoteStatsJson() const;

 private:
  struct Impl;
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_SERVER_H_
