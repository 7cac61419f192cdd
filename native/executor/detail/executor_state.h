// Internal state of an Executor (executor.h). Not part of the public API.
//
// Locking: `mu` guards the job queue, the stop/dead bookkeeping that must be
// consistent with it, and the statistics; it is held only for bookkeeping,
// never while a kernel runs, a copy is made or a `done` callback is called.
// `join_mu` serialises the threads that join the instance threads (Stop and
// the destructor); it is never held together with `mu`. Instance threads
// touch their own Instance without a lock (nobody else does until they are
// joined).
//
// Lifetime: the Executor and every instance thread hold a shared_ptr to the
// state, so a thread whose `done` callback destroyed the Executor (it is then
// detached, not joined) can still leave its loop safely.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "executor/compiler.h"
#include "executor/device_runtime.h"
#include "executor/executor.h"

namespace hotpath::executor::detail {

// One instance: its thread, its stream and its workspace block.
struct Instance {
  std::unique_ptr<ExecStream> stream;
  std::byte* workspace = nullptr;
  std::optional<arena::Handle> block;  // (a Handle may be 0: no sentinel)
  std::thread thread;
};

struct ExecutorState {
  ExecutorState(Program p, ExecutorConfig c) : program(std::move(p)), config(std::move(c)) {}
  // Destroys the streams, then releases every arena block (threads must have
  // been joined).
  ~ExecutorState();

  // Immutable once Create returns.
  const Program program;
  const ExecutorConfig config;
  std::vector<IoSpec> inputs, outputs;
  std::optional<arena::Handle> weights_block;  // none: no weights to upload
  std::byte* weights = nullptr;
  uint64_t weights_bytes = 0;    // arena bytes (rounded)
  uint64_t workspace_bytes = 0;  // arena bytes per instance (rounded)
  std::vector<std::unique_ptr<Instance>> instances;

  mutable std::mutex mu;
  std::condition_variable cv;  // instance threads wait here for a job or stop
  std::deque<ExecJob> queue;   // (mu)
  // Set once by Stop(), under mu (so a Submit that saw it unset has queued
  // its job before Stop takes the queue); also read without mu.
  std::atomic<bool> stop{false};
  // A pending InjectFault (FaultClass as int), taken by the next job to run.
  std::atomic<int32_t> injected{static_cast<int32_t>(FaultClass::kNone)};
  // Set once, after the first sticky fault; never cleared.
  std::atomic<bool> dead{false};
  std::string dead_reason;  // (mu) the sticky fault's message
  ExecutorStats stats;      // (mu) everything but `queued` (the queue's size)

  // The instance threads' ids, immutable once they are started (reading
  // std::thread::get_id() would race with a concurrent join).
  std::vector<std::thread::id> thread_ids;
  std::mutex join_mu;
};

}  // namespace hotpath::executor::detail
