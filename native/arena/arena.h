// The memory ledger: one arena = one backend + a caching pool + tenants,
// owners, refcounted blocks and accounting-only reservations.
//
//   auto arena = Arena::Create("main", config).value();
//   TenantId t = arena->CreateTenant("team-a", 512 << 20).value();
//   OwnerId model = arena->CreateOwner(OwnerKind::kModel, "resnet/1").value();
//   Handle weights = arena->Reserve(model, footprint, {t, true, on_evict}).value();
//   BlockInfo buf = arena->Alloc(batch_owner, 4096, {t}).value();
//   arena->Release(buf.handle);          // refcount 0: back to the pool's cache
//   arena->DestroyOwner(model);          // frees everything the model held
//
// Accounting: a tenant's `used` = its live block bytes (rounded) + its
// reservation bytes; the quota limits `used`. The capacity limits backend
// bytes (segments, including cached free memory) + reservation bytes. Cached
// free memory belongs to no tenant.
//
// When an Alloc or Reserve does not fit: over the tenant's quota, the
// tenant's own idle evictable entries are evicted in LRU order; over the
// capacity, cached segments are released (least recently freed first), then
// idle evictable entries of any tenant in LRU order. A callback may refuse.
// Then RESOURCE_EXHAUSTED, with a Failure saying who holds what.
//
// Thread-safety: every method may be called from any thread. One mutex per
// arena guards the pool, the block/reservation tables, owners and the LRU
// list; tenant counters are atomics so stats can be read while others
// allocate. Backend calls happen under the mutex (they are rare: growth and
// release of segments). Eviction callbacks run with the mutex released.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "arena/backend.h"
#include "arena/types.h"
#include "common/result.h"

namespace hotpath::arena {

namespace detail {
class ArenaState;
}

struct ArenaConfig {
  BackendConfig backend;  // capacity_bytes is also the arena's global cap
  // Ordinary segments are this big (or bigger, for a request that needs it).
  uint64_t segment_bytes = 32ull << 20;
  // Requests of at least this size get their own exact-size segment, which
  // is never split; cached ones are reused only by requests within 1/8.
  uint64_t max_split_bytes = 8ull << 20;
  // Requests up to this size are served from size classes (8 per doubling).
  uint64_t small_max_bytes = 16ull << 10;
  // Monotonic nanoseconds, for LRU ages. Test hook; default steady_clock.
  std::function<uint64_t()> clock_ns;
};

class Arena {
 public:
  // Detects the backend (see DetectBackend) and creates an empty arena.
  // INVALID_ARGUMENT for inconsistent sizes.
  static Result<std::shared_ptr<Arena>> Create(std::string name, ArenaConfig config);
  // Same with a given backend (tests, benchmarks); fallback_reason is empty.
  static Result<std::shared_ptr<Arena>> Create(std::string name, ArenaConfig config,
                                               std::unique_ptr<MemoryBackend> backend);
  ~Arena();  // frees everything (Shutdown)
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  const std::string& name() const;
  const MemoryBackend& backend() const;
  // Why the backend is not the one asked for; empty if it is.
  const std::string& fallback_reason() const;

  // Tenants. Names are unique; "default" (kDefaultTenant) exists with a quota
  // equal to the capacity.
  Result<TenantId> CreateTenant(const std::string& name, uint64_t quota_bytes);
  Result<TenantId> FindTenant(const std::string& name) const;
  // A quota below current use is allowed: further charges fail until use drops.
  Status SetTenantQuota(TenantId tenant, uint64_t quota_bytes);

  // Owners form a tree; destroying one destroys its descendants.
  Result<OwnerId> CreateOwner(OwnerKind kind, const std::string& label, OwnerId parent = kNoOwner);
  // Frees every block (whatever its refcount) and reservation the owner and
  // its descendants hold, then forgets them. Later use of their handles
  // fails with NOT_FOUND.
  Result<ReleaseSummary> DestroyOwner(OwnerId owner);
  // What the owner and its descendants hold now: exactly what DestroyOwner
  // would free. O(descendants + their entries); for periodic sampling (the
  // leak patrol), not for the request path.
  Result<ReleaseSummary> OwnerUsage(OwnerId owner) const;

  // A block of at least `bytes` (> 0), refcount 1. See the header comment
  // for what happens when it does not fit; `failure` (optional) receives the
  // details of a RESOURCE_EXHAUSTED.
  Result<BlockInfo> Alloc(OwnerId owner, uint64_t bytes, const ChargeOptions& options,
                          Failure* failure = nullptr);
  Result<uint32_t> Retain(Handle block);  // the new refcount
  // Blocks: drops one reference and returns the remaining count; at 0 the
  // block goes back to the pool's cache. Reservations: frees it, returns 0.
  Result<uint32_t> Release(Handle handle);
  Result<BlockInfo> Lookup(Handle block) const;

  // Charges `bytes` (> 0) to a tenant without allocating: memory another
  // runtime owns. Same failure rules as Alloc.
  Result<Handle> Reserve(OwnerId owner, uint64_t bytes, const ChargeOptions& options,
                         Failure* failure = nullptr);

  // Evictable entries (blocks or reservations): pinned entries are in use
  // and never evicted; Pin/Unpin/Touch also mark the entry most recently
  // used. Non-evictable entries accept the calls and ignore them.
  Status Pin(Handle handle);
  Status Unpin(Handle handle);  // FAILED_PRECONDITION if not pinned
  Status Touch(Handle handle);

  // Returns every fully free cached segment to the backend; bytes returned.
  uint64_t ReleaseCached();
  ArenaStats Stats() const;
  // Frees everything; afterwards every call fails with FAILED_PRECONDITION.
  // Used by the environment cleanup of the thread that created the arena.
  void Shutdown();
  bool is_shut_down() const;

  // Test hooks: O(n) consistency check of pool, tables, owners, tenant sums
  // and LRU order; and the LRU order (least recently used first).
  Status CheckInvariants() const;
  std::vector<Handle> LruOrder() const;

 private:
  explicit Arena(std::unique_ptr<detail::ArenaState> state);
  std::unique_ptr<detail::ArenaState> state_;
};

}  // namespace hotpath::arena
