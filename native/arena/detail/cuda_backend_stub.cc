// CPU-only build: the CUDA backends do not exist. See cuda_backend.h.
#include "arena/detail/cuda_backend.h"

namespace hotpath::arena::detail {

Result<std::unique_ptr<MemoryBackend>> NewCudaBackend(int) {
  return Status(StatusCode::kUnavailable, "built without CUDA");
}

Result<std::unique_ptr<MemoryBackend>> NewPinnedBackend(int, uint64_t) {
  return Status(StatusCode::kUnavailable, "built without CUDA");
}

}  // namespace hotpath::arena::detail
