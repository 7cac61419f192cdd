// Memory backends: where the arena's segments come from.
//
// One interface, {Alloc, Free, MemInfo}, and four implementations:
//   cuda       device memory (cudaMalloc / cudaFree)
//   pinned     page-locked host memory (cudaHostAlloc / cudaFreeHost), for staging
//   host       plain host memory (aligned allocation), limited to a capacity
//   simulated  fake addresses, never dereferenced; for tests and replays
// The pool above (arena.h) is the same for all four, so the whole suite runs
// without a GPU. Backends are called rarely: only when the pool needs a new
// segment or returns a cached one.
//
// Errors are data: a failed CUDA or system call becomes a Status naming the
// call and the error, never an abort or exception. cudaDeviceReset is never
// called.
//
// Thread-safety: every method of every backend may be called from any thread
// concurrently (the arena calls them under its own mutex anyway).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"

namespace hotpath::arena {

enum class BackendKind { kAuto, kCuda, kPinned, kHost, kSimulated };

// "auto", "cuda", "pinned", "host", "simulated". Never null.
const char* BackendKindName(BackendKind kind);
// Parses a BackendKindName; INVALID_ARGUMENT for anything else.
Result<BackendKind> ParseBackendKind(const std::string& name);

// All segment addresses are aligned to this many bytes (cudaMalloc's 256).
inline constexpr size_t kSegmentAlignment = 256;

struct BackendMemInfo {
  uint64_t total_bytes = 0;  // capacity: device memory, or the configured host cap
  uint64_t free_bytes = 0;   // a snapshot; <= total_bytes
};

class MemoryBackend {
 public:
  virtual ~MemoryBackend() = default;

  // Allocates `bytes` (> 0) aligned to kSegmentAlignment. RESOURCE_EXHAUSTED
  // when the device or the configured capacity is full, INTERNAL/UNAVAILABLE
  // for other failures.
  virtual Result<void*> Alloc(size_t bytes) = 0;
  // Returns memory from Alloc, with the same size. A failure is reported, the
  // memory is then considered lost (never freed twice).
  virtual Status Free(void* ptr, size_t bytes) = 0;
  virtual BackendMemInfo MemInfo() const = 0;

  virtual BackendKind kind() const = 0;
  // True when the CPU can read and write the memory (host, pinned): blocks can
  // then be viewed from JS as external ArrayBuffers.
  virtual bool host_accessible() const = 0;
  // Human-readable description, e.g. "NVIDIA H200 (device 0)" or "host memory".
  virtual std::string description() const = 0;
};

struct BackendConfig {
  BackendKind kind = BackendKind::kAuto;
  // Upper bound on bytes handed out by the host, pinned and simulated
  // backends (> 0). The CUDA backend is bounded by the device itself.
  uint64_t capacity_bytes = 1ull << 30;
  int device_ordinal = 0;  // cuda / pinned
};

// What DetectBackend chose, and why when it is not what was asked for.
struct BackendChoice {
  std::unique_ptr<MemoryBackend> backend;
  // Empty when the requested kind was used. Otherwise, e.g.
  // "no CUDA device: cudaGetDeviceCount: cudaErrorNoDevice (...)".
  std::string fallback_reason;
};

// Creates the backend for `config`. kAuto picks cuda when the CUDA backend is
// compiled in and a device is usable, else host. kCuda and kPinned fall back
// to host (with fallback_reason set) when no device is usable: CPU-only is a
// full mode. INVALID_ARGUMENT for a zero capacity.
Result<BackendChoice> DetectBackend(const BackendConfig& config);

// Direct constructors, for tests and benchmarks.
std::unique_ptr<MemoryBackend> MakeHostBackend(uint64_t capacity_bytes);
// Fake, never-dereferenced addresses. `fail_every` > 0 makes every n-th Alloc
// fail with RESOURCE_EXHAUSTED (fault injection).
std::unique_ptr<MemoryBackend> MakeSimulatedBackend(uint64_t capacity_bytes, uint32_t fail_every = 0);
// UNAVAILABLE when built without CUDA or the device is unusable.
Result<std::unique_ptr<MemoryBackend>> MakeCudaBackend(int device_ordinal);
Result<std::unique_ptr<MemoryBackend>> MakePinnedBackend(int device_ordinal, uint64_t capacity_bytes);

}  // namespace hotpath::arena
