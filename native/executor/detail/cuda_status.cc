// CUDA error classification and messages. See cuda_status.h.
#include "executor/detail/cuda_status.h"

#include <string>

namespace hotpath::executor::detail {

FaultClass ClassifyCudaError(cudaError_t err) {
  switch (err) {
    case cudaSuccess:
      return FaultClass::kNone;
    // A kernel faulted: the context is corrupt, every later call fails.
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorTensorMemoryLeak:
    // Hardware errors the driver could not correct or only contained.
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorContained:
    // The device, context or driver is gone or was never usable.
    case cudaErrorContextIsDestroyed:
    case cudaErrorDevicesUnavailable:
    case cudaErrorNoDevice:
    case cudaErrorDeviceUninitialized:
    case cudaErrorInitializationError:
    case cudaErrorCudartUnloading:
    case cudaErrorInsufficientDriver:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
    case cudaErrorStartupFailure:
    case cudaErrorStubLibrary:
    case cudaErrorUnknown:
    // Our kernels cannot run on this device at all: not a context fault,
    // but retrying later can never succeed either, so the executor must stop
    // using the device just the same.
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorInvalidPtx:
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorJitCompilerNotFound:
    case cudaErrorJitCompilationDisabled:
      return FaultClass::kSticky;
    default:
      return FaultClass::kTransient;
  }
}

Status CudaStatus(const std::string& what, cudaError_t err) {
  // Sticky errors stay in the slot whatever we do; this clears the others.
  (void)cudaGetLastError();
  StatusCode code =
      ClassifyCudaError(err) == FaultClass::kSticky ? StatusCode::kInternal : StatusCode::kUnavailable;
  return Status(code, what + ": " + cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

ExecStatus CudaExecStatus(const std::string& what, cudaError_t err) {
  return ExecStatus{CudaStatus(what, err), ClassifyCudaError(err)};
}

Status CheckLaunch(const char* kernel) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::Ok();
  return CudaStatus(std::string(kernel) + " launch", err);
}

DeviceScope::DeviceScope(int ordinal) {
  if (cudaGetDevice(&previous_) != cudaSuccess) {
    (void)cudaGetLastError();
    previous_ = -1;
  }
  if (previous_ != ordinal) {
    error_ = cudaSetDevice(ordinal);
    if (error_ != cudaSuccess) (void)cudaGetLastError();
    switched_ = error_ == cudaSuccess;
  }
}

DeviceScope::~DeviceScope() {
  if (switched_ && previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) {
    (void)cudaGetLastError();
  }
}

}  // namespace hotpath::executor::detail
