// executor_check phases B and C (executor_check.h): the scoring benchmark,
// and device memory back at its baseline after every executor is unloaded.
//
// Benchmark contenders, each model at max_batch_size 1024 (the largest batch
// measured, whatever the sample config says), inputs uniform in [-1, 1):
//   <cuda kernel set>  one instance (one stream), one job at a time: the
//                      latency of a batch on the device, copies included;
//   host               one instance per core (--host-instances), that many
//                      jobs in flight: the host kernels using every core,
//                      the stand-in for onnxruntime on CPU on a node
//                      without Node. Its latency is per job under that load.
// Per point: warm-up (3 jobs; host: one job per instance), then jobs until
// 0.5 s (quick: 0.2 s) have passed and at least 5 (host: one round) are
// done. A warm-up that alone takes longer than that is the measurement
// (`warmup_counted`). rows/s is rows completed / wall time.
#include <algorithm>
#include <cstdio>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "executor_check.h"
#include "executor_check_runner.h"
#ifdef HOTPATH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace hotpath::bench {

using executor::GraphPlan;

namespace {

constexpr uint64_t kMiB = 1024 * 1024;
// The memory check's limit: one 2 MiB granule. The driver maps device memory
// in 2 MiB pages and may keep one mapped after the last cudaFree in it
// (cudaMemGetInfo counts it used), so a single granule is not a leak; a real
// leak of a weights or workspace block is larger or repeats every cycle.
constexpr uint64_t kDriverGranule = 2 * kMiB;

struct Point {
  JobsResult jobs;
  uint32_t instances = 1;
  uint32_t in_flight = 1;
  bool warmup_counted = false;
};

Point MeasurePoint(LoadedExecutor& loaded, const JobInputs& inputs, uint32_t batch, uint32_t in_flight,
                   double seconds) {
  Point point;
  point.instances = loaded.exec->instances();
  point.in_flight = in_flight;
  const uint64_t warm_jobs = in_flight > 1 ? in_flight : 3;
  point.jobs = RunJobs(*loaded.exec, inputs, JobsConfig{batch, in_flight, warm_jobs, 0, warm_jobs});
  if (!point.jobs.status.ok() || point.jobs.elapsed_s >= seconds) {
    point.warmup_counted = true;
    return point;
  }
  const uint64_t min_jobs = std::max<uint64_t>(5, in_flight);
  point.jobs = RunJobs(*loaded.exec, inputs, JobsConfig{batch, in_flight, min_jobs, seconds, 1000000});
  return point;
}

double RowsPerSecond(const Point& p) { return p.jobs.elapsed_s > 0 ? p.jobs.rows / p.jobs.elapsed_s : 0; }

void WritePoint(JsonWriter& json, const Point& p) {
  json.BeginObject();
  json.FieldUint("instances", p.instances);
  json.FieldUint("in_flight", p.in_flight);
  json.FieldUint("runs", p.jobs.latency_ms.size());
  json.Field("rows_per_s", RowsPerSecond(p));
  json.Field("runs_per_s", p.jobs.elapsed_s > 0 ? p.jobs.latency_ms.size() / p.jobs.elapsed_s : 0.0);
  json.Field("p50_ms", Percentile(p.jobs.latency_ms, 50));
  json.Field("p99_ms", Percentile(p.jobs.latency_ms, 99));
  json.Field("mean_ms", Mean(p.jobs.latency_ms));
  json.Field("max_ms", Percentile(p.jobs.latency_ms, 100));
  json.Field("compute_p50_ms", Percentile(p.jobs.compute_ms, 50));
  json.Field("warmup_counted", p.warmup_counted);
  if (!p.jobs.status.ok()) json.Field("error", p.jobs.status.ToString());
  json.EndObject();
}

bool DeviceFreeBytes(int ordinal, uint64_t* free_bytes) {
#ifdef HOTPATH_WITH_CUDA
  size_t free = 0;
  size_t total = 0;
  if (cudaSetDevice(ordinal) != cudaSuccess || cudaMemGetInfo(&free, &total) != cudaSuccess) return false;
  *free_bytes = free;
  return true;
#else
  (void)ordinal;
  (void)free_bytes;
  return false;
#endif
}

// One model of the benchmark: every contender at every batch size.
void BenchModel(CheckContext& ctx, JsonWriter& json, const CheckModel& model, const std::vector<uint32_t>& batches,
                double seconds, uint32_t host_instances) {
  GraphPlan plan = model.plan;
  plan.max_batch_size = batches.back();
  Result<executor::SampleInputs> samples = UniformSamples(plan, plan.max_batch_size, kBenchSeed);
  if (!samples.ok()) {
    ctx.Note("bench: " + model.name + " left out: " + samples.status().message());
    return;
  }
  struct Contender {
    DeviceSlot* slot;
    LoadedExecutor loaded;
    uint32_t in_flight;
  };
  std::vector<Contender> contenders;
  Result<LoadedExecutor> host = Load(ctx, plan, ctx.host, host_instances);
  if (!host.ok()) {
    ctx.Fail("bench: " + model.name + " on host: " + host.status().ToString());
    return;
  }
  contenders.push_back({&ctx.host, std::move(host).value(), host_instances});
  for (DeviceSlot& slot : ctx.cuda) {
    Result<LoadedExecutor> device = Load(ctx, plan, slot, 1);
    if (!device.ok()) {
      ctx.Fail("bench: " + model.name + " on " + slot.kernels + ": " + device.status().ToString());
      continue;
    }
    contenders.push_back({&slot, std::move(device).value(), 1});
  }
  Result<JobInputs> inputs = PrepareInputs(*contenders.front().loaded.exec, samples.value());
  for (uint32_t batch : batches) {
    if (!inputs.ok()) {
      ctx.Fail("bench: " + model.name + ": " + inputs.status().ToString());
      break;
    }
    json.BeginObject();
    json.Field("model", model.name);
    json.FieldUint("batch", batch);
    if (ctx.Elapsed() > ctx.args.budget_s) {
      json.Field("skipped", "past the time budget (--budget-s " + std::to_string(ctx.args.budget_s) + ")");
      ctx.Note("bench: " + model.name + " batch " + std::to_string(batch) + " skipped: past the time budget");
      json.EndObject();
      continue;
    }
    std::vector<Point> points;
    for (Contender& c : contenders) {
      points.push_back(MeasurePoint(c.loaded, inputs.value(), batch, c.in_flight, seconds));
      if (!points.back().jobs.status.ok()) {
        ctx.Fail("bench: " + model.name + " on " + c.slot->kernels + " at batch " + std::to_string(batch) + ": " +
                 points.back().jobs.status.ToString());
      }
    }
    json.Key("contenders");
    json.BeginObject();
    for (size_t i = 0; i < contenders.size(); ++i) {
      json.Key(contenders[i].slot->kernels);
      WritePoint(json, points[i]);
    }
    json.EndObject();
    // Device against host: the ratio of rows/s, and the same outputs.
    const double host_rate = RowsPerSecond(points[0]);
    json.Key("vs_host");
    json.BeginObject();
    std::string line = model.name + " batch " + std::to_string(batch) + ": host " + std::to_string(host_rate) +
                       " rows/s";
    for (size_t i = 1; i < contenders.size(); ++i) {
      const std::string& kernels = contenders[i].slot->kernels;
      Comparison c = CompareOutputs(points[i].jobs.outputs, points[0].jobs.outputs,
                                    contenders[0].loaded.exec->outputs());
      if (points[i].jobs.status.ok() && points[0].jobs.status.ok() && !c.ok()) {
        ctx.Fail("bench: " + model.name + " on " + kernels + " at batch " + std::to_string(batch) + ": " +
                 DescribeFailure(c));
      }
      json.Key(kernels);
      json.BeginObject();
      json.Field("ratio", host_rate > 0 ? RowsPerSecond(points[i]) / host_rate : 0.0);
      json.Field("max_abs_diff", c.max_abs);
      json.Field("rtol", c.rtol);
      json.Field("max_ratio", c.max_ratio);
      json.Field("ok", c.ok());
      json.EndObject();
      line += ", " + kernels + " " + std::to_string(RowsPerSecond(points[i])) + " rows/s p50 " +
              std::to_string(Percentile(points[i].jobs.latency_ms, 50)) + " ms";
    }
    json.EndObject();
    json.EndObject();
    std::fprintf(stderr, "executor_check: bench %s\n", line.c_str());
  }
  for (Contender& c : contenders) Unload(ctx, c.loaded, *c.slot);
}

}  // namespace

void RunBenchmark(CheckContext& ctx, JsonWriter& json) {
  const std::vector<uint32_t> batches =
      ctx.args.quick ? std::vector<uint32_t>{1, 32, 256} : std::vector<uint32_t>{1, 4, 16, 64, 256, 1024};
  const double seconds = ctx.args.quick ? 0.2 : 0.5;
  uint32_t host_instances = ctx.args.host_instances;
  if (host_instances == 0) host_instances = std::max(1u, std::thread::hardware_concurrency());
  json.Key("bench");
  json.BeginObject();
  json.Key("settings");
  json.BeginObject();
  json.Key("batches");
  json.BeginArray();
  for (uint32_t b : batches) json.Uint(b);
  json.EndArray();
  json.Field("seconds_per_point", seconds);
  json.FieldUint("host_instances", host_instances);
  json.Field("host", "host kernels, one instance per core, as many jobs in flight (all cores busy)");
  json.Field("device", "one instance, one job at a time (copy in, kernels, copy out, one sync)");
  json.FieldUint("max_batch_size", batches.back());
  json.Field("budget_s", ctx.args.budget_s);
  json.EndObject();
  json.Key("points");
  json.BeginArray();
  for (const std::string& name : ctx.args.bench_models) {
    auto found = std::find_if(ctx.models.begin(), ctx.models.end(), [&](const CheckModel& m) { return m.name == name; });
    if (found == ctx.models.end()) {
      ctx.Note("bench: no model '" + name + "'");
      continue;
    }
    BenchModel(ctx, json, *found, batches, seconds, host_instances);
  }
  json.EndArray();
  json.EndObject();
}

void CheckDeviceMemory(CheckContext& ctx, JsonWriter& json) {
  json.Key("memory");
  json.BeginObject();
  if (ctx.cuda.empty()) {
    json.Field("skipped", "no CUDA device");
    json.EndObject();
    return;
  }
  const int ordinal = ctx.args.ordinal;
  const bool measured = ctx.cuda.front().cuda;  // false for the --host-as-device stand-in
  std::shared_ptr<arena::Arena> arena = ctx.cuda.front().arena;  // every kernel set shares it
  arena->ReleaseCached();
  uint64_t baseline = 0;
  if (measured && !DeviceFreeBytes(ordinal, &baseline)) ctx.Fail("memory: cudaMemGetInfo for the baseline failed");
  // Load, run and unload every model on every kernel set, memory_cycles times.
  uint64_t loads = 0;
  for (uint32_t cycle = 0; cycle < ctx.args.memory_cycles; ++cycle) {
    for (const CheckModel& model : ctx.models) {
      for (DeviceSlot& slot : ctx.cuda) {
        Result<LoadedExecutor> loaded = Load(ctx, model.plan, slot, 1);
        if (!loaded.ok()) continue;  // unsupported models were reported in phase A
        ++loads;
        Result<JobInputs> inputs = PrepareInputs(*loaded.value().exec, model.samples);
        if (inputs.ok()) {
          for (uint32_t rows : {1u, inputs.value().rows}) {
            JobsResult r = RunJobs(*loaded.value().exec, inputs.value(), JobsConfig{rows, 1, 1, 0, 1});
            if (!r.status.ok()) ctx.Fail("memory: " + model.name + " on " + slot.kernels + ": " + r.status.ToString());
          }
        }
        Unload(ctx, loaded.value(), slot);
      }
    }
  }
  const uint64_t released = arena->ReleaseCached();
  const arena::ArenaStats stats = arena->Stats();
  uint64_t after = 0;
  if (measured && !DeviceFreeBytes(ordinal, &after)) ctx.Fail("memory: cudaMemGetInfo after unload failed");
  const uint64_t below = after >= baseline ? 0 : baseline - after;
  // Reserved segments are reported, not judged: device memory is the criterion.
  const bool ok = below <= kDriverGranule && stats.allocated == 0;
  if (!ok) {
    ctx.Fail("memory: after unload, device free memory is " + std::to_string(below) +
             " bytes below its baseline (limit 2 MiB, one driver granule); arena allocated " + std::to_string(stats.allocated) +
             ", reserved " + std::to_string(stats.backend_reserved));
  }
  if (!measured) json.Field("device_free_bytes", "not measured: host stand-in (--host-as-device)");
  json.FieldUint("baseline_free_bytes", baseline);
  json.FieldUint("after_free_bytes", after);
  json.FieldUint("below_baseline_bytes", below);
  json.FieldUint("limit_bytes", kDriverGranule);
  json.FieldUint("cycles", ctx.args.memory_cycles);
  json.FieldUint("loads", loads);
  json.FieldUint("arena_released_bytes", released);
  json.FieldUint("arena_allocated_after", stats.allocated);
  json.FieldUint("arena_reserved_after", stats.backend_reserved);
  json.Field("baseline", "after phases A and B (every model loaded, run and unloaded at least once), "
                         "with the arena's cached segments released");
  json.Field("ok", ok);
  json.EndObject();
}

}  // namespace hotpath::bench
