// Constructors for the CUDA device and pinned-host backends (backend_cuda.cu).
// Without HOTPATH_WITH_CUDA they are defined in cuda_backend_stub.cc and
// return UNAVAILABLE "built without CUDA". Internal to native/arena; callers
// use arena/backend.h. Kept free of CUDA headers so C++20 code can include it.
#pragma once

#include <cstdint>
#include <memory>

#include "arena/backend.h"
#include "common/result.h"

namespace hotpath::arena::detail {

// UNAVAILABLE (naming the runtime call and error) when no device is usable.
Result<std::unique_ptr<MemoryBackend>> NewCudaBackend(int device_ordinal);
Result<std::unique_ptr<MemoryBackend>> NewPinnedBackend(int device_ordinal, uint64_t capacity_bytes);

}  // namespace hotpath::arena::detail
