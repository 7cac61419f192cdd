// The caching pool under an arena: segments from the backend, cut into
// blocks. Not synchronised: the owning arena calls it with its mutex held.
//
// Four kinds of request (Classify):
//   small      <= small_max: size classes (8 per doubling, 256 B granularity)
//              cut from slabs; a slab is one chunk of an ordinary segment.
//              Each class keeps a list of slabs with free slots and each slab
//              a stack of free slots: alloc and free are O(1).
//   normal     < max_split: best fit over free chunks of ordinary segments,
//              in a set ordered by (size, address): O(log n). Freed chunks
//              coalesce with free neighbours, so no two adjacent chunks are
//              ever free.
//   oversize   >= max_split: an exact-size segment that is never split; a
//              cached one is reused by a request within 1/8 of its size.
//   evictable  an exact-size segment returned to the backend when freed, so
//              evicting it really gives the memory back.
// Freed memory stays cached. Fully free segments sit in an "idle" list in the
// order they became free; ReleaseOldestIdle returns the least recently freed.
#pragma once

#include <cstdint>
#include <memory_resource>
#include <set>
#include <utility>
#include <vector>

#include "arena/backend.h"
#include "common/status.h"

namespace hotpath::arena::detail {

enum class PoolKind : uint8_t { kSmall, kNormal, kOversize, kEvictable };

struct Segment;
struct Slab;

// A contiguous piece of a segment: free, one block, or a slab.
struct Chunk {
  uintptr_t addr = 0;
  uint64_t size = 0;
  Segment* segment = nullptr;
  Chunk* prev = nullptr;  // address-order neighbours within the segment
  Chunk* next = nullptr;
  Slab* slab = nullptr;   // set when the chunk is carved into slots
  bool free = false;
};

struct Segment {
  uintptr_t base = 0;
  uint64_t size = 0;
  PoolKind kind = PoolKind::kNormal;  // kNormal (ordinary), kOversize or kEvictable
  Chunk* first = nullptr;
  // Idle list (fully free segments, least recently freed first).
  bool idle = false;
  uint64_t freed_tick = 0;
  Segment* idle_prev = nullptr;
  Segment* idle_next = nullptr;
};

struct Slab {
  Chunk* chunk = nullptr;
  uint32_t cls = 0;
  uint64_t slot_size = 0;
  uint32_t slots = 0;
  std::vector<uint32_t> free_slots;  // a stack; size() = free slots
  Slab* prev = nullptr;  // the class's list of slabs with a free slot
  Slab* next = nullptr;
  bool listed = false;
};

// Where a block lives, kept by the arena's block record.
struct PoolBlock {
  uintptr_t addr = 0;
  uint64_t size = 0;
  Chunk* chunk = nullptr;  // the block's chunk, or its slab's chunk
  Slab* slab = nullptr;
  uint32_t slot = 0;
  PoolKind kind = PoolKind::kNormal;
};

struct PoolConfig {
  uint64_t segment_bytes = 0;
  uint64_t max_split_bytes = 0;
  uint64_t small_max_bytes = 0;
};

struct PoolCounters {
  uint64_t reserved = 0;    // bytes of all segments
  uint64_t total_free = 0;  // free chunk bytes + free slot bytes
  uint64_t segments = 0;
  uint64_t backend_allocs = 0;
  uint64_t backend_frees = 0;
  uint64_t backend_failures = 0;
};

class Pool {
 public:
  Pool(MemoryBackend* backend, PoolConfig config);
  ~Pool();  // returns every segment to the backend
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // INVALID_ARGUMENT unless small_max <= slab size <= max_split <= segment_bytes etc.
  static Status ValidateConfig(const PoolConfig& config);

  PoolKind Classify(uint64_t bytes, bool evictable) const;
  // The block size a request of `bytes` gets (a size class or 256 B-rounded).
  uint64_t BlockSize(uint64_t bytes, PoolKind kind) const;
  // From cached memory only; false if nothing fits (no backend call). An
  // oversize request may get a cached block of up to `max_size` bytes
  // (the caller decides what it can charge); out->size is the block's size.
  bool TryAlloc(uint64_t size, PoolKind kind, PoolBlock* out, uint64_t max_size = 0);
  // Bytes AllocNew would take from the backend.
  uint64_t GrowthBytes(uint64_t size, PoolKind kind) const;
  // Takes a new segment from the backend and allocates from it.
  Status AllocNew(uint64_t size, PoolKind kind, PoolBlock* out);
  // Returns a block; `tick` orders the idle list. Evictable segments go
  // straight back to the backend.
  void Free(const PoolBlock& block, uint64_t tick);

  // Returns the least recently freed idle segment; its bytes, 0 if none.
  uint64_t ReleaseOldestIdle();
  uint64_t ReleaseAllIdle();  // also returns the empty slabs kept per class
  // Returns the one empty slab each size class keeps to its segment; true if
  // any was returned (a segment may have become idle).
  bool TrimEmptySlabs(uint64_t tick);

  uint64_t largest_free() const;
  const PoolCounters& counters() const { return counters_; }
  // Status of the last failed backend call (for messages).
  const Status& last_backend_error() const { return last_backend_error_; }

  // Every check the invariant tests need; `live_bytes` is the arena's sum of
  // live block sizes.
  Status CheckInvariants(uint64_t live_bytes) const;

  // Size classes, exposed for tests.
  static uint32_t ClassIndex(uint64_t bytes);
  static uint64_t ClassSize(uint32_t index);

 private:
  struct BySizeThenAddress {
    using is_transparent = void;
    bool operator()(const Chunk* a, const Chunk* b) const {
      return a->size != b->size ? a->size < b->size : a->addr < b->addr;
    }
    bool operator()(const Chunk* a, const std::pair<uint64_t, uintptr_t>& b) const {
      return a->size != b.first ? a->size < b.first : a->addr < b.second;
    }
    bool operator()(const std::pair<uint64_t, uintptr_t>& a, const Chunk* b) const {
      return a.first != b->size ? a.first < b->size : a.second < b->addr;
    }
  };
  using FreeSet = std::pmr::set<Chunk*, BySizeThenAddress>;
  struct SizeClass {
    Slab* head = nullptr;  // slabs with a free slot; fully free ones at the back
    Slab* tail = nullptr;
    uint32_t empty_slabs = 0;
  };

  FreeSet& FreeSetOf(PoolKind kind) { return kind == PoolKind::kOversize ? oversize_free_ : normal_free_; }
  Chunk* NewChunk();
  void DeleteChunk(Chunk* chunk);
  Segment* NewSegment(uint64_t bytes, PoolKind kind, Status* status);
  void ReleaseSegment(Segment* segment);
  void MarkBusy(Segment* segment);
  void MarkIdle(Segment* segment, uint64_t tick);
  Chunk* TakeChunk(uint64_t size, PoolKind kind, uint64_t max_size);
  Chunk* SplitAndUse(Chunk* chunk, uint64_t size);
  void FreeChunk(Chunk* chunk, uint64_t tick);
  uint64_t SlabBytes(uint32_t cls) const;
  bool AllocSlot(uint32_t cls, PoolBlock* out);
  Slab* NewSlab(uint32_t cls, Chunk* chunk);
  void ListSlab(SizeClass& sc, Slab* slab, bool front);
  void UnlistSlab(SizeClass& sc, Slab* slab);
  void FreeSlot(const PoolBlock& block, uint64_t tick);

  MemoryBackend* backend_;
  PoolConfig config_;
  PoolCounters counters_;
  Status last_backend_error_;
  // Chunk records come from a private pool so the hot path never calls malloc.
  std::pmr::unsynchronized_pool_resource records_;
  FreeSet normal_free_;
  FreeSet oversize_free_;
  std::set<Segment*> segments_;
  Segment* idle_head_ = nullptr;
  Segment* idle_tail_ = nullptr;
  std::vector<SizeClass> classes_;
};

}  // namespace hotpath::arena::detail
