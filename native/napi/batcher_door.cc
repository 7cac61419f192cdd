// The environment's batcher door. See batcher_door.h.
#include "napi/batcher_door.h"

#include <algorithm>

#include "batcher/batcher_registry.h"
#include "napi/batcher_binding_values.h"

namespace hotpath::napi {

namespace bt = hotpath::batcher;

bool TsfnDoor::Post(std::unique_ptr<bt::DoorEvent> event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    // napi_closing once Node began tearing the environment down: the event
    // stays ours and is destroyed below.
    if (!closed_ && napi_call_threadsafe_function(tsfn_, event.get(), napi_tsfn_nonblocking) == napi_ok) {
      event.release();  // owned by the queue; CallJs frees it
      return true;
    }
  }
  return false;  // `event` destroyed outside the lock, releasing its share
}

void TsfnDoor::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
}

Result<std::shared_ptr<BatcherDoorState>> BatcherDoorState::Open(Napi::Env env) {
  std::shared_ptr<BatcherDoorState> state(new BatcherDoorState());
  state->env_ = env;
  // The TSFN's context: one more owner of the state, freed by the finalizer.
  auto holder = std::make_unique<std::shared_ptr<BatcherDoorState>>(state);
  napi_value resource_name = Napi::String::New(env, "hotpath.batcher.door");
  napi_status created = napi_create_threadsafe_function(env, nullptr /* handlers are looked up per event */, nullptr,
                                                        resource_name, 0 /* unbounded queue */, 1 /* our reference */,
                                                        holder.get(), Finalize, holder.get(), CallJs, &state->tsfn_);
  if (created != napi_ok) return Status(StatusCode::kInternal, "cannot create the batcher door's ThreadSafeFunction");
  holder.release();  // owned by the TSFN finalizer
  // Ref'd only while work is outstanding (AddOutstanding/Settle).
  if (napi_unref_threadsafe_function(env, state->tsfn_) != napi_ok) {
    (void)napi_release_threadsafe_function(state->tsfn_, napi_tsfn_release);
    return Status(StatusCode::kInternal, "cannot unref the batcher door's ThreadSafeFunction");
  }
  state->door_ = std::make_shared<TsfnDoor>(state->tsfn_);
  state->id_ = bt::DoorTable::Process().Add(state->door_);
  return state;
}

bool BatcherDoorState::AddHandler(uint64_t batcher, Napi::Function on_event,
                                  std::weak_ptr<bt::RegisteredBatcher> entry) {
  if (handlers_.count(batcher) > 0) return false;
  handlers_.emplace(batcher, Handler{Napi::Persistent(on_event), std::move(entry)});
  return true;
}

std::shared_ptr<bt::RegisteredBatcher> BatcherDoorState::Entry(uint64_t batcher) const {
  auto it = handlers_.find(batcher);
  return it == handlers_.end() ? nullptr : it->second.entry.lock();
}

void BatcherDoorState::AddOutstanding(uint64_t n) {
  if (n == 0 || closed_) return;
  // A failed ref only lets the loop end early; the answers still arrive if it runs.
  if (outstanding_ == 0) (void)napi_ref_threadsafe_function(env_, tsfn_);
  outstanding_ += n;
}

void BatcherDoorState::Settle(uint64_t n) {
  const uint64_t before = outstanding_;
  outstanding_ -= std::min(n, outstanding_);
  if (before > 0 && outstanding_ == 0 && !closed_) (void)napi_unref_threadsafe_function(env_, tsfn_);
}

const bt::SharedBatch* BatcherDoorState::Held(uint64_t batcher, uint64_t batch_id) const {
  auto it = held_.find({batcher, batch_id});
  return it == held_.end() ? nullptr : it->second.get();
}

bool BatcherDoorState::Release(uint64_t batcher, uint64_t batch_id) { return held_.erase({batcher, batch_id}) > 0; }

uint64_t BatcherDoorState::HeldCount(uint64_t batcher) const {
  uint64_t count = 0;
  for (auto it = held_.lower_bound({batcher, 0}); it != held_.end() && it->first.first == batcher; ++it) ++count;
  return count;
}

void BatcherDoorState::Close() {
  if (closed_) return;
  closed_ = true;
  bt::DoorTable::Process().Remove(id_);
  door_->Close();  // from here no thread calls tsfn_
  handlers_.clear();
  last_markers_.clear();
  held_.clear();  // this door's shares: a batch other doors hold lives on
  // Our TSFN reference is not released here: Close runs from the
  // environment's cleanup hook, after Node's own hook for the TSFN has
  // marked it closing, and Node finalizes it once the cleanup hooks have
  // run (Finalize), emptying its queue through CallJs with a null env.
}

// On the JS thread. `env` is null when Node empties the queue at teardown:
// the event is then only freed.
void BatcherDoorState::CallJs(napi_env env, napi_value /*js_callback*/, void* context, void* data) {
  std::unique_ptr<bt::DoorEvent> event(static_cast<bt::DoorEvent*>(data));
  if (env == nullptr || context == nullptr || event == nullptr) return;
  BatcherDoorState& state = **static_cast<std::shared_ptr<BatcherDoorState>*>(context);
  if (state.closed_) return;
  state.Deliver(Napi::Env(env), std::move(event));
}

void BatcherDoorState::Finalize(napi_env /*env*/, void* finalize_data, void* /*hint*/) {
  std::unique_ptr<std::shared_ptr<BatcherDoorState>> holder(static_cast<std::shared_ptr<BatcherDoorState>*>(finalize_data));
  // Backstop: Close normally ran from the cleanup hook already.
  (*holder)->closed_ = true;
  bt::DoorTable::Process().Remove((*holder)->id_);
  if ((*holder)->door_) (*holder)->door_->Close();
}

void BatcherDoorState::Deliver(Napi::Env env, std::unique_ptr<bt::DoorEvent> event) {
  uint64_t delivered = 1;
  if (event->kind == bt::DoorEvent::Kind::kBatch || event->kind == bt::DoorEvent::Kind::kExecuted) {
    delivered = event->requests.size();
  } else if (event->kind == bt::DoorEvent::Kind::kRejected) {
    delivered = event->rejected.size();
  }
  Settle(delivered);
  const uint64_t batcher = event->batcher;
  auto last_marker = last_markers_.find(batcher);
  // The stop's marker: nothing more comes for this batcher here, after it.
  const bool last = event->kind == bt::DoorEvent::Kind::kMarker && last_marker != last_markers_.end() &&
                    last_marker->second == event->marker;
  auto handler = handlers_.find(batcher);
  if (handler != handlers_.end()) Call(env, handler->second.on_event.Value(), std::move(event));
  // Without a handler (detached) the share went with `event`.
  if (last) {
    handlers_.erase(batcher);
    last_markers_.erase(batcher);
    bt::BatcherRegistry::Process().Forget(batcher);
  }
}

void BatcherDoorState::Call(Napi::Env env, Napi::Function handler, std::unique_ptr<bt::DoorEvent> event) {
  try {
    Napi::HandleScope scope(env);
    Napi::Object payload;
    switch (event->kind) {
      case bt::DoorEvent::Kind::kBatch:
        payload = SealedBatchToJs(env, event->batch->batch, event->requests);
        held_.emplace(std::make_pair(event->batcher, event->batch->batch.batch_id), std::move(event->batch));
        break;
      case bt::DoorEvent::Kind::kExecuted:
        // Held like a 'batch' (inputs and outputs), so JS can read the
        // outputs, or re-run a failed batch elsewhere from its inputs.
        payload = ExecutedBatchToJs(env, *event->batch, event->requests, event->outcome);
        held_.emplace(std::make_pair(event->batcher, event->batch->batch.batch_id), std::move(event->batch));
        break;
      case bt::DoorEvent::Kind::kRejected:
        payload = RejectedToJs(env, event->rejected);
        break;
      case bt::DoorEvent::Kind::kMarker:
        payload = Napi::Object::New(env);
        payload.Set("type", Napi::String::New(env, "marker"));
        payload.Set("marker", Napi::Number::New(env, static_cast<double>(event->marker)));
        break;
    }
    // `handler` is a local handle: the call may drop our reference to it (batcherDetach).
    handler.Call({payload});
  } catch (const Napi::Error& error) {
    // The TS handler never throws; if it does, it is an uncaught exception.
    napi_fatal_exception(env, error.Value());
  }
}

}  // namespace hotpath::napi
