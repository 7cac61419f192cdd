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
#include <vector>

#include "batcher/batch_memory.h"
#include "batcher/batcher.h"
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
