// The native executor as a batcher ExecutionTarget: a sealed batch goes from
// the batcher thread straight onto an executor instance's queue, with no hop
// through JavaScript.
//
//   auto target = std::make_shared<ExecutorTarget>(executor, output_memory, model_owner);
//   target->Execute(std::move(batch), [](SealedBatch b, BatchOutcome o) { ... });
//
// Execute checks the batch against the executor's inputs (shapes and bytes;
// a mismatch fails it as kInvalid at once), allocates one output buffer per
// output from `output_memory` (over quota: kResourceExhausted), submits a job
// that reads the batch's input buffers in place and writes the outputs, and
// returns. The batch travels inside the job and comes back, intact, through
// `done` (on the executor's instance thread, or on the calling thread when it
// fails before submission), so a caller can re-run it elsewhere.
//
// Outcome mapping: a sticky device fault -> kDeviceLost, a transient one ->
// kDeviceTransient, INVALID_ARGUMENT (e.g. a Gather index out of range) ->
// kInvalid, a stopped executor -> kShutdown, anything else -> kInternal.
//
// Thread-safety: Execute may be called from any thread (the batcher's);
// it never blocks on the device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "batcher/batch_memory.h"
#include "batcher/execution_target.h"
#include "executor/executor.h"

namespace hotpath::executor {

class ExecutorTarget final : public batcher::ExecutionTarget {
 public:
  // `output_memory` must be host-accessible (outputs are written by the
  // executor's CopyOut and read by the response path). `memory_owner` goes
  // into each output's BufferSpec::owner.
  ExecutorTarget(std::shared_ptr<Executor> executor,
                 std::shared_ptr<batcher::BatchMemory> output_memory, uint64_t memory_owner);

  void Execute(batcher::SealedBatch batch,
               std::function<void(batcher::SealedBatch, batcher::BatchOutcome)> done) override;

  const std::shared_ptr<Executor>& executor() const { return executor_; }

 private:
  const std::shared_ptr<Executor> executor_;
  const std::shared_ptr<batcher::BatchMemory> output_memory_;
  const uint64_t memory_owner_;
};

// The BatchOutcome failure for an executor outcome (kNone when it succeeded).
batcher::ExecutionFailure FailureFor(const ExecOutcome& outcome);

}  // namespace hotpath::executor
