// GPU test (CTest label "gpu"): the Executor on MakeCudaDevice(0) with an
// arena on the CUDA backend, against the same plan on HostDevice() with a
// host arena: a small MLP, a 4 x 1024 MLP and a CTR-shaped graph (Gather,
// Transpose, Cast, Concat, LayerNorm, MatMul, Softmax, ReduceMean...), with
// both kernel sets ("cuda+cublas" when cuBLAS loads, and CudaBlas::kOff),
// two instances and concurrent jobs. A Gather index out of range fails its
// job (INVALID_ARGUMENT, no device fault) and the next job runs. Finally,
// device memory: after a warm pass (module loading, cuBLAS set-up), a second
// identical pass must leave cudaMemGetInfo within 2 MiB of the baseline
// once its executors are destroyed and arena->ReleaseCached() ran: the
// driver maps device memory in 2 MiB granules and may keep one mapped after
// the last free in it, which cudaMemGetInfo counts as used; a leaked block
// would repeat every pass or be larger.
// Exits 77 (skipped) when no device is usable.
//
// Tolerance: both sides are FP32 but sum in different orders (own SGEMM or
// cuBLAS vs the host's loops). A float sum of K terms differs by roughly
// 2^-24 * sqrt(K / 2) of the sum's RMS per layer, ~1.4e-6 for K = 1024, so
// the one device tolerance (executor/tolerance.h), |gpu - host| <= rtol *
// (|host| + rms(output)), with kDeviceRtol (1e-5) for the small graphs and
// kModelRtol (1e-4) for the 5-layer 1024-wide MLP leaves ample headroom
// while any indexing error (O(1) differences) still fails.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "executor/executor.h"
#include "executor/tolerance.h"
#include "tests/check.h"
#include "tests/executor_plans.h"

namespace hotpath::executor {
namespace {

using hotpath::test::Checker;
using testing::Int;
using testing::Ints;
using testing::PlanMaker;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kDriverGranule = 2 * kMiB;  // see the top

struct Model {
  std::string name;
  GraphPlan plan;
  double rtol = kDeviceRtol;
};

// x[B,16] -Gemm+Relu-> [B,32] -Gemm(transB)+Relu-> [B,8] -Gemm-> [B,1] -Sigmoid.
Model SmallMlp() {
  PlanMaker p(8);
  const int32_t x = p.Input("x", {-1, 16});
  int32_t h = p.Node("Relu", {p.Node("Gemm", {x, p.Random("w1", {16, 32}, 1), p.Random("b1", {32}, 2)})});
  h = p.Node("Relu", {p.Node("Gemm", {h, p.Random("w2", {8, 32}, 3), p.Random("b2", {8}, 4)}, {{"transB", Int(1)}})});
  p.Output(p.Node("Sigmoid", {p.Node("Gemm", {h, p.Random("w3", {8, 1}, 5), p.Random("b3", {1}, 6)})}));
  return Model{"small MLP", p.plan, kDeviceRtol};
}

// x[B,1024] -> 4 x (Gemm 1024x1024 (transB) + Relu) -> Gemm 1024x10 -> Softmax.
// Weights in [-0.05, 0.05) keep activations O(1) through the layers.
Model WideMlp() {
  PlanMaker p(64);
  int32_t h = p.Input("x", {-1, 1024});
  for (uint32_t layer = 0; layer < 4; ++layer) {
    const std::string n = std::to_string(layer);
    h = p.Node("Relu", {p.Node("Gemm", {h, p.Random("w" + n, {1024, 1024}, 10 + layer, 0.05f),
                                        p.Random("b" + n, {1024}, 20 + layer, 0.05f)},
                               {{"transB", Int(1)}})});
  }
  h = p.Node("Gemm", {h, p.Random("wo", {1024, 10}, 30, 0.05f), p.Random("bo", {10}, 31)});
  p.Output(p.Node("Softmax", {h}, {{"axis", Int(1)}}));
  return Model{"4x1024 MLP", p.plan, kModelRtol};
}

// ids[B,3] -Gather(table[10,4])-> [B,3,4] -Transpose-> [B,4,3] -Reshape-> [B,12]
// dense[B,5] -Cast f16 -Cast f32-> ; Concat -> [B,17] -LayerNorm -MatMul[17,8]
// -Add -Relu-> h; out0 = Softmax(MatMul(h, w2)), out1 = ReduceMean(h, 1).
Model Ctr() {
  PlanMaker p(16);
  const int32_t ids = p.Input("ids", {-1, 3}, DType::kInt64), dense = p.Input("dense", {-1, 5});
  int32_t emb = p.Node("Gather", {p.Random("table", {10, 4}, 40), ids});
  emb = p.Node("Transpose", {emb}, {{"perm", Ints({0, 2, 1})}});
  emb = p.Node("Reshape", {emb, p.Int64s("shape12", {2}, {0, -1})});
  const int32_t d = p.Node("Cast", {p.Node("Cast", {dense}, {{"to", Int(10)}})}, {{"to", Int(1)}});
  int32_t h = p.Node("Concat", {emb, d}, {{"axis", Int(1)}});
  h = p.Node("LayerNormalization", {h, p.Random("ln_s", {17}, 41, 1.0f), p.Random("ln_b", {17}, 42)});
  h = p.Node("Relu", {p.Node("Add", {p.Node("MatMul", {h, p.Random("w1", {17, 8}, 43)}), p.Random("b1", {8}, 44)})});
  p.Output(p.Node("Softmax", {p.Node("MatMul", {h, p.Random("w2", {8, 3}, 45, 1.0f)})}));
  p.Output(p.Node("ReduceMean", {h}, {{"axes", Ints({1})}}));
  return Model{"CTR graph", p.plan, kDeviceRtol};
}

// Inputs for `rows` rows: floats in [-1, 1), INT64 ids in [0, 10).
std::vector<std::vector<uint8_t>> MakeInputs(const Executor& exec, uint32_t rows, uint32_t seed) {
  std::vector<std::vector<uint8_t>> inputs;
  for (size_t i = 0; i < exec.inputs().size(); ++i) {
    std::vector<uint8_t> bytes(exec.InputBytes(i, rows));
    if (exec.inputs()[i].dtype == DType::kInt64) {
      for (size_t j = 0; j < bytes.size() / 8; ++j) {
        const int64_t id = static_cast<int64_t>((j * 7 + seed) % 10);
        std::memcpy(bytes.data() + j * 8, &id, 8);
      }
    } else {
      std::vector<float> values = PlanMaker::RandomFloats(bytes.size() / 4, seed + static_cast<uint32_t>(i), 1.0f);
      std::memcpy(bytes.data(), values.data(), bytes.size());
    }
    inputs.push_back(std::move(bytes));
  }
  return inputs;
}

struct Outcome {
  ExecOutcome outcome;
  std::vector<std::vector<float>> outputs;
};

// Submits one job; the future resolves in its `done`.
std::future<ExecOutcome> Submit(Executor& exec, uint32_t rows, const std::vector<std::vector<uint8_t>>& inputs,
                                std::vector<std::vector<float>>& outputs) {
  ExecJob job;
  job.rows = rows;
  for (const auto& input : inputs) job.inputs.push_back({input.data(), input.size()});
  outputs.resize(exec.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].assign(exec.OutputBytes(i, rows) / sizeof(float), -7.0f);
    job.outputs.push_back({outputs[i].data(), outputs[i].size() * sizeof(float)});
  }
  auto promise = std::make_shared<std::promise<ExecOutcome>>();
  std::future<ExecOutcome> future = promise->get_future();
  job.done = [promise](ExecOutcome outcome) { promise->set_value(std::move(outcome)); };
  exec.Submit(std::move(job));
  return future;
}

ExecOutcome Wait(std::future<ExecOutcome>& future) {
  if (future.wait_for(std::chrono::seconds(60)) != std::future_status::ready) {
    return ExecOutcome{Status(StatusCode::kDeadlineExceeded, "job never finished"), FaultClass::kNone, {}};
  }
  return future.get();
}

Outcome RunOne(Executor& exec, uint32_t rows, const std::vector<std::vector<uint8_t>>& inputs) {
  Outcome result;
  std::future<ExecOutcome> future = Submit(exec, rows, inputs, result.outputs);
  result.outcome = Wait(future);
  return result;
}

void ExpectClose(Checker& check, const std::vector<float>& got, const std::vector<float>& want, double rtol,
                 const std::string& what) {
  if (!check.Equal(got.size(), want.size(), what + ": size")) return;
  const FloatComparison c = CompareFloats(got.data(), want.data(), got.size(), rtol);
  check.True(c.ok(), what + ": " + DescribeComparison(c));
}

struct Arenas {
  std::shared_ptr<arena::Arena> host;
  std::shared_ptr<arena::Arena> cuda;
};

// Owners (one per arena) for one comparison's executors.
struct Owners {
  arena::OwnerId host = arena::kNoOwner;
  arena::OwnerId cuda = arena::kNoOwner;
};

Result<std::unique_ptr<Executor>> Make(const Model& model, std::shared_ptr<ExecDevice> device,
                                       const std::shared_ptr<arena::Arena>& arena, arena::OwnerId owner,
                                       uint32_t instances) {
  ExecutorConfig config;
  config.instances = instances;
  config.device = std::move(device);
  config.arena = arena;
  config.owner = owner;
  return Executor::Create(model.plan, std::move(config));
}

// One model on one CUDA device against the host; the executors are gone
// when it returns.
void CompareModelWith(Checker& check, const Model& model, const std::shared_ptr<ExecDevice>& device,
                      const Arenas& arenas, const Owners& owners) {
  const std::string what = model.name + " [" + device->kernels().name() + "]";
  Result<std::unique_ptr<Executor>> host = Make(model, HostDevice(), arenas.host, owners.host, 1);
  Result<std::unique_ptr<Executor>> gpu = Make(model, device, arenas.cuda, owners.cuda, 2);
  if (!check.True(host.ok(), what + ": host Create: " + host.status().ToString())) return;
  if (!check.True(gpu.ok(), what + ": cuda Create: " + gpu.status().ToString())) return;
  Executor& h = *host.value();
  Executor& g = *gpu.value();
  check.Equal(std::string(g.device_kind()), std::string("cuda"), what + ": device kind");
  check.Equal(std::string(g.kernels_name()), std::string(device->kernels().name()), what + ": kernels");

  const uint32_t max_rows = std::max<uint32_t>(1, g.max_batch_size());
  for (uint32_t rows : {1u, 7u, max_rows}) {
    rows = std::min(rows, max_rows);
    auto inputs = MakeInputs(g, rows, rows);
    Outcome want = RunOne(h, rows, inputs);
    Outcome got = RunOne(g, rows, inputs);
    const std::string at = what + " rows " + std::to_string(rows);
    if (!check.True(want.outcome.status.ok(), at + ": host " + want.outcome.status.ToString())) continue;
    if (!check.True(got.outcome.status.ok(), at + ": cuda " + got.outcome.status.ToString())) continue;
    for (size_t o = 0; o < want.outputs.size(); ++o) {
      ExpectClose(check, got.outputs[o], want.outputs[o], model.rtol, at + " output " + std::to_string(o));
    }
  }

  // Concurrent jobs over both instances (each its own stream and handle).
  constexpr int kJobs = 8;
  std::vector<std::vector<std::vector<uint8_t>>> inputs;
  std::vector<std::vector<std::vector<float>>> outputs(kJobs);
  std::vector<std::future<ExecOutcome>> futures;
  for (int j = 0; j < kJobs; ++j) inputs.push_back(MakeInputs(g, max_rows, 100 + static_cast<uint32_t>(j)));
  for (int j = 0; j < kJobs; ++j) futures.push_back(Submit(g, max_rows, inputs[static_cast<size_t>(j)], outputs[static_cast<size_t>(j)]));
  for (int j = 0; j < kJobs; ++j) {
    ExecOutcome outcome = Wait(futures[static_cast<size_t>(j)]);
    const std::string at = what + " concurrent job " + std::to_string(j);
    if (!check.True(outcome.status.ok(), at + ": " + outcome.status.ToString())) continue;
    Outcome want = RunOne(h, max_rows, inputs[static_cast<size_t>(j)]);
    for (size_t o = 0; o < want.outputs.size(); ++o) {
      ExpectClose(check, outputs[static_cast<size_t>(j)][o], want.outputs[o], model.rtol, at);
    }
  }

  // A Gather index out of range (CTR): a data error, not a device fault.
  if (g.inputs().size() == 2 && g.inputs()[0].dtype == DType::kInt64) {
    auto bad = MakeInputs(g, 2, 3);
    const int64_t out_of_range = 10;
    std::memcpy(bad[0].data() + 8, &out_of_range, 8);
    Outcome failed = RunOne(g, 2, bad);
    check.True(failed.outcome.status.code() == StatusCode::kInvalidArgument,
               what + ": bad id -> INVALID_ARGUMENT: " + failed.outcome.status.ToString());
    check.True(failed.outcome.fault == FaultClass::kNone, what + ": no device fault");
    check.True(!g.dead(), what + ": executor still alive");
    check.True(RunOne(g, 2, MakeInputs(g, 2, 4)).outcome.status.ok(), what + ": next job runs");
  }
  check.Equal(g.Stats().device_faults, uint64_t{0}, what + ": no device faults");
}

void CompareModel(Checker& check, const Model& model, const std::shared_ptr<ExecDevice>& device, const Arenas& arenas) {
  Owners owners;
  auto host_owner = arenas.host->CreateOwner(arena::OwnerKind::kModel, model.name + "/host");
  auto cuda_owner = arenas.cuda->CreateOwner(arena::OwnerKind::kModel, model.name + "/cuda");
  if (!check.True(host_owner.ok() && cuda_owner.ok(), model.name + ": owners")) return;
  owners.host = host_owner.value(), owners.cuda = cuda_owner.value();
  CompareModelWith(check, model, device, arenas, owners);
  check.True(arenas.host->DestroyOwner(owners.host).ok(), model.name + ": destroy host owner");
  check.True(arenas.cuda->DestroyOwner(owners.cuda).ok(), model.name + ": destroy cuda owner");
}

// Every model on every device, each executor destroyed at the end.
void Pass(Checker& check, const std::vector<std::shared_ptr<ExecDevice>>& devices, const Arenas& arenas) {
  const Model models[] = {SmallMlp(), WideMlp(), Ctr()};
  for (const auto& device : devices) {
    for (const Model& model : models) CompareModel(check, model, device, arenas);
  }
}

bool FreeBytes(size_t* free_bytes) {
  size_t total = 0;
  return cudaMemGetInfo(free_bytes, &total) == cudaSuccess;
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  using namespace hotpath;
  using namespace hotpath::executor;
  test::Checker check;
  Result<std::shared_ptr<ExecDevice>> with_default = MakeCudaDevice(0);
  if (!with_default.ok()) {
    std::printf("skipped: %s\n", with_default.status().ToString().c_str());
    return test::kSkipExitCode;
  }
  Result<std::shared_ptr<ExecDevice>> own = MakeCudaDevice(0, CudaBlas::kOff);
  if (!check.True(own.ok(), "MakeCudaDevice(0, CudaBlas::kOff): " + own.status().ToString())) {
    return check.ExitCode();
  }
  std::vector<std::shared_ptr<ExecDevice>> devices = {own.value()};
  if (std::string(with_default.value()->kernels().name()) == "cuda+cublas") {
    devices.push_back(with_default.value());
  } else {
    std::printf("cuBLAS not loaded: own kernels only\n");
  }

  arena::ArenaConfig host_config;
  host_config.backend.kind = arena::BackendKind::kHost;
  host_config.backend.capacity_bytes = 512 * kMiB;
  auto host_arena = arena::Arena::Create("host", host_config, arena::MakeHostBackend(512 * kMiB));
  auto cuda_backend = arena::MakeCudaBackend(0);
  if (!check.True(host_arena.ok() && cuda_backend.ok(), "arenas' backends")) return check.ExitCode();
  arena::ArenaConfig cuda_config;
  cuda_config.backend.kind = arena::BackendKind::kCuda;
  cuda_config.backend.capacity_bytes = 2048 * kMiB;
  auto cuda_arena = arena::Arena::Create("cuda", cuda_config, std::move(cuda_backend).value());
  if (!check.True(cuda_arena.ok(), "cuda arena: " + cuda_arena.status().ToString())) return check.ExitCode();
  const Arenas arenas{host_arena.value(), cuda_arena.value()};

  // Warm pass: loads modules, sets cuBLAS up; then the baseline.
  Pass(check, devices, arenas);
  arenas.cuda->ReleaseCached();
  size_t baseline = 0;
  check.True(FreeBytes(&baseline), "cudaMemGetInfo baseline");

  Pass(check, devices, arenas);
  const uint64_t released = arenas.cuda->ReleaseCached();
  size_t after = 0;
  check.True(FreeBytes(&after), "cudaMemGetInfo after");
  const uint64_t below = after >= baseline ? 0 : baseline - after;
  std::printf("device free: baseline %zu, after %zu (%llu bytes below; %llu released from the cache)\n", baseline,
              after, static_cast<unsigned long long>(below), static_cast<unsigned long long>(released));
  check.True(below <= kDriverGranule, "device memory back within 2 MiB (one driver granule) of the baseline");
  return check.ExitCode();
}
