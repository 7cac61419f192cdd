// Value types of the arena's public API (arena.h): ids, options, failure
// details and statistics. Plain data; safe to copy between threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "arena/backend.h"

namespace hotpath::arena {

// Tenants are small dense ids; tenant 0 ("default") always exists.
using TenantId = uint32_t;
inline constexpr TenantId kDefaultTenant = 0;

// Owners are never reused within an arena. 0 means "no owner / no parent".
using OwnerId = uint64_t;
inline constexpr OwnerId kNoOwner = 0;

// A block or a reservation. Fits in 53 bits so it crosses to JS exactly; a
// generation in the handle makes a stale handle (used after its block was
// freed) fail with NOT_FOUND instead of touching another block.
using Handle = uint64_t;

// What an owner stands for; only used for messages and statistics.
enum class OwnerKind { kTenant, kModel, kWorkerGeneration, kBatch, kOther };
// "tenant", "model", "worker-generation", "batch", "other".
const char* OwnerKindName(OwnerKind kind);
Result<OwnerKind> ParseOwnerKind(const std::string& name);

// Passed to an eviction callback. The callback runs on the thread whose
// Alloc/Reserve needed the memory, with no arena lock held, so it may call
// back into the arena (e.g. DestroyOwner of the model it unloads).
struct EvictionInfo {
  Handle handle = 0;
  bool is_block = false;  // false: a reservation
  TenantId tenant = kDefaultTenant;
  OwnerId owner = kNoOwner;
  uint64_t bytes = 0;
  uint64_t idle_ns = 0;  // since last use (touch/pin/unpin/creation)
};
// Returns true to let the arena free the entry (after the callback has
// released whatever the entry stood for), false to refuse.
using EvictCallback = std::function<bool(const EvictionInfo&)>;

// Options for Alloc and Reserve.
struct ChargeOptions {
  TenantId tenant = kDefaultTenant;
  // Evictable entries join the LRU list; when idle (not pinned, and for a
  // block not retained beyond its first reference) they may be evicted to
  // make room. Evictable blocks get exact-size segments.
  bool evictable = false;
  EvictCallback on_evict;  // required when evictable
};

struct BlockInfo {
  Handle handle = 0;
  void* ptr = nullptr;     // device or host address; fake for the simulated backend
  uint64_t size = 0;       // allocated (rounded) bytes
  uint64_t requested = 0;  // bytes asked for
  uint32_t refcount = 0;
  TenantId tenant = kDefaultTenant;
  OwnerId owner = kNoOwner;
};

// What DestroyOwner freed (the owner and all its descendants).
struct ReleaseSummary {
  uint64_t owners = 0;
  uint64_t blocks = 0;
  uint64_t reservations = 0;
  uint64_t bytes = 0;  // block bytes + reservation bytes
};

// Who holds memory, for out-of-memory reports.
struct Holder {
  std::string kind;  // "tenant", or an OwnerKindName
  std::string name;  // tenant name or owner label
  uint64_t allocated = 0;  // block bytes
  uint64_t reserved = 0;   // reservation bytes
};

// Set on RESOURCE_EXHAUSTED from Alloc/Reserve (when a Failure* is passed).
struct Failure {
  enum class Kind { kNone, kQuota, kOutOfMemory };
  Kind kind = Kind::kNone;
  std::string tenant;
  uint64_t requested = 0;
  // kQuota: the tenant's used bytes (blocks + reservations) and quota.
  uint64_t used = 0;
  uint64_t quota = 0;
  // kOutOfMemory: tenants first, then the largest owners (at most 8).
  std::vector<Holder> holders;
};

struct TenantStats {
  TenantId id = kDefaultTenant;
  std::string name;
  uint64_t quota = 0;
  uint64_t requested = 0;   // block bytes asked for
  uint64_t allocated = 0;   // block bytes (rounded)
  uint64_t reserved = 0;    // reservation bytes
  uint64_t used = 0;        // allocated + reserved: what the quota limits
  uint64_t peak = 0;        // highest `used`
  uint64_t blocks = 0;
  uint64_t reservations = 0;
  uint64_t evictions = 0;
  uint64_t quota_failures = 0;
};

struct ArenaStats {
  uint64_t capacity = 0;         // global cap on backend + reservation bytes
  uint64_t requested = 0;        // live block bytes asked for
  uint64_t allocated = 0;        // live block bytes (rounded)
  uint64_t backend_reserved = 0; // bytes held from the backend (segments)
  uint64_t reservations = 0;     // accounting-only reservation bytes
  uint64_t cached = 0;           // backend_reserved - allocated: free, owned by no tenant
  uint64_t peak_allocated = 0;
  uint64_t peak_backend_reserved = 0;
  uint64_t total_free = 0;       // free bytes inside segments (chunks + slab slots)
  uint64_t largest_free = 0;     // largest free chunk
  double external_fragmentation = 0;  // 1 - largest_free / total_free
  double cache_overhead = 0;          // (backend_reserved - allocated) / backend_reserved
  double internal_fragmentation = 0;  // (allocated - requested) / allocated
  uint64_t segments = 0;
  uint64_t blocks = 0;
  uint64_t reservation_count = 0;
  uint64_t owners = 0;
  uint64_t backend_allocs = 0;
  uint64_t backend_frees = 0;
  uint64_t backend_failures = 0;
  uint64_t evictions = 0;
  uint64_t eviction_refusals = 0;
  uint64_t eviction_age_total_ns = 0;  // sum of idle_ns over evictions
  uint64_t eviction_age_max_ns = 0;
  uint64_t quota_failures = 0;
  uint64_t oom_failures = 0;
  std::vector<TenantStats> tenants;
};

}  // namespace hotpath::arena
