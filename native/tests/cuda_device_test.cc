// GPU-only test (CTest label "gpu"): on a machine with a CUDA device, checks
// that QueryCudaDevice() agrees with the runtime and that its free-memory
// figure tracks a real allocation. Exits with kSkipExitCode (reported as
// skipped) when no device is usable. Built only with HOTPATH_WITH_CUDA.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "device/cuda_device.h"
#include "device/device_info.h"
#include "tests/check.h"

namespace hotpath::device {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr size_t kProbeBytes = 256 * kMiB;

void TestProperties(test::Checker& check) {
  cudaDeviceProp prop{};
  if (!check.True(cudaGetDeviceProperties(&prop, 0) == cudaSuccess, "cudaGetDeviceProperties")) {
    return;
  }
  Result<DeviceInfo> info = QueryCudaDevice(0);
  if (!check.True(info.ok(), "QueryCudaDevice(0): " + info.status().ToString())) return;
  check.True(info.value().backend == Backend::kCuda, "cuda backend");
  check.Equal(info.value().name, std::string(prop.name), "name from device properties");
  check.Equal(info.value().total_bytes, static_cast<uint64_t>(prop.totalGlobalMem),
              "total matches totalGlobalMem");
  check.True(info.value().free_bytes > 0, "free > 0");
  check.True(info.value().free_bytes <= info.value().total_bytes, "free <= total");

  Result<DeviceInfo> chosen = QueryDevice();
  check.True(chosen.ok() && chosen.value().backend == Backend::kCuda, "QueryDevice picks cuda");
}

void TestFreeTracksAllocation(test::Checker& check) {
  Result<DeviceInfo> before = QueryCudaDevice(0);
  if (!check.True(before.ok(), "query before")) return;
  void* block = nullptr;
  if (!check.True(cudaMalloc(&block, kProbeBytes) == cudaSuccess, "cudaMalloc 256 MiB")) return;
  Result<DeviceInfo> during = QueryCudaDevice(0);
  check.True(cudaFree(block) == cudaSuccess, "cudaFree");
  Result<DeviceInfo> after = QueryCudaDevice(0);
  if (!check.True(during.ok() && after.ok(), "queries during and after")) return;
  // Other processes may allocate concurrently; require most of the probe to
  // show up rather than an exact figure.
  uint64_t drop = before.value().free_bytes - std::min(before.value().free_bytes,
                                                        during.value().free_bytes);
  check.True(drop >= kProbeBytes * 3 / 4, "free drops by the allocation");
  check.True(after.value().free_bytes + kProbeBytes / 4 >= before.value().free_bytes,
             "free recovers after cudaFree");
}

void TestCurrentDeviceRestored(test::Checker& check) {
  int before = -1;
  int after = -1;
  check.True(cudaGetDevice(&before) == cudaSuccess, "cudaGetDevice");
  check.True(QueryCudaDevice(0).ok(), "query");
  check.True(cudaGetDevice(&after) == cudaSuccess, "cudaGetDevice again");
  check.Equal(after, before, "current device unchanged");
}

}  // namespace
}  // namespace hotpath::device

int main() {
  hotpath::Result<int> count = hotpath::device::CudaDeviceCount();
  if (!count.ok()) {
    std::printf("skipped: %s\n", count.status().message().c_str());
    return hotpath::test::kSkipExitCode;
  }
  hotpath::test::Checker check;
  hotpath::device::TestProperties(check);
  hotpath::device::TestFreeTracksAllocation(check);
  hotpath::device::TestCurrentDeviceRestored(check);
  return check.ExitCode();
}
