// The state behind an Arena (arena.h). Everything here except the tenant
// counters is guarded by ArenaState::mu; functions named *Locked require it
// held. Tenant counters are atomics so readers (stats) need no lock; writers
// update them under mu as well, so "tenant sums == arena totals" holds
// whenever mu is free.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "arena/arena.h"
#include "arena/detail/pool.h"

namespace hotpath::arena::detail {

// Handle layout (53 bits, exact as a JS number):
//   bit 52: 1 = reservation, 0 = block; bits 30..51: generation; 0..29: slot.
inline constexpr uint64_t kReservationBit = uint64_t{1} << 52;
inline constexpr uint32_t kSlotBits = 30;
inline constexpr uint32_t kGenerationMask = (1u << 22) - 1;
inline Handle MakeHandle(bool reservation, uint32_t generation, uint32_t slot) {
  return (reservation ? kReservationBit : 0) |
         (static_cast<uint64_t>(generation & kGenerationMask) << kSlotBits) | slot;
}
inline bool IsReservation(Handle h) { return (h & kReservationBit) != 0; }
inline uint32_t HandleSlot(Handle h) { return static_cast<uint32_t>(h & ((1u << kSlotBits) - 1)); }
inline uint32_t HandleGeneration(Handle h) {
  return static_cast<uint32_t>((h >> kSlotBits) & kGenerationMask);
}

struct Tenant {
  TenantId id = kDefaultTenant;
  std::string name;
  std::atomic<uint64_t> quota{0};
  std::atomic<uint64_t> requested{0};
  std::atomic<uint64_t> allocated{0};
  std::atomic<uint64_t> reserved{0};
  std::atomic<uint64_t> peak{0};
  std::atomic<uint64_t> blocks{0};
  std::atomic<uint64_t> reservations{0};
  std::atomic<uint64_t> evictions{0};
  std::atomic<uint64_t> quota_failures{0};

  uint64_t used() const {
    return allocated.load(std::memory_order_relaxed) + reserved.load(std::memory_order_relaxed);
  }
  // Reserve-then-commit on the quota: fails without side effects if `bytes`
  // would take `used` over the quota. Caller holds mu (so `used` is stable
  // against other chargers); the atomics serve lock-free readers.
  bool TryCharge(uint64_t bytes, bool reservation);
  void Uncharge(uint64_t bytes, bool reservation);
};

// An evictable entry's LRU state (blocks and reservations alike).
struct LruEntry {
  Handle handle = 0;
  uint64_t last_use_tick = 0;  // orders the list
  uint64_t last_use_ns = 0;    // for idle ages
  uint32_t pins = 0;
  bool evicting = false;  // a callback is running for it (mu released)
  EvictCallback on_evict;
  LruEntry* prev = nullptr;
  LruEntry* next = nullptr;
};

struct Owner;

// One slot of the block or reservation table. A slot is reused with a new
// generation after its entry is freed.
struct Entry {
  uint32_t generation = 0;
  bool live = false;
  uint64_t bytes = 0;      // block: allocated size; reservation: charged bytes
  uint64_t requested = 0;  // block only
  uint32_t refcount = 0;   // block only
  TenantId tenant = kDefaultTenant;
  Owner* owner = nullptr;
  uint32_t owner_prev = UINT32_MAX;  // the owner's list of entries of this table
  uint32_t owner_next = UINT32_MAX;
  PoolBlock block;  // block only
  std::unique_ptr<LruEntry> lru;  // evictable only
};

struct EntryTable {
  std::vector<Entry> slots;
  std::vector<uint32_t> free_slots;
  uint64_t live = 0;
};

struct Owner {
  OwnerId id = kNoOwner;
  OwnerKind kind = OwnerKind::kOther;
  std::string label;
  Owner* parent = nullptr;
  std::vector<Owner*> children;
  uint32_t first_block = UINT32_MAX;
  uint32_t first_reservation = UINT32_MAX;
  uint64_t allocated = 0;  // block bytes held
  uint64_t reserved = 0;   // reservation bytes held
};

class ArenaState {
 public:
  ArenaState(std::string name, ArenaConfig config, std::unique_ptr<MemoryBackend> backend,
             std::string fallback_reason);
  ~ArenaState();

  const std::string name;
  const ArenaConfig config;
  const std::unique_ptr<MemoryBackend> backend;
  const std::string fallback_reason;

  mutable std::mutex mu;
  // --- guarded by mu -------------------------------------------------------
  bool shut_down = false;
  Pool pool;
  // Tenants are never removed, so Tenant* stay valid; the vector itself is
  // guarded by mu.
  std::vector<std::unique_ptr<Tenant>> tenants;
  std::unordered_map<OwnerId, std::unique_ptr<Owner>> owners;
  OwnerId next_owner = 1;
  EntryTable blocks;
  EntryTable reservations;
  LruEntry* lru_head = nullptr;  // least recently used
  LruEntry* lru_tail = nullptr;
  uint64_t tick = 0;
  uint64_t requested = 0;
  uint64_t allocated = 0;
  uint64_t reservation_bytes = 0;
  uint64_t peak_allocated = 0;
  uint64_t peak_backend_reserved = 0;
  uint64_t evictions = 0;
  uint64_t eviction_refusals = 0;
  uint64_t eviction_age_total_ns = 0;
  uint64_t eviction_age_max_ns = 0;
  uint64_t oom_failures = 0;

  uint64_t NowNs() const;
  Status CheckAliveLocked() const;
  Result<Owner*> FindOwnerLocked(OwnerId id) const;
  Result<Tenant*> FindTenantLocked(TenantId id) const;
  // The live entry a handle names, or NOT_FOUND.
  Result<Entry*> FindEntryLocked(Handle handle);
  Handle HandleOfLocked(const EntryTable& table, const Entry& entry, bool reservation) const;
  uint32_t NewEntryLocked(EntryTable& table);
  void LinkToOwnerLocked(EntryTable& table, uint32_t slot, Owner* owner, bool reservation);
  // Unlinks and frees one entry: tenant, owner, LRU, pool and table.
  void FreeEntryLocked(Handle handle);
  void LruPushLocked(LruEntry* entry);
  void LruRemoveLocked(LruEntry* entry);
  void LruTouchLocked(LruEntry* entry);
  bool IsIdleLocked(const LruEntry& entry);
  // The least recently used idle evictable entry (of `tenant` unless
  // kAnyTenant) not in `skip`, or nullptr.
  LruEntry* PickVictimLocked(TenantId tenant, const std::vector<Handle>& skip);
  // Destroys an owner, its descendants and what they hold.
  void DestroyOwnerLocked(Owner* owner, ReleaseSummary* summary);
  // Cache-then-backend allocation within the capacity (steps 1 of the
  // reclamation order); RESOURCE_EXHAUSTED if it does not fit.
  // `max_size`: the largest cached oversize block the caller can charge.
  Status PoolAllocLocked(uint64_t size, PoolKind kind, uint64_t max_size, PoolBlock* out);
  // Makes `bytes` more room under the capacity by releasing idle segments.
  bool MakeRoomLocked(uint64_t bytes);
  void FillOutOfMemoryLocked(Failure* failure, const std::string& tenant, uint64_t requested) const;
  std::string DescribeHoldersLocked(const std::vector<Holder>& holders) const;
  void UpdatePeaksLocked();

  static constexpr TenantId kAnyTenant = UINT32_MAX;
};

// "4.0 MiB" style, for messages.
std::string FormatBytes(uint64_t bytes);

}  // namespace hotpath::arena::detail
