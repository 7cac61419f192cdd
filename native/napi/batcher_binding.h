// JS bindings for the dynamic batcher (native/batcher). Paired with
// src/native/batcher.ts, which validates options and requests, keeps the
// per-request promises and throws typed errors; these functions only
// translate, with guard checks.
//
// One native Batcher per JS Batcher, over an ArenaBatchMemory (the registered
// arena named in the options, charging the named tenant). Each has one
// ThreadSafeFunction to the JS thread that created it; the batcher thread
// sends sealed batches and rejections through it, and JS markers (flush,
// stop) travel through the same FIFO queue, so a marker arriving means every
// event queued before it has been delivered.
//
// Ownership of batch memory: a delivered SealedBatch stays in this
// environment's table (its BatchBuffers hold one arena reference per input
// block) until JS calls batcherReleaseBatch, or the environment is torn
// down. Workers that map a block take their own arena reference
// (Arena.adopt) and release it themselves.
//
// Execution target: batcherSetTarget(batcher, executor) makes the batcher
// thread hand sealed batches straight to that executor (batcher_dispatch.h);
// each comes back as one 'executed' event, held like a 'batch' (inputs and
// outputs) until released. batcherView indices past the inputs are the
// outputs of an executed batch.
//
// Lifetime: the env table and the TSFN context share each instance. JS stop
// (or the env cleanup hook) stops the batcher thread before the TSFN goes
// away; the TSFN finalizer also stops it, as a backstop. The TSFN keeps the
// event loop alive only while requests or markers are outstanding.
#pragma once

#include <napi.h>

#include "napi/executor_registry.h"

namespace hotpath::napi {

// Adds the batcher* functions (see src/native/batcher-binding-types.ts for
// their exact shapes). Call once per environment, after the arena and
// executor bindings, so this environment's batchers stop before its
// executors and arenas are cleaned up. `executors` (batcherSetTarget's
// lookup) is borrowed; it outlives every JS call.
void RegisterBatcherBinding(Napi::Env env, Napi::Object exports, ExecutorRegistry& executors);

}  // namespace hotpath::napi
