// The batch-to-execution handoff: the one interface through which a sealed
// batch leaves the batcher thread for whatever runs it, with no round trip
// through JavaScript. The native executor implements it
// (executor/batch_target.h); an onnxruntime worker target (the request-path
// issue) is meant to implement the same.
//
// Thread-safety: Execute is called on the batcher thread, or on a thread
// inside Batcher::Enqueue (the JS main thread) that sealed a ready batch
// itself, and must not block
// (queue the work and return). `done` may be called on any thread, exactly
// once per Execute.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/batcher.h"
#include "common/failure_kind.h"
#include "common/status.h"

namespace hotpath::batcher {

// Why an executed batch failed, typed so the caller never guesses from text.
enum class ExecutionFailure : int32_t {
  kNone,
  kInvalid,          // the batch's data was refused (e.g. an index out of range)
  kDeviceTransient,  // a device error the device recovers from
  kDeviceLost,       // a sticky device error: the device is unusable now
  kResourceExhausted,  // output memory over quota
  kShutdown,         // the target stopped before running it
  kInternal,
  kWorkerCrashed,    // the onnxruntime worker running it exited: the batch may re-run
  kDeadline,         // its requests' deadline passed before it ran
};
// "NONE", "INVALID", "DEVICE_TRANSIENT", "DEVICE_LOST", "RESOURCE_EXHAUSTED",
// "SHUTDOWN", "INTERNAL", "WORKER_CRASHED", "DEADLINE". Never null.
const char* ExecutionFailureName(ExecutionFailure failure);

// Every failure, kNone first (for tests and the exported vocabulary).
inline constexpr ExecutionFailure kAllExecutionFailures[] = {
    ExecutionFailure::kNone,     ExecutionFailure::kInvalid,  ExecutionFailure::kDeviceTransient,
    ExecutionFailure::kDeviceLost, ExecutionFailure::kResourceExhausted, ExecutionFailure::kShutdown,
    ExecutionFailure::kInternal, ExecutionFailure::kWorkerCrashed, ExecutionFailure::kDeadline,
};

// The status code of a failure known only by its type (a worker's report):
// INVALID_ARGUMENT, UNAVAILABLE for the device faults, SHUTDOWN and
// WORKER_CRASHED, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED, INTERNAL; OK for kNone.
StatusCode StatusCodeOf(ExecutionFailure failure);

// Its kind in the shared vocabulary (common/failure_kind.h). The device
// faults are 'unavailable' (a caller normally re-runs the batch on the CPU
// instead of failing it); kNone is 'internal' (a failed outcome that names
// no failure is a bug).
FailureKind KindOf(ExecutionFailure failure);

// Whether an onnxruntime worker may report this failure by name
// (workerBatchDone; TypeScript's WorkerFailure): INVALID, INTERNAL, DEADLINE,
// RESOURCE_EXHAUSTED. The others are decided natively, never by a worker.
bool WorkerMayReport(ExecutionFailure failure);

// The failure a worker reported by `name`, if it is one WorkerMayReport
// allows; nullopt otherwise.
std::optional<ExecutionFailure> WorkerFailureNamed(std::string_view name);

// What a batch whose output memory could not be allocated fails with:
// RESOURCE_EXHAUSTED when the memory refused for room (a quota, the arena's
// capacity), INTERNAL for anything else.
ExecutionFailure FailureOfAllocation(const Status& status);

struct BatchOutcome {
  Status status;  // OK, or why the batch failed
  ExecutionFailure failure = ExecutionFailure::kNone;
  // Model output order; host-accessible, valid when status is OK.
  std::vector<BatchBuffer> outputs;
  std::vector<uint64_t> output_bytes;
  std::vector<std::vector<int64_t>> output_shapes;
  uint64_t input_ns = 0, compute_ns = 0, output_ns = 0;
};

class ExecutionTarget {
 public:
  virtual ~ExecutionTarget() = default;
  // Takes the batch and runs it. `done` receives the batch back (its host
  // input buffers intact, so a caller can re-run it elsewhere) and the
  // outcome.
  virtual void Execute(SealedBatch batch, std::function<void(SealedBatch, BatchOutcome)> done) = 0;
};

}  // namespace hotpath::batcher
