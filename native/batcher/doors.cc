// Doors and answer routing. See doors.h.
#include "batcher/doors.h"

#include <map>
#include <utility>

namespace hotpath::batcher {

DoorTable& DoorTable::Process() {
  // Leaked on purpose: see the header.
  static DoorTable* const table = new DoorTable();
  return *table;
}

DoorId DoorTable::Add(std::shared_ptr<Door> door) {
  std::lock_guard<std::mutex> lock(mutex_);
  const DoorId id = next_id_++;
  doors_.emplace(id, std::move(door));
  return id;
}

void DoorTable::Remove(DoorId id) {
  std::shared_ptr<Door> removed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = doors_.find(id);
    if (it == doors_.end()) return;
    removed = std::move(it->second);
    doors_.erase(it);
  }
  // `removed` may be the last reference: destroyed here, outside the lock.
}

bool DoorTable::Post(DoorId id, std::unique_ptr<DoorEvent> event) const {
  std::shared_ptr<Door> door;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = doors_.find(id);
    if (it != doors_.end()) door = it->second;
  }
  // No door: `event` is destroyed on return, releasing its share.
  return door != nullptr && door->Post(std::move(event));
}

size_t DoorTable::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return doors_.size();
}

namespace {

// Requests by door, each list in the order given (row order for a batch).
// An ordered map, so doors are posted to in a stable order.
template <typename Request>
std::map<DoorId, std::vector<Request>> ByDoor(std::vector<Request> requests) {
  std::map<DoorId, std::vector<Request>> groups;
  for (Request& request : requests) groups[request.door].push_back(std::move(request));
  return groups;
}

}  // namespace

size_t RouteExecuted(const DoorTable& doors, uint64_t batcher, SealedBatch batch, BatchOutcome outcome) {
  auto shared = std::make_shared<SharedBatch>();
  shared->outputs = std::move(outcome.outputs);
  shared->output_bytes = std::move(outcome.output_bytes);
  outcome.outputs.clear();
  outcome.output_bytes.clear();
  // Each door gets its own requests; the shared copy keeps the full list.
  std::vector<SealedRequest> requests = batch.requests;
  shared->batch = std::move(batch);
  size_t posted = 0;
  for (auto& [door, mine] : ByDoor(std::move(requests))) {
    auto event = std::make_unique<DoorEvent>();
    event->kind = DoorEvent::Kind::kExecuted;
    event->batcher = batcher;
    event->batch = shared;
    event->requests = std::move(mine);
    event->outcome.status = outcome.status;
    event->outcome.failure = outcome.failure;
    event->outcome.output_shapes = outcome.output_shapes;
    event->outcome.input_ns = outcome.input_ns;
    event->outcome.compute_ns = outcome.compute_ns;
    event->outcome.output_ns = outcome.output_ns;
    if (doors.Post(door, std::move(event))) ++posted;
  }
  // `shared` goes here: the buffers live on only in the posted events.
  return posted;
}

size_t RouteRejected(const DoorTable& doors, uint64_t batcher, std::vector<RejectedRequest> rejected) {
  size_t posted = 0;
  for (auto& [door, mine] : ByDoor(std::move(rejected))) {
    auto event = std::make_unique<DoorEvent>();
    event->kind = DoorEvent::Kind::kRejected;
    event->batcher = batcher;
    event->rejected = std::move(mine);
    if (doors.Post(door, std::move(event))) ++posted;
  }
  return posted;
}

bool RouteToOwner(const DoorTable& doors, uint64_t batcher, DoorId owner, const std::string& model, SealedBatch batch) {
  std::vector<SealedRequest> own;
  std::vector<RejectedRequest> foreign;
  for (const SealedRequest& request : batch.requests) {
    if (request.door == owner) {
      own.push_back(request);
      continue;
    }
    RejectedRequest rejected;
    rejected.id = request.id;
    rejected.sequence = request.sequence;
    rejected.rejection = Rejection{RejectKind::kShutdown, model + " (no native target for other threads)",
                                   request.priority_level, 0};
    rejected.queue_time = request.queue_time;
    rejected.door = request.door;
    foreign.push_back(std::move(rejected));
  }
  if (!foreign.empty()) RouteRejected(doors, batcher, std::move(foreign));
  // A batch of the owner's alone (also one with no request at all, as
  // before doors existed) goes to it; one of other doors' requests alone
  // is run by nobody.
  if (own.empty() && !batch.requests.empty()) return false;
  auto event = std::make_unique<DoorEvent>();
  event->kind = DoorEvent::Kind::kBatch;
  event->batcher = batcher;
  event->requests = std::move(own);
  event->batch = std::make_shared<SharedBatch>();
  event->batch->batch = std::move(batch);
  return doors.Post(owner, std::move(event));
}

}  // namespace hotpath::batcher
