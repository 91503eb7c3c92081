// The daemon's socket directory: where it is by default, and the checks that
// keep another local user from putting their own socket where clients look.
//
// Why: with XDG_RUNTIME_DIR unset the default is /tmp/jitd-$UID, a name
// another user can create first (or a directory that group or others can
// write, where they can swap the socket). A daemon that used such a
// directory would let that user replace its socket and receive its clients'
// programs. So the daemon refuses to listen in a directory that:
//   - it does not own, or that group or others can write;
//   - is a symbolic link (the link's owner could point it elsewhere);
//   - sits under an ancestor (after resolving symbolic links) that is owned
//     by a user other than the daemon's or root, or that group or others can
//     write without the sticky bit (/tmp's 1777 is fine: nobody can rename
//     another's entry there).
// The refusal (FAILED_PRECONDITION) names the directory, its owner and mode,
// and what to do. Clients check the other side (libclient/client.cc: the
// daemon's peer credentials).
//
// Thread safety: the functions read the environment and the file system
// only; callable from any thread.
#ifndef JITD_DAEMON_SOCKET_DIR_H_
#define JITD_DAEMON_SOCKET_DIR_H_

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace jitd::daemon {

// $JITD_SOCKET when set, else $XDG_RUNTIME_DIR/jitd/jitd.sock when
// XDG_RUNTIME_DIR is an absolute path, else /tmp/jitd-$UID/jitd.sock.
std::string DefaultSocketPath();

// Creates `dir` and its missing parents (mode 0700) when missing, then
// checks that a daemon running as `uid` may safely listen there (see the
// file comment). OK, or FAILED_PRECONDITION naming the directory (or the
// ancestor), its owner and mode, and the fix.
Status PrepareSocketDir(const std::string& dir, uid_t uid);

}  // namespace jitd::daemon

#endif  // JITD_DAEMON_SOCKET_DIR_H_
