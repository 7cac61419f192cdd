// Arena: the public methods. Each takes ArenaState::mu for its whole body,
// except around eviction callbacks (EvictOne), which run unlocked.
#include "arena/arena.h"

#include <algorithm>
#include <utility>

#include "arena/detail/arena_state.h"

namespace hotpath::arena {

using detail::ArenaState;
using detail::Entry;
using detail::FormatBytes;
using detail::LruEntry;
using detail::Owner;
using detail::Tenant;

namespace {

// Above this a size is surely a bug (and sums could overflow).
constexpr uint64_t kMaxRequestBytes = uint64_t{1} << 48;

Status BadSize(uint64_t bytes) {
  return Status(StatusCode::kInvalidArgument,
                "bytes must be between 1 and 2^48, not " + std::to_string(bytes));
}

// Evicts the least recently used idle evictable entry (of `tenant`, or of
// anyone with kAnyTenant). Releases `lock` while the callback runs and
// re-takes it. Returns false when there was no candidate. A refused entry
// goes to `skip` so one call never asks the same entry twice.
bool EvictOne(ArenaState& s, std::unique_lock<std::mutex>& lock, TenantId tenant, std::vector<Handle>& skip) {
  LruEntry* victim = s.PickVictimLocked(tenant, skip);
  if (victim == nullptr) return false;
  Entry* entry = s.FindEntryLocked(victim->handle).value();
  EvictionInfo info;
  info.handle = victim->handle;
  info.is_block = !detail::IsReservation(victim->handle);
  info.tenant = entry->tenant;
  info.owner = entry->owner->id;
  info.bytes = entry->bytes;
  uint64_t now = s.NowNs();
  info.idle_ns = now > victim->last_use_ns ? now - victim->last_use_ns : 0;
  victim->evicting = true;
  EvictCallback callback = victim->on_evict;  // the entry may die while unlocked
  lock.unlock();
  bool accepted = false;
  try {
    accepted = callback && callback(info);
  } catch (...) {
    accepted = false;  // a throwing callback refuses
  }
  lock.lock();
  skip.push_back(info.handle);
  Result<Entry*> still = s.FindEntryLocked(info.handle);
  if (!accepted) {
    ++s.eviction_refusals;
    if (still.ok() && still.value()->lru) still.value()->lru->evicting = false;
    return true;
  }
  ++s.evictions;
  s.tenants[info.tenant]->evictions.fetch_add(1, std::memory_order_relaxed);
  s.eviction_age_total_ns += info.idle_ns;
  s.eviction_age_max_ns = std::max(s.eviction_age_max_ns, info.idle_ns);
  // The callback may already have freed it (e.g. by destroying its owner).
  if (still.ok()) s.FreeEntryLocked(info.handle);
  return true;
}

Status QuotaStatus(const Tenant& tenant, uint64_t bytes, Failure* failure) {
  uint64_t used = tenant.used();
  uint64_t quota = tenant.quota.load(std::memory_order_relaxed);
  if (failure != nullptr) {
    failure->kind = Failure::Kind::kQuota;
    failure->tenant = tenant.name;
    failure->requested = bytes;
    failure->used = used;
    failure->quota = quota;
    failure->holders.clear();
  }
  return Status(StatusCode::kResourceExhausted,
                "tenant '" + tenant.name + "' over quota: requested " + FormatBytes(bytes) + ", using " +
                    FormatBytes(used) + " of its " + FormatBytes(quota) + " quota");
}

Status OutOfMemoryStatus(ArenaState& s, const Tenant& tenant, uint64_t bytes, const Status& why, Failure* failure) {
  ++s.oom_failures;
  Failure local;
  Failure* out = failure != nullptr ? failure : &local;
  s.FillOutOfMemoryLocked(out, tenant.name, bytes);
  const auto& counters = s.pool.counters();
  return Status(StatusCode::kResourceExhausted,
                "arena '" + s.name + "' out of memory: " + FormatBytes(bytes) + " for tenant '" + tenant.name +
                    "' (" + why.message() + "); capacity " + FormatBytes(s.config.backend.capacity_bytes) +
                    ", backend " + FormatBytes(counters.reserved) + " (cached " +
                    FormatBytes(counters.reserved - s.allocated) + "), reservations " +
                    FormatBytes(s.reservation_bytes) + "; held by " + s.DescribeHoldersLocked(out->holders));
}

}  // namespace

Result<std::shared_ptr<Arena>> Arena::Create(std::string name, ArenaConfig config) {
  Result<BackendChoice> choice = DetectBackend(config.backend);
  if (!choice.ok()) return choice.status();
  BackendChoice chosen = std::move(choice).value();
  Status valid = detail::Pool::ValidateConfig(
      detail::PoolConfig{config.segment_bytes, config.max_split_bytes, config.small_max_bytes});
  if (!valid.ok()) return valid;
  auto state = std::make_unique<ArenaState>(std::move(name), std::move(config), std::move(chosen.backend),
                                            std::move(chosen.fallback_reason));
  return std::shared_ptr<Arena>(new Arena(std::move(state)));
}

Result<std::shared_ptr<Arena>> Arena::Create(std::string name, ArenaConfig config,
                                             std::unique_ptr<MemoryBackend> backend) {
  if (backend == nullptr) return Status(StatusCode::kInvalidArgument, "backend is null");
  if (config.backend.capacity_bytes == 0) return Status(StatusCode::kInvalidArgument, "capacity must be > 0");
  Status valid = detail::Pool::ValidateConfig(
      detail::PoolConfig{config.segment_bytes, config.max_split_bytes, config.small_max_bytes});
  if (!valid.ok()) return valid;
  config.backend.kind = backend->kind();
  auto state = std::make_unique<ArenaState>(std::move(name), std::move(config), std::move(backend), "");
  return std::shared_ptr<Arena>(new Arena(std::move(state)));
}

Arena::Arena(std::unique_ptr<ArenaState> state) : state_(std::move(state)) {}

Arena::~Arena() { Shutdown(); }

const std::string& Arena::name() const { return state_->name; }
const MemoryBackend& Arena::backend() const { return *state_->backend; }
const std::string& Arena::fallback_reason() const { return state_->fallback_reason; }

Result<TenantId> Arena::CreateTenant(const std::string& name, uint64_t quota_bytes) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (Status alive = state_->CheckAliveLocked(); !alive.ok()) return alive;
  if (name.empty()) return Status(StatusCode::kInvalidArgument, "tenant name must not be empty");
  for (const auto& tenant : state_->tenants) {
    if (tenant->name == name) {
      return Status(StatusCode::kFailedPrecondition, "tenant '" + name + "' already exists");
    }
  }
  auto tenant = std::make_unique<Tenant>();
  tenant->id = static_cast<TenantId>(state_->tenants.size());
  tenant->name = name;
  tenant->quota.store(quota_bytes, std::memory_order_relaxed);
  state_->tenants.push_back(std::move(tenant));
  return state_->tenants.back()->id;
}

Result<TenantId> Arena::FindTenant(const std::string& name) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const auto& tenant : state_->tenants) {
    if (tenant->name == name) return tenant->id;
  }
  return Status(StatusCode::kNotFound, "tenant '" + name + "' does not exist");
}

Status Arena::SetTenantQuota(TenantId id, uint64_t quota_bytes) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Tenant*> tenant = state_->FindTenantLocked(id);
  if (!tenant.ok()) return tenant.status();
  tenant.value()->quota.store(quota_bytes, std::memory_order_relaxed);
  return Status::Ok();
}

Result<OwnerId> Arena::CreateOwner(OwnerKind kind, const std::string& label, OwnerId parent) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (Status alive = state_->CheckAliveLocked(); !alive.ok()) return alive;
  Owner* parent_owner = nullptr;
  if (parent != kNoOwner) {
    Result<Owner*> found = state_->FindOwnerLocked(parent);
    if (!found.ok()) return found.status();
    parent_owner = found.value();
  }
  auto owner = std::make_unique<Owner>();
  owner->id = state_->next_owner++;
  owner->kind = kind;
  owner->label = label;
  owner->parent = parent_owner;
  if (parent_owner != nullptr) parent_owner->children.push_back(owner.get());
  OwnerId id = owner->id;
  state_->owners.emplace(id, std::move(owner));
  return id;
}

Result<ReleaseSummary> Arena::DestroyOwner(OwnerId id) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Owner*> owner = state_->FindOwnerLocked(id);
  if (!owner.ok()) return owner.status();
  ReleaseSummary summary;
  state_->DestroyOwnerLocked(owner.value(), &summary);
  return summary;
}

namespace {
// Adds `owner`'s holdings and its descendants' to `usage`. Caller holds mu.
void AddUsageLocked(const detail::EntryTable& blocks, const detail::EntryTable& reservations,
                    const detail::Owner& owner, ReleaseSummary* usage) {
  usage->owners += 1;
  usage->bytes += owner.allocated + owner.reserved;
  for (uint32_t i = owner.first_block; i != UINT32_MAX; i = blocks.slots[i].owner_next) usage->blocks += 1;
  for (uint32_t i = owner.first_reservation; i != UINT32_MAX; i = reservations.slots[i].owner_next) {
    usage->reservations += 1;
  }
  for (const detail::Owner* child : owner.children) AddUsageLocked(blocks, reservations, *child, usage);
}
}  // namespace

Result<ReleaseSummary> Arena::OwnerUsage(OwnerId id) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Owner*> owner = state_->FindOwnerLocked(id);
  if (!owner.ok()) return owner.status();
  ReleaseSummary usage;
  AddUsageLocked(state_->blocks, state_->reservations, *owner.value(), &usage);
  return usage;
}

Result<BlockInfo> Arena::Alloc(OwnerId owner_id, uint64_t bytes, const ChargeOptions& options, Failure* failure) {
  ArenaState& s = *state_;
  if (bytes == 0 || bytes > kMaxRequestBytes) return BadSize(bytes);
  if (options.evictable && !options.on_evict) {
    return Status(StatusCode::kInvalidArgument, "an evictable block needs an eviction callback");
  }
  detail::PoolKind kind = s.pool.Classify(bytes, options.evictable);  // config only: no lock needed
  uint64_t size = s.pool.BlockSize(bytes, kind);
  std::vector<Handle> skip;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (Status alive = s.CheckAliveLocked(); !alive.ok()) return alive;
    Result<Owner*> owner = s.FindOwnerLocked(owner_id);
    if (!owner.ok()) return owner.status();
    Result<Tenant*> found = s.FindTenantLocked(options.tenant);
    if (!found.ok()) return found.status();
    Tenant& tenant = *found.value();
    // 1. The quota: reserve first, roll back if the pool cannot serve.
    if (!tenant.TryCharge(size, false)) {
      if (EvictOne(s, lock, tenant.id, skip)) continue;
      tenant.quota_failures.fetch_add(1, std::memory_order_relaxed);
      return QuotaStatus(tenant, size, failure);
    }
    // A cached oversize block may be up to 1/8 larger: only if that fits too.
    uint64_t quota = tenant.quota.load(std::memory_order_relaxed);
    uint64_t headroom = quota > tenant.used() ? quota - tenant.used() : 0;
    detail::PoolBlock block;
    Status pooled = s.PoolAllocLocked(size, kind, size + std::min(size / 8, headroom), &block);
    if (!pooled.ok()) {
      tenant.Uncharge(size, false);
      if (pooled.code() == StatusCode::kResourceExhausted && EvictOne(s, lock, ArenaState::kAnyTenant, skip)) {
        continue;
      }
      if (pooled.code() != StatusCode::kResourceExhausted) return pooled;
      return OutOfMemoryStatus(s, tenant, size, pooled, failure);
    }
    if (block.size > size) tenant.TryCharge(block.size - size, false);  // within headroom: cannot fail
    size = block.size;
    uint32_t slot = s.NewEntryLocked(s.blocks);
    Entry& entry = s.blocks.slots[slot];
    entry.bytes = size;
    entry.requested = bytes;
    entry.refcount = 1;
    entry.tenant = tenant.id;
    entry.block = block;
    s.LinkToOwnerLocked(s.blocks, slot, owner.value(), false);
    Handle handle = s.HandleOfLocked(s.blocks, entry, false);
    if (options.evictable) {
      entry.lru = std::make_unique<LruEntry>();
      entry.lru->handle = handle;
      entry.lru->on_evict = options.on_evict;
      s.LruPushLocked(entry.lru.get());
    }
    tenant.requested.fetch_add(bytes, std::memory_order_relaxed);
    tenant.blocks.fetch_add(1, std::memory_order_relaxed);
    s.requested += bytes;
    s.allocated += size;
    s.UpdatePeaksLocked();
    return BlockInfo{handle, reinterpret_cast<void*>(block.addr), size, bytes, 1, tenant.id, owner_id};
  }
}

Result<uint32_t> Arena::Retain(Handle handle) {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (detail::IsReservation(handle)) {
    return Status(StatusCode::kInvalidArgument, "reservations have no refcount; only blocks can be retained");
  }
  Result<Entry*> entry = state_->FindEntryLocked(handle);
  if (!entry.ok()) return entry.status();
  if (entry.value()->refcount == UINT32_MAX) return Status(StatusCode::kFailedPrecondition, "refcount overflow");
  return ++entry.value()->refcount;
}

Result<uint32_t> Arena::Release(Handle handle) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Entry*> entry = state_->FindEntryLocked(handle);
  if (!entry.ok()) return entry.status();
  if (!detail::IsReservation(handle) && --entry.value()->refcount > 0) return entry.value()->refcount;
  state_->FreeEntryLocked(handle);
  return 0u;
}

Result<BlockInfo> Arena::Lookup(Handle handle) const {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (detail::IsReservation(handle)) return Status(StatusCode::kInvalidArgument, "not a block handle");
  Result<Entry*> found = state_->FindEntryLocked(handle);
  if (!found.ok()) return found.status();
  const Entry& e = *found.value();
  return BlockInfo{handle, reinterpret_cast<void*>(e.block.addr), e.bytes, e.requested, e.refcount, e.tenant,
                   e.owner->id};
}

Result<Handle> Arena::Reserve(OwnerId owner_id, uint64_t bytes, const ChargeOptions& options, Failure* failure) {
  ArenaState& s = *state_;
  if (bytes == 0 || bytes > kMaxRequestBytes) return BadSize(bytes);
  if (options.evictable && !options.on_evict) {
    return Status(StatusCode::kInvalidArgument, "an evictable reservation needs an eviction callback");
  }
  std::vector<Handle> skip;
  std::unique_lock<std::mutex> lock(s.mu);
  for (;;) {
    if (Status alive = s.CheckAliveLocked(); !alive.ok()) return alive;
    Result<Owner*> owner = s.FindOwnerLocked(owner_id);
    if (!owner.ok()) return owner.status();
    Result<Tenant*> found = s.FindTenantLocked(options.tenant);
    if (!found.ok()) return found.status();
    Tenant& tenant = *found.value();
    if (!tenant.TryCharge(bytes, true)) {
      if (EvictOne(s, lock, tenant.id, skip)) continue;
      tenant.quota_failures.fetch_add(1, std::memory_order_relaxed);
      return QuotaStatus(tenant, bytes, failure);
    }
    if (!s.MakeRoomLocked(bytes)) {
      tenant.Uncharge(bytes, true);
      if (EvictOne(s, lock, ArenaState::kAnyTenant, skip)) continue;
      return OutOfMemoryStatus(s, tenant, bytes, Status(StatusCode::kResourceExhausted, "reservation exceeds the capacity"),
                               failure);
    }
    uint32_t slot = s.NewEntryLocked(s.reservations);
    Entry& entry = s.reservations.slots[slot];
    entry.bytes = bytes;
    entry.tenant = tenant.id;
    s.LinkToOwnerLocked(s.reservations, slot, owner.value(), true);
    Handle handle = s.HandleOfLocked(s.reservations, entry, true);
    if (options.evictable) {
      entry.lru = std::make_unique<LruEntry>();
      entry.lru->handle = handle;
      entry.lru->on_evict = options.on_evict;
      s.LruPushLocked(entry.lru.get());
    }
    tenant.reservations.fetch_add(1, std::memory_order_relaxed);
    s.reservation_bytes += bytes;
    return handle;
  }
}

Status Arena::Pin(Handle handle) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Entry*> entry = state_->FindEntryLocked(handle);
  if (!entry.ok()) return entry.status();
  if (LruEntry* lru = entry.value()->lru.get()) {
    ++lru->pins;
    state_->LruTouchLocked(lru);
  }
  return Status::Ok();
}

Status Arena::Unpin(Handle handle) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Entry*> entry = state_->FindEntryLocked(handle);
  if (!entry.ok()) return entry.status();
  if (LruEntry* lru = entry.value()->lru.get()) {
    if (lru->pins == 0) return Status(StatusCode::kFailedPrecondition, "unpin of an entry that is not pinned");
    --lru->pins;
    state_->LruTouchLocked(lru);
  }
  return Status::Ok();
}

Status Arena::Touch(Handle handle) {
  std::lock_guard<std::mutex> lock(state_->mu);
  Result<Entry*> entry = state_->FindEntryLocked(handle);
  if (!entry.ok()) return entry.status();
  if (LruEntry* lru = entry.value()->lru.get()) state_->LruTouchLocked(lru);
  return Status::Ok();
}

uint64_t Arena::ReleaseCached() {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->pool.ReleaseAllIdle();
}

void Arena::Shutdown() {
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->shut_down) return;
  ReleaseSummary summary;
  while (!state_->owners.empty()) {
    // Destroy roots; each takes its descendants along.
    Owner* root = state_->owners.begin()->second.get();
    while (root->parent != nullptr) root = root->parent;
    state_->DestroyOwnerLocked(root, &summary);
  }
  state_->pool.ReleaseAllIdle();
  state_->shut_down = true;
}

bool Arena::is_shut_down() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  return state_->shut_down;
}

}  // namespace hotpath::arena
