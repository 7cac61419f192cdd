// The host kernel set in the device's summation order (issue 22): Gemm sums
// each element exactly as the own CUDA kernels do (detail/gemm_path.h: one
// FMA chain over k for the tiled and small-m column kernels; 32 lane chains
// and a xor-butterfly for the small-m row-dot kernel, chosen by the same
// SelectCudaGemmPath), with the same fused epilogue. Every other kernel is
// the reference set's.
//
// What it is for: the device differs from the reference only by summation
// order, so comparing this set with HostKernels() on the real models proves
// on a CPU that the check's tolerance (tolerance.h) holds for the device's
// order (device_order_models_test), and executor_check's dry run
// (--host-as-device) runs it as the stand-in device. It does not model
// cuBLAS, whose order is its own.
//
// Uses the CPU's FMA instructions where it has them (x86-64 with FMA, at
// run time), std::fmaf otherwise; the result is the same, only the speed
// differs.
//
// Thread-safety: the set is stateless, like HostKernels().
#pragma once

#include <memory>

#include "executor/device_runtime.h"
#include "executor/kernels.h"

namespace hotpath::executor {

// Named "host-device-order".
const KernelSet& HostDeviceOrderKernels();

// A host device running HostDeviceOrderKernels() (process-wide, immutable).
std::shared_ptr<ExecDevice> HostDeviceOrderDevice();

}  // namespace hotpath::executor
