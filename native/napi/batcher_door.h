// A JS environment as a batcher door (batcher/doors.h): the one
// ThreadSafeFunction through which every batcher answer for this
// environment arrives, whichever native thread sends it, and the
// environment's side of those answers (event handlers, held batches).
//
// Created the first time the environment creates or attaches a batcher
// (BatcherDoorState::Open), registered in DoorTable::Process(), and closed
// by the batcher binding's environment cleanup hook (Close): the door leaves
// the table and refuses posts, and events still queued or posted later are
// destroyed without running JS, each releasing its batch share. Node
// finalizes the TSFN itself at teardown.
//
// Ownership: TsfnDoor is shared by the door table and this state; its TSFN
// has exactly one reference (ours), never released before teardown. Other threads never
// acquire it: they post through TsfnDoor::Post, which checks `closed_` under
// `mutex_`, so no thread calls the TSFN after Close. BatcherDoorState is
// shared by the binding's per-environment data and the TSFN's context (freed
// by the TSFN finalizer), so the call-JS callback never sees it freed.
//
// Thread-safety: TsfnDoor::Post from any thread; everything on
// BatcherDoorState on the environment's JS thread only (the call-JS
// callback, the bindings, the cleanup hook).
#pragma once

#include <napi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "batcher/doors.h"
#include "common/result.h"

namespace hotpath::batcher {
struct RegisteredBatcher;
}

namespace hotpath::napi {

class TsfnDoor final : public batcher::Door {
 public:
  explicit TsfnDoor(napi_threadsafe_function tsfn) : tsfn_(tsfn) {}
  bool Post(std::unique_ptr<batcher::DoorEvent> event) override;
  // No thread calls the TSFN after this returns. Idempotent.
  void Close();

 private:
  std::mutex mutex_;
  bool closed_ = false;                   // guarded by mutex_
  const napi_threadsafe_function tsfn_;   // called under mutex_ while !closed_
};

class BatcherDoorState {
 public:
  // This environment's door, opened now: TSFN created (unref'd), door
  // registered. INTERNAL when the TSFN cannot be created.
  static Result<std::shared_ptr<BatcherDoorState>> Open(Napi::Env env);

  batcher::DoorId id() const { return id_; }
  bool closed() const { return closed_; }

  // The JS handler for `batcher`'s events in this environment (one per
  // batcher and environment), and the batcher's registry entry, held weakly
  // beside it so a call on this handle finds the batcher without the
  // registry's process-wide lock. False when one is registered already.
  bool AddHandler(uint64_t batcher, Napi::Function on_event, std::weak_ptr<batcher::RegisteredBatcher> entry);
  bool HasHandler(uint64_t batcher) const { return handlers_.count(batcher) > 0; }
  // The entry of a batcher this environment has a handler for; null without
  // a handler, or once the registry has forgotten the batcher (Forget drops
  // the only lasting reference, so the entry is usually gone, as a Find
  // would fail; a call in flight on another thread may keep it a moment
  // longer, and then its `stopped` is set).
  std::shared_ptr<batcher::RegisteredBatcher> Entry(uint64_t batcher) const;
  // Later events for `batcher` are dropped here (their shares released).
  void RemoveHandler(uint64_t batcher) { handlers_.erase(batcher); }
  // Once `marker` (a stop's) has been delivered to it: RemoveHandler, and
  // the batcher leaves the process registry (BatcherRegistry::Forget).
  void ForgetAfter(uint64_t batcher, uint64_t marker) { last_markers_[batcher] = marker; }

  // Requests and markers sent and not yet answered: the TSFN keeps the
  // event loop alive while any are.
  void AddOutstanding(uint64_t n);
  // Takes back what AddOutstanding added for something never sent, and
  // counts delivered answers.
  void Settle(uint64_t n);

  // A batch delivered here and not yet released, or null.
  const batcher::SharedBatch* Held(uint64_t batcher, uint64_t batch_id) const;
  // Drops this door's share. False when it held none.
  bool Release(uint64_t batcher, uint64_t batch_id);
  uint64_t HeldCount(uint64_t batcher) const;

  // Environment cleanup: unregisters and closes the door, drops handlers
  // and held batches. Idempotent.
  void Close();

 private:
  BatcherDoorState() = default;
  static void CallJs(napi_env env, napi_value js_callback, void* context, void* data);
  static void Finalize(napi_env env, void* finalize_data, void* hint);
  void Deliver(Napi::Env env, std::unique_ptr<batcher::DoorEvent> event);
  // Converts `event` (keeping its batch share when it carries one) and calls `handler`.
  void Call(Napi::Env env, Napi::Function handler, std::unique_ptr<batcher::DoorEvent> event);

  napi_env env_ = nullptr;
  napi_threadsafe_function tsfn_ = nullptr;
  std::shared_ptr<TsfnDoor> door_;
  batcher::DoorId id_ = 0;
  bool closed_ = false;
  uint64_t outstanding_ = 0;
  struct Handler {
    Napi::FunctionReference on_event;
    std::weak_ptr<batcher::RegisteredBatcher> entry;
  };
  std::map<uint64_t, Handler> handlers_;                   // by batcher id
  std::map<uint64_t, uint64_t> last_markers_;              // batcher id -> its stop marker
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<batcher::SharedBatch>> held_;  // (batcher, batch)
};

}  // namespace hotpath::napi
