// Where an executor's instances run: a device (the kernel set, memory
// uploads) and one stream per instance (copies in and out, the one
// synchronisation per batch).
//
//   host: HostDevice() — kernels run on the instance thread itself, copies
//         are memcpy, Synchronize is a no-op. The reference, and how CI runs
//         the whole path.
//   cuda: MakeCudaDevice(ordinal) — own kernels or cuBLAS (dlopen'ed when
//         present, chosen once per device and logged through name()), one
//         non-blocking CUDA stream per instance, cudaMemcpyAsync from pinned
//         staging. Where cuBLAS is looked for: cublas_loader.h
//         (HOTPATH_CUBLAS_PATH adds directories); HOTPATH_CUBLAS=off, read
//         once per process, or CudaBlas::kOff forces the own kernels.
//
// Faults: every CUDA call is checked. A failure is classified (FaultClass):
//   kSticky     the context is unusable for the rest of the process
//               (illegal address, launch failure, ECC, device lost...): the
//               executor marks itself dead, the server moves every executor
//               model to onnxruntime and reports `degraded`;
//   kTransient  the device still works (allocation failure, out of
//               resources...): this batch is re-run on CPU, a probe moves
//               the model back later.
// cudaDeviceReset is never called.
//
// Thread-safety: an ExecDevice may be used from any thread; an ExecStream by
// one thread at a time (its instance thread).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/result.h"
#include "executor/kernels.h"

namespace hotpath::executor {

enum class FaultClass : int32_t { kNone, kTransient, kSticky };
// "none", "transient", "sticky". Never null.
const char* FaultClassName(FaultClass fault);

// A Status plus how a device failure should be handled (kNone for errors
// that are not the device's, e.g. a Gather index out of range).
struct ExecStatus {
  Status status;
  FaultClass fault = FaultClass::kNone;
  bool ok() const { return status.ok(); }
};

class ExecStream {
 public:
  virtual ~ExecStream() = default;
  // Stream and error flag for kernel calls on this stream.
  virtual KernelContext context() const = 0;
  // Host -> device / device -> host, queued on the stream (host: memcpy now).
  // `host` should be pinned for an asynchronous copy on CUDA.
  virtual ExecStatus CopyIn(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual ExecStatus CopyOut(void* host_dst, const void* device_src, size_t bytes) = 0;
  // Waits for everything queued, then checks and clears the error flag
  // (a data error, e.g. a Gather index: INVALID_ARGUMENT, FaultClass kNone).
  virtual ExecStatus Synchronize() = 0;

  // Timing marks (kTimingMarks of them): the executor marks the start of a
  // job, the end of its copies in, of its kernels and of its copies out.
  // On CUDA a mark is an event recorded on the stream, so the intervals are
  // the device's own time for each phase (what the host clock sees is only
  // the queuing); on host it is the clock, the work being synchronous.
  virtual ExecStatus Mark(int mark) = 0;
  // After a successful Synchronize: the time from mark i to mark i + 1 for
  // i = 0, 1, 2 into ns[i].
  virtual ExecStatus Intervals(uint64_t ns[3]) = 0;
};

inline constexpr int kTimingMarks = 4;

class ExecDevice {
 public:
  virtual ~ExecDevice() = default;
  virtual const char* kind() const = 0;  // "host" or "cuda"
  virtual int ordinal() const = 0;       // -1 on host
  virtual const KernelSet& kernels() const = 0;
  // A new stream. `error_flag` is 4 bytes of this device's memory (from the
  // executor's workspace) that the stream owns for kernels' data errors.
  virtual Result<std::unique_ptr<ExecStream>> CreateStream(uint32_t* error_flag) = 0;
  // Synchronous copy host -> device memory, at load (weights) only.
  virtual ExecStatus Upload(void* device_dst, const void* host_src, size_t bytes) = 0;
  // Makes this device current on the calling thread (each instance thread
  // calls it once). No-op on host.
  virtual ExecStatus BindThread() = 0;
};

// The host device (process-wide, immutable).
std::shared_ptr<ExecDevice> HostDevice();
// A host device running `kernels` (which must outlive it; e.g. the
// device-order set of host_device_order.h). kind() is "host".
std::shared_ptr<ExecDevice> MakeHostDevice(const KernelSet& kernels);

// Whether a CUDA device may use cuBLAS. kAuto: when it loads and a handle
// works, unless HOTPATH_CUBLAS=off (read at the first MakeCudaDevice call of
// the process). kOff: the own kernels, whatever the environment (tests and
// executor_check compare both sets this way instead of calling setenv once
// CUDA's threads exist).
enum class CudaBlas : int32_t { kAuto, kOff };

// The CUDA device `ordinal`, one per (ordinal, CudaBlas) for the process:
// the checks and the cuBLAS probe run at the first call, later calls return
// the same immutable device. UNAVAILABLE naming the runtime call when CUDA
// is not compiled in or the device is not usable (not cached: a later call
// checks again).
Result<std::shared_ptr<ExecDevice>> MakeCudaDevice(int ordinal, CudaBlas blas = CudaBlas::kAuto);

}  // namespace hotpath::executor
