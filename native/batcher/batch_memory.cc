// HostBatchMemory and BatchBuffer. See batch_memory.h.
#include "batcher/batch_memory.h"

#include <new>
#include <string>
#include <utility>

namespace hotpath::batcher {
namespace {

// Cache-line alignment, which also satisfies every ONNX element type.
constexpr std::align_val_t kAlignment{64};

}  // namespace

Result<MemoryBlock> HostBatchMemory::Allocate(const BufferSpec& spec) {
  // Reserve against the limit first and roll back on failure, so concurrent
  // allocations can never overshoot it together.
  const uint64_t before = live_bytes_.fetch_add(spec.bytes);
  if (limit_bytes_ != 0 && before + spec.bytes > limit_bytes_) {
    live_bytes_.fetch_sub(spec.bytes);
    return Status(StatusCode::kResourceExhausted,
                  "batch memory: " + std::to_string(spec.bytes) + " bytes for input " +
                      std::to_string(spec.input_index) + " of batch " +
                      std::to_string(spec.batch_id) + " exceed the limit (" +
                      std::to_string(before) + " of " + std::to_string(limit_bytes_) +
                      " bytes in use)");
  }
  void* data = ::operator new(spec.bytes == 0 ? 1 : spec.bytes, kAlignment, std::nothrow);
  if (data == nullptr) {
    live_bytes_.fetch_sub(spec.bytes);
    return Status(StatusCode::kResourceExhausted,
                  "batch memory: host allocation of " + std::to_string(spec.bytes) +
                      " bytes failed");
  }
  live_buffers_.fetch_add(1);
  return MemoryBlock{data, 0};
}

void HostBatchMemory::Free(const MemoryBlock& block, const BufferSpec& spec) noexcept {
  if (block.data == nullptr) return;
  ::operator delete(block.data, kAlignment);
  live_buffers_.fetch_sub(1);
  live_bytes_.fetch_sub(spec.bytes);
}

BatchBuffer& BatchBuffer::operator=(BatchBuffer&& other) noexcept {
  if (this != &other) {
    Reset();
    memory_ = std::move(other.memory_);
    block_ = std::exchange(other.block_, MemoryBlock{});
    spec_ = other.spec_;
  }
  return *this;
}

void BatchBuffer::Reset() noexcept {
  if (memory_ && block_.data != nullptr) memory_->Free(block_, spec_);
  memory_.reset();
  block_ = MemoryBlock{};
}

}  // namespace hotpath::batcher
