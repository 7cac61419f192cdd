// The seam between the batcher and whatever memory holds its batches.
//
// When the batcher opens a batch it asks BatchMemory for one buffer per model
// input, sized for the largest batch that batch may grow to, and copies each
// request's bytes straight into it (the request's one copy). The buffers
// travel with the sealed batch and are freed when its last BatchBuffer is
// destroyed. Today HostBatchMemory backs them with aligned host memory; the
// arena will back them later (Allocate = Alloc charged to the model's tenant,
// failing with RESOURCE_EXHAUSTED over quota; Free = drop the reference), with
// no change to the batcher.
//
// Thread-safety: implementations must accept Allocate and Free from any
// thread, concurrently. The batcher calls them without holding its own lock,
// so they may block or call back into other components (not into the same
// Batcher's Enqueue, which would recurse).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>

#include "common/result.h"

namespace hotpath::batcher {

// What a buffer is for; passed to Allocate and again to Free.
struct BufferSpec {
  uint64_t owner = 0;      // BatcherConfig::memory_owner (e.g. arena owner id)
  uint64_t batch_id = 0;   // unique per batcher
  uint32_t input_index = 0;
  uint64_t bytes = 0;      // may be 0 (an empty input)
};

struct MemoryBlock {
  void* data = nullptr;  // at least 64-byte aligned; non-null even for 0 bytes
  uint64_t handle = 0;   // the backend's own id (arena Handle); 0 when unused
};

class BatchMemory {
 public:
  virtual ~BatchMemory() = default;
  // RESOURCE_EXHAUSTED when the owner may not have more memory.
  virtual Result<MemoryBlock> Allocate(const BufferSpec& spec) = 0;
  // `block` and `spec` exactly as Allocate returned / received them.
  virtual void Free(const MemoryBlock& block, const BufferSpec& spec) noexcept = 0;
};

// Plain aligned host memory with an optional byte limit (0: none), so tests
// can provoke RESOURCE_EXHAUSTED. Counts live buffers for leak checks.
class HostBatchMemory final : public BatchMemory {
 public:
  explicit HostBatchMemory(uint64_t limit_bytes = 0) : limit_bytes_(limit_bytes) {}
  Result<MemoryBlock> Allocate(const BufferSpec& spec) override;
  void Free(const MemoryBlock& block, const BufferSpec& spec) noexcept override;

  uint64_t live_buffers() const { return live_buffers_.load(); }
  uint64_t live_bytes() const { return live_bytes_.load(); }

 private:
  const uint64_t limit_bytes_;
  std::atomic<uint64_t> live_buffers_{0};
  std::atomic<uint64_t> live_bytes_{0};
};

// One input buffer of a batch. Move-only; frees itself through the
// BatchMemory it came from, which it keeps alive.
class BatchBuffer {
 public:
  BatchBuffer() = default;
  BatchBuffer(std::shared_ptr<BatchMemory> memory, MemoryBlock block, BufferSpec spec)
      : memory_(std::move(memory)), block_(block), spec_(spec) {}
  BatchBuffer(BatchBuffer&& other) noexcept { *this = std::move(other); }
  BatchBuffer& operator=(BatchBuffer&& other) noexcept;
  BatchBuffer(const BatchBuffer&) = delete;
  BatchBuffer& operator=(const BatchBuffer&) = delete;
  ~BatchBuffer() { Reset(); }

  std::byte* data() const { return static_cast<std::byte*>(block_.data); }
  uint64_t capacity() const { return spec_.bytes; }
  uint64_t handle() const { return block_.handle; }
  const BufferSpec& spec() const { return spec_; }

  // Frees the buffer now (no-op when empty).
  void Reset() noexcept;

 private:
  std::shared_ptr<BatchMemory> memory_;
  MemoryBlock block_;
  BufferSpec spec_;
};

}  // namespace hotpath::batcher
