// The process-wide batcher table. See batcher_registry.h.
#include "batcher/batcher_registry.h"

#include <utility>

namespace hotpath::batcher {

BatcherRegistry& BatcherRegistry::Process() {
  static BatcherRegistry* const registry = new BatcherRegistry();  // leaked on purpose
  return *registry;
}

Result<std::shared_ptr<RegisteredBatcher>> BatcherRegistry::Create(BatcherConfig config, std::shared_ptr<Clock> clock,
                                                                   std::shared_ptr<ManualClock> manual,
                                                                   std::shared_ptr<BatchMemory> memory,
                                                                   const DoorTable& doors, DoorId owner,
                                                                   std::vector<DimsTemplate> input_dims) {
  auto entry = std::make_shared<RegisteredBatcher>();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    entry->id = next_id_++;
  }
  entry->owner = owner;
  entry->clock = clock;
  entry->manual = std::move(manual);
  entry->memory = memory;
  entry->memory_owner = config.memory_owner;
  entry->input_count = config.input_count;
  for (const DimsTemplate& t : input_dims) entry->variable_dims += static_cast<uint32_t>(t.variable.size());
  entry->input_dims = std::move(input_dims);

  auto dispatch = std::make_shared<BatchDispatch>(doors, entry->id, owner, config.model_name);
  BatcherCallbacks callbacks;
  callbacks.dispatch = [dispatch](SealedBatch batch) { dispatch->Dispatch(std::move(batch)); };
  callbacks.reject = [dispatch](std::vector<RejectedRequest> rejected) { dispatch->Reject(std::move(rejected)); };
  Result<std::unique_ptr<Batcher>> batcher =
      Batcher::Create(std::move(config), std::move(clock), std::move(memory), std::move(callbacks));
  if (!batcher.ok()) return batcher.status();
  entry->batcher = std::shared_ptr<Batcher>(std::move(batcher).value());
  dispatch->set_batcher(entry->batcher);
  entry->dispatch = std::move(dispatch);
  std::lock_guard<std::mutex> lock(mutex_);
  batchers_.emplace(entry->id, entry);
  return entry;
}

Result<std::shared_ptr<RegisteredBatcher>> BatcherRegistry::Find(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = batchers_.find(id);
  if (it == batchers_.end()) return Status(StatusCode::kFailedPrecondition, "batcher is closed");
  return it->second;
}

std::shared_ptr<RegisteredBatcher> BatcherRegistry::Stop(uint64_t id) {
  std::shared_ptr<RegisteredBatcher> entry;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = batchers_.find(id);
    if (it == batchers_.end()) return nullptr;
    entry = it->second;
  }
  if (entry->stopped.exchange(true)) return nullptr;  // another caller stops it
  entry->batcher->Stop();  // joins its thread; SHUTDOWN rejections go to every door here
  return entry;
}

void BatcherRegistry::Forget(uint64_t id) {
  std::shared_ptr<RegisteredBatcher> forgotten;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = batchers_.find(id);
    if (it == batchers_.end()) return;
    forgotten = std::move(it->second);
    batchers_.erase(it);
  }
  // `forgotten` may be the last reference: destroyed here, outside the lock.
}

void BatcherRegistry::StopOwnedBy(DoorId owner) {
  std::vector<uint64_t> owned;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [id, entry] : batchers_) {
      if (entry->owner == owner) owned.push_back(id);
    }
  }
  for (uint64_t id : owned) {
    if (std::shared_ptr<RegisteredBatcher> entry = Stop(id)) entry->dispatch->SetTarget(nullptr);
    Forget(id);
  }
}

size_t BatcherRegistry::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return batchers_.size();
}

}  // namespace hotpath::batcher
