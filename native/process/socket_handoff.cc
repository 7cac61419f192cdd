// DuplicateSocket. See socket_handoff.h.
#include "process/socket_handoff.h"

#include <fcntl.h>
#include <sys/stat.h>

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
  // Checked first so that a descriptor that is a file or a pipe is never
  // duplicated into a door thread that would treat it as a connection.
  struct stat info {};
  if (::fstat(fd, &info) != 0) return ErrnoStatus("fstat", fd, errno);
  if (!S_ISSOCK(info.st_mode)) {
    return Status(StatusCode::kInvalidArgument, "descriptor " + std::to_string(fd) + " is not a socket");
  }
  // F_DUPFD_CLOEXEC: a child process (a spawned tool) never inherits a client connection.
  const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return ErrnoStatus("fcntl(F_DUPFD_CLOEXEC)", fd, errno);
  return copy;
}

}  // namespace hotpath::process
