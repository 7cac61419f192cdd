// Shared state of executor_check's phases (executor_check.cc drives them;
// executor_check_phases.cc runs them). See executor_check.cc for what the
// program checks and the JSON it writes.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "executor/device_runtime.h"
#include "executor/executor.h"
#include "executor_check_models.h"
#include "json_writer.h"

namespace hotpath::bench {

struct CheckArgs {
  std::vector<std::string> plan_dirs;
  std::string json_path;
  bool require_device = false;
  int ordinal = 0;
  bool quick = false;
  bool bench = true;
  double budget_s = 150;        // the benchmark skips points past this (whole run)
  uint32_t host_instances = 0;  // 0: one per core
  uint32_t memory_cycles = 2;
  // Dry-run aid: with no usable device, a second host kernel set stands in
  // for CUDA, so every device code path here runs on a CPU machine.
  bool host_as_device = false;
  std::vector<std::string> bench_models = {"ranker_mlp", "mlp_4x1024"};
};

// Where executors run: the host, or one CUDA kernel set ("cuda+cublas" or
// "cuda" with the own SGEMM) on the device's arena.
struct DeviceSlot {
  std::string kernels;  // the kernel set's name, the contender's name
  std::shared_ptr<executor::ExecDevice> device;
  std::shared_ptr<arena::Arena> arena;
  bool cuda = false;  // false only for the --host-as-device stand-in
};

struct CheckContext {
  CheckArgs args;
  std::chrono::steady_clock::time_point start;
  DeviceSlot host;
  std::vector<DeviceSlot> cuda;  // empty without a usable device
  std::vector<CheckModel> models;
  std::vector<std::string> failures;  // each a sentence; any one fails the run
  std::vector<std::string> notes;

  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  void Fail(const std::string& what);
  void Note(const std::string& what);
};

// An executor and the arena owner its memory is charged to.
struct LoadedExecutor {
  std::unique_ptr<executor::Executor> exec;
  arena::OwnerId owner = arena::kNoOwner;
  double create_ms = 0;
};
Result<LoadedExecutor> Load(CheckContext& ctx, const executor::GraphPlan& plan, DeviceSlot& slot,
                            uint32_t instances);
// Destroys the executor, then its owner; a byte still charged to the owner
// afterwards is a failure (the executor leaked an arena block).
void Unload(CheckContext& ctx, LoadedExecutor& loaded, DeviceSlot& slot);

// Phase A: every model on the host and on every CUDA kernel set, the same
// samples at batch 1, 7 and the largest (<= 256), each device result against
// the host's, and each smaller host batch against the first rows of the
// largest; writes "models": [...].
void CheckModels(CheckContext& ctx, JsonWriter& json);
// Phase B: the scoring benchmark; writes "bench": {...}.
void RunBenchmark(CheckContext& ctx, JsonWriter& json);
// Phase C: load, run and unload every model again on the device, then
// cudaMemGetInfo against the baseline taken before; writes "memory": {...}.
void CheckDeviceMemory(CheckContext& ctx, JsonWriter& json);

}  // namespace hotpath::bench
