// Conversions between JS values and arena types for arena_binding.cc.
// JS thread only. Numbers are exact up to 2^53 bytes.
#pragma once

#include <napi.h>

#include <cstdint>
#include <string>

#include "arena/arena.h"
#include "common/result.h"

namespace hotpath::napi {

// A non-negative integer JS number, or INVALID_ARGUMENT naming `what`.
Result<uint64_t> ToU64(const Napi::Value& value, const char* what);
Result<std::string> ToText(const Napi::Value& value, const char* what);
// {backend, capacityBytes, segmentBytes, maxSplitBytes, smallMaxBytes, deviceOrdinal};
// absent fields keep the C++ defaults.
Result<arena::ArenaConfig> ToArenaConfig(const Napi::Value& value);

Napi::Object StatsToJs(Napi::Env env, const arena::ArenaStats& stats);
Napi::Object SummaryToJs(Napi::Env env, const arena::ReleaseSummary& summary);
Napi::Object EvictionToJs(Napi::Env env, const arena::EvictionInfo& info);
// An error result (result_js.h) plus `detail` for quota and out-of-memory failures:
// {kind:'quota', tenant, requested, used, quota} or {kind:'oom', tenant, requested, holders}.
Napi::Object FailureResult(Napi::Env env, const Status& status, const arena::Failure& failure);

}  // namespace hotpath::napi
