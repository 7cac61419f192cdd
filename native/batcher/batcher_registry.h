// The process-wide table of batchers, so every JS environment (door) of the
// process can enqueue into the same batcher by its id: the main thread
// creates a model version's batcher, door threads (worker_threads) attach to
// it and enqueue, and each answer goes back to the door that took the
// request (doors.h, batch_dispatch.h).
//
//   auto created = BatcherRegistry::Process().Create(config, clock, memory, DoorTable::Process(), owner);
//   auto found = BatcherRegistry::Process().Find(id);     // any thread
//   found.value()->batcher->Enqueue(request);              // request.door = the caller's door
//   registry.Stop(id);                                     // the owner's thread
//
// Ownership: the registry holds one reference per batcher from Create until
// Forget (after Stop, once the owner has read its final counters), or the
// owner's environment teardown (StopOwnedBy). Whoever Find()s
// one shares it for the length of a call; batches already sealed live on
// in their doors' shares, independent of the entry.
//
// Thread-safety: every member may be called from any thread. `mutex_`
// guards the map only; it is never held while calling into a batcher (whose
// callbacks may post to doors, and whose Stop joins its thread). A
// RegisteredBatcher's fields are set before it is added and never change,
// except `stopped` (atomic); `batcher` and `dispatch` are thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "batcher/batch_dispatch.h"
#include "batcher/batch_memory.h"
#include "batcher/batcher.h"
#include "batcher/clock.h"
#include "batcher/doors.h"
#include "common/result.h"

namespace hotpath::batcher {

// One input's dims as its model version fixes them (without the batch
// dimension; the full shape when max_batch_size is 0), -1 where each request
// gives its own. Read once, at create, so an enqueue carries only the
// variable dims.
struct DimsTemplate {
  std::vector<int64_t> dims;
  std::vector<uint32_t> variable;  // positions of the -1 entries, ascending
};

struct RegisteredBatcher {
  uint64_t id = 0;
  DoorId owner = 0;          // the creating door: it alone runs target-less batches, stops, sets targets
  std::shared_ptr<Clock> clock;
  std::shared_ptr<ManualClock> manual;  // null with the steady clock
  std::shared_ptr<BatchMemory> memory;  // inputs, and outputs of executed batches
  uint64_t memory_owner = 0;            // arena owner of the model version
  uint32_t input_count = 0;
  std::vector<DimsTemplate> input_dims;
  uint32_t variable_dims = 0;           // the -1s over all of input_dims
  std::shared_ptr<Batcher> batcher;
  std::shared_ptr<BatchDispatch> dispatch;
  std::atomic<bool> stopped{false};
};

class BatcherRegistry {
 public:
  // The process-wide registry. Never destroyed (see DoorTable::Process).
  static BatcherRegistry& Process();

  BatcherRegistry() = default;
  BatcherRegistry(const BatcherRegistry&) = delete;
  BatcherRegistry& operator=(const BatcherRegistry&) = delete;

  // Starts a batcher whose answers go through `doors` (which must outlive
  // it) and registers it, owned by door `owner`. `manual` is `clock` when it
  // is a ManualClock (test hook), else null. Batcher::Create's errors.
  Result<std::shared_ptr<RegisteredBatcher>> Create(BatcherConfig config, std::shared_ptr<Clock> clock,
                                                    std::shared_ptr<ManualClock> manual,
                                                    std::shared_ptr<BatchMemory> memory, const DoorTable& doors,
                                                    DoorId owner, std::vector<DimsTemplate> input_dims = {});

  // FAILED_PRECONDITION "batcher is closed" for an id not (or no longer)
  // registered. A stopped batcher is found (its counters stay readable)
  // until Forget; callers that would use it check `stopped`.
  Result<std::shared_ptr<RegisteredBatcher>> Find(uint64_t id) const;

  // Marks the batcher stopped, stops its thread and rejects its pending
  // requests of every door with SHUTDOWN, on the calling thread. Returns it
  // (to queue a marker behind those rejections), or null when it was not
  // registered or already stopped. The caller drops the target afterwards.
  std::shared_ptr<RegisteredBatcher> Stop(uint64_t id);

  // Unregisters the batcher: later Finds fail.
  void Forget(uint64_t id);

  // Stop() and Forget() for every batcher `owner` created (its environment
  // is going).
  void StopOwnedBy(DoorId owner);

  size_t size() const;

 private:
  mutable std::mutex mutex_;
  uint64_t next_id_ = 1;                                            // guarded by mutex_
  std::map<uint64_t, std::shared_ptr<RegisteredBatcher>> batchers_;  // guarded by mutex_
};

}  // namespace hotpath::batcher
