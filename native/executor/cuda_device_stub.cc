// MakeCudaDevice for builds without CUDA (HOTPATH_CUDA=OFF, binding.gyp):
// the executor then runs on HostDevice() only.
#include <string>

#include "executor/device_runtime.h"

#ifdef HOTPATH_WITH_CUDA
#error "cuda_device_stub.cc is for builds without CUDA; cuda_device.cu provides MakeCudaDevice"
#endif

namespace hotpath::executor {

Result<std::shared_ptr<ExecDevice>> MakeCudaDevice(int ordinal, CudaBlas /*blas*/) {
  return Status(StatusCode::kUnavailable,
                "CUDA device " + std::to_string(ordinal) +
                    " unavailable: hotpath_native was built without CUDA");
}

}  // namespace hotpath::executor
