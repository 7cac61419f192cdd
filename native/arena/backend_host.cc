// Host and simulated backends, and backend selection. See backend.h.
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>

#include "arena/backend.h"
#include "arena/detail/cuda_backend.h"

namespace hotpath::arena {

namespace {

// Rounds up to kSegmentAlignment; false on overflow.
bool RoundToAlignment(size_t bytes, size_t* out) {
  if (bytes > SIZE_MAX - (kSegmentAlignment - 1)) return false;
  *out = (bytes + kSegmentAlignment - 1) & ~(kSegmentAlignment - 1);
  return true;
}

// Capacity accounting shared by the host and simulated backends: an atomic
// reserve-then-rollback on `used_`, so concurrent callers never overshoot.
class CapacityCounter {
 public:
  explicit CapacityCounter(uint64_t capacity) : capacity_(capacity) {}
  bool TryTake(uint64_t bytes) {
    uint64_t used = used_.load(std::memory_order_relaxed);
    do {
      if (bytes > capacity_ - used) return false;
    } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    return true;
  }
  void Give(uint64_t bytes) { used_.fetch_sub(bytes, std::memory_order_relaxed); }
  BackendMemInfo Info() const {
    uint64_t used = used_.load(std::memory_order_relaxed);
    return BackendMemInfo{capacity_, capacity_ - used};
  }
  uint64_t capacity() const { return capacity_; }

 private:
  const uint64_t capacity_;
  std::atomic<uint64_t> used_{0};
};

Status CapacityFull(const char* what, size_t bytes, const CapacityCounter& counter) {
  BackendMemInfo info = counter.Info();
  return Status(StatusCode::kResourceExhausted,
                std::string(what) + ": " + std::to_string(bytes) + " bytes do not fit (" +
                    std::to_string(info.free_bytes) + " of " + std::to_string(info.total_bytes) +
                    " bytes free)");
}

class HostBackend final : public MemoryBackend {
 public:
  explicit HostBackend(uint64_t capacity) : counter_(capacity) {}

  Result<void*> Alloc(size_t bytes) override {
    size_t rounded = 0;
    if (bytes == 0 || !RoundToAlignment(bytes, &rounded)) {
      return Status(StatusCode::kInvalidArgument, "host alloc: bad size " + std::to_string(bytes));
    }
    if (!counter_.TryTake(rounded)) return CapacityFull("host alloc", bytes, counter_);
    // aligned_alloc needs size % alignment == 0, hence `rounded`.
    void* ptr = std::aligned_alloc(kSegmentAlignment, rounded);
    if (ptr == nullptr) {
      counter_.Give(rounded);
      return Status(StatusCode::kResourceExhausted,
                    "host alloc: aligned_alloc(" + std::to_string(rounded) + ") failed");
    }
    return ptr;
  }

  Status Free(void* ptr, size_t bytes) override {
    size_t rounded = 0;
    if (ptr == nullptr || !RoundToAlignment(bytes, &rounded)) {
      return Status(StatusCode::kInvalidArgument, "host free: null pointer or bad size");
    }
    std::free(ptr);
    counter_.Give(rounded);
    return Status::Ok();
  }

  BackendMemInfo MemInfo() const override { return counter_.Info(); }
  BackendKind kind() const override { return BackendKind::kHost; }
  bool host_accessible() const override { return true; }
  std::string description() const override { return "host memory"; }

 private:
  CapacityCounter counter_;
};

// Hands out addresses from a private range; nothing is mapped. Freed ranges
// are not reused, which keeps the code trivial and makes use-after-free bugs
// in the pool show up as unknown addresses in the invariant checks.
class SimulatedBackend final : public MemoryBackend {
 public:
  SimulatedBackend(uint64_t capacity, uint32_t fail_every)
      : counter_(capacity), fail_every_(fail_every) {}

  Result<void*> Alloc(size_t bytes) override {
    size_t rounded = 0;
    if (bytes == 0 || !RoundToAlignment(bytes, &rounded)) {
      return Status(StatusCode::kInvalidArgument, "simulated alloc: bad size");
    }
    if (fail_every_ != 0 && (calls_.fetch_add(1, std::memory_order_relaxed) + 1) % fail_every_ == 0) {
      return Status(StatusCode::kResourceExhausted, "simulated alloc: injected failure");
    }
    if (!counter_.TryTake(rounded)) return CapacityFull("simulated alloc", bytes, counter_);
    uint64_t address = next_.fetch_add(rounded + kSegmentAlignment, std::memory_order_relaxed);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(address));
  }

  Status Free(void* ptr, size_t bytes) override {
    size_t rounded = 0;
    if (ptr == nullptr || !RoundToAlignment(bytes, &rounded)) {
      return Status(StatusCode::kInvalidArgument, "simulated free: null pointer or bad size");
    }
    counter_.Give(rounded);
    return Status::Ok();
  }

  BackendMemInfo MemInfo() const override { return counter_.Info(); }
  BackendKind kind() const override { return BackendKind::kSimulated; }
  bool host_accessible() const override { return false; }
  std::string description() const override { return "simulated memory (fake addresses)"; }

 private:
  CapacityCounter counter_;
  const uint32_t fail_every_;
  std::atomic<uint64_t> calls_{0};
  // Starts high and aligned so fake addresses never look like null.
  std::atomic<uint64_t> next_{uint64_t{1} << 40};
};

}  // namespace

const char* BackendKindName(BackendKind kind) {
  switch (kind) {
    case BackendKind::kAuto: return "auto";
    case BackendKind::kCuda: return "cuda";
    case BackendKind::kPinned: return "pinned";
    case BackendKind::kHost: return "host";
    case BackendKind::kSimulated: return "simulated";
  }
  return "auto";
}

Result<BackendKind> ParseBackendKind(const std::string& name) {
  for (BackendKind kind : {BackendKind::kAuto, BackendKind::kCuda, BackendKind::kPinned,
                           BackendKind::kHost, BackendKind::kSimulated}) {
    if (name == BackendKindName(kind)) return kind;
  }
  return Status(StatusCode::kInvalidArgument,
                "unknown backend '" + name + "' (auto, cuda, pinned, host or simulated)");
}

std::unique_ptr<MemoryBackend> MakeHostBackend(uint64_t capacity_bytes) {
  return std::make_unique<HostBackend>(capacity_bytes);
}

std::unique_ptr<MemoryBackend> MakeSimulatedBackend(uint64_t capacity_bytes, uint32_t fail_every) {
  return std::make_unique<SimulatedBackend>(capacity_bytes, fail_every);
}

Result<std::unique_ptr<MemoryBackend>> MakeCudaBackend(int device_ordinal) {
  return detail::NewCudaBackend(device_ordinal);
}

Result<std::unique_ptr<MemoryBackend>> MakePinnedBackend(int device_ordinal, uint64_t capacity_bytes) {
  return detail::NewPinnedBackend(device_ordinal, capacity_bytes);
}

Result<BackendChoice> DetectBackend(const BackendConfig& config) {
  if (config.capacity_bytes == 0) {
    return Status(StatusCode::kInvalidArgument, "backend capacity must be > 0 bytes");
  }
  BackendChoice choice;
  switch (config.kind) {
    case BackendKind::kHost:
      choice.backend = MakeHostBackend(config.capacity_bytes);
      return choice;
    case BackendKind::kSimulated:
      choice.backend = MakeSimulatedBackend(config.capacity_bytes);
      return choice;
    case BackendKind::kAuto:
    case BackendKind::kCuda:
    case BackendKind::kPinned: {
      Result<std::unique_ptr<MemoryBackend>> made =
          config.kind == BackendKind::kPinned
              ? MakePinnedBackend(config.device_ordinal, config.capacity_bytes)
              : MakeCudaBackend(config.device_ordinal);
      if (made.ok()) {
        choice.backend = std::move(made).value();
        return choice;
      }
      // No usable device is a normal answer: serve from host memory and say why.
      choice.backend = MakeHostBackend(config.capacity_bytes);
      choice.fallback_reason = made.status().message();
      return choice;
    }
  }
  return Status(StatusCode::kInvalidArgument, "unknown backend kind");
}

}  // namespace hotpath::arena
