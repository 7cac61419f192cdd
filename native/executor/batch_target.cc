// ExecutorTarget: sealed batch -> executor job -> BatchOutcome
// (batch_target.h).
#include "executor/batch_target.h"

#include <string>
#include <utility>
#include <vector>

namespace hotpath::executor {

using batcher::BatchBuffer;
using batcher::BatchOutcome;
using batcher::ExecutionFailure;
using batcher::SealedBatch;

namespace {

BatchOutcome Failure(ExecutionFailure failure, Status status) {
  BatchOutcome outcome;
  outcome.status = std::move(status);
  outcome.failure = failure;
  return outcome;
}

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) out += (i > 0 ? "," : "") + std::to_string(dims[i]);
  return out + "]";
}

// The batch's input shapes against the model's: [rows, dims[1:]...] when
// batching, the full dims otherwise.
Status CheckBatch(const Executor& executor, const SealedBatch& batch, uint32_t rows) {
  const std::vector<IoSpec>& inputs = executor.inputs();
  if (batch.inputs.size() != inputs.size()) {
    return Status(StatusCode::kInvalidArgument, "batch has " + std::to_string(batch.inputs.size()) +
                                                    " inputs, the model " + std::to_string(inputs.size()));
  }
  if (executor.max_batch_size() > 0 && (rows < 1 || rows > executor.max_batch_size())) {
    return Status(StatusCode::kInvalidArgument, "batch of " + std::to_string(rows) +
                                                    " rows; max_batch_size is " +
                                                    std::to_string(executor.max_batch_size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::vector<int64_t> expected = inputs[i].dims;
    if (executor.max_batch_size() > 0 && !expected.empty()) expected[0] = rows;
    const batcher::SealedInput& input = batch.inputs[i];
    const uint64_t bytes = executor.InputBytes(i, rows);
    if (input.shape != expected || input.bytes != bytes || input.buffer.capacity() < bytes) {
      return Status(StatusCode::kInvalidArgument,
                    "input '" + inputs[i].name + "': expected shape " + ShapeText(expected) + " (" +
                        std::to_string(bytes) + " bytes), got " + ShapeText(input.shape) + " (" +
                        std::to_string(input.bytes) + " bytes)");
    }
  }
  return Status::Ok();
}

// The rows the executor runs: the leading dimension of the batch's inputs
// when the model batches. That is batch.rows when the batcher batches too; a
// batcher in max_batch_size-0 mode (a model without dynamic_batching: one
// request per batch) passes each request's full shape, rows included.
uint32_t RowsOf(const Executor& executor, const SealedBatch& batch) {
  if (executor.max_batch_size() == 0) return 1;
  if (batch.inputs.empty() || batch.inputs[0].shape.empty()) return batch.rows;
  const int64_t leading = batch.inputs[0].shape[0];
  // Out of range is refused by CheckBatch (0 stands for "not a row count").
  return leading >= 0 && leading <= static_cast<int64_t>(executor.max_batch_size()) ? static_cast<uint32_t>(leading) : 0;
}

// What travels inside the job: the batch, its outputs and the caller's
// callback. Shared because ExecJob::done must be copyable.
struct Pending {
  SealedBatch batch;
  std::vector<BatchBuffer> outputs;
  std::function<void(SealedBatch, BatchOutcome)> done;
};

}  // namespace

ExecutionFailure FailureFor(const ExecOutcome& outcome) {
  if (outcome.status.ok()) return ExecutionFailure::kNone;
  if (outcome.fault == FaultClass::kSticky) return ExecutionFailure::kDeviceLost;
  if (outcome.fault == FaultClass::kTransient) return ExecutionFailure::kDeviceTransient;
  switch (outcome.status.code()) {
    case StatusCode::kInvalidArgument: return ExecutionFailure::kInvalid;
    // The executor's only UNAVAILABLE without a device fault is "stopped".
    case StatusCode::kUnavailable: return ExecutionFailure::kShutdown;
    default: return ExecutionFailure::kInternal;
  }
}

ExecutorTarget::ExecutorTarget(std::shared_ptr<Executor> executor,
                               std::shared_ptr<batcher::BatchMemory> output_memory, uint64_t memory_owner)
    : executor_(std::move(executor)), output_memory_(std::move(output_memory)), memory_owner_(memory_owner) {}

void ExecutorTarget::Execute(SealedBatch batch, std::function<void(SealedBatch, BatchOutcome)> done) {
  Executor& executor = *executor_;
  const uint32_t rows = RowsOf(executor, batch);
  if (Status valid = CheckBatch(executor, batch, rows); !valid.ok()) {
    done(std::move(batch), Failure(ExecutionFailure::kInvalid, std::move(valid)));
    return;
  }
  auto pending = std::make_shared<Pending>();
  ExecJob job;
  job.rows = rows;
  for (size_t i = 0; i < executor.outputs().size(); ++i) {
    const uint64_t bytes = executor.OutputBytes(i, rows);
    const batcher::BufferSpec spec{memory_owner_, batch.batch_id, static_cast<uint32_t>(i), bytes};
    Result<batcher::MemoryBlock> block = output_memory_->Allocate(spec);
    if (!block.ok()) {
      pending->outputs.clear();  // frees what was allocated
      done(std::move(batch), Failure(batcher::FailureOfAllocation(block.status()), block.status()));
      return;
    }
    pending->outputs.emplace_back(output_memory_, block.value(), spec);
    job.outputs.push_back(ExecOutput{block.value().data, bytes});
  }
  for (const batcher::SealedInput& input : batch.inputs) {
    job.inputs.push_back(ExecInput{input.buffer.data(), input.bytes});
  }
  pending->batch = std::move(batch);
  pending->done = std::move(done);
  // A reference, not the shared_ptr: the executor outlives its jobs (its
  // destructor fails the queued ones and joins the running ones), and a job
  // holding the last reference would destroy it from its own callback.
  job.done = [pending, &executor, rows](ExecOutcome result) {
    BatchOutcome outcome;
    outcome.status = std::move(result.status);
    outcome.failure = FailureFor(ExecOutcome{outcome.status, result.fault, {}});
    outcome.input_ns = result.timing.input_ns;
    outcome.compute_ns = result.timing.compute_ns;
    outcome.output_ns = result.timing.output_ns;
    if (outcome.status.ok()) {
      for (size_t i = 0; i < pending->outputs.size(); ++i) {
        outcome.output_bytes.push_back(executor.OutputBytes(i, rows));
        outcome.output_shapes.push_back(executor.OutputShape(i, rows));
      }
      outcome.outputs = std::move(pending->outputs);
    }
    pending->outputs.clear();
    auto callback = std::move(pending->done);
    callback(std::move(pending->batch), std::move(outcome));
  };
  executor.Submit(std::move(job));
}

}  // namespace hotpath::executor
