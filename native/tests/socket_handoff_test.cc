// Tests for process/socket_handoff.h: a socket's duplicate is a distinct,
// close-on-exec descriptor onto the same connection; anything that is not an
// open socket is refused with a status, never a crash.
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>

#include "process/socket_handoff.h"
#include "tests/check.h"

namespace hotpath::process {
namespace {

void TestDuplicatesASocket(test::Checker& check) {
  int pair[2] = {-1, -1};
  if (!check.Equal(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0, "socketpair")) return;
  Result<int> copy = DuplicateSocket(pair[0]);
  if (check.True(copy.ok(), "a socket is duplicated")) {
    check.True(copy.value() != pair[0], "into a new descriptor");
    check.True((::fcntl(copy.value(), F_GETFD) & FD_CLOEXEC) != 0, "close-on-exec");
    // The original closes (as the acceptor's handle does); the copy still carries the connection.
    ::close(pair[0]);
    char byte = 'x';
    check.Equal(::write(copy.value(), &byte, 1), ssize_t{1}, "the copy writes");
    char got = 0;
    check.Equal(::read(pair[1], &got, 1), ssize_t{1}, "the peer reads");
    check.Equal(got, 'x', "the same byte");
    ::close(copy.value());
  } else {
    ::close(pair[0]);
  }
  ::close(pair[1]);
}

void TestRefusals(test::Checker& check) {
  check.True(DuplicateSocket(-1).status().code() == StatusCode::kInvalidArgument, "a negative descriptor");
  check.True(DuplicateSocket(INT_MAX).status().code() == StatusCode::kNotFound, "a descriptor that is not open");
  int pipe_fds[2] = {-1, -1};
  if (!check.Equal(::pipe(pipe_fds), 0, "pipe")) return;
  Result<int> copy = DuplicateSocket(pipe_fds[0]);
  check.True(copy.status().code() == StatusCode::kInvalidArgument, "a pipe is not a socket");
  check.Contains(copy.status().message(), "not a socket", "and the message says so");
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

}  // namespace
}  // namespace hotpath::process

int main() {
  hotpath::test::Checker check;
  hotpath::process::TestDuplicatesASocket(check);
  hotpath::process::TestRefusals(check);
  return check.ExitCode();
}
