// JS bindings for the dynamic batcher (native/batcher). Paired with
// src/native/batcher.ts, which validates options and requests, keeps the
// per-request promises and throws typed errors; these functions only
// translate, with guard checks.
//
// Batchers are process-wide (batcher/batcher_registry.h): batcherCreate
// starts one, owned by the calling environment, and returns its registry
// id; any other environment of the process (a door thread) may
// batcherAttach to it by that id and enqueue. Each environment that uses
// batchers is a door (napi/batcher_door.h) with ONE ThreadSafeFunction: the
// answers to the requests it enqueued (sealed or executed batches,
// rejections) and its markers (flush, stop) arrive through that queue, sent
// straight from the native thread that produced them, never through another
// JS thread. Markers travel in the same FIFO queue, so a marker arriving
// means every event queued for that door before it has been delivered.
//
// Who may call what: the creating environment alone stops a batcher and sets
// its target, and alone receives target-less 'batch' events (JS runs them
// there; other doors' requests in such a batch are rejected SHUTDOWN).
// Every attached environment enqueues, flushes, reads stats and gives
// instances back. batcherStop (or the creator's environment teardown)
// rejects the pending requests of every door with SHUTDOWN.
//
// Ownership of batch memory: a delivered batch is held by the door that
// received it (one share of the batch per door with requests in it) until
// JS calls batcherReleaseBatch in that environment, or the environment is
// torn down; the buffers (arena references) go with the last share.
// Workers that map a block take their own arena reference (Arena.adopt)
// and release it themselves.
//
// Execution target: batcherSetTarget(batcher, executor) makes the batcher
// thread hand sealed batches straight to that executor
// (batcher/batch_dispatch.h); each comes back as one 'executed' event per
// door, held like a 'batch' (inputs and outputs) until released.
// batcherView indices past the inputs are the outputs of an executed batch.
//
// Lifetime: a door's environment teardown stops the batchers it created
// (joining their threads), then closes the door: answers still due to it
// from other environments' batchers are dropped, releasing their shares.
// The door's TSFN keeps the event loop alive only while this environment
// has requests or markers outstanding.
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
