// The native dense-graph executor of one model version: compile once, run a
// flat list (see STYLE.md, "The executor").
//
//   auto exec = Executor::Create(plan, {.instances = 2, .device = HostDevice(),
//                                       .arena = arena, .tenant = t, .owner = model});
//   exec.value()->Submit({.rows = 8, .inputs = {...}, .outputs = {...},
//                         .done = [](ExecOutcome o) { ... }});
//
// Create compiles the plan (compiler.h): op support, shape inference with the
// batch dimension symbolic, kernel selection and fusion, and memory planning
// (every activation at an offset in one workspace sized for max_batch_size).
// It then allocates from `arena`, charged to `tenant` under `owner`: one
// block for the weights (uploaded once) and one workspace block per instance.
// Nothing is allocated on the request path.
//
// Each instance has its own thread and stream. A job's inputs are copied into
// the workspace (from pinned staging on CUDA), the kernels run, the outputs
// are copied out, and the stream is synchronised once; then `done` is called
// on that instance thread, exactly once per job.
//
// Faults: a device failure fails the job with its FaultClass. After a sticky
// fault the executor is dead: later jobs fail at once with the same fault.
// InjectFault (test hook, any device) makes the next job fail as a device
// error of the given class without touching the device.
//
// Thread-safety: every public member may be called from any thread. `done`
// runs on an instance thread with no executor lock held (or on the calling
// thread of Submit/Stop for a job refused or failed there); it may call
// Submit, Stop, or even drop the last reference to the Executor (that
// instance thread then finishes on its own, keeping the internal state alive
// until it has left its loop).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "common/result.h"
#include "executor/device_runtime.h"
#include "executor/plan.h"

namespace hotpath::executor {

namespace detail {
struct ExecutorState;
}

struct ExecutorConfig {
  uint32_t instances = 1;  // >= 1: threads (and streams) running jobs
  std::shared_ptr<ExecDevice> device;  // HostDevice() or MakeCudaDevice(n)
  // Where weights and workspaces live: device memory for a CUDA device,
  // host-accessible memory for the host device (checked).
  std::shared_ptr<arena::Arena> arena;
  arena::TenantId tenant = arena::kDefaultTenant;
  arena::OwnerId owner = arena::kNoOwner;
};

// A graph input or output as the executor sees it.
struct IoSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;  // -1 for the batch dimension
};

struct ExecInput {
  const void* data = nullptr;  // host memory, read until `done`
  uint64_t bytes = 0;
};
struct ExecOutput {
  void* data = nullptr;  // host memory, written before `done`
  uint64_t bytes = 0;
};

// Each phase's own time, from the stream's timing marks (ExecStream::Mark):
// CUDA events on a device (the device's time for the copies and kernels,
// about 0.5 us resolution), the clock on host.
struct ExecTiming {
  uint64_t input_ns = 0;    // copies in
  uint64_t compute_ns = 0;  // kernels
  uint64_t output_ns = 0;   // copies out
};

struct ExecOutcome {
  Status status;
  FaultClass fault = FaultClass::kNone;
  ExecTiming timing;
};

struct ExecJob {
  // Batch rows, in [1, max_batch_size]; ignored (use 1) when the model does
  // not batch. Input i must hold exactly InputBytes(i, rows) bytes and output
  // i must have room for OutputBytes(i, rows).
  uint32_t rows = 1;
  std::vector<ExecInput> inputs;    // model input order
  std::vector<ExecOutput> outputs;  // model output order
  std::function<void(ExecOutcome)> done;
};

struct ExecutorStats {
  uint64_t executions = 0;     // jobs that ran to success
  uint64_t rows = 0;           // rows in those jobs
  uint64_t failures = 0;       // jobs that failed (any reason)
  uint64_t device_faults = 0;  // of which device faults (real or injected)
  uint64_t queued = 0;         // submitted, not yet started
  uint64_t compute_ns = 0;     // summed over successful jobs
};

class Executor {
 public:
  // INVALID_ARGUMENT for a malformed plan or config; FAILED_PRECONDITION
  // naming the op and node for an unsupported graph; RESOURCE_EXHAUSTED from
  // the arena; UNAVAILABLE (with a FaultClass in the message) when the device
  // fails during set-up.
  static Result<std::unique_ptr<Executor>> Create(const GraphPlan& plan, ExecutorConfig config);
  ~Executor();  // Stop(), then releases every arena block it holds
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const std::vector<IoSpec>& inputs() const;
  const std::vector<IoSpec>& outputs() const;
  uint32_t max_batch_size() const;
  uint64_t InputBytes(size_t input, uint32_t rows) const;
  uint64_t OutputBytes(size_t output, uint32_t rows) const;
  // The output's shape for `rows` rows (the batch dimension filled in).
  std::vector<int64_t> OutputShape(size_t output, uint32_t rows) const;

  const char* device_kind() const;  // "host" or "cuda"
  const char* kernels_name() const;  // "host", "cuda" or "cuda+cublas"
  uint64_t weights_bytes() const;    // arena bytes for the weights
  uint64_t workspace_bytes() const;  // arena bytes per instance
  uint32_t instances() const;
  // Steps in the compiled list (after fusion), for logs.
  uint32_t step_count() const;

  // Queues a job. A job whose sizes do not match gets INVALID_ARGUMENT through
  // `done` (on the calling thread); after Stop, UNAVAILABLE.
  void Submit(ExecJob job);

  // Test hook: the next job fails with a simulated device error of `fault`
  // (kSticky also marks the executor dead). kNone clears a pending one.
  void InjectFault(FaultClass fault);
  // True after a sticky fault (real or injected).
  bool dead() const;

  ExecutorStats Stats() const;

  // Stops accepting jobs, fails queued ones with UNAVAILABLE, waits for
  // running ones and joins the threads. Idempotent.
  void Stop();

 private:
  explicit Executor(std::shared_ptr<detail::ExecutorState> state);
  // Shared with the instance threads, so one that destroys the executor
  // from a `done` callback can still finish its loop.
  std::shared_ptr<detail::ExecutorState> state_;
};

}  // namespace hotpath::executor
