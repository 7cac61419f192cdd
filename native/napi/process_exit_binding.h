// JS bindings for ending the process when Node's own exit cannot (a worker
// stuck in native code makes process.exit() wait forever). Paired with
// src/native/process-exit.ts. Translation only: process/process_exit.h acts.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds:
//   processExit(status: number): never       _exit(status), no return
//   armExitWatchdog(delayMs: number, status: number): {ok} | {ok:false, code, message}
//                                            ends the process after delayMs
//                                            from a native thread
void RegisterProcessExitBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
