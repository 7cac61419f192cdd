// Conversions between JS values and batcher types for batcher_binding.cc.
// Guard checks only: src/native/batcher-options.ts validates every field
// first and reports mistakes in JS terms. JS thread only.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "batcher/batcher.h"
#include "batcher/execution_target.h"
#include "common/result.h"

namespace hotpath::napi {

// Everything batcherCreate needs besides the event callback.
struct BatcherCreateArgs {
  batcher::BatcherConfig config;
  std::string arena;   // registered arena name
  std::string tenant;  // tenant name in that arena
  bool manual_clock = false;
};

// The raw config object of src/native/batcher-binding-types.ts (RawBatcherConfig).
Result<BatcherCreateArgs> ToBatcherCreateArgs(const Napi::Value& value);

// One enqueue's inputs: `inputs` (TypedArrays, borrowed for the call) and
// `dims` (arrays of non-negative integers), one per model input.
Status ToRequestInputs(const Napi::Value& inputs, const Napi::Value& dims,
                       std::vector<batcher::RequestInput>* out);

// {type:'batch', batchId, rows, requests:[...], inputs:[{blockId, bytes, capacity, shape}]}
Napi::Object SealedBatchToJs(Napi::Env env, const batcher::SealedBatch& batch);
// The 'batch' payload with type 'executed', plus {ok, code, message, failure,
// outputs:[{blockId, bytes, shape}], timing:{inputNs, computeNs, outputNs}}.
Napi::Object ExecutedBatchToJs(Napi::Env env, const batcher::SealedBatch& batch, const batcher::BatchOutcome& outcome);
// {type:'rejected', requests:[{id, sequence, reason, code, message, queueNs}]}
Napi::Object RejectedToJs(Napi::Env env, const std::vector<batcher::RejectedRequest>& rejected);
// BatcherStats in camelCase, plus heldBatches (delivered, not yet released).
Napi::Object BatcherStatsToJs(Napi::Env env, const batcher::BatcherStats& stats, uint64_t held_batches);

}  // namespace hotpath::napi
