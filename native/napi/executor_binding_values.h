// Conversions between JS values and executor types for executor_binding.cc
// (and the batcher binding's 'executed' events). Guard checks only:
// src/native/executor-options.ts and src/executor/onnx-plan.ts shape the
// values first; every mistake here is INVALID_ARGUMENT naming the field
// ("plan.tensors[3].dims[1] must be an integer"). JS thread only.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "executor/executor.h"
#include "executor/plan.h"

namespace hotpath::napi {

// Everything executorCreate needs besides the plan and the event callback.
struct ExecutorCreateArgs {
  std::string arena;   // registered arena name
  std::string tenant;  // tenant name in that arena
  uint64_t owner = 0;  // arena owner id
  uint32_t instances = 1;
  bool cuda = false;  // device 'cuda' (else 'host')
  int device_ordinal = 0;
};

// The JS ExecutorPlan of src/native/executor-binding-types.ts. Initializer
// data is copied (JS memory may move).
Result<executor::GraphPlan> ToGraphPlan(const Napi::Value& value);
// RawExecutorOptions.
Result<ExecutorCreateArgs> ToExecutorCreateArgs(const Napi::Value& value);
// 'none' | 'transient' | 'sticky'.
Result<executor::FaultClass> ToFaultClass(const Napi::Value& value);

Napi::Array DimsToJs(Napi::Env env, const std::vector<int64_t>& dims);
// {inputNs, computeNs, outputNs}
Napi::Object TimingToJs(Napi::Env env, uint64_t input_ns, uint64_t compute_ns, uint64_t output_ns);
// RawExecutorInfo: {id, inputs, outputs, kernels, deviceKind, weightsBytes, ...}
Napi::Object ExecutorInfoToJs(Napi::Env env, uint32_t id, const executor::Executor& executor);
// RawExecutorStats
Napi::Object ExecutorStatsToJs(Napi::Env env, const executor::ExecutorStats& stats, bool dead);

}  // namespace hotpath::napi
