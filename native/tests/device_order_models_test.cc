// CPU test (label "unit") that executor_check's tolerance holds for the
// device's summation order on the real models (issue 22, item 1): the
// executor on the host device-order set (host_device_order.h: the own
// SGEMM's FMA chains, and the small-m kernel's lanes and butterfly at
// m <= 16) against the reference host set, on executor_check's models
// (ranker_mlp and mlp_4x1024, generated bit for bit as on the GPU node) at
// every batch the check uses: phase A's 1, 7 and 256 on its samples, and
// the benchmark's 1, 4, 16, 64, 256 and 1024 on its own. The comparison is
// executor_check's own CompareOutputs (executor_check_runner.cc) with its
// default rtol, so what passes here is what the device check applies. It
// prints the margin: the largest |d - h| as a share of what is allowed.
//
// Under the sanitizers (Debug, -O0) the batches stop at 16 (the small-m
// order; 64 alone took 90 s there): the tiled order's code runs under them
// in gemm_device_order_test, and on these models in the Release runs.
#include <cstdio>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "arena/backend.h"
#include "executor/executor.h"
#include "executor/host_device_order.h"
#include "executor_check_models.h"
#include "executor_check_runner.h"
#include "tests/check.h"

namespace hotpath::bench {
namespace {

using executor::Executor;
using executor::ExecutorConfig;
using test::Checker;

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;
#ifdef HOTPATH_TEST_SANITIZED
constexpr uint32_t kMaxBatch = 16;
#else
constexpr uint32_t kMaxBatch = 1024;
#endif

std::unique_ptr<Executor> Make(Checker& check, const executor::GraphPlan& plan,
                               std::shared_ptr<executor::ExecDevice> device,
                               const std::shared_ptr<arena::Arena>& arena) {
  Result<arena::OwnerId> owner = arena->CreateOwner(arena::OwnerKind::kModel, plan.model_name + "@" + device->kernels().name());
  if (!check.True(owner.ok(), "owner")) return nullptr;
  ExecutorConfig config;
  config.instances = 1;
  config.device = std::move(device);
  config.arena = arena;
  config.owner = owner.value();
  Result<std::unique_ptr<Executor>> made = Executor::Create(plan, config);
  if (!check.True(made.ok(), plan.model_name + ": Create: " + made.status().ToString())) return nullptr;
  return std::move(made).value();
}

// One model, one sample set, the given batches.
void CompareOnModel(Checker& check, const std::string& name, const std::vector<int64_t>& sizes, uint32_t seed,
                uint32_t sample_rows, uint32_t sample_seed, const std::vector<uint32_t>& batches,
                const std::shared_ptr<arena::Arena>& arena) {
  const executor::GraphPlan plan = MlpPlan(name, sizes, seed, 1024);
  Result<executor::SampleInputs> samples = UniformSamples(plan, sample_rows, sample_seed);
  if (!check.True(samples.ok(), name + ": samples")) return;
  std::unique_ptr<Executor> host = Make(check, plan, executor::HostDevice(), arena);
  std::unique_ptr<Executor> device = Make(check, plan, executor::HostDeviceOrderDevice(), arena);
  if (host == nullptr || device == nullptr) return;
  Result<JobInputs> inputs = PrepareInputs(*host, samples.value());
  if (!check.True(inputs.ok(), name + ": inputs: " + inputs.status().ToString())) return;
  for (uint32_t batch : batches) {
    if (batch > kMaxBatch || batch > inputs.value().rows) continue;
    const JobsConfig one{batch, 1, 1, 0, 1};
    JobsResult want = RunJobs(*host, inputs.value(), one);
    JobsResult got = RunJobs(*device, inputs.value(), one);
    const std::string what = name + " (samples " + std::to_string(sample_rows) + ") batch " + std::to_string(batch);
    if (!check.True(want.status.ok() && got.status.ok(), what + ": runs")) continue;
    const Comparison c = CompareOutputs(got.outputs, want.outputs, host->outputs());
    check.True(c.ok(), what + ": " + DescribeFailure(c));
    std::printf("%s: max |d - h| %s, %.3g of the allowed difference (rtol %g)\n", what.c_str(),
                executor::FormatNumber(c.max_abs).c_str(), c.max_ratio, c.rtol);
  }
}

}  // namespace
}  // namespace hotpath::bench

int main() {
  using namespace hotpath;
  using namespace hotpath::bench;
  test::Checker check;
  arena::ArenaConfig config;
  config.backend.kind = arena::BackendKind::kHost;
  config.backend.capacity_bytes = 4 * kGiB;
  auto arena = arena::Arena::Create("device-order", config, arena::MakeHostBackend(config.backend.capacity_bytes));
  if (!check.True(arena.ok(), "arena")) return check.ExitCode();
  const std::vector<int64_t> ranker = {256, 1024, 1024, 256, 1};
  const std::vector<int64_t> mlp = {256, 1024, 1024, 1024, 1024, 1};
  const std::vector<uint32_t> phase_a = {1, 7, 256};
  const std::vector<uint32_t> bench = {1, 4, 16, 64, 256, 1024};
  // Seeds as executor_check uses them (executor_check.cc LoadModels and
  // executor_check_bench.cc).
  CompareOnModel(check, "ranker_mlp", ranker, kRankerSeed, 256, kRankerSeed ^ 0x5eedu, phase_a, arena.value());
  CompareOnModel(check, "mlp_4x1024", mlp, kMlp4x1024Seed, 256, kMlp4x1024Seed ^ 0x5eedu, phase_a, arena.value());
  CompareOnModel(check, "ranker_mlp", ranker, kRankerSeed, 1024, kBenchSeed, bench, arena.value());
  CompareOnModel(check, "mlp_4x1024", mlp, kMlp4x1024Seed, 1024, kBenchSeed, bench, arena.value());
  return check.ExitCode();
}
