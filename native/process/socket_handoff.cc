// DuplicateSocket. See socket_handoff.h.
#include "process/socket_handoff.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace hotpath::process {

namespace {

Status ErrnoStatus(const char* call, int fd, int err) {
  const StatusCode code = err == EBADF    ? StatusCode::kNotFound
                          : err == EMFILE || err == ENFILE ? StatusCode::kResourceExhausted
                                                           : StatusCode::kInternal;
  return Status(code, std::string(call) + "(" + std::to_string(fd) + "): " + std::strerror(err));
}

}  // namespace

Result<int> DuplicateSocket(int fd) {
  if (fd < 0) return Status(StatusCode::kInvalidArgument, "descriptor must be >= 0, got " + std::to_string(fd));
  // F_DUPFD_CLOEXEC: a child process (a spawned tool) never inherits a client connection.
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)", fd, errno);
  // The copy is what is checked, not `fd`: another thread may close `fd` and
  // the number be reused between two calls on it. A descriptor that is a
  // file or a pipe never reaches a door thread that would treat it as a
  // connection.
  struct stat info {};
  if (::fstat(copy, &info) != 0) {
    const int err = errno;
    if (::close(copy) != 0) return ErrnoStatus("close", copy, errno);
    return ErrnoStatus("fstat", fd, err);
  }
  if (!S_ISSOCK(info.st_mode)) {
    if (::close(copy) != 0) return ErrnoStatus("close", copy, errno);
    return Status(StatusCode::kInvalidArgument, "descriptor " + std::to_string(fd) + " is not a socket");
  }
  return copy;
}

}  // namespace hotpath::process
