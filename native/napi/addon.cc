// hotpath_native module entry: a registry. It installs the per-environment
// state and registers each binding's exports; all logic lives in
// native/common, native/device, native/arena, native/batcher,
// native/executor and native/process, all translation in the *_binding.cc files next to this one.
//
// Runs once per environment (main thread and each worker thread).
#include <napi.h>

#include "napi/addon_data.h"
#include "napi/arena_binding.h"
#include "napi/batcher_binding.h"
#include "napi/build_info_binding.h"
#include "napi/device_binding.h"
#include "napi/executor_binding.h"
#include "napi/failure_vocabulary_binding.h"
#include "napi/memory_trimmer_binding.h"
#include "napi/process_exit_binding.h"
#include "napi/socket_handoff_binding.h"
#include "napi/worker_binding.h"

namespace {

// NODE_API_MODULE needs a plain identifier, hence file scope.
Napi::Object Init(Napi::Env env, Napi::Object exports) {
  hotpath::napi::AddonData::Install(env);
  hotpath::napi::RegisterBuildInfoBinding(env, exports);
  hotpath::napi::RegisterDeviceBinding(env, exports);
  hotpath::napi::RegisterFailureVocabularyBinding(env, exports);
  hotpath::napi::RegisterProcessExitBinding(env, exports);
  hotpath::napi::RegisterSocketHandoffBinding(env, exports);
  // Registered before the others, so its cleanup hook (stopping the trimmer) runs after theirs.
  hotpath::napi::RegisterMemoryTrimmerBinding(env, exports);
  hotpath::napi::RegisterArenaBinding(env, exports);
  // Cleanup hooks run in reverse: batchers stop first, then executors, then arenas.
  hotpath::napi::ExecutorRegistry& executors = hotpath::napi::RegisterExecutorBinding(env, exports);
  // Worker pools close after the batchers that feed them have stopped; a
  // worker's channels go (failing what they run) when its environment does.
  hotpath::napi::RegisterWorkerBinding(env, exports);
  hotpath::napi::RegisterBatcherBinding(env, exports, executors);
  return exports;
}

}  // namespace

NODE_API_MODULE(hotpath_native, Init)
