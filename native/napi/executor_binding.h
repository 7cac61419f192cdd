// JS bindings for the native dense-graph executor (native/executor). Paired
// with src/native/executor.ts, which validates options and inputs, keeps the
// per-run promises and throws typed errors; these functions only translate,
// with guard checks.
//
// One native Executor per JS Executor, compiled from the JS plan and charged
// to a tenant of a registered arena under the given owner. Each has one
// ThreadSafeFunction to the JS thread that created it: executorRun copies the
// inputs into native buffers, submits a job, and the job's completion (on an
// instance thread) travels back as a 'run' event with the outputs handed to
// JS as ArrayBuffers (no further copy). executorClose stops the executor (its
// queued runs fail with UNAVAILABLE, running ones finish), queues a marker
// behind their events and lets go of the TSFN.
//
// Lifetime: the environment's table and the TSFN context share each
// instance; the registry (executor_registry.h) shares each executor with any
// batcher that targets it. The environment cleanup hook stops every executor
// (joining its threads) before Node finalizes the TSFNs, so no instance
// thread ever calls a TSFN that is gone.
#pragma once

#include <napi.h>

#include "napi/executor_registry.h"

namespace hotpath::napi {

// Adds the executor* functions (see src/native/executor-binding-types.ts)
// and returns this environment's registry, owned by the cleanup hook that
// this registers. Call once per environment, after the arena binding (so
// executors stop before this environment's arenas are cleaned up) and before
// the batcher binding, which borrows the registry.
ExecutorRegistry& RegisterExecutorBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
