// Conversions between JS values and batcher types for batcher_binding.cc.
// Guard checks only: src/native/batcher-options.ts validates every field
// first and reports mistakes in JS terms. JS thread only.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "batcher/batcher.h"
#include "batcher/batcher_registry.h"
#include "batcher/doors.h"
#include "batcher/execution_target.h"
#include "common/result.h"

namespace hotpath::napi {

// batcher/batcher_registry.h's: read at create, kept by the registry.
using DimsTemplate = batcher::DimsTemplate;

// Everything batcherCreate needs besides the event callback.
struct BatcherCreateArgs {
  batcher::BatcherConfig config;
  std::string arena;   // registered arena name
  std::string tenant;  // tenant name in that arena
  bool manual_clock = false;
  std::vector<DimsTemplate> input_dims;  // config.input_count entries, model order
};

// The raw config object of src/native/batcher-binding-types.ts (RawBatcherConfig).
Result<BatcherCreateArgs> ToBatcherCreateArgs(const Napi::Value& value);

// One enqueue's inputs: `inputs` (TypedArrays, borrowed for the call), one
// per model input, and `variable_dims`: null when no template has a -1,
// otherwise an array of `variable_count` non-negative integers, the -1
// entries of the templates in order. Each input's dims are its template with
// those filled in. Inputs past the templates get no dims (the batcher then
// refuses the request for its input count). `out` may be reused across
// calls: its vectors keep their capacity.
Status ToRequestInputs(const Napi::Value& inputs, const Napi::Value& variable_dims,
                       const std::vector<DimsTemplate>& templates, uint32_t variable_count,
                       std::vector<batcher::RequestInput>* out);

// {type:'batch', batchId, rows, requests:[...], inputs:[{blockId, bytes, capacity, shape}]}.
// `requests` are the receiving door's (a batch may hold other doors' too);
// `rows` counts the whole batch.
Napi::Object SealedBatchToJs(Napi::Env env, const batcher::SealedBatch& batch,
                             const std::vector<batcher::SealedRequest>& requests);
// The 'batch' payload with type 'executed', plus {ok, code, message, failure,
// outputs:[{blockId, bytes, shape}], timing:{inputNs, computeNs, outputNs}}:
// the outputs from `shared`, their shapes, the status and the timing from
// `outcome`.
Napi::Object ExecutedBatchToJs(Napi::Env env, const batcher::SharedBatch& shared,
                               const std::vector<batcher::SealedRequest>& requests,
                               const batcher::BatchOutcome& outcome);
// {type:'rejected', requests:[{id, sequence, reason, code, message, queueNs}]}
Napi::Object RejectedToJs(Napi::Env env, const std::vector<batcher::RejectedRequest>& rejected);
// BatcherStats in camelCase, plus heldBatches (delivered, not yet released).
Napi::Object BatcherStatsToJs(Napi::Env env, const batcher::BatcherStats& stats, uint64_t held_batches);

}  // namespace hotpath::napi
