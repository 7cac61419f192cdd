// BatchMemory backed by the arena: a batch's input buffers are arena blocks
// charged to the model's tenant, so a tenant over its quota is refused at
// enqueue (RESOURCE_EXHAUSTED) while other tenants' batches still form.
//
// Allocate = Arena::Alloc under the owner named in BufferSpec::owner (the
// model version's arena owner), Free = Arena::Release (the block returns to
// the pool's cache when the last reference — batcher, JS response path, worker
// view — is dropped). MemoryBlock::handle is the arena Handle, which is what
// crosses to JS and to the workers that map the block.
//
// The arena must be host-accessible (host or pinned backend): the batcher
// copies request bytes into the blocks with memcpy.
//
// Thread-safety: the arena is thread-safe; this class holds only immutable
// state after construction.
#pragma once

#include <memory>

#include "arena/arena.h"
#include "batcher/batch_memory.h"

namespace hotpath::batcher {

class ArenaBatchMemory final : public BatchMemory {
 public:
  // INVALID_ARGUMENT when the arena's memory is not host-accessible.
  static Result<std::shared_ptr<ArenaBatchMemory>> Create(std::shared_ptr<arena::Arena> arena,
                                                         arena::TenantId tenant);

  Result<MemoryBlock> Allocate(const BufferSpec& spec) override;
  void Free(const MemoryBlock& block, const BufferSpec& spec) noexcept override;

 private:
  ArenaBatchMemory(std::shared_ptr<arena::Arena> arena, arena::TenantId tenant)
      : arena_(std::move(arena)), tenant_(tenant) {}

  const std::shared_ptr<arena::Arena> arena_;
  const arena::TenantId tenant_;
};

}  // namespace hotpath::batcher
