// Names of the typed execution failures (execution_target.h).
#include "batcher/execution_target.h"

namespace hotpath::batcher {

const char* ExecutionFailureName(ExecutionFailure failure) {
  switch (failure) {
    case ExecutionFailure::kNone: return "NONE";
    case ExecutionFailure::kInvalid: return "INVALID";
    case ExecutionFailure::kDeviceTransient: return "DEVICE_TRANSIENT";
    case ExecutionFailure::kDeviceLost: return "DEVICE_LOST";
    case ExecutionFailure::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case ExecutionFailure::kShutdown: return "SHUTDOWN";
    case ExecutionFailure::kInternal: return "INTERNAL";
    case ExecutionFailure::kWorkerCrashed: return "WORKER_CRASHED";
    case ExecutionFailure::kDeadline: return "DEADLINE";
  }
  return "INTERNAL";
}

}  // namespace hotpath::batcher
