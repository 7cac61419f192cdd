// ExitNow and ArmExitWatchdog. See process_exit.h.
#include "process/process_exit.h"

#include <unistd.h>

#include <system_error>
#include <thread>

namespace hotpath::process {

void ExitNow(int status) {
  // _exit has no failure mode to check: it does not return.
  ::_exit(status);
}

Status ArmExitWatchdog(std::chrono::milliseconds delay, int status) {
  if (delay.count() < 0) {
    return Status(StatusCode::kInvalidArgument, "exit watchdog delay must be >= 0 ms");
  }
  try {
    // Detached on purpose: nothing ever joins it; it either ends the process
    // or ends with it.
    std::thread([delay, status] {
      std::this_thread::sleep_for(delay);
      ExitNow(status);
    }).detach();
  } catch (const std::system_error& err) {
    return Status(StatusCode::kUnavailable, std::string("cannot start the exit watchdog thread: ") + err.what());
  }
  return Status::Ok();
}

}  // namespace hotpath::process
