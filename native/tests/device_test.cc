// Tests for device/device_info.h on any machine, GPU or not: QueryDevice()
// never fails, and its backend choice agrees with what the CUDA runtime says.
// On a machine without a GPU (CI) the CUDA build must report the host backend
// and say why.
#include <string>

#include "common/build_info.h"
#include "device/device_info.h"
#include "tests/check.h"
#ifdef HOTPATH_WITH_CUDA
#include "device/cuda_device.h"
#endif

namespace hotpath::device {
namespace {

void TestBackendNames(test::Checker& check) {
  check.Equal(std::string(BackendName(Backend::kCuda)), std::string("cuda"), "cuda name");
  check.Equal(std::string(BackendName(Backend::kHost)), std::string("host"), "host name");
}

void TestQueryDeviceShape(test::Checker& check) {
  Result<DeviceInfo> info = QueryDevice();
  if (!check.True(info.ok(), "QueryDevice never fails: " + info.status().ToString())) return;
  const DeviceInfo& device = info.value();
  check.True(!device.name.empty(), "name is set");
  check.True(device.total_bytes > 0, "total_bytes > 0");
  check.True(device.free_bytes <= device.total_bytes, "free_bytes <= total_bytes");
  std::printf("device: %s (%s), %llu of %llu bytes free\n", device.name.c_str(),
              BackendName(device.backend), static_cast<unsigned long long>(device.free_bytes),
              static_cast<unsigned long long>(device.total_bytes));
}

void TestBackendChoice(test::Checker& check) {
  Result<DeviceInfo> info = QueryDevice();
  if (!info.ok()) return;  // reported by TestQueryDeviceShape
  const DeviceInfo& device = info.value();
#ifdef HOTPATH_WITH_CUDA
  check.True(CudaCompiledIn(), "CUDA compiled in");
  Result<int> count = CudaDeviceCount();
  if (count.ok()) {
    check.True(count.value() > 0, "a successful count is positive");
    check.True(device.backend == Backend::kCuda, "device present: cuda backend");
  } else {
    check.True(count.status().code() == StatusCode::kUnavailable, "no device: UNAVAILABLE");
    check.True(device.backend == Backend::kHost, "no device: host backend");
    check.Contains(device.name, "host memory (no CUDA device: ", "name says why");
    check.Contains(device.name, count.status().message(), "name carries the runtime error");
  }
#else
  check.True(!CudaCompiledIn(), "CUDA not compiled in");
  check.True(device.backend == Backend::kHost, "CPU-only build: host backend");
  check.Equal(device.name, std::string("host memory (built without CUDA)"), "name says why");
#endif
}

#ifdef HOTPATH_WITH_CUDA
// Runs on every machine: a bad ordinal (or no runtime at all) is a Status,
// never a crash, and repeated probing keeps answering.
void TestCudaErrorsAreData(test::Checker& check) {
  Result<DeviceInfo> bad = QueryCudaDevice(1 << 20);
  check.True(!bad.ok(), "absurd ordinal fails");
  check.True(bad.status().code() == StatusCode::kInvalidArgument ||
                 bad.status().code() == StatusCode::kUnavailable,
             "as INVALID_ARGUMENT or UNAVAILABLE");
  check.Contains(bad.status().message(), "cudaGetDeviceProperties: cuda", "names call and error");
  for (int i = 0; i < 3; ++i) {
    check.True(QueryDevice().ok(), "QueryDevice keeps working after a CUDA error");
  }
}
#endif

}  // namespace
}  // namespace hotpath::device

int main() {
  hotpath::test::Checker check;
  hotpath::device::TestBackendNames(check);
  hotpath::device::TestQueryDeviceShape(check);
  hotpath::device::TestBackendChoice(check);
#ifdef HOTPATH_WITH_CUDA
  hotpath::device::TestCudaErrorsAreData(check);
#endif
  return check.ExitCode();
}
