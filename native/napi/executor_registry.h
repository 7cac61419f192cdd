// This environment's live executors, by the id JS holds, so other bindings
// (batcherSetTarget) can reach an executor without knowing how the executor
// binding keeps its per-instance state.
//
// Ownership: the registry holds one reference per executor from
// executorCreate until executorClose (or environment teardown). Whoever Find()s
// one shares it (a batcher target keeps it alive past executorClose; it is
// stopped then and fails every batch with SHUTDOWN).
//
// Lifetime: owned by the executor binding's environment cleanup hook;
// RegisterExecutorBinding returns it to addon.cc, which hands it to the
// batcher binding. No JS runs after cleanup hooks, so borrowers never see a
// dangling registry.
//
// Thread-safety: JS thread of its environment only.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "common/result.h"
#include "executor/executor.h"

namespace hotpath::napi {

class ExecutorRegistry {
 public:
  // FAILED_PRECONDITION "executor is closed" for an id that is not (or no
  // longer) registered.
  Result<std::shared_ptr<executor::Executor>> Find(uint64_t id) const {
    auto it = executors_.find(id);
    if (it == executors_.end()) return Status(StatusCode::kFailedPrecondition, "executor is closed");
    return it->second;
  }

  void Add(uint64_t id, std::shared_ptr<executor::Executor> executor) { executors_[id] = std::move(executor); }
  void Remove(uint64_t id) { executors_.erase(id); }
  // Stops every registered executor (environment teardown).
  void StopAll() {
    for (auto& [id, executor] : executors_) executor->Stop();
  }
  void Clear() { executors_.clear(); }

 private:
  std::map<uint64_t, std::shared_ptr<executor::Executor>> executors_;
};

}  // namespace hotpath::napi
