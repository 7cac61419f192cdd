// See arena_batch_memory.h.
#include "batcher/arena_batch_memory.h"

#include <algorithm>
#include <utility>

namespace hotpath::batcher {

Result<std::shared_ptr<ArenaBatchMemory>> ArenaBatchMemory::Create(std::shared_ptr<arena::Arena> arena,
                                                                   arena::TenantId tenant) {
  if (!arena) return Status(StatusCode::kInvalidArgument, "ArenaBatchMemory: no arena");
  if (!arena->backend().host_accessible()) {
    return Status(StatusCode::kInvalidArgument,
                  "ArenaBatchMemory: arena '" + arena->name() + "' uses " + arena->backend().description() +
                      ", which the CPU cannot write; batches need a host or pinned arena");
  }
  return std::shared_ptr<ArenaBatchMemory>(new ArenaBatchMemory(std::move(arena), tenant));
}

Result<MemoryBlock> ArenaBatchMemory::Allocate(const BufferSpec& spec) {
  // The arena refuses 0-byte blocks; an empty input still gets a real (tiny)
  // block so every buffer has a handle and a non-null pointer.
  const uint64_t bytes = std::max<uint64_t>(spec.bytes, 1);
  arena::ChargeOptions charge;
  charge.tenant = tenant_;
  Result<arena::BlockInfo> block = arena_->Alloc(spec.owner, bytes, charge);
  if (!block.ok()) return block.status();
  return MemoryBlock{block.value().ptr, block.value().handle};
}

void ArenaBatchMemory::Free(const MemoryBlock& block, const BufferSpec& /*spec*/) noexcept {
  // Handle 0 is a valid arena handle (slot 0, generation 0): test the pointer.
  if (block.data == nullptr) return;
  // NOT_FOUND here means the owner was destroyed first (model unloaded while a
  // batch was still referenced); the memory is already back in the pool.
  (void)arena_->Release(block.handle);
}

}  // namespace hotpath::batcher
