// An in-process daemon for tests that talk to it through libclient (tests
// only): an Instance and a Server running on a thread of its own, on a
// socket in a fresh temporary directory.
#ifndef JITD_DAEMON_TEST_DAEMON_H_
#define JITD_DAEMON_TEST_DAEMON_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "daemon/instance.h"
#include "daemon/server.h"

namespace jitd::daemon::testing {

class TestDaemon {
 public:
  // The sessions' options Start uses unless told otherwise: the defaults
  // with 4 MiB segments.
  static SessionOptions Sessions() {
    SessionOptions session;
    session.segment_bytes = 4 << 20;
    return session;
  }

  // Serves at `<temp dir>/jitd_<name>_<pid>/jitd.sock` (the directory
  // emptied first) with `session` for every session. Null (and a test
  // failure) when it cannot.
  static std::unique_ptr<TestDaemon> Start(std::string_view name,
                                           const SessionOptions& session = Sessions(),
                                           const InstanceOptions& instance_options = {}) {
    auto daemon = std::unique_ptr<TestDaemon>(new TestDaemon);
    daemon->dir_ = (std::filesystem::temp_directory_path() /
                    ("jitd_" + std::string(name) + "_" + std::to_string(::getpid())))
                       .string();
    std::filesystem::remove_all(daemon->dir_);
    auto instance = Instance::Create(instance_options);
    EXPECT_TRUE(instance.ok()) << instance.status().ToString();
    if (!instance.ok()) return nullptr;
    daemon->instance_ = std::move(instance).value();
    ServerOptions options;
    options.socket_path = daemon->dir_ + "/jitd.sock";
    options.handle_signals = false;
    options.log_level = 0;
    options.session = session;
    auto server = Server::Create(daemon->instance_.get(), options);
    EXPECT_TRUE(server.ok()) << server.status().ToString();
    if (!server.ok()) return nullptr;
    daemon->server_ = std::move(server).value();
    daemon->socket_ = options.socket_path;
    Server* running = daemon->server_.get();
    daemon->thread_ = std::thread([running] { EXPECT_TRUE(running->Run().ok()); });
    return daemon;
  }

  // Stops the server, joins its thread and removes the directory.
  ~TestDaemon() {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  TestDaemon(const TestDaemon&) = delete;
  TestDaemon& operator=(const TestDaemon&) = delete;

  const std::string& socket() const { return socket_; }
  // The directory the socket is in (removed with the daemon).
  const std::string& dir() const { return dir_; }
  Instance& instance() { return *instance_; }

 private:
  TestDaemon() = default;

  std::string dir_, socket_;
  std::unique_ptr<Instance> instance_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

}  // namespace jitd::daemon::testing

#endif  // JITD_DAEMON_TEST_DAEMON_H_
