// Arena statistics, the invariant check used by the tests, and owner kind
// names. Each function takes ArenaState::mu.
#include <string>
#include <unordered_map>

#include "arena/arena.h"
#include "arena/detail/arena_state.h"

namespace hotpath::arena {

using detail::ArenaState;
using detail::Entry;

namespace {

double Ratio(uint64_t part, uint64_t whole) {
  return whole == 0 ? 0.0 : static_cast<double>(part) / static_cast<double>(whole);
}

Status Broken(const std::string& what) { return Status(StatusCode::kInternal, "arena invariant: " + what); }

}  // namespace

const char* OwnerKindName(OwnerKind kind) {
  switch (kind) {
    case OwnerKind::kTenant: return "tenant";
    case OwnerKind::kModel: return "model";
    case OwnerKind::kWorkerGeneration: return "worker-generation";
    case OwnerKind::kBatch: return "batch";
    case OwnerKind::kOther: return "other";
  }
  return "other";
}

Result<OwnerKind> ParseOwnerKind(const std::string& name) {
  for (OwnerKind kind : {OwnerKind::kTenant, OwnerKind::kModel, OwnerKind::kWorkerGeneration, OwnerKind::kBatch,
                         OwnerKind::kOther}) {
    if (name == OwnerKindName(kind)) return kind;
  }
  return Status(StatusCode::kInvalidArgument,
                "unknown owner kind '" + name + "' (tenant, model, worker-generation, batch or other)");
}

ArenaStats Arena::Stats() const {
  const ArenaState& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  const detail::PoolCounters& pool = s.pool.counters();
  ArenaStats out;
  out.capacity = s.config.backend.capacity_bytes;
  out.requested = s.requested;
  out.allocated = s.allocated;
  out.backend_reserved = pool.reserved;
  out.reservations = s.reservation_bytes;
  out.cached = pool.reserved - s.allocated;
  out.peak_allocated = s.peak_allocated;
  out.peak_backend_reserved = s.peak_backend_reserved;
  out.total_free = pool.total_free;
  out.largest_free = s.pool.largest_free();
  out.external_fragmentation = pool.total_free == 0 ? 0.0 : 1.0 - Ratio(out.largest_free, pool.total_free);
  out.cache_overhead = Ratio(pool.reserved - s.allocated, pool.reserved);
  out.internal_fragmentation = Ratio(s.allocated - s.requested, s.allocated);
  out.segments = pool.segments;
  out.blocks = s.blocks.live;
  out.reservation_count = s.reservations.live;
  out.owners = s.owners.size();
  out.backend_allocs = pool.backend_allocs;
  out.backend_frees = pool.backend_frees;
  out.backend_failures = pool.backend_failures;
  out.evictions = s.evictions;
  out.eviction_refusals = s.eviction_refusals;
  out.eviction_age_total_ns = s.eviction_age_total_ns;
  out.eviction_age_max_ns = s.eviction_age_max_ns;
  out.oom_failures = s.oom_failures;
  for (const auto& t : s.tenants) {
    TenantStats ts;
    ts.id = t->id;
    ts.name = t->name;
    ts.quota = t->quota.load(std::memory_order_relaxed);
    ts.requested = t->requested.load(std::memory_order_relaxed);
    ts.allocated = t->allocated.load(std::memory_order_relaxed);
    ts.reserved = t->reserved.load(std::memory_order_relaxed);
    ts.used = ts.allocated + ts.reserved;
    ts.peak = t->peak.load(std::memory_order_relaxed);
    ts.blocks = t->blocks.load(std::memory_order_relaxed);
    ts.reservations = t->reservations.load(std::memory_order_relaxed);
    ts.evictions = t->evictions.load(std::memory_order_relaxed);
    ts.quota_failures = t->quota_failures.load(std::memory_order_relaxed);
    out.quota_failures += ts.quota_failures;
    out.tenants.push_back(std::move(ts));
  }
  return out;
}

std::vector<Handle> Arena::LruOrder() const {
  std::lock_guard<std::mutex> lock(state_->mu);
  std::vector<Handle> order;
  for (const detail::LruEntry* e = state_->lru_head; e != nullptr; e = e->next) order.push_back(e->handle);
  return order;
}

Status Arena::CheckInvariants() const {
  ArenaState& s = *state_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (Status pool = s.pool.CheckInvariants(s.allocated); !pool.ok()) return pool;

  struct Sums {
    uint64_t requested = 0, allocated = 0, reserved = 0, blocks = 0, reservations = 0;
  };
  std::vector<Sums> by_tenant(s.tenants.size());
  std::unordered_map<const detail::Owner*, Sums> by_owner;
  uint64_t evictable = 0;
  for (bool reservation : {false, true}) {
    const detail::EntryTable& table = reservation ? s.reservations : s.blocks;
    uint64_t live = 0;
    for (const Entry& e : table.slots) {
      if (!e.live) continue;
      ++live;
      if (e.tenant >= s.tenants.size()) return Broken("entry of an unknown tenant");
      if (e.owner == nullptr || s.owners.count(e.owner->id) == 0) return Broken("entry of a destroyed owner");
      Sums& t = by_tenant[e.tenant];
      Sums& o = by_owner[e.owner];
      if (reservation) {
        t.reserved += e.bytes, o.reserved += e.bytes, ++t.reservations;
      } else {
        if (e.refcount == 0) return Broken("live block with refcount 0");
        if (e.block.size != e.bytes || e.requested > e.bytes) return Broken("block sizes");
        t.allocated += e.bytes, o.allocated += e.bytes, t.requested += e.requested, ++t.blocks;
      }
      if (e.lru) {
        ++evictable;
        if (e.lru->handle != s.HandleOfLocked(table, e, reservation)) return Broken("LRU entry names another handle");
      }
    }
    if (live != table.live || live + table.free_slots.size() != table.slots.size()) return Broken("table counts");
  }
  Sums total;
  for (size_t i = 0; i < s.tenants.size(); ++i) {
    const detail::Tenant& t = *s.tenants[i];
    const Sums& sum = by_tenant[i];
    if (t.requested.load() != sum.requested || t.allocated.load() != sum.allocated ||
        t.reserved.load() != sum.reserved || t.blocks.load() != sum.blocks ||
        t.reservations.load() != sum.reservations) {
      return Broken("tenant '" + t.name + "' counters differ from its entries");
    }
    total.requested += sum.requested, total.allocated += sum.allocated, total.reserved += sum.reserved;
  }
  if (total.requested != s.requested || total.allocated != s.allocated || total.reserved != s.reservation_bytes) {
    return Broken("tenant sums differ from the arena totals");
  }
  for (const auto& [id, owner] : s.owners) {
    const Sums& sum = by_owner[owner.get()];
    if (owner->allocated != sum.allocated || owner->reserved != sum.reserved) {
      return Broken("owner " + std::to_string(id) + " byte counts");
    }
    // Walk the owner's lists: each entry points back at it.
    for (bool reservation : {false, true}) {
      const detail::EntryTable& table = reservation ? s.reservations : s.blocks;
      uint64_t bytes = 0;
      uint32_t prev = UINT32_MAX;
      for (uint32_t i = reservation ? owner->first_reservation : owner->first_block; i != UINT32_MAX;
           i = table.slots[i].owner_next) {
        const Entry& e = table.slots[i];
        if (!e.live || e.owner != owner.get() || e.owner_prev != prev) return Broken("owner list links");
        bytes += e.bytes;
        prev = i;
      }
      if (bytes != (reservation ? owner->reserved : owner->allocated)) return Broken("owner list bytes");
    }
    for (const detail::Owner* child : owner->children) {
      if (child->parent != owner.get()) return Broken("owner tree links");
    }
  }
  uint64_t listed = 0, last_tick = 0;
  for (const detail::LruEntry* e = s.lru_head; e != nullptr; e = e->next) {
    if (e->last_use_tick <= last_tick) return Broken("LRU list out of order");
    if ((e->next == nullptr) != (e == s.lru_tail)) return Broken("LRU tail");
    last_tick = e->last_use_tick;
    ++listed;
  }
  if (listed != evictable) return Broken("LRU list length differs from evictable entries");
  uint64_t held = s.pool.counters().reserved + s.reservation_bytes;
  if (held > s.config.backend.capacity_bytes) return Broken("capacity exceeded");
  return Status::Ok();
}

}  // namespace hotpath::arena
