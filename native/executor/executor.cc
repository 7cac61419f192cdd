// The executor: set-up (compile, arena blocks, upload, streams, threads), the
// job queue and the instance loop that walks the compiled steps.
#include "executor/executor.h"

#include <functional>
#include <string>
#include <system_error>
#include <utility>

#include "executor/detail/executor_state.h"
#include "executor/detail/shape_math.h"
#include "executor/detail/step_runner.h"

namespace hotpath::executor {

using detail::ExecutorState;
using detail::Instance;

namespace {

constexpr uint32_t kMaxInstances = 256;

std::string Prefix(const ExecutorState& s) { return "executor '" + s.program.model_name + "': "; }

ExecOutcome Failed(StatusCode code, std::string message, FaultClass fault = FaultClass::kNone) {
  ExecOutcome outcome;
  outcome.status = Status(code, std::move(message));
  outcome.fault = fault;
  return outcome;
}

// Requires nothing held. Records a sticky fault: the executor is dead from now on.
void MarkDead(ExecutorState& s, const std::string& reason) {
  std::lock_guard<std::mutex> guard(s.mu);
  if (!s.dead.load()) {
    s.dead_reason = reason;
    s.dead.store(true);
  }
}

ExecOutcome DeadOutcome(ExecutorState& s) {
  std::string reason;
  {
    std::lock_guard<std::mutex> guard(s.mu);
    reason = s.dead_reason;
  }
  return Failed(StatusCode::kUnavailable,
                Prefix(s) + "the device was lost earlier (sticky fault: " + reason + ")",
                FaultClass::kSticky);
}

const std::byte* RegionBase(const ExecutorState& s, const Instance& instance, detail::Region region) {
  return region == detail::Region::kWorkspace ? instance.workspace : s.weights;
}

// Runs one job on `instance` (its thread). Copies in, the steps, copies out,
// one synchronisation.
ExecOutcome RunJob(ExecutorState& s, Instance& instance, const ExecJob& job) {
  const FaultClass injected = static_cast<FaultClass>(
      s.injected.exchange(static_cast<int32_t>(FaultClass::kNone)));
  if (injected != FaultClass::kNone) {
    const std::string what = std::string("injected ") + FaultClassName(injected) + " device fault (test hook)";
    if (injected == FaultClass::kSticky) MarkDead(s, what);
    return Failed(StatusCode::kUnavailable, Prefix(s) + what, injected);
  }
  if (s.dead.load()) return DeadOutcome(s);

  const Program& program = s.program;
  const int64_t rows = program.EffectiveRows(job.rows);
  ExecStream& stream = *instance.stream;
  const KernelContext context = stream.context();
  ExecOutcome outcome;
  auto fail = [&](const ExecStatus& failure) {
    outcome.status = Status(failure.status.code(), Prefix(s) + failure.status.message());
    outcome.fault = failure.fault;
    if (failure.fault == FaultClass::kSticky) MarkDead(s, failure.status.message());
    return outcome;
  };

  // Timing: the stream's marks (CUDA events on a device, so each phase is
  // the device's own time, not the queuing the host clock would see).
  ExecStatus marked = stream.Mark(0);
  if (!marked.ok()) return fail(marked);
  for (size_t i = 0; i < program.inputs.size(); ++i) {
    const ProgramIo& io = program.inputs[i];
    ExecStatus copied = stream.CopyIn(instance.workspace + io.ref.offset, job.inputs[i].data,
                                      static_cast<size_t>(io.bytes.At(rows)));
    if (!copied.ok()) return fail(copied);
  }
  marked = stream.Mark(1);
  if (!marked.ok()) return fail(marked);
  const KernelSet& kernels = s.config.device->kernels();
  for (const detail::Step& step : program.steps) {
    Status ran = detail::RunStep(step, kernels, context, instance.workspace, s.weights, rows);
    if (ran.ok()) continue;
    // Drain the stream: a device fault behind the kernel's error takes
    // precedence. A launch error with no fault is still the device's unless
    // it is a guard check (INVALID_ARGUMENT) or the device is the host.
    ExecStatus drained = stream.Synchronize();
    if (!drained.ok() && drained.fault != FaultClass::kNone) return fail(drained);
    const bool device_error = std::string(s.config.device->kind()) != "host" &&
                              ran.code() != StatusCode::kInvalidArgument;
    return fail({ran, device_error ? FaultClass::kTransient : FaultClass::kNone});
  }
  marked = stream.Mark(2);
  if (!marked.ok()) return fail(marked);
  for (size_t i = 0; i < program.outputs.size(); ++i) {
    const ProgramIo& io = program.outputs[i];
    ExecStatus copied = stream.CopyOut(job.outputs[i].data, RegionBase(s, instance, io.ref.region) + io.ref.offset,
                                       static_cast<size_t>(io.bytes.At(rows)));
    if (!copied.ok()) return fail(copied);
  }
  marked = stream.Mark(3);
  if (!marked.ok()) return fail(marked);
  ExecStatus synced = stream.Synchronize();
  if (!synced.ok()) return fail(synced);
  uint64_t ns[3] = {};
  ExecStatus timed = stream.Intervals(ns);
  if (!timed.ok()) return fail(timed);
  outcome.timing.input_ns = ns[0];
  outcome.timing.compute_ns = ns[1];
  outcome.timing.output_ns = ns[2];
  return outcome;
}

void Record(ExecutorState& s, uint32_t rows, const ExecOutcome& outcome) {
  std::lock_guard<std::mutex> guard(s.mu);
  if (outcome.status.ok()) {
    ++s.stats.executions;
    s.stats.rows += static_cast<uint64_t>(s.program.EffectiveRows(rows));
    s.stats.compute_ns += outcome.timing.compute_ns;
  } else {
    ++s.stats.failures;
    if (outcome.fault != FaultClass::kNone) ++s.stats.device_faults;
  }
}

// `keep` holds the state for as long as the thread runs (see executor_state.h).
void InstanceLoop(std::shared_ptr<ExecutorState> keep, Instance& instance) {
  ExecutorState& s = *keep;
  const ExecStatus bound = s.config.device->BindThread();
  for (;;) {
    ExecJob job;
    {
      std::unique_lock<std::mutex> lock(s.mu);
      s.cv.wait(lock, [&] { return s.stop.load() || !s.queue.empty(); });
      if (s.queue.empty()) return;  // stopped; Stop() failed whatever was queued
      job = std::move(s.queue.front());
      s.queue.pop_front();
    }
    ExecOutcome outcome;
    if (bound.ok()) {
      outcome = RunJob(s, instance, job);
    } else {
      outcome = Failed(StatusCode::kUnavailable, Prefix(s) + "binding the device failed: " + bound.status.message(),
                       bound.fault);
      if (bound.fault == FaultClass::kSticky) MarkDead(s, bound.status.message());
    }
    Record(s, job.rows, outcome);
    job.done(std::move(outcome));
  }
}

Status CheckJob(const ExecutorState& s, const ExecJob& job) {
  const Program& p = s.program;
  if (p.max_batch_size > 0 && (job.rows < 1 || job.rows > p.max_batch_size)) {
    return Status(StatusCode::kInvalidArgument, Prefix(s) + "rows " + std::to_string(job.rows) +
                                                    " outside [1, " + std::to_string(p.max_batch_size) + "]");
  }
  if (job.inputs.size() != p.inputs.size() || job.outputs.size() != p.outputs.size()) {
    return Status(StatusCode::kInvalidArgument,
                  Prefix(s) + "expected " + std::to_string(p.inputs.size()) + " inputs and " +
                      std::to_string(p.outputs.size()) + " outputs, got " + std::to_string(job.inputs.size()) +
                      " and " + std::to_string(job.outputs.size()));
  }
  const int64_t rows = p.EffectiveRows(job.rows);
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const uint64_t expected = static_cast<uint64_t>(p.inputs[i].bytes.At(rows));
    if (job.inputs[i].bytes != expected || (expected > 0 && job.inputs[i].data == nullptr)) {
      return Status(StatusCode::kInvalidArgument,
                    Prefix(s) + "input '" + p.inputs[i].spec.name + "': expected " + std::to_string(expected) +
                        " bytes for " + std::to_string(rows) + " rows, got " + std::to_string(job.inputs[i].bytes) +
                        (job.inputs[i].data == nullptr ? " (null)" : ""));
    }
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const uint64_t expected = static_cast<uint64_t>(p.outputs[i].bytes.At(rows));
    if (job.outputs[i].bytes < expected || (expected > 0 && job.outputs[i].data == nullptr)) {
      return Status(StatusCode::kInvalidArgument,
                    Prefix(s) + "output '" + p.outputs[i].spec.name + "': needs " + std::to_string(expected) +
                        " bytes for " + std::to_string(rows) + " rows, has " + std::to_string(job.outputs[i].bytes) +
                        (job.outputs[i].data == nullptr ? " (null)" : ""));
    }
  }
  return Status::Ok();
}

Status CheckConfig(const GraphPlan& plan, const ExecutorConfig& config) {
  const std::string prefix = "executor '" + plan.model_name + "': ";
  if (!config.device) return Status(StatusCode::kInvalidArgument, prefix + "config.device is required");
  if (!config.arena) return Status(StatusCode::kInvalidArgument, prefix + "config.arena is required");
  if (config.owner == arena::kNoOwner) return Status(StatusCode::kInvalidArgument, prefix + "config.owner is required");
  if (config.instances < 1 || config.instances > kMaxInstances) {
    return Status(StatusCode::kInvalidArgument, prefix + "instances must be in [1, " +
                                                    std::to_string(kMaxInstances) + "], got " +
                                                    std::to_string(config.instances));
  }
  const arena::MemoryBackend& backend = config.arena->backend();
  const bool host = std::string(config.device->kind()) == "host";
  if (host && !backend.host_accessible()) {
    return Status(StatusCode::kInvalidArgument, prefix + "the host device needs host-accessible memory; arena '" +
                                                    config.arena->name() + "' holds " + backend.description());
  }
  if (!host && backend.kind() != arena::BackendKind::kCuda) {
    return Status(StatusCode::kInvalidArgument, prefix + "a " + config.device->kind() +
                                                    " device needs device memory; arena '" + config.arena->name() +
                                                    "' holds " + backend.description());
  }
  return Status::Ok();
}

}  // namespace

namespace detail {

ExecutorState::~ExecutorState() {
  for (auto& instance : instances) instance->stream.reset();  // before their error flags go
  arena::Arena& arena = *config.arena;
  for (auto& instance : instances) {
    if (instance->block) (void)arena.Release(*instance->block);
  }
  if (weights_block) (void)arena.Release(*weights_block);
}

}  // namespace detail

Executor::Executor(std::shared_ptr<ExecutorState> state) : state_(std::move(state)) {}

Executor::~Executor() {
  Stop();
  // Stop() joined every instance thread unless the caller is one itself
  // (the executor dropped from a `done` callback): then join the others and
  // detach this one, which leaves its loop once the callback returns,
  // holding the state until then.
  const std::thread::id self = std::this_thread::get_id();
  std::lock_guard<std::mutex> guard(state_->join_mu);
  for (auto& instance : state_->instances) {
    if (!instance->thread.joinable()) continue;
    if (instance->thread.get_id() == self) {
      instance->thread.detach();
    } else {
      instance->thread.join();
    }
  }
}

Result<std::unique_ptr<Executor>> Executor::Create(const GraphPlan& plan, ExecutorConfig config) {
  if (Status s = CheckConfig(plan, config); !s.ok()) return s;
  Result<Program> compiled = Compile(plan);
  if (!compiled.ok()) return compiled.status();
  auto state = std::make_shared<ExecutorState>(std::move(compiled).value(), std::move(config));
  ExecutorState& s = *state;
  for (const ProgramIo& io : s.program.inputs) s.inputs.push_back(io.spec);
  for (const ProgramIo& io : s.program.outputs) s.outputs.push_back(io.spec);
  // From here on the executor's destructor undoes a partial set-up.
  std::unique_ptr<Executor> executor(new Executor(std::move(state)));
  arena::Arena& arena = *s.config.arena;
  const arena::ChargeOptions charge{s.config.tenant, false, {}};
  ExecDevice& device = *s.config.device;

  if (!s.program.weights.empty()) {
    Result<arena::BlockInfo> block = arena.Alloc(s.config.owner, s.program.weights.size(), charge);
    if (!block.ok()) return Status(block.status().code(), Prefix(s) + "weights: " + block.status().message());
    s.weights_block = block.value().handle;
    s.weights = static_cast<std::byte*>(block.value().ptr);
    s.weights_bytes = block.value().size;
    ExecStatus uploaded = device.Upload(s.weights, s.program.weights.data(), s.program.weights.size());
    if (!uploaded.ok()) {
      return Status(StatusCode::kUnavailable, Prefix(s) + "uploading the weights failed (" +
                                                  FaultClassName(uploaded.fault) +
                                                  " device fault): " + uploaded.status.message());
    }
  }
  for (uint32_t i = 0; i < s.config.instances; ++i) {
    auto instance = std::make_unique<Instance>();
    Result<arena::BlockInfo> block = arena.Alloc(s.config.owner, s.program.workspace_bytes, charge);
    if (!block.ok()) {
      return Status(block.status().code(), Prefix(s) + "workspace " + std::to_string(i) + ": " + block.status().message());
    }
    instance->block = block.value().handle;
    instance->workspace = static_cast<std::byte*>(block.value().ptr);
    s.workspace_bytes = block.value().size;
    auto* error_flag = reinterpret_cast<uint32_t*>(instance->workspace + s.program.error_flag_offset);
    Result<std::unique_ptr<ExecStream>> stream = device.CreateStream(error_flag);
    s.instances.push_back(std::move(instance));
    if (!stream.ok()) {
      return Status(StatusCode::kUnavailable, Prefix(s) + "creating stream " + std::to_string(i) +
                                                  " failed: " + stream.status().message());
    }
    s.instances.back()->stream = std::move(stream).value();
  }
  // thread_ids is complete before any job (hence any `done` that calls
  // Stop) can exist: jobs are only submitted after Create returns.
  for (auto& instance : s.instances) {
    try {
      instance->thread = std::thread(InstanceLoop, executor->state_, std::ref(*instance));
    } catch (const std::system_error& e) {
      return Status(StatusCode::kInternal, Prefix(s) + "starting an instance thread failed: " + e.what());
    }
    s.thread_ids.push_back(instance->thread.get_id());
  }
  return executor;
}

const std::vector<IoSpec>& Executor::inputs() const { return state_->inputs; }
const std::vector<IoSpec>& Executor::outputs() const { return state_->outputs; }
uint32_t Executor::max_batch_size() const { return state_->program.max_batch_size; }

uint64_t Executor::InputBytes(size_t input, uint32_t rows) const {
  const Program& p = state_->program;
  // Saturating: `rows` is the caller's and may exceed max_batch_size here.
  return input < p.inputs.size() ? static_cast<uint64_t>(detail::SatAt(p.inputs[input].bytes, p.EffectiveRows(rows))) : 0;
}

uint64_t Executor::OutputBytes(size_t output, uint32_t rows) const {
  const Program& p = state_->program;
  return output < p.outputs.size() ? static_cast<uint64_t>(detail::SatAt(p.outputs[output].bytes, p.EffectiveRows(rows))) : 0;
}

std::vector<int64_t> Executor::OutputShape(size_t output, uint32_t rows) const {
  const Program& p = state_->program;
  std::vector<int64_t> shape;
  if (output >= p.outputs.size()) return shape;
  for (const detail::Lin& d : p.outputs[output].shape) shape.push_back(detail::SatAt(d, p.EffectiveRows(rows)));
  return shape;
}

const char* Executor::device_kind() const { return state_->config.device->kind(); }
const char* Executor::kernels_name() const { return state_->config.device->kernels().name(); }
uint64_t Executor::weights_bytes() const { return state_->weights_bytes; }
uint64_t Executor::workspace_bytes() const { return state_->workspace_bytes; }
uint32_t Executor::instances() const { return state_->config.instances; }
uint32_t Executor::step_count() const { return static_cast<uint32_t>(state_->program.steps.size()); }

void Executor::Submit(ExecJob job) {
  ExecutorState& s = *state_;
  if (!job.done) return;  // nobody to tell: the job is dropped
  if (Status valid = CheckJob(s, job); !valid.ok()) {
    Record(s, job.rows, ExecOutcome{valid, FaultClass::kNone, {}});
    job.done(ExecOutcome{std::move(valid), FaultClass::kNone, {}});
    return;
  }
  enum class Admission { kQueued, kStopped, kDead };
  Admission admission = Admission::kQueued;
  {
    std::lock_guard<std::mutex> guard(s.mu);
    if (s.stop.load()) {
      admission = Admission::kStopped;
    } else if (s.dead.load()) {
      admission = Admission::kDead;  // fail at once: nothing would run it
    } else {
      s.queue.push_back(std::move(job));
    }
  }
  if (admission == Admission::kQueued) {
    s.cv.notify_one();
    return;
  }
  ExecOutcome refused = admission == Admission::kStopped
                            ? Failed(StatusCode::kUnavailable, Prefix(s) + "executor stopped")
                            : DeadOutcome(s);
  Record(s, job.rows, refused);
  job.done(std::move(refused));
}

void Executor::InjectFault(FaultClass fault) { state_->injected.store(static_cast<int32_t>(fault)); }

bool Executor::dead() const { return state_->dead.load(); }

ExecutorStats Executor::Stats() const {
  std::lock_guard<std::mutex> guard(state_->mu);
  ExecutorStats stats = state_->stats;
  stats.queued = state_->queue.size();
  return stats;
}

void Executor::Stop() {
  ExecutorState& s = *state_;
  std::deque<ExecJob> queued;
  {
    std::lock_guard<std::mutex> guard(s.mu);
    s.stop.store(true);
    queued.swap(s.queue);  // only the first caller finds jobs here
  }
  s.cv.notify_all();
  for (ExecJob& job : queued) {
    ExecOutcome outcome = Failed(StatusCode::kUnavailable, Prefix(s) + "executor stopped");
    Record(s, job.rows, outcome);
    job.done(std::move(outcome));
  }
  // An instance thread (Stop from a `done` callback) cannot join itself, nor
  // wait for a Stop that is joining it: it returns now, and its loop ends
  // after the callback. Everyone else joins; a concurrent caller waits on
  // join_mu until the first is done.
  const std::thread::id self = std::this_thread::get_id();
  for (const std::thread::id& id : s.thread_ids) {
    if (id == self) return;
  }
  std::lock_guard<std::mutex> guard(s.join_mu);
  for (auto& instance : s.instances) {
    if (instance->thread.joinable()) instance->thread.join();
  }
}

}  // namespace hotpath::executor
