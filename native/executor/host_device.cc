// The host device: kernels run on the calling (instance) thread, copies are
// memcpy, and there is nothing to wait for. The reference device, and how CI
// runs the executor end to end.
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "executor/device_runtime.h"

namespace hotpath::executor {
namespace {

// Used by one instance thread at a time (ExecStream's contract). The error
// word lives in the instance's workspace; host kernels report data errors
// through their Status, so it stays 0 unless a kernel chooses to set it.
class HostStream final : public ExecStream {
 public:
  explicit HostStream(uint32_t* error_flag) : error_flag_(error_flag) {
    if (error_flag_ != nullptr) *error_flag_ = 0;
  }

  KernelContext context() const override { return KernelContext{nullptr, error_flag_}; }

  ExecStatus CopyIn(void* device_dst, const void* host_src, size_t bytes) override {
    return Copy(device_dst, host_src, bytes, "CopyIn");
  }
  ExecStatus CopyOut(void* host_dst, const void* device_src, size_t bytes) override {
    return Copy(host_dst, device_src, bytes, "CopyOut");
  }

  // The kernels ran on this thread before Mark is called: the clock is the
  // phase's own time.
  ExecStatus Mark(int mark) override {
    if (mark < 0 || mark >= kTimingMarks) {
      return {Status(StatusCode::kInvalidArgument, "Mark: no mark " + std::to_string(mark)), FaultClass::kNone};
    }
    marks_[mark] = std::chrono::steady_clock::now();
    return {};
  }

  ExecStatus Intervals(uint64_t ns[3]) override {
    for (int i = 0; i + 1 < kTimingMarks; ++i) {
      const auto elapsed = std::chrono::duration_cast<std::chrono::nanoseconds>(marks_[i + 1] - marks_[i]).count();
      ns[i] = elapsed > 0 ? static_cast<uint64_t>(elapsed) : 0;
    }
    return {};
  }

  ExecStatus Synchronize() override {
    if (error_flag_ == nullptr || *error_flag_ == 0) return {};
    const uint32_t code = *error_flag_;
    *error_flag_ = 0;
    return {Status(StatusCode::kInvalidArgument,
                   "a kernel reported a data error (code " + std::to_string(code) + ")"),
            FaultClass::kNone};
  }

 private:
  static ExecStatus Copy(void* dst, const void* src, size_t bytes, const char* what) {
    if (bytes == 0) return {};
    if (dst == nullptr || src == nullptr) {
      return {Status(StatusCode::kInvalidArgument,
                     std::string(what) + ": null pointer for " + std::to_string(bytes) + " bytes"),
              FaultClass::kNone};
    }
    std::memcpy(dst, src, bytes);
    return {};
  }

  uint32_t* const error_flag_;
  std::chrono::steady_clock::time_point marks_[kTimingMarks] = {};
};

class HostExecDevice final : public ExecDevice {
 public:
  explicit HostExecDevice(const KernelSet& kernels) : kernels_(kernels) {}
  const char* kind() const override { return "host"; }
  int ordinal() const override { return -1; }
  const KernelSet& kernels() const override { return kernels_; }

  Result<std::unique_ptr<ExecStream>> CreateStream(uint32_t* error_flag) override {
    return std::unique_ptr<ExecStream>(std::make_unique<HostStream>(error_flag));
  }

  ExecStatus Upload(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes == 0) return {};
    if (device_dst == nullptr || host_src == nullptr) {
      return {Status(StatusCode::kInvalidArgument, "Upload: null pointer"), FaultClass::kNone};
    }
    std::memcpy(device_dst, host_src, bytes);
    return {};
  }

  ExecStatus BindThread() override { return {}; }

 private:
  const KernelSet& kernels_;  // outlives the device (the caller's promise)
};

}  // namespace

std::shared_ptr<ExecDevice> HostDevice() {
  // Immutable and stateless: one instance for the process, never destroyed
  // before its users (function-local static with a shared_ptr copy each call).
  static const std::shared_ptr<ExecDevice> device = std::make_shared<HostExecDevice>(HostKernels());
  return device;
}

std::shared_ptr<ExecDevice> MakeHostDevice(const KernelSet& kernels) {
  return std::make_shared<HostExecDevice>(kernels);
}

}  // namespace hotpath::executor
