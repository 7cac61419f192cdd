// ArenaState helpers: tables, owners, LRU list, capacity and failure
// reports. Every *Locked function requires ArenaState::mu held.
#include "arena/detail/arena_state.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace hotpath::arena::detail {

std::string FormatBytes(uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  }
  return text;
}

bool Tenant::TryCharge(uint64_t bytes, bool reservation) {
  uint64_t current = used();
  uint64_t limit = quota.load(std::memory_order_relaxed);
  if (current > limit || bytes > limit - current) return false;
  (reservation ? reserved : allocated).fetch_add(bytes, std::memory_order_relaxed);
  uint64_t now = current + bytes;
  if (now > peak.load(std::memory_order_relaxed)) peak.store(now, std::memory_order_relaxed);
  return true;
}

void Tenant::Uncharge(uint64_t bytes, bool reservation) {
  (reservation ? reserved : allocated).fetch_sub(bytes, std::memory_order_relaxed);
}

ArenaState::ArenaState(std::string name_in, ArenaConfig config_in, std::unique_ptr<MemoryBackend> backend_in,
                       std::string fallback_reason_in)
    : name(std::move(name_in)),
      config(std::move(config_in)),
      backend(std::move(backend_in)),
      fallback_reason(std::move(fallback_reason_in)),
      pool(backend.get(), PoolConfig{config.segment_bytes, config.max_split_bytes, config.small_max_bytes}) {
  auto tenant = std::make_unique<Tenant>();
  tenant->id = kDefaultTenant;
  tenant->name = "default";
  tenant->quota.store(config.backend.capacity_bytes, std::memory_order_relaxed);
  tenants.push_back(std::move(tenant));
}

ArenaState::~ArenaState() = default;

uint64_t ArenaState::NowNs() const {
  if (config.clock_ns) return config.clock_ns();
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

Status ArenaState::CheckAliveLocked() const {
  if (!shut_down) return Status::Ok();
  return Status(StatusCode::kFailedPrecondition, "arena '" + name + "' has been shut down");
}

Result<Owner*> ArenaState::FindOwnerLocked(OwnerId id) const {
  auto it = owners.find(id);
  if (it == owners.end()) {
    return Status(StatusCode::kNotFound, "owner " + std::to_string(id) + " does not exist (destroyed?)");
  }
  return it->second.get();
}

Result<Tenant*> ArenaState::FindTenantLocked(TenantId id) const {
  if (id >= tenants.size()) return Status(StatusCode::kNotFound, "tenant " + std::to_string(id) + " does not exist");
  return tenants[id].get();
}

Result<Entry*> ArenaState::FindEntryLocked(Handle handle) {
  EntryTable& table = IsReservation(handle) ? reservations : blocks;
  uint32_t slot = HandleSlot(handle);
  if (handle >= (kReservationBit << 1) || slot >= table.slots.size() || !table.slots[slot].live ||
      (table.slots[slot].generation & kGenerationMask) != HandleGeneration(handle)) {
    return Status(StatusCode::kNotFound, std::string(IsReservation(handle) ? "reservation " : "block ") +
                                             std::to_string(handle) + " does not exist (freed or evicted?)");
  }
  return &table.slots[slot];
}

Handle ArenaState::HandleOfLocked(const EntryTable& table, const Entry& entry, bool reservation) const {
  return MakeHandle(reservation, entry.generation, static_cast<uint32_t>(&entry - table.slots.data()));
}

uint32_t ArenaState::NewEntryLocked(EntryTable& table) {
  uint32_t slot;
  if (!table.free_slots.empty()) {
    slot = table.free_slots.back();
    table.free_slots.pop_back();
  } else {
    slot = static_cast<uint32_t>(table.slots.size());
    table.slots.emplace_back();
  }
  table.slots[slot].live = true;
  ++table.live;
  return slot;
}

void ArenaState::LinkToOwnerLocked(EntryTable& table, uint32_t slot, Owner* owner, bool reservation) {
  Entry& entry = table.slots[slot];
  uint32_t& first = reservation ? owner->first_reservation : owner->first_block;
  entry.owner = owner;
  entry.owner_prev = UINT32_MAX;
  entry.owner_next = first;
  if (first != UINT32_MAX) table.slots[first].owner_prev = slot;
  first = slot;
  (reservation ? owner->reserved : owner->allocated) += entry.bytes;
}

void ArenaState::FreeEntryLocked(Handle handle) {
  bool reservation = IsReservation(handle);
  EntryTable& table = reservation ? reservations : blocks;
  uint32_t slot = HandleSlot(handle);
  Entry& entry = table.slots[slot];
  // Owner list.
  Owner* owner = entry.owner;
  uint32_t& first = reservation ? owner->first_reservation : owner->first_block;
  if (entry.owner_prev != UINT32_MAX) {
    table.slots[entry.owner_prev].owner_next = entry.owner_next;
  } else {
    first = entry.owner_next;
  }
  if (entry.owner_next != UINT32_MAX) table.slots[entry.owner_next].owner_prev = entry.owner_prev;
  (reservation ? owner->reserved : owner->allocated) -= entry.bytes;
  // Tenant and arena totals.
  Tenant& tenant = *tenants[entry.tenant];
  tenant.Uncharge(entry.bytes, reservation);
  if (reservation) {
    tenant.reservations.fetch_sub(1, std::memory_order_relaxed);
    reservation_bytes -= entry.bytes;
  } else {
    tenant.requested.fetch_sub(entry.requested, std::memory_order_relaxed);
    tenant.blocks.fetch_sub(1, std::memory_order_relaxed);
    requested -= entry.requested;
    allocated -= entry.bytes;
    pool.Free(entry.block, ++tick);
  }
  if (entry.lru) LruRemoveLocked(entry.lru.get());
  // The slot: bump the generation so stale handles miss.
  uint32_t generation = entry.generation + 1;
  entry = Entry();
  entry.generation = generation & kGenerationMask;
  table.free_slots.push_back(slot);
  --table.live;
}

void ArenaState::LruPushLocked(LruEntry* entry) {
  entry->last_use_tick = ++tick;
  entry->last_use_ns = NowNs();
  entry->prev = lru_tail;
  entry->next = nullptr;
  (lru_tail != nullptr ? lru_tail->next : lru_head) = entry;
  lru_tail = entry;
}

void ArenaState::LruRemoveLocked(LruEntry* entry) {
  (entry->prev != nullptr ? entry->prev->next : lru_head) = entry->next;
  (entry->next != nullptr ? entry->next->prev : lru_tail) = entry->prev;
  entry->prev = entry->next = nullptr;
}

void ArenaState::LruTouchLocked(LruEntry* entry) {
  LruRemoveLocked(entry);
  LruPushLocked(entry);
}

bool ArenaState::IsIdleLocked(const LruEntry& lru) {
  if (lru.pins != 0 || lru.evicting) return false;
  if (IsReservation(lru.handle)) return true;
  Result<Entry*> entry = FindEntryLocked(lru.handle);
  // A retained block is in use by someone besides its owner.
  return entry.ok() && entry.value()->refcount == 1;
}

LruEntry* ArenaState::PickVictimLocked(TenantId tenant, const std::vector<Handle>& skip) {
  for (LruEntry* lru = lru_head; lru != nullptr; lru = lru->next) {
    if (!IsIdleLocked(*lru)) continue;
    if (std::find(skip.begin(), skip.end(), lru->handle) != skip.end()) continue;
    if (tenant != kAnyTenant) {
      Result<Entry*> entry = FindEntryLocked(lru->handle);
      if (!entry.ok() || entry.value()->tenant != tenant) continue;
    }
    return lru;
  }
  return nullptr;
}

void ArenaState::DestroyOwnerLocked(Owner* owner, ReleaseSummary* summary) {
  // Children first; each removes itself from owner->children.
  while (!owner->children.empty()) DestroyOwnerLocked(owner->children.back(), summary);
  while (owner->first_block != UINT32_MAX) {
    Entry& entry = blocks.slots[owner->first_block];
    summary->bytes += entry.bytes;
    ++summary->blocks;
    FreeEntryLocked(HandleOfLocked(blocks, entry, false));
  }
  while (owner->first_reservation != UINT32_MAX) {
    Entry& entry = reservations.slots[owner->first_reservation];
    summary->bytes += entry.bytes;
    ++summary->reservations;
    FreeEntryLocked(HandleOfLocked(reservations, entry, true));
  }
  if (owner->parent != nullptr) {
    auto& siblings = owner->parent->children;
    siblings.erase(std::find(siblings.begin(), siblings.end(), owner));
  }
  ++summary->owners;
  owners.erase(owner->id);
}

bool ArenaState::MakeRoomLocked(uint64_t bytes) {
  uint64_t capacity = config.backend.capacity_bytes;
  for (;;) {
    uint64_t held = pool.counters().reserved + reservation_bytes;
    if (held <= capacity && bytes <= capacity - held) return true;
    if (pool.ReleaseOldestIdle() > 0) continue;
    if (!pool.TrimEmptySlabs(++tick)) return false;
  }
}

Status ArenaState::PoolAllocLocked(uint64_t size, PoolKind kind, uint64_t max_size, PoolBlock* out) {
  if (pool.TryAlloc(size, kind, out, max_size)) return Status::Ok();
  uint64_t growth = pool.GrowthBytes(size, kind);
  if (!MakeRoomLocked(growth)) {
    return Status(StatusCode::kResourceExhausted, "a new " + FormatBytes(growth) + " segment exceeds the capacity");
  }
  Status status = pool.AllocNew(size, kind, out);
  if (status.code() == StatusCode::kResourceExhausted && pool.ReleaseAllIdle() > 0) {
    status = pool.AllocNew(size, kind, out);  // the device was full of our own cache
  }
  if (status.ok()) UpdatePeaksLocked();
  return status;
}

void ArenaState::UpdatePeaksLocked() {
  peak_allocated = std::max(peak_allocated, allocated);
  peak_backend_reserved = std::max(peak_backend_reserved, pool.counters().reserved);
}

void ArenaState::FillOutOfMemoryLocked(Failure* failure, const std::string& tenant, uint64_t bytes) const {
  if (failure == nullptr) return;
  failure->kind = Failure::Kind::kOutOfMemory;
  failure->tenant = tenant;
  failure->requested = bytes;
  failure->holders.clear();
  for (const auto& t : tenants) {
    uint64_t a = t->allocated.load(std::memory_order_relaxed);
    uint64_t r = t->reserved.load(std::memory_order_relaxed);
    if (a + r > 0) failure->holders.push_back(Holder{"tenant", t->name, a, r});
  }
  std::vector<const Owner*> largest;
  for (const auto& [id, owner] : owners) {
    if (owner->allocated + owner->reserved > 0) largest.push_back(owner.get());
  }
  std::sort(largest.begin(), largest.end(), [](const Owner* a, const Owner* b) {
    uint64_t x = a->allocated + a->reserved, y = b->allocated + b->reserved;
    return x != y ? x > y : a->id < b->id;
  });
  if (largest.size() > 8) largest.resize(8);
  for (const Owner* owner : largest) {
    failure->holders.push_back(Holder{OwnerKindName(owner->kind), owner->label, owner->allocated, owner->reserved});
  }
}

std::string ArenaState::DescribeHoldersLocked(const std::vector<Holder>& holders) const {
  std::string text;
  for (const Holder& h : holders) {
    if (!text.empty()) text += ", ";
    text += h.kind + " '" + h.name + "' " + FormatBytes(h.allocated + h.reserved);
    if (h.reserved > 0) text += " (" + FormatBytes(h.reserved) + " reserved)";
  }
  return text.empty() ? "nobody" : text;
}

}  // namespace hotpath::arena::detail
