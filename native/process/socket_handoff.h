// Handing an accepted socket from one JS thread to another.
//
// The front-door acceptor (src/server/door-acceptor.ts) accepts on the main
// thread and gives each connection to a door thread. A libuv handle cannot
// move between event loops, but a descriptor can: the acceptor duplicates
// the socket's descriptor, destroys its own handle (which closes the
// original), and the door thread wraps the duplicate in a new net.Socket.
//
// No N-API here: native/napi/socket_handoff_binding.cc translates.
//
// Thread-safety: any thread. Ownership: the returned descriptor belongs to
// the caller (close it if it is never adopted).
#pragma once

#include "common/result.h"

namespace hotpath::process {

// A close-on-exec duplicate of `fd`, which must be an open socket.
// INVALID_ARGUMENT for a negative descriptor or one that is not a socket,
// NOT_FOUND for a descriptor that is not open (EBADF), RESOURCE_EXHAUSTED
// when the process or the system is out of descriptors (EMFILE, ENFILE),
// INTERNAL otherwise; the
// message carries strerror.
Result<int> DuplicateSocket(int fd);

}  // namespace hotpath::process
