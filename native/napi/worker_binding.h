// worker* bindings: the native hand-off between a batcher and onnxruntime
// workers (batcher/worker_pool_target.h), for src/native/worker-channel.ts.
//
// Main thread: workerPoolCreate / workerPoolClose / workerPoolStats (one pool
// per worker generation; batcherSetWorkerTarget points a batcher at it).
// Worker thread: workerChannelOpen(pool, onBatch) registers the worker; each
// job arrives on the worker's own event loop as onBatch({token, rows, inputs,
// outputs}) with the batch's arena memory as external ArrayBuffers (no copy);
// workerBatchDone(token, outcome) completes it, which detaches those buffers.
//
// Lifetime: a channel's ThreadSafeFunction lives in the worker's environment
// (unref'd: it never keeps the worker alive). The environment's cleanup hook
// removes its channels, failing a batch still running with WORKER_CRASHED
// (the worker exited or crashed mid-batch), and closes the pools it created.
// Channel state is freed by the TSFN finalizer, after that hook.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Call once per environment, before the batcher binding.
void RegisterWorkerBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
