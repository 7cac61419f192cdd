// arena* bindings. See arena_binding.h. No ledger logic here: argument
// guards, per-environment bookkeeping and value translation only.
#include "napi/arena_binding.h"

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "arena/registry.h"
#include "napi/arena_binding_values.h"
#include "napi/export_functions.h"
#include "napi/result_js.h"

namespace hotpath::napi {

namespace {

using arena::Arena;

// Ids of JS eviction callbacks whose arena entry is gone. Filled from any
// thread (an entry may be freed anywhere), drained on the JS thread, which
// alone may delete the function references. Outlives the environment.
struct DeadCallbacks {
  std::mutex mu;
  std::vector<uint64_t> ids;  // guarded by mu
  std::atomic<bool> any{false};
};

// Held by the native EvictCallback; reports the id as dead when the arena
// drops the callback (with the entry).
struct CallbackToken {
  uint64_t id = 0;
  std::shared_ptr<DeadCallbacks> dead;
  ~CallbackToken() {
    std::lock_guard<std::mutex> lock(dead->mu);
    dead->ids.push_back(id);
    dead->any.store(true, std::memory_order_release);
  }
};

struct Attachment {
  std::shared_ptr<Arena> arena;
  bool created_here = false;
  std::set<arena::OwnerId> owners;  // created by this environment, not yet destroyed
};

// One per environment; touched only on its JS thread, except `dead` and
// `alive`, which eviction callbacks read from other threads.
struct ArenaEnv {
  napi_env env = nullptr;
  std::thread::id thread = std::this_thread::get_id();
  std::shared_ptr<std::atomic<bool>> alive = std::make_shared<std::atomic<bool>>(true);
  std::shared_ptr<DeadCallbacks> dead = std::make_shared<DeadCallbacks>();
  std::map<uint32_t, Attachment> attachments;
  uint32_t next_attachment = 1;
  std::unordered_map<uint64_t, Napi::FunctionReference> callbacks;
  uint64_t next_callback = 1;

  void DrainDead() {
    if (!dead->any.load(std::memory_order_acquire)) return;
    std::vector<uint64_t> ids;
    {
      std::lock_guard<std::mutex> lock(dead->mu);
      ids.swap(dead->ids);
      dead->any.store(false, std::memory_order_relaxed);
    }
    for (uint64_t id : ids) callbacks.erase(id);
  }
};

void OnEnvCleanup(ArenaEnv* raw) {
  std::unique_ptr<ArenaEnv> state(raw);
  state->alive->store(false);
  for (auto& [id, attachment] : state->attachments) {
    // Owners this thread created go with it (their handles die with its JS).
    for (arena::OwnerId owner : attachment.owners) (void)attachment.arena->DestroyOwner(owner);
    if (attachment.created_here) {
      attachment.arena->Shutdown();
      arena::UnregisterArena(*attachment.arena);
    }
  }
  state->attachments.clear();
  state->callbacks.clear();  // references are deleted while the env still exists
}

ArenaEnv& EnvOf(const Napi::CallbackInfo& info) {
  auto* state = static_cast<ArenaEnv*>(info.Data());
  state->DrainDead();
  return *state;
}

Result<Attachment*> AttachmentOf(ArenaEnv& state, const Napi::Value& value) {
  Result<uint64_t> id = ToU64(value, "arena");
  if (!id.ok()) return id.status();
  auto it = state.attachments.find(static_cast<uint32_t>(id.value()));
  if (it == state.attachments.end()) return Status(StatusCode::kFailedPrecondition, "arena is closed");
  return &it->second;
}

Napi::Value Attach(ArenaEnv& state, Napi::Env env, std::shared_ptr<Arena> arena, bool created) {
  uint32_t id = state.next_attachment++;
  state.attachments[id] = Attachment{std::move(arena), created, {}};
  return OkResult(env, Napi::Number::New(env, id));
}

// Reads (arena, owner, bytes, tenant, onEvict) and builds the charge options.
struct ChargeArgs {
  Attachment* attachment = nullptr;
  arena::OwnerId owner = 0;
  uint64_t bytes = 0;
  arena::ChargeOptions options;
};

Result<ChargeArgs> ReadCharge(ArenaEnv& state, const Napi::CallbackInfo& info) {
  ChargeArgs args;
  Result<Attachment*> attachment = AttachmentOf(state, info[0]);
  if (!attachment.ok()) return attachment.status();
  args.attachment = attachment.value();
  Result<uint64_t> owner = ToU64(info[1], "owner");
  if (!owner.ok()) return owner.status();
  Result<uint64_t> bytes = ToU64(info[2], "bytes");
  if (!bytes.ok()) return bytes.status();
  Result<uint64_t> tenant = ToU64(info[3], "tenant");
  if (!tenant.ok()) return tenant.status();
  args.owner = owner.value();
  args.bytes = bytes.value();
  args.options.tenant = static_cast<arena::TenantId>(tenant.value());
  if (info[4].IsFunction()) {
    uint64_t id = state.next_callback++;
    state.callbacks.emplace(id, Napi::Persistent(info[4].As<Napi::Function>()));
    auto token = std::make_shared<CallbackToken>();
    token->id = id;
    token->dead = state.dead;
    ArenaEnv* owner_env = &state;
    std::shared_ptr<std::atomic<bool>> alive = state.alive;
    std::thread::id thread = state.thread;
    args.options.evictable = true;
    args.options.on_evict = [token, owner_env, alive, thread](const arena::EvictionInfo& eviction) {
      // Only the registering thread may run its JS, and only while it lives.
      if (!alive->load() || std::this_thread::get_id() != thread) return false;
      auto it = owner_env->callbacks.find(token->id);
      if (it == owner_env->callbacks.end()) return false;
      Napi::Env env(owner_env->env);
      Napi::HandleScope scope(env);
      try {
        Napi::Value answer = it->second.Call({EvictionToJs(env, eviction)});
        return answer.IsBoolean() && answer.As<Napi::Boolean>().Value();
      } catch (const Napi::Error&) {
        return false;  // a throwing callback refuses; its exception is dropped
      }
    };
  }
  return args;
}

Napi::Value CreateJs(const Napi::CallbackInfo& info) {
  ArenaEnv& state = EnvOf(info);
  Result<std::string> name = ToText(info[0], "name");
  if (!name.ok()) return ErrorResult(info.Env(), name.status());
  Result<arena::ArenaConfig> config = ToArenaConfig(info[1]);
  if (!config.ok()) return ErrorResult(info.Env(), config.status());
  Result<std::shared_ptr<Arena>> arena = arena::CreateRegisteredArena(name.value(), std::move(config).value());
  if (!arena.ok()) return ErrorResult(info.Env(), arena.status());
  return Attach(state, info.Env(), arena.value(), true);
}

Napi::Value AttachJs(const Napi::CallbackInfo& info) {
  ArenaEnv& state = EnvOf(info);
  Result<std::string> name = ToText(info[0], "name");
  if (!name.ok()) return ErrorResult(info.Env(), name.status());
  Result<std::shared_ptr<Arena>> arena = arena::FindRegisteredArena(name.value());
  if (!arena.ok()) return ErrorResult(info.Env(), arena.status());
  return Attach(state, info.Env(), arena.value(), false);
}

// Closes this environment's attachment: destroys the owners it created and,
// for the creating environment, shuts the arena down for everyone.
Napi::Value CloseJs(const Napi::CallbackInfo& info) {
  ArenaEnv& state = EnvOf(info);
  Result<Attachment*> found = AttachmentOf(state, info[0]);
  if (!found.ok()) return ErrorResult(info.Env(), found.status());
  Attachment& attachment = *found.value();
  for (arena::OwnerId owner : attachment.owners) (void)attachment.arena->DestroyOwner(owner);
  if (attachment.created_here) {
    attachment.arena->Shutdown();
    arena::UnregisterArena(*attachment.arena);
  }
  state.attachments.erase(static_cast<uint32_t>(info[0].As<Napi::Number>().Int64Value()));
  return OkResult(info.Env(), info.Env().Null());
}

Napi::Value InfoJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Arena& a = *found.value()->arena;
  arena::BackendMemInfo mem = a.backend().MemInfo();
  Napi::Object out = Napi::Object::New(env);
  out.Set("name", Napi::String::New(env, a.name()));
  out.Set("backend", Napi::String::New(env, arena::BackendKindName(a.backend().kind())));
  out.Set("description", Napi::String::New(env, a.backend().description()));
  out.Set("fallbackReason", Napi::String::New(env, a.fallback_reason()));
  out.Set("hostAccessible", Napi::Boolean::New(env, a.backend().host_accessible()));
  out.Set("totalBytes", Napi::Number::New(env, static_cast<double>(mem.total_bytes)));
  out.Set("freeBytes", Napi::Number::New(env, static_cast<double>(mem.free_bytes)));
  return OkResult(env, out);
}

Napi::Value CreateTenantJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<std::string> name = ToText(info[1], "name");
  Result<uint64_t> quota = ToU64(info[2], "quotaBytes");
  if (!name.ok() || !quota.ok()) return ErrorResult(env, !name.ok() ? name.status() : quota.status());
  Result<arena::TenantId> id = found.value()->arena->CreateTenant(name.value(), quota.value());
  if (!id.ok()) return ErrorResult(env, id.status());
  return OkResult(env, Napi::Number::New(env, id.value()));
}

Napi::Value FindTenantJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<std::string> name = ToText(info[1], "name");
  if (!name.ok()) return ErrorResult(env, name.status());
  Result<arena::TenantId> id = found.value()->arena->FindTenant(name.value());
  if (!id.ok()) return ErrorResult(env, id.status());
  return OkResult(env, Napi::Number::New(env, id.value()));
}

Napi::Value SetTenantQuotaJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> tenant = ToU64(info[1], "tenant");
  Result<uint64_t> quota = ToU64(info[2], "quotaBytes");
  if (!tenant.ok() || !quota.ok()) return ErrorResult(env, !tenant.ok() ? tenant.status() : quota.status());
  Status set = found.value()->arena->SetTenantQuota(static_cast<arena::TenantId>(tenant.value()), quota.value());
  return set.ok() ? OkResult(env, env.Null()) : ErrorResult(env, set);
}

Napi::Value CreateOwnerJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<std::string> kind_name = ToText(info[1], "kind");
  Result<std::string> label = ToText(info[2], "label");
  Result<uint64_t> parent = ToU64(info[3], "parent");
  if (!kind_name.ok() || !label.ok() || !parent.ok()) {
    return ErrorResult(env, !kind_name.ok() ? kind_name.status() : !label.ok() ? label.status() : parent.status());
  }
  Result<arena::OwnerKind> kind = arena::ParseOwnerKind(kind_name.value());
  if (!kind.ok()) return ErrorResult(env, kind.status());
  Result<arena::OwnerId> owner = found.value()->arena->CreateOwner(kind.value(), label.value(), parent.value());
  if (!owner.ok()) return ErrorResult(env, owner.status());
  found.value()->owners.insert(owner.value());
  return OkResult(env, Napi::Number::New(env, static_cast<double>(owner.value())));
}

Napi::Value DestroyOwnerJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> owner = ToU64(info[1], "owner");
  if (!owner.ok()) return ErrorResult(env, owner.status());
  // The attachment may be closed by an eviction callback: keep the arena.
  std::shared_ptr<Arena> arena = found.value()->arena;
  found.value()->owners.erase(owner.value());
  Result<arena::ReleaseSummary> summary = arena->DestroyOwner(owner.value());
  if (!summary.ok()) return ErrorResult(env, summary.status());
  return OkResult(env, SummaryToJs(env, summary.value()));
}

Napi::Value OwnerUsageJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> owner = ToU64(info[1], "owner");
  if (!owner.ok()) return ErrorResult(env, owner.status());
  Result<arena::ReleaseSummary> usage = found.value()->arena->OwnerUsage(owner.value());
  if (!usage.ok()) return ErrorResult(env, usage.status());
  return OkResult(env, SummaryToJs(env, usage.value()));
}

Napi::Value AllocJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<ChargeArgs> args = ReadCharge(EnvOf(info), info);
  if (!args.ok()) return ErrorResult(env, args.status());
  std::shared_ptr<Arena> arena = args.value().attachment->arena;  // callbacks may close the attachment
  arena::Failure failure;
  Result<arena::BlockInfo> block = arena->Alloc(args.value().owner, args.value().bytes, args.value().options, &failure);
  if (!block.ok()) return FailureResult(env, block.status(), failure);
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", Napi::Number::New(env, static_cast<double>(block.value().handle)));
  out.Set("size", Napi::Number::New(env, static_cast<double>(block.value().size)));
  out.Set("requested", Napi::Number::New(env, static_cast<double>(block.value().requested)));
  return OkResult(env, out);
}

Napi::Value ReserveJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<ChargeArgs> args = ReadCharge(EnvOf(info), info);
  if (!args.ok()) return ErrorResult(env, args.status());
  std::shared_ptr<Arena> arena = args.value().attachment->arena;
  arena::Failure failure;
  Result<arena::Handle> handle = arena->Reserve(args.value().owner, args.value().bytes, args.value().options, &failure);
  if (!handle.ok()) return FailureResult(env, handle.status(), failure);
  return OkResult(env, Napi::Number::New(env, static_cast<double>(handle.value())));
}

// retain, release, pin, unpin, touch: (arena, handle).
enum class HandleOp { kRetain, kRelease, kPin, kUnpin, kTouch };

template <HandleOp kOp>
Napi::Value HandleOpJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> handle = ToU64(info[1], "handle");
  if (!handle.ok()) return ErrorResult(env, handle.status());
  Arena& arena = *found.value()->arena;
  if constexpr (kOp == HandleOp::kRetain || kOp == HandleOp::kRelease) {
    Result<uint32_t> count = kOp == HandleOp::kRetain ? arena.Retain(handle.value()) : arena.Release(handle.value());
    if (!count.ok()) return ErrorResult(env, count.status());
    return OkResult(env, Napi::Number::New(env, count.value()));
  } else {
    Status status = kOp == HandleOp::kPin     ? arena.Pin(handle.value())
                    : kOp == HandleOp::kUnpin ? arena.Unpin(handle.value())
                                              : arena.Touch(handle.value());
    return status.ok() ? OkResult(env, env.Null()) : ErrorResult(env, status);
  }
}

Napi::Value LookupJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> handle = ToU64(info[1], "handle");
  if (!handle.ok()) return ErrorResult(env, handle.status());
  Result<arena::BlockInfo> block = found.value()->arena->Lookup(handle.value());
  if (!block.ok()) return ErrorResult(env, block.status());
  Napi::Object out = Napi::Object::New(env);
  out.Set("handle", Napi::Number::New(env, static_cast<double>(block.value().handle)));
  out.Set("size", Napi::Number::New(env, static_cast<double>(block.value().size)));
  out.Set("requested", Napi::Number::New(env, static_cast<double>(block.value().requested)));
  out.Set("refcount", Napi::Number::New(env, block.value().refcount));
  return OkResult(env, out);
}

// A zero-copy external ArrayBuffer over a host or pinned block, `requested`
// bytes long. It holds no reference: it is valid while the block lives, and
// the TS wrapper detaches the views it made when the block goes.
Napi::Value ViewJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  Result<uint64_t> handle = ToU64(info[1], "handle");
  if (!handle.ok()) return ErrorResult(env, handle.status());
  Arena& arena = *found.value()->arena;
  if (!arena.backend().host_accessible()) {
    return ErrorResult(env, Status(StatusCode::kFailedPrecondition,
                                   std::string(arena::BackendKindName(arena.backend().kind())) +
                                       " memory cannot be viewed from JS (host and pinned blocks only)"));
  }
  Result<arena::BlockInfo> block = arena.Lookup(handle.value());
  if (!block.ok()) return ErrorResult(env, block.status());
  Napi::ArrayBuffer view =
      Napi::ArrayBuffer::New(env, block.value().ptr, block.value().requested, [](Napi::Env, void*) {});
  return OkResult(env, view);
}

Napi::Value DetachViewJs(const Napi::CallbackInfo& info) {
  if (!info[0].IsArrayBuffer()) return Napi::Boolean::New(info.Env(), false);
  Napi::ArrayBuffer buffer = info[0].As<Napi::ArrayBuffer>();
  if (buffer.IsDetached()) return Napi::Boolean::New(info.Env(), false);
  buffer.Detach();
  return Napi::Boolean::New(info.Env(), true);
}

Napi::Value StatsJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  return OkResult(env, StatsToJs(env, found.value()->arena->Stats()));
}

Napi::Value ReleaseCachedJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Result<Attachment*> found = AttachmentOf(EnvOf(info), info[0]);
  if (!found.ok()) return ErrorResult(env, found.status());
  return OkResult(env, Napi::Number::New(env, static_cast<double>(found.value()->arena->ReleaseCached())));
}

}  // namespace

void RegisterArenaBinding(Napi::Env env, Napi::Object exports) {
  auto state = std::make_unique<ArenaEnv>();
  state->env = env;
  ArenaEnv* raw = state.get();
  env.AddCleanupHook(OnEnvCleanup, raw);
  state.release();  // owned by the cleanup hook
  ExportFunctions(env, exports, raw, {
      {"arenaCreate", CreateJs},
      {"arenaAttach", AttachJs},
      {"arenaClose", CloseJs},
      {"arenaInfo", InfoJs},
      {"arenaCreateTenant", CreateTenantJs},
      {"arenaFindTenant", FindTenantJs},
      {"arenaSetTenantQuota", SetTenantQuotaJs},
      {"arenaCreateOwner", CreateOwnerJs},
      {"arenaDestroyOwner", DestroyOwnerJs},
      {"arenaOwnerUsage", OwnerUsageJs},
      {"arenaAlloc", AllocJs},
      {"arenaReserve", ReserveJs},
      {"arenaRetain", HandleOpJs<HandleOp::kRetain>},
      {"arenaRelease", HandleOpJs<HandleOp::kRelease>},
      {"arenaPin", HandleOpJs<HandleOp::kPin>},
      {"arenaUnpin", HandleOpJs<HandleOp::kUnpin>},
      {"arenaTouch", HandleOpJs<HandleOp::kTouch>},
      {"arenaLookup", LookupJs},
      {"arenaView", ViewJs},
      {"arenaDetachView", DetachViewJs},
      {"arenaStats", StatsJs},
      {"arenaReleaseCached", ReleaseCachedJs},
  });
}

}  // namespace hotpath::napi
