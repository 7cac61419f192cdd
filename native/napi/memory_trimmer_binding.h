// JS bindings for the process's memory trimmer (process/memory_trimmer.h):
// a native thread that gives freed heap memory back to the system after
// bursts. Paired with src/native/memory-trimmer.ts. Translation only.
//
// The environment that starts the trimmer stops it (and joins its thread) in
// its cleanup hook, so a worker that exits never leaves it running.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds:
//   memoryTrimmerSupported(): boolean          glibc's malloc_trim exists
//   memoryTrimmerStart({intervalMs, minExcessBytes, excessRatio, minGrowthBytes}): result
//   memoryTrimmerStop(): undefined
//   memoryTrimmerReport(accountedBytes: number): undefined
//   memoryTrimmerRequest(): undefined          one trim at the next check
//   memoryTrimmerStats(): {checks, trims, releasedBytes, lastRssBytes,
//                          accountedBytes, failures, lastError} | null
void RegisterMemoryTrimmerBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
