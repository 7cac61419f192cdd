// The host device: kernels run on the calling (instance) thread, copies are
// memcpy, and there is nothing to wait for. The reference device, and how CI
// runs the executor end to end.
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
};

class HostExecDevice final : public ExecDevice {
 public:
  const char* kind() const override { return "host"; }
  int ordinal() const override { return -1; }
  const KernelSet& kernels() const override { return HostKernels(); }

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
};

}  // namespace

std::shared_ptr<ExecDevice> HostDevice() {
  // Immutable and stateless: one instance for the process, never destroyed
  // before its users (function-local static with a shared_ptr copy each call).
  static const std::shared_ptr<ExecDevice> device = std::make_shared<HostExecDevice>();
  return device;
}

}  // namespace hotpath::executor
