// GPU-only test (CTest label "gpu"): the arena invariant suite on CUDA device
// memory, then cudaMemGetInfo must be back at its baseline (within 2 MiB)
// once the arena is gone. Why 2 MiB: the driver maps device memory in 2 MiB
// granules and may keep one mapped after the last cudaFree in it
// (cudaMemGetInfo counts it used); a leaked 32 MiB segment would show far
// above that. Also pinned host memory. Exits with kSkipExitCode
// without a usable device. Built only with HOTPATH_WITH_CUDA.
#include <cuda_runtime_api.h>

#include <cstdio>

#include "arena/backend.h"
#include "device/cuda_device.h"
#include "tests/arena_suite.h"
#include "tests/check.h"

namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kDriverGranule = 2 * kMiB;  // see the top

bool DeviceFree(size_t* free_bytes) {
  size_t total = 0;
  return cudaMemGetInfo(free_bytes, &total) == cudaSuccess;
}

}  // namespace

int main() {
  hotpath::Result<int> count = hotpath::device::CudaDeviceCount();
  if (!count.ok()) {
    std::printf("skipped: %s\n", count.status().message().c_str());
    return hotpath::test::kSkipExitCode;
  }
  hotpath::test::Checker check;
  // Create the context before the baseline so it is not counted as a leak.
  check.True(cudaFree(nullptr) == cudaSuccess, "context");
  size_t baseline = 0;
  check.True(DeviceFree(&baseline), "cudaMemGetInfo baseline");

  using hotpath::arena::test::InvariantSuite;
  using hotpath::arena::test::SuiteConfig;
  for (uint64_t seed : {31, 32}) {
    SuiteConfig config;
    config.seed = seed;
    config.capacity = 256 * kMiB;
    config.segment_bytes = 32 * kMiB;
    config.max_split_bytes = 8 * kMiB;
    config.small_max_bytes = 64 * 1024;
    config.max_request = 12 * kMiB;
    auto backend = hotpath::arena::MakeCudaBackend(0);
    if (!check.True(backend.ok(), "cuda backend: " + backend.status().ToString())) break;
    InvariantSuite(check, config).Run(std::move(backend).value());
  }
  {
    SuiteConfig config;
    config.seed = 41;
    config.operations = 5000;
    auto pinned = hotpath::arena::MakePinnedBackend(0, config.capacity);
    if (check.True(pinned.ok(), "pinned backend: " + pinned.status().ToString())) {
      InvariantSuite(check, config).Run(std::move(pinned).value());
    }
  }
  size_t after = 0;
  check.True(DeviceFree(&after), "cudaMemGetInfo after");
  uint64_t leaked = after >= baseline ? 0 : baseline - after;
  std::printf("device free: baseline %zu, after %zu (%llu bytes below)\n", baseline, after,
              static_cast<unsigned long long>(leaked));
  check.True(leaked <= kDriverGranule, "device memory back to baseline within 2 MiB (one driver granule)");
  return check.ExitCode();
}
