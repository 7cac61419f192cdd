// Ending the process when Node's own exit cannot.
//
// Node's process.exit() tears down every worker thread's environment and
// joins the thread. A worker stuck inside onnxruntime's native code (an
// operator that never returns) never reaches a point where it can be
// stopped, so process.exit() would wait for it forever. _exit(2) ends the
// process without joining threads, running atexit handlers or static
// destructors; the caller flushes its logs first.
//
// No N-API here: native/napi/process_exit_binding.cc translates.
//
// Thread-safety: both functions may be called from any thread.
#pragma once

#include <chrono>

#include "common/status.h"

namespace hotpath::process {

// Ends the process now with `status` (_exit). Never returns.
[[noreturn]] void ExitNow(int status);

// Starts a detached thread that ends the process with `status` after
// `delay`, whatever the JS thread is doing then (blocked joining a stuck
// worker inside process.exit(), say). Disarming is not needed: when the
// process ends first, the thread ends with it. Returns UNAVAILABLE when the
// thread cannot be created.
Status ArmExitWatchdog(std::chrono::milliseconds delay, int status);

}  // namespace hotpath::process
