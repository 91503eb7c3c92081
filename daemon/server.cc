#include "daemon/server.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unordered_map>

#include <boost/asio.hpp>

#include "base/unique_fd.h"
#include "daemon/listen_fds.h"
#include "daemon/socket_dir.h"
#include "ipc/fd_passing.h"
#include "ipc/protocol.h"

namespace jitd::daemon {
namespace {

namespace asio = boost::asio;
using Local = asio::local::stream_protocol;

Status Unavailable(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

// Whether a daemon accepts connections at `path`.
bool SomeoneAnswers(const std::string& path) {
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  return ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
}

// The peer's supplementary groups (SO_PEERGROUPS); empty when the kernel
// does not say.
std::vector<gid_t> PeerGroups(int fd) {
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      return groups;
    }
    if (errno != ERANGE) break;
    groups.resize(len / sizeof(gid_t) + 1);
  }
  return {};
}

std::string JoinIds(const auto& ids) {
  std::string out;
  for (auto id : ids) out += (out.empty() ? "" : ",") + std::to_string(id);
  return out.empty() ? "none" : out;
}

}  // namespace

Status CheckPeer(const PeerPolicy& policy, uid_t uid, gid_t gid, std::span<const gid_t> groups) {
  const uid_t owner = policy.owner_uid >= 0 ? static_cast<uid_t>(policy.owner_uid) : ::geteuid();
  if (uid == owner) return Status::Ok();
  for (uid_t allowed : policy.allow_uids) {
    if (uid == allowed) return Status::Ok();
  }
  for (gid_t allowed : policy.allow_gids) {
    if (gid == allowed) return Status::Ok();
    for (gid_t g : groups) {
      if (g == allowed) return Status::Ok();
    }
  }
  return Status(StatusCode::kPermissionDenied,
                "uid " + std::to_string(uid) + " (gid " + std::to_string(gid) +
                    ") may not use this jitd daemon: it serves uid " + std::to_string(owner) +
                    ", allowed uids: " + JoinIds(policy.allow_uids) +
                    ", allowed gids: " + JoinIds(policy.allow_gids) +
                    " (start it with --allow-uid=UID or --allow-gid=GID)");
}

struct Server::Impl {
  Impl(Instance* instance, ServerOptions options)
      : instance(instance), options(std::move(options)), acceptor(io) {}
  // A Create that failed after CreateRemote: the stats section goes too.
  ~Impl() {
    if (remote) instance->SetStatsSection("remote", nullptr);
  }

  void Log(int level, const char* format, ...) __attribute__((format(printf, 3, 4))) {
    if (level > options.log_level) return;
    std::va_list args;
    va_start(args, format);
    std::fputs("jitd: ", stderr);
    std::vfprintf(stderr, format, args);
    std::fputc('\n', stderr);
    va_end(args);
  }

  void Accept() {
    acceptor.async_accept([this](const boost::system::error_code& ec, Local::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted) {
          Log(0, "accept failed: %s", ec.message().c_str());
          if (!stopping) Accept();
        }
        return;
      }
      OnConnection(std::move(socket));
      if (!stopping) Accept();
    });
  }

  static void Refuse(int fd, const Status& status) {
    std::string payload = "JITE" + status.ToString();
    (void)ipc::SendWithFd(fd, -1, std::span<const uint8_t>(
                                      reinterpret_cast<const uint8_t*>(payload.data()),
                                      payload.size()));
  }

  // Counts a session of `uid` against the limits (released by Release), or
  // RESOURCE_EXHAUSTED naming the limit and its flag.
  Status Reserve(uid_t uid) {
    std::lock_guard<std::mutex> lock(limits_mu);
    if (options.max_sessions != 0 && sessions_total >= options.max_sessions) {
      return ResourceExhausted("the daemon serves " + std::to_string(sessions_total) +
                               " sessions, its limit (jitd serve --max-sessions) is " +
                               std::to_string(options.max_sessions) +
                               "; close some clients or raise the limit");
    }
    uint64_t& mine = sessions_by_uid[uid];
    if (options.max_sessions_per_uid != 0 && mine >= options.max_sessions_per_uid) {
      return ResourceExhausted("uid " + std::to_string(uid) + " has " + std::to_string(mine) +
                               " sessions open, the limit per uid (jitd serve "
                               "--max-sessions-per-uid) is " +
                               std::to_string(options.max_sessions_per_uid) +
                               "; close some clients or raise the limit");
    }
    ++mine;
    ++sessions_total;
    return Status::Ok();
  }
  // The same for a remote identity (daemon/remote_server.h): the per-uid
  // limit applies per identity.
  Status ReserveIdentity(const std::string& identity) {
    std::lock_guard<std::mutex> lock(limits_mu);
    if (options.max_sessions != 0 && sessions_total >= options.max_sessions) {
      return ResourceExhausted("the daemon serves " + std::to_string(sessions_total) +
                               " sessions, its limit (jitd serve --max-sessions) is " +
                               std::to_string(options.max_sessions) +
                               "; close some clients or raise the limit");
    }
    uint64_t& mine = sessions_by_identity[identity];
    if (options.max_sessions_per_uid != 0 && mine >= options.max_sessions_per_uid) {
      return ResourceExhausted(identity + " has " + std::to_string(mine) +
                               " sessions open, the limit per client identity (jitd serve "
                               "--max-sessions-per-uid) is " +
                               std::to_string(options.max_sessions_per_uid) +
                               "; close some clients or raise the limit");
    }
    ++mine;
    ++sessions_total;
    return Status::Ok();
  }
  void ReleaseIdentity(const std::string& identity) {
    std::lock_guard<std::mutex> lock(limits_mu);
    --sessions_total;
    auto it = sessions_by_identity.find(identity);
    if (it != sessions_by_identity.end() && --it->second == 0) sessions_by_identity.erase(it);
  }

  // The remote listener, when options.remote names addresses (it runs its
  // sessions' requests on threads of its own).
  Status CreateRemote() {
    if (options.remote.listen.empty()) return Status::Ok();
    options.remote.log_level = options.log_level;
    RemoteAdmission admission;
    admission.reserve = [this](const std::string& identity) { return ReserveIdentity(identity); };
    admission.release = [this](const std::string& identity) { ReleaseIdentity(identity); };
    admission.next_session_id = [this] { return next_session_id++; };
    JITD_ASSIGN_OR_RETURN(remote,
                          RemoteServer::Create(instance, options.session, options.remote,
                                               std::move(admission)));
    instance->SetStatsSection("remote", [r = remote.get()] { return r->StatsJson(); });
    return Status::Ok();
  }

  void Release(uid_t uid) {
    std::lock_guard<std::mutex> lock(limits_mu);
    --sessions_total;
    auto it = sessions_by_uid.find(uid);
    if (it != sessions_by_uid.end() && --it->second == 0) sessions_by_uid.erase(it);
  }

  // On the accept thread: who is it, may it connect, is there room. The
  // session itself is set up on a dispatcher worker, so that the next
  // connection is accepted at once.
  void OnConnection(Local::socket socket) {
    const int fd = socket.native_handle();
    StatusOr<ipc::UnixCredentials> peer = ipc::PeerCredentials(fd);
    if (!peer.ok()) {
      Log(0, "refused a connection: %s", peer.status().ToString().c_str());
      return;  // the socket closes here
    }
    const std::vector<gid_t> groups = PeerGroups(fd);
    if (Status allowed = CheckPeer(options.peers, peer->uid, peer->gid, groups); !allowed.ok()) {
      Log(0, "refused a connection from pid %d: %s", static_cast<int>(peer->pid),
          allowed.message().c_str());
      Refuse(fd, allowed);
      return;
    }
    if (Status room = Reserve(peer->uid); !room.ok()) {
      Log(1, "refused a connection from pid %d: %s", static_cast<int>(peer->pid),
          room.message().c_str());
      Refuse(fd, room);
      return;
    }
    boost::system::error_code ec;
    UniqueFd connection(socket.release(ec));
    if (ec || !connection.valid()) {
      Release(peer->uid);
      Log(0, "cannot take a connection: %s", ec.message().c_str());
      return;
    }
    const uint64_t id = next_session_id++;
    dispatcher->Post([this, id, peer = *peer, fd = std::make_shared<UniqueFd>(
                                                   std::move(connection))]() mutable {
      OpenSession(id, peer, std::move(*fd));
    });
  }

  // On a dispatcher worker: the session, the handshake, then serving.
  void OpenSession(uint64_t id, const ipc::UnixCredentials& peer, UniqueFd connection) {
    StatusOr<std::unique_ptr<Session>> session = Session::Create(instance, id, options.session);
    if (!session.ok()) {
      Refuse(connection.get(), session.status());
      Release(peer.uid);
      Log(0, "cannot open a session for pid %d: %s", static_cast<int>(peer.pid),
          session.status().ToString().c_str());
      return;
    }
    (*session)->SetPeer(peer.pid, peer.uid);
    uint8_t payload[16] = {'J', 'I', 'T', 'D'};
    const uint32_t version = ipc::kProtocolVersion;
    std::memcpy(payload + 4, &version, 4);
    std::memcpy(payload + 8, &id, 8);
    Status sent = ipc::SendWithFd(connection.get(), (*session)->segment_fd(), payload);
    if (!sent.ok()) {
      Release(peer.uid);
      Log(1, "session %llu: handshake failed: %s", static_cast<unsigned long long>(id),
          sent.ToString().c_str());
      return;  // the session goes; it was never served
    }
    Status added = dispatcher->Add(std::move(session).value(), std::move(connection));
    if (!added.ok()) {
      Log(0, "session %llu: %s", static_cast<unsigned long long>(id), added.ToString().c_str());
      return;  // Add failing freed the session: OnClosed released it
    }
    Log(1, "session %llu opened for pid %d (uid %d)", static_cast<unsigned long long>(id),
        static_cast<int>(peer.pid), static_cast<int>(peer.uid));
  }

  // On a dispatcher worker, as a session is closed.
  void OnClosed(const Session& session) {
    Release(static_cast<uid_t>(session.peer_uid()));
    Log(1, "session %llu closed", static_cast<unsigned long long>(session.id()));
  }

  Instance* instance;
  ServerOptions options;
  asio::io_context io;
  Local::acceptor acceptor;
  std::optional<asio::signal_set> signals;
  std::atomic<uint64_t> next_session_id{1};  // the accept thread's and remote hellos'
  std::unordered_map<std::string, uint64_t> sessions_by_identity;  // guarded by limits_mu
  std::mutex limits_mu;
  uint64_t sessions_total = 0;                           // guarded by limits_mu
  std::unordered_map<uid_t, uint64_t> sessions_by_uid;  // guarded by limits_mu
  std::atomic<bool> stopping{false};
  bool bound = false;
  UniqueFd lock_fd;  // flock'ed PATH.lock, held for the server's lifetime
  // Last: destroyed first, while the limits its callback releases exist.
  std::unique_ptr<Dispatcher> dispatcher;
  // After the dispatcher: stopped and destroyed before it (its requests run
  // on the dispatcher's workers).
  std::unique_ptr<RemoteServer> remote;
};

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  if (impl_->remote) impl_->instance->SetStatsSection("remote", nullptr);
  impl_->remote.reset();
  impl_->dispatcher.reset();
  if (impl_->bound) ::unlink(impl_->options.socket_path.c_str());
}

const std::string& Server::socket_path() const { return impl_->options.socket_path; }

StatusOr<std::unique_ptr<Server>> Server::Create(Instance* instance, ServerOptions options) {
  if (options.socket_path.empty()) options.socket_path = DefaultSocketPath();
  const std::string path = options.socket_path;
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    return InvalidArgument("socket path '" + path + "' is longer than " +
                           std::to_string(sizeof(sockaddr_un::sun_path) - 1) + " bytes");
  }
  // A segment size that cannot work is a start-up error, not one per client.
  JITD_RETURN_IF_ERROR(
      ipc::Segment::Create(options.session.segment_bytes, DaemonSegmentLayout()).status());
  // Socket activation (daemon/listen_fds.h): serve the inherited socket; its
  // path and directory are the service manager's, so no lock, bind or unlink.
  JITD_ASSIGN_OR_RETURN(UniqueFd inherited, TakeListenFd());
  if (inherited.valid()) {
    if (std::string bound = BoundSocketPath(inherited.get()); !bound.empty()) {
      options.socket_path = bound;
    }
    auto impl = std::make_unique<Impl>(instance, std::move(options));
    Impl* raw = impl.get();
    JITD_ASSIGN_OR_RETURN(impl->dispatcher,
                          Dispatcher::Create(impl->options.dispatcher,
                                             [raw](const Session& s) { raw->OnClosed(s); }));
    JITD_RETURN_IF_ERROR(impl->CreateRemote());
    boost::system::error_code ec;
    impl->acceptor.assign(Local(), inherited.Release(), ec);
    if (ec) return Unavailable("cannot serve the inherited socket: " + ec.message());
    return std::unique_ptr<Server>(new Server(std::move(impl)));
  }
  // The directory must be this daemon's own (daemon/socket_dir.h).
  JITD_RETURN_IF_ERROR(
      PrepareSocketDir(std::filesystem::path(path).parent_path().string(), ::geteuid()));
  // Ownership of the path: one daemon at a time, whatever the timing.
  const std::string lock_path = path + ".lock";
  UniqueFd lock_fd(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!lock_fd.valid()) {
    return Status(StatusCode::kFailedPrecondition,
                  "cannot open the lock file " + lock_path + ": " + std::strerror(errno));
  }
  if (::flock(lock_fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Status(StatusCode::kAlreadyExists,
                    "another jitd daemon owns " + path + " (it holds " + lock_path + ")");
    }
    return Status(StatusCode::kFailedPrecondition,
                  "cannot lock " + lock_path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      return Status(StatusCode::kFailedPrecondition,
                    path + " exists and is not a socket; remove it or pick another --socket");
    }
    if (SomeoneAnswers(path)) {
      return Status(StatusCode::kAlreadyExists, "another jitd daemon answers on " + path);
    }
    if (::unlink(path.c_str()) != 0) {
      return Status(StatusCode::kFailedPrecondition,
                    "cannot remove the stale socket " + path + ": " + std::strerror(errno));
    }
  }
  auto impl = std::make_unique<Impl>(instance, std::move(options));
  impl->lock_fd = std::move(lock_fd);
  Impl* raw = impl.get();
  JITD_ASSIGN_OR_RETURN(impl->dispatcher,
                        Dispatcher::Create(impl->options.dispatcher,
                                           [raw](const Session& s) { raw->OnClosed(s); }));
  JITD_RETURN_IF_ERROR(impl->CreateRemote());
  boost::system::error_code ec;
  impl->acceptor.open(Local(), ec);
  if (!ec) impl->acceptor.bind(Local::endpoint(path), ec);
  if (ec) return Unavailable("cannot bind " + path + ": " + ec.message());
  impl->bound = true;
  ::chmod(path.c_str(), 0600);
  impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    ::unlink(path.c_str());
    return Unavailable("cannot listen on " + path + ": " + ec.message());
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Status Server::Run() {
  Impl& impl = *impl_;
  if (impl.options.handle_signals) {
    impl.signals.emplace(impl.io, SIGTERM, SIGINT);
    impl.signals->async_wait([this](const boost::system::error_code& ec, int signal) {
      if (ec) return;
      impl_->Log(1, "signal %d: shutting down", signal);
      Stop();
    });
  }
  impl.Accept();
  impl.Log(1, "serving on %s", impl.options.socket_path.c_str());
  if (impl.remote) impl.remote->Start();
  if (!impl.stopping) impl.io.run();
  boost::system::error_code ignored;
  impl.acceptor.close(ignored);
  if (impl.signals) impl.signals->cancel(ignored);
  if (impl.remote) impl.remote->Stop();
  const uint64_t open = impl.dispatcher->stats().sessions;
  // Each session finishes (or cancels) its request in progress. Stopped
  // before the pointer is reset: a worker's OpenSession reads it.
  impl.dispatcher->Stop();
  impl.dispatcher.reset();
  if (impl.bound) {
    ::unlink(impl.options.socket_path.c_str());
    impl.bound = false;
  }
  impl.Log(1, "stopped (%llu session(s) were open)", static_cast<unsigned long long>(open));
  return Status::Ok();
}

std::vector<ListenAddress> Server::remote_addresses() const {
  return impl_->remote ? impl_->remote->addresses() : std::vector<ListenAddress>{};
}

std::string Server::RemoteStatsJson() const {
  return impl_->remote ? impl_->remote->StatsJson() : "null";
}

void Server::Stop() {
  impl_->stopping = true;
  impl_->io.stop();
}

}  // namespace jitd::daemon
