// The caching pool. See pool.h. Called with the owning arena's mutex held.
#include "arena/detail/pool.h"

#include <algorithm>
#include <bit>
#include <new>
#include <string>

namespace hotpath::arena::detail {

namespace {

constexpr uint64_t kGranule = kSegmentAlignment;  // 256 B
constexpr uint64_t kMinSlabBytes = 16 * 1024;
constexpr uint32_t kMinSlotsPerSlab = 8;

uint64_t RoundUp(uint64_t bytes, uint64_t to) { return (bytes + to - 1) / to * to; }

Status Corrupt(const std::string& what) { return Status(StatusCode::kInternal, "pool invariant: " + what); }

}  // namespace

// Classes: 256..2048 in steps of 256, then 8 per doubling (2304, 2560, ...):
// a block wastes at most 1/8 of its size.
uint32_t Pool::ClassIndex(uint64_t bytes) {
  if (bytes <= 2048) return bytes == 0 ? 0 : static_cast<uint32_t>((bytes + kGranule - 1) / kGranule - 1);
  uint32_t k = static_cast<uint32_t>(std::bit_width(bytes - 1) - 1);  // 2^k < bytes <= 2^(k+1)
  uint64_t step = uint64_t{1} << (k - 3);
  uint64_t j = (bytes - (uint64_t{1} << k) + step - 1) / step;  // 1..8
  return 8 + (k - 11) * 8 + static_cast<uint32_t>(j) - 1;
}

uint64_t Pool::ClassSize(uint32_t index) {
  if (index < 8) return (index + 1) * kGranule;
  uint32_t k = 11 + (index - 8) / 8;
  uint64_t j = (index - 8) % 8 + 1;
  return (uint64_t{1} << k) + j * (uint64_t{1} << (k - 3));
}

Status Pool::ValidateConfig(const PoolConfig& c) {
  if (c.small_max_bytes < kGranule || c.small_max_bytes > (64ull << 20)) {
    return Status(StatusCode::kInvalidArgument, "small_max_bytes must be 256 B .. 64 MiB");
  }
  uint64_t largest_slab = std::max(kMinSlabBytes, ClassSize(ClassIndex(c.small_max_bytes)) * kMinSlotsPerSlab);
  if (c.max_split_bytes < largest_slab) {
    return Status(StatusCode::kInvalidArgument,
                  "max_split_bytes must be at least " + std::to_string(largest_slab) +
                      " (8 slots of the largest small class)");
  }
  if (c.segment_bytes < c.max_split_bytes) {
    return Status(StatusCode::kInvalidArgument, "segment_bytes must be >= max_split_bytes");
  }
  if (c.segment_bytes % kGranule != 0) {
    return Status(StatusCode::kInvalidArgument, "segment_bytes must be a multiple of 256");
  }
  return Status::Ok();
}

Pool::Pool(MemoryBackend* backend, PoolConfig config)
    : backend_(backend),
      config_(config),
      normal_free_(&records_),
      oversize_free_(&records_),
      classes_(ClassIndex(config.small_max_bytes) + 1) {}

Pool::~Pool() {
  while (!segments_.empty()) ReleaseSegment(*segments_.begin());
}

PoolKind Pool::Classify(uint64_t bytes, bool evictable) const {
  if (evictable) return PoolKind::kEvictable;
  if (bytes <= config_.small_max_bytes) return PoolKind::kSmall;
  return bytes < config_.max_split_bytes ? PoolKind::kNormal : PoolKind::kOversize;
}

uint64_t Pool::BlockSize(uint64_t bytes, PoolKind kind) const {
  return kind == PoolKind::kSmall ? ClassSize(ClassIndex(bytes)) : RoundUp(bytes, kGranule);
}

uint64_t Pool::SlabBytes(uint32_t cls) const {
  uint64_t slot = ClassSize(cls);
  uint64_t slots = std::max<uint64_t>(kMinSlotsPerSlab, kMinSlabBytes / slot);
  return slots * slot;
}

uint64_t Pool::GrowthBytes(uint64_t size, PoolKind kind) const {
  switch (kind) {
    case PoolKind::kSmall: return config_.segment_bytes;
    case PoolKind::kNormal: return std::max(config_.segment_bytes, size);
    case PoolKind::kOversize:
    case PoolKind::kEvictable: return size;
  }
  return size;
}

Chunk* Pool::NewChunk() { return new (records_.allocate(sizeof(Chunk), alignof(Chunk))) Chunk(); }

void Pool::DeleteChunk(Chunk* chunk) {
  chunk->~Chunk();
  records_.deallocate(chunk, sizeof(Chunk), alignof(Chunk));
}

Segment* Pool::NewSegment(uint64_t bytes, PoolKind kind, Status* status) {
  Result<void*> memory = backend_->Alloc(bytes);
  if (!memory.ok()) {
    ++counters_.backend_failures;
    last_backend_error_ = memory.status();
    *status = memory.status();
    return nullptr;
  }
  ++counters_.backend_allocs;
  auto* segment = new Segment();
  segment->base = reinterpret_cast<uintptr_t>(memory.value());
  segment->size = bytes;
  segment->kind = kind == PoolKind::kSmall ? PoolKind::kNormal : kind;
  Chunk* chunk = NewChunk();
  chunk->addr = segment->base;
  chunk->size = bytes;
  chunk->segment = segment;
  segment->first = chunk;
  segments_.insert(segment);
  counters_.reserved += bytes;
  ++counters_.segments;
  return segment;
}

void Pool::ReleaseSegment(Segment* segment) {
  if (segment->idle) MarkBusy(segment);
  for (Chunk* chunk = segment->first; chunk != nullptr;) {
    Chunk* next = chunk->next;
    if (chunk->free) {
      FreeSetOf(segment->kind).erase(chunk);
      counters_.total_free -= chunk->size;
    } else if (chunk->slab != nullptr) {
      // Only reached at destruction: the slab's class list dies with the pool.
      counters_.total_free -= chunk->slab->free_slots.size() * chunk->slab->slot_size;
      SizeClass& sc = classes_[chunk->slab->cls];
      if (chunk->slab->free_slots.size() == chunk->slab->slots) --sc.empty_slabs;
      if (chunk->slab->listed) UnlistSlab(sc, chunk->slab);
      delete chunk->slab;
    }
    DeleteChunk(chunk);
    chunk = next;
  }
  Status freed = backend_->Free(reinterpret_cast<void*>(segment->base), segment->size);
  if (freed.ok()) {
    ++counters_.backend_frees;
  } else {
    ++counters_.backend_failures;
    last_backend_error_ = freed;
  }
  counters_.reserved -= segment->size;
  --counters_.segments;
  segments_.erase(segment);
  delete segment;
}

void Pool::MarkIdle(Segment* segment, uint64_t tick) {
  segment->idle = true;
  segment->freed_tick = tick;
  segment->idle_prev = idle_tail_;
  segment->idle_next = nullptr;
  (idle_tail_ != nullptr ? idle_tail_->idle_next : idle_head_) = segment;
  idle_tail_ = segment;
}

void Pool::MarkBusy(Segment* segment) {
  (segment->idle_prev != nullptr ? segment->idle_prev->idle_next : idle_head_) = segment->idle_next;
  (segment->idle_next != nullptr ? segment->idle_next->idle_prev : idle_tail_) = segment->idle_prev;
  segment->idle = false;
  segment->idle_prev = segment->idle_next = nullptr;
}

uint64_t Pool::ReleaseOldestIdle() {
  if (idle_head_ == nullptr) return 0;
  uint64_t bytes = idle_head_->size;
  ReleaseSegment(idle_head_);
  return bytes;
}

bool Pool::TrimEmptySlabs(uint64_t tick) {
  bool trimmed = false;
  for (SizeClass& sc : classes_) {
    while (sc.empty_slabs > 0 && sc.tail != nullptr && sc.tail->free_slots.size() == sc.tail->slots) {
      Slab* slab = sc.tail;
      UnlistSlab(sc, slab);
      --sc.empty_slabs;
      Chunk* chunk = slab->chunk;
      counters_.total_free -= chunk->size;
      delete slab;
      FreeChunk(chunk, tick);
      trimmed = true;
    }
  }
  return trimmed;
}

uint64_t Pool::ReleaseAllIdle() {
  TrimEmptySlabs(idle_tail_ != nullptr ? idle_tail_->freed_tick : 0);
  uint64_t bytes = 0;
  while (idle_head_ != nullptr) bytes += ReleaseOldestIdle();
  return bytes;
}

uint64_t Pool::largest_free() const {
  uint64_t normal = normal_free_.empty() ? 0 : (*normal_free_.rbegin())->size;
  uint64_t oversize = oversize_free_.empty() ? 0 : (*oversize_free_.rbegin())->size;
  return std::max(normal, oversize);
}

// Best fit from the kind's free set, or nullptr. The chunk leaves the set.
Chunk* Pool::TakeChunk(uint64_t size, PoolKind kind, uint64_t max_size) {
  FreeSet& set = FreeSetOf(kind);
  auto it = set.lower_bound(std::pair<uint64_t, uintptr_t>(size, 0));
  if (it == set.end()) return nullptr;
  Chunk* chunk = *it;
  // Oversize segments are never split: reuse only a close fit.
  if (kind == PoolKind::kOversize && chunk->size > std::min(max_size, size + size / 8)) return nullptr;
  set.erase(it);
  counters_.total_free -= chunk->size;
  chunk->free = false;
  if (chunk->segment->idle) MarkBusy(chunk->segment);
  return kind == PoolKind::kOversize ? chunk : SplitAndUse(chunk, size);
}

// Keeps the first `size` bytes of a just-taken chunk; the rest stays free.
Chunk* Pool::SplitAndUse(Chunk* chunk, uint64_t size) {
  if (chunk->size == size) return chunk;
  Chunk* rest = NewChunk();
  rest->addr = chunk->addr + size;
  rest->size = chunk->size - size;
  rest->segment = chunk->segment;
  rest->prev = chunk;
  rest->next = chunk->next;
  rest->free = true;
  if (chunk->next != nullptr) chunk->next->prev = rest;
  chunk->next = rest;
  chunk->size = size;
  normal_free_.insert(rest);
  counters_.total_free += rest->size;
  return chunk;
}

// Frees a chunk of an ordinary or oversize segment and coalesces it.
void Pool::FreeChunk(Chunk* chunk, uint64_t tick) {
  Segment* segment = chunk->segment;
  FreeSet& set = FreeSetOf(segment->kind);
  chunk->free = true;
  chunk->slab = nullptr;
  for (Chunk* neighbour : {chunk->prev, chunk->next}) {
    if (neighbour == nullptr || !neighbour->free) continue;
    set.erase(neighbour);
    counters_.total_free -= neighbour->size;
    Chunk* low = neighbour == chunk->prev ? neighbour : chunk;
    Chunk* high = low == chunk ? neighbour : chunk;
    low->size += high->size;
    low->next = high->next;
    if (high->next != nullptr) high->next->prev = low;
    if (segment->first == high) segment->first = low;
    DeleteChunk(high);
    chunk = low;
  }
  set.insert(chunk);
  counters_.total_free += chunk->size;
  if (chunk->size == segment->size) MarkIdle(segment, tick);
}

void Pool::ListSlab(SizeClass& sc, Slab* slab, bool front) {
  slab->listed = true;
  if (front) {
    slab->prev = nullptr;
    slab->next = sc.head;
    (sc.head != nullptr ? sc.head->prev : sc.tail) = slab;
    sc.head = slab;
  } else {
    slab->next = nullptr;
    slab->prev = sc.tail;
    (sc.tail != nullptr ? sc.tail->next : sc.head) = slab;
    sc.tail = slab;
  }
}

void Pool::UnlistSlab(SizeClass& sc, Slab* slab) {
  (slab->prev != nullptr ? slab->prev->next : sc.head) = slab->next;
  (slab->next != nullptr ? slab->next->prev : sc.tail) = slab->prev;
  slab->prev = slab->next = nullptr;
  slab->listed = false;
}

Slab* Pool::NewSlab(uint32_t cls, Chunk* chunk) {
  auto* slab = new Slab();
  slab->chunk = chunk;
  slab->cls = cls;
  slab->slot_size = ClassSize(cls);
  slab->slots = static_cast<uint32_t>(chunk->size / slab->slot_size);
  slab->free_slots.reserve(slab->slots);
  // Pop order hands out low addresses first.
  for (uint32_t i = slab->slots; i > 0; --i) slab->free_slots.push_back(i - 1);
  chunk->slab = slab;
  counters_.total_free += chunk->size;
  SizeClass& sc = classes_[cls];
  ++sc.empty_slabs;
  ListSlab(sc, slab, true);
  return slab;
}

// O(1): pops a slot of the first listed slab.
bool Pool::AllocSlot(uint32_t cls, PoolBlock* out) {
  SizeClass& sc = classes_[cls];
  Slab* slab = sc.head;
  if (slab == nullptr) return false;
  if (slab->free_slots.size() == slab->slots) --sc.empty_slabs;
  uint32_t slot = slab->free_slots.back();
  slab->free_slots.pop_back();
  if (slab->free_slots.empty()) UnlistSlab(sc, slab);
  counters_.total_free -= slab->slot_size;
  out->addr = slab->chunk->addr + slot * slab->slot_size;
  out->size = slab->slot_size;
  out->chunk = slab->chunk;
  out->slab = slab;
  out->slot = slot;
  out->kind = PoolKind::kSmall;
  return true;
}

void Pool::FreeSlot(const PoolBlock& block, uint64_t tick) {
  Slab* slab = block.slab;
  SizeClass& sc = classes_[slab->cls];
  bool was_full = slab->free_slots.empty();
  slab->free_slots.push_back(block.slot);
  counters_.total_free += slab->slot_size;
  if (was_full) ListSlab(sc, slab, true);
  if (slab->free_slots.size() < slab->slots) return;
  // Fully free: keep one empty slab per class (at the back, used last) so a
  // lone alloc/free pair does not carve and return a slab every time.
  if (sc.empty_slabs == 0) {
    ++sc.empty_slabs;
    UnlistSlab(sc, slab);
    ListSlab(sc, slab, false);
    return;
  }
  UnlistSlab(sc, slab);
  Chunk* chunk = slab->chunk;
  counters_.total_free -= chunk->size;
  delete slab;
  FreeChunk(chunk, tick);
}

bool Pool::TryAlloc(uint64_t size, PoolKind kind, PoolBlock* out, uint64_t max_size) {
  if (kind == PoolKind::kEvictable) return false;  // always a fresh exact segment
  if (kind == PoolKind::kSmall) {
    uint32_t cls = ClassIndex(size);
    if (AllocSlot(cls, out)) return true;
    Chunk* chunk = TakeChunk(SlabBytes(cls), PoolKind::kNormal, 0);
    if (chunk == nullptr) return false;
    NewSlab(cls, chunk);
    return AllocSlot(cls, out);
  }
  Chunk* chunk = TakeChunk(size, kind, std::max(size, max_size));
  if (chunk == nullptr) return false;
  *out = PoolBlock{chunk->addr, chunk->size, chunk, nullptr, 0, kind};
  return true;
}

Status Pool::AllocNew(uint64_t size, PoolKind kind, PoolBlock* out) {
  Status status;
  Segment* segment = NewSegment(GrowthBytes(size, kind), kind, &status);
  if (segment == nullptr) return status;
  Chunk* chunk = segment->first;
  if (kind == PoolKind::kOversize || kind == PoolKind::kEvictable) {
    *out = PoolBlock{chunk->addr, chunk->size, chunk, nullptr, 0, kind};
    return Status::Ok();
  }
  // Ordinary segment: enter it as one free chunk, then allocate as usual.
  chunk->free = true;
  normal_free_.insert(chunk);
  counters_.total_free += chunk->size;
  if (TryAlloc(size, kind, out)) return Status::Ok();
  return Corrupt("a fresh segment cannot serve the request");
}

void Pool::Free(const PoolBlock& block, uint64_t tick) {
  switch (block.kind) {
    case PoolKind::kSmall: FreeSlot(block, tick); return;
    case PoolKind::kEvictable: ReleaseSegment(block.chunk->segment); return;
    case PoolKind::kNormal:
    case PoolKind::kOversize: FreeChunk(block.chunk, tick); return;
  }
}

Status Pool::CheckInvariants(uint64_t live_bytes) const {
  uint64_t reserved = 0, total_free = 0, live = 0;
  size_t free_normal = 0, free_oversize = 0, idle = 0;
  for (const Segment* segment : segments_) {
    reserved += segment->size;
    uintptr_t expect = segment->base;
    const Chunk* prev = nullptr;
    for (const Chunk* c = segment->first; c != nullptr; prev = c, c = c->next) {
      if (c->addr != expect) return Corrupt("chunks do not tile their segment");
      if (c->segment != segment || c->prev != prev) return Corrupt("broken chunk links");
      if (c->size == 0 || c->size % kGranule != 0) return Corrupt("chunk size not a granule multiple");
      if (c->free && prev != nullptr && prev->free) return Corrupt("two adjacent free chunks");
      expect += c->size;
      if (c->free) {
        const FreeSet& set = segment->kind == PoolKind::kOversize ? oversize_free_ : normal_free_;
        if (set.find(const_cast<Chunk*>(c)) == set.end()) return Corrupt("free chunk not in its free set");
        (segment->kind == PoolKind::kOversize ? free_oversize : free_normal) += 1;
        total_free += c->size;
      } else if (c->slab != nullptr) {
        const Slab* s = c->slab;
        if (s->chunk != c || s->slots * s->slot_size != c->size) return Corrupt("slots do not tile their slab");
        if (s->free_slots.size() > s->slots) return Corrupt("slab free count");
        if (s->listed != !s->free_slots.empty()) return Corrupt("slab listed iff it has a free slot");
        std::vector<bool> seen(s->slots, false);
        for (uint32_t slot : s->free_slots) {
          if (slot >= s->slots || seen[slot]) return Corrupt("bad free slot stack");
          seen[slot] = true;
        }
        total_free += s->free_slots.size() * s->slot_size;
        live += (s->slots - s->free_slots.size()) * s->slot_size;
      } else {
        live += c->size;
      }
    }
    if (expect != segment->base + segment->size) return Corrupt("chunks do not cover their segment");
    bool fully_free = segment->first->free && segment->first->size == segment->size;
    if (segment->kind != PoolKind::kEvictable && segment->idle != fully_free) {
      return Corrupt("idle list membership differs from 'fully free'");
    }
    if (segment->kind == PoolKind::kEvictable && (segment->first->free || segment->first->next != nullptr)) {
      return Corrupt("evictable segment is not one live block");
    }
  }
  uint64_t last_tick = 0;
  for (const Segment* s = idle_head_; s != nullptr; s = s->idle_next) {
    if (!s->idle || s->freed_tick < last_tick) return Corrupt("idle list out of freed order");
    last_tick = s->freed_tick;
    ++idle;
  }
  (void)idle;
  if (free_normal != normal_free_.size() || free_oversize != oversize_free_.size()) {
    return Corrupt("free sets hold chunks that are not free");
  }
  if (reserved != counters_.reserved) return Corrupt("reserved counter");
  if (total_free != counters_.total_free) return Corrupt("total_free counter");
  if (live != live_bytes) {
    return Corrupt("live bytes " + std::to_string(live) + " != arena allocated " + std::to_string(live_bytes));
  }
  if (reserved != live + total_free) return Corrupt("reserved != live + free");
  for (const SizeClass& sc : classes_) {
    uint32_t empty = 0;
    for (const Slab* s = sc.head; s != nullptr; s = s->next) empty += s->free_slots.size() == s->slots;
    if (empty != sc.empty_slabs) return Corrupt("empty slab count");
  }
  return Status::Ok();
}

}  // namespace hotpath::arena::detail
