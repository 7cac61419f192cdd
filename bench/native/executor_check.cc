// executor_check: the executor on a GPU node, without Node (issue 9, item 7).
//
//   executor_check [--plans DIR]... [--json FILE] [--require-device]
//                  [--device N] [--quick] [--no-bench] [--budget-s S]
//                  [--host-instances N] [--memory-cycles N]
//                  [--bench-models a,b] [--host-as-device]
//
// 1. CUDA driver and runtime versions (cudaDriverGetVersion,
//    cudaRuntimeGetVersion). A driver older than the runtime this program
//    was built with fails the check with a message saying so.
// 2. Models: every <name>.plan (+ <name>.sample) in each --plans DIR, as
//    bench/gpu/export-plans.ts writes them from the sample models, plus
//    MLPs generated here from fixed seeds: mlp_4x1024 (256 -> 4 x 1024 ->
//    1, the model of `npm run bench -- gpu`) always, and ranker_mlp when no
//    plan file holds it (bit-identical weights, see executor_check_models.h).
// 3. Phase A: each model on host kernels (the reference) and on every CUDA
//    kernel set (cuBLAS when it loads, and the own SGEMM with
//    CudaBlas::kOff), the same inputs at batch 1, 7 and the largest up
//    to 256; pass: |d - h| <= 1e-4 (|h| + rms(h)) for every element
//    (executor/tolerance.h, kModelRtol: the one device-vs-host form).
// 4. Phase B: the scoring benchmark (executor_check_bench.cc).
// 5. Phase C: every model loaded, run and unloaded again on the device;
//    then cudaMemGetInfo must be within 2 MiB (one driver granule) of the
//    baseline taken before (after phases A and B: lazily loaded modules and
//    cuBLAS state stay).
//
// Without a usable device it reports "device": "none" with the reason,
// still checks plan loading and host execution, and exits 0 unless
// --require-device. --host-as-device (dry runs) then puts the host
// device-order kernel set (host_device_order.h: the own SGEMM's summation
// order) where the CUDA ones would be, so the device phases run too (without
// cudaMemGetInfo) and the tolerance is met on the device's order. Exit status: 0 when every check passed, 1 otherwise,
// 2 for bad arguments. The JSON goes to --json FILE (and a summary to
// stdout); progress goes to stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <utility>

#include "arena/backend.h"
#include "device/device_info.h"
#include "executor/host_device_order.h"
#include "executor_check.h"
#ifdef HOTPATH_WITH_CUDA
#include <cuda_runtime_api.h>

#include "executor/cublas_loader.h"
#endif

namespace hotpath::bench {
namespace {

constexpr uint64_t kGiB = 1024ull * 1024 * 1024;

std::string VersionText(int v) {
  return v <= 0 ? "none" : std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

bool ParseArgs(int argc, char** argv, CheckArgs* args) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* what) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "executor_check: %s needs %s\n", arg.c_str(), what);
        return nullptr;
      }
      return argv[++i];
    };
    const char* v = nullptr;
    if (arg == "--plans") {
      if ((v = value("a directory")) == nullptr) return false;
      args->plan_dirs.emplace_back(v);
    } else if (arg == "--json") {
      if ((v = value("a file")) == nullptr) return false;
      args->json_path = v;
    } else if (arg == "--device") {
      if ((v = value("an ordinal")) == nullptr) return false;
      args->ordinal = std::atoi(v);
    } else if (arg == "--budget-s") {
      if ((v = value("seconds")) == nullptr) return false;
      args->budget_s = std::atof(v);
    } else if (arg == "--host-instances") {
      if ((v = value("a count")) == nullptr) return false;
      args->host_instances = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (arg == "--memory-cycles") {
      if ((v = value("a count")) == nullptr) return false;
      args->memory_cycles = static_cast<uint32_t>(std::strtoul(v, nullptr, 10));
    } else if (arg == "--bench-models") {
      if ((v = value("names")) == nullptr) return false;
      args->bench_models.clear();
      for (std::string rest = v; !rest.empty();) {
        size_t comma = rest.find(',');
        if (comma != 0) args->bench_models.push_back(rest.substr(0, comma));
        rest = comma == std::string::npos ? "" : rest.substr(comma + 1);
      }
    } else if (arg == "--require-device") {
      args->require_device = true;
    } else if (arg == "--quick") {
      args->quick = true;
    } else if (arg == "--no-bench") {
      args->bench = false;
    } else if (arg == "--host-as-device") {
      args->host_as_device = true;
    } else {
      std::fprintf(stderr, "executor_check: unknown argument %s (see the header of executor_check.cc)\n", arg.c_str());
      return false;
    }
  }
  return true;
}

// Versions, the device, and the CUDA kernel sets; writes "cuda" and "device".
void SetUpDevices(CheckContext& ctx, JsonWriter& json) {
  int driver = 0;
  int runtime = 0;
  int compiled = 0;
  bool compiled_in = false;
#ifdef HOTPATH_WITH_CUDA
  compiled_in = true;
  compiled = CUDART_VERSION;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;  // 0: no driver
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
#endif
  std::fprintf(stderr, "executor_check: CUDA driver %s, runtime %s (built with %s)\n", VersionText(driver).c_str(),
               VersionText(runtime).c_str(), compiled_in ? VersionText(compiled).c_str() : "no CUDA");
  std::string reason;
  bool usable = false;
  device::DeviceInfo info;
  if (!compiled_in) {
    reason = "built without CUDA (HOTPATH_CUDA=OFF or no nvcc)";
  } else if (driver == 0) {
    reason = "no CUDA driver";
  } else if (driver < runtime) {
    reason = "the CUDA driver (" + VersionText(driver) + ") is older than the CUDA runtime this program was built with (" +
             VersionText(runtime) + "): install a driver for CUDA " + VersionText(runtime) +
             " or newer, or build with an older toolkit";
    ctx.Fail(reason);
  } else {
    Result<device::DeviceInfo> queried = device::QueryDevice(ctx.args.ordinal);
    if (!queried.ok()) {
      reason = queried.status().ToString();
    } else if (queried.value().backend != device::Backend::kCuda) {
      reason = queried.value().name;  // "host memory (<why>)"
    } else {
      usable = true;
      info = queried.value();
    }
  }
  std::string capability;
#ifdef HOTPATH_WITH_CUDA
  int major = 0;
  int minor = 0;
  if (usable && cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ctx.args.ordinal) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ctx.args.ordinal) == cudaSuccess) {
    capability = std::to_string(major) + "." + std::to_string(minor);
  }
#endif
  if (usable) {
    Result<std::unique_ptr<arena::MemoryBackend>> backend = arena::MakeCudaBackend(ctx.args.ordinal);
    arena::ArenaConfig config;
    config.backend.kind = arena::BackendKind::kCuda;
    config.backend.device_ordinal = ctx.args.ordinal;
    config.backend.capacity_bytes = 32 * kGiB;
    Result<std::shared_ptr<arena::Arena>> made =
        backend.ok() ? arena::Arena::Create("check-cuda", config, std::move(backend).value())
                     : Result<std::shared_ptr<arena::Arena>>(backend.status());
    if (!made.ok()) {
      ctx.Fail("CUDA arena: " + made.status().ToString());
      usable = false;
      reason = made.status().ToString();
    }
    // The default kernel set first (cuBLAS when it loads), then the own
    // SGEMM (CudaBlas::kOff) when the first one was cuBLAS. No setenv: CUDA
    // has started threads of its own by now.
    for (int pass = 0; usable && pass < 2; ++pass) {
      Result<std::shared_ptr<executor::ExecDevice>> device = executor::MakeCudaDevice(
          ctx.args.ordinal, pass == 0 ? executor::CudaBlas::kAuto : executor::CudaBlas::kOff);
      if (!device.ok()) {
        ctx.Fail("MakeCudaDevice(" + std::to_string(ctx.args.ordinal) + "): " + device.status().ToString());
        break;
      }
      std::string kernels = device.value()->kernels().name();
      if (pass == 1 && kernels == ctx.cuda.front().kernels) break;  // no cuBLAS: one set only
      ctx.cuda.push_back({kernels, device.value(), made.value(), true});
    }
    if (ctx.cuda.empty()) usable = false;
  }
  if (!usable && ctx.args.require_device) ctx.Fail("no usable CUDA device (--require-device): " + reason);
  if (!usable && ctx.args.host_as_device) {
    arena::ArenaConfig config;
    config.backend.kind = arena::BackendKind::kHost;
    config.backend.capacity_bytes = 16 * kGiB;
    Result<std::shared_ptr<arena::Arena>> made =
        arena::Arena::Create("check-stand-in", config, arena::MakeHostBackend(config.backend.capacity_bytes));
    if (made.ok()) ctx.cuda.push_back({"host-device-order", executor::HostDeviceOrderDevice(), made.value(), false});
    if (!made.ok()) ctx.Fail("stand-in arena: " + made.status().ToString());
    ctx.Note("--host-as-device: the host device-order kernel set (the own SGEMM's summation order) stands in for "
             "CUDA (dry run)");
  }

  json.Key("cuda");
  json.BeginObject();
  json.Field("compiled", compiled_in);
  json.FieldInt("driver_version", driver);
  json.FieldInt("runtime_version", runtime);
  json.FieldInt("compiled_runtime_version", compiled);
  json.Field("driver", VersionText(driver));
  json.Field("runtime", VersionText(runtime));
  json.Field("driver_older_than_runtime", driver > 0 && driver < runtime);
  json.Key("kernel_sets");
  json.BeginArray();
  for (const DeviceSlot& slot : ctx.cuda) json.String(slot.kernels);
  json.EndArray();
  json.Field("cublas_path_env", std::getenv("HOTPATH_CUBLAS_PATH") ? std::getenv("HOTPATH_CUBLAS_PATH") : "");
  // Which GEMM the device phases ran: cuBLAS only when a "cuda+cublas" set
  // exists; otherwise why not (check.sh warns loudly).
  bool cublas_tested = false;
  for (const DeviceSlot& slot : ctx.cuda) cublas_tested = cublas_tested || slot.kernels == "cuda+cublas";
  json.Key("gemm");
  json.BeginObject();
  json.Field("cublas_tested", cublas_tested);
  json.Field("own_sgemm_tested", !ctx.cuda.empty() && ctx.cuda.back().cuda);
  std::string cublas_library;
  std::string cublas_reason;
#ifdef HOTPATH_WITH_CUDA
  if (compiled_in) {
    Result<const executor::CublasApi*> blas = executor::LoadCublas();
    if (blas.ok()) cublas_library = blas.value()->library;
    if (!blas.ok()) cublas_reason = blas.status().message();
    if (blas.ok() && !cublas_tested) {
      cublas_reason = usable ? "loaded, but no handle worked on the device (or HOTPATH_CUBLAS=off)" : "no usable device";
    }
  }
#endif
  if (!compiled_in) cublas_reason = "built without CUDA";
  json.Field("cublas_library", cublas_library);
  if (!cublas_tested) json.Field("cublas_not_tested_because", cublas_reason.empty() ? reason : cublas_reason);
  json.EndObject();
  json.EndObject();
  json.Field("device", usable ? info.name : "none");
  if (usable) {
    json.Key("device_info");
    json.BeginObject();
    json.FieldInt("ordinal", info.ordinal);
    json.Field("uuid", info.uuid);
    json.Field("compute_capability", capability);
    json.FieldUint("total_bytes", info.total_bytes);
    json.FieldUint("free_bytes_at_start", info.free_bytes);
    json.EndObject();
  } else {
    json.Field("device_reason", reason);
  }
}

// Plan files, then the generated models; writes "plans".
void LoadModels(CheckContext& ctx, JsonWriter& json) {
  for (const std::string& dir : ctx.args.plan_dirs) {
    Result<std::vector<CheckModel>> loaded = LoadPlanDir(dir, &ctx.notes);
    if (!loaded.ok()) {
      ctx.Fail("plans: " + loaded.status().ToString());
      continue;
    }
    for (CheckModel& m : loaded.value()) ctx.models.push_back(std::move(m));
  }
  auto find = [&](const std::string& name) -> CheckModel* {
    for (CheckModel& m : ctx.models) {
      if (m.name == name) return &m;
    }
    return nullptr;
  };
  auto generate = [&](const std::string& name, const std::vector<int64_t>& sizes, uint32_t seed) {
    CheckModel model;
    model.name = name;
    char source[64];
    std::snprintf(source, sizeof(source), "generated (seed 0x%x)", seed);
    model.source = source;
    model.generated = true;
    model.plan = MlpPlan(name, sizes, seed, 1024);
    Result<executor::SampleInputs> samples = UniformSamples(model.plan, 256, seed ^ 0x5eedu);
    if (!samples.ok()) {
      ctx.Fail(name + ": " + samples.status().ToString());
      return;
    }
    model.samples = std::move(samples).value();
    ctx.models.push_back(std::move(model));
  };
  const std::vector<int64_t> ranker_sizes = {256, 1024, 1024, 256, 1};
  bool ranker_matches = false;
  bool ranker_from_file = false;
  if (CheckModel* ranker = find("ranker_mlp"); ranker != nullptr) {
    ranker_from_file = true;
    ranker_matches = SameInitializers(ranker->plan, MlpPlan("ranker_mlp", ranker_sizes, kRankerSeed, 0));
    if (!ranker_matches) ctx.Note("ranker_mlp.plan's weights differ from the C++ generator's (models changed?)");
  } else {
    generate("ranker_mlp", ranker_sizes, kRankerSeed);
  }
  generate("mlp_4x1024", {256, 1024, 1024, 1024, 1024, 1}, kMlp4x1024Seed);

  json.Key("plans");
  json.BeginObject();
  json.Key("dirs");
  json.BeginArray();
  for (const std::string& dir : ctx.args.plan_dirs) json.String(dir);
  json.EndArray();
  json.Key("models");
  json.BeginArray();
  for (const CheckModel& m : ctx.models) json.String(m.name);
  json.EndArray();
  json.Field("ranker_mlp_from_file", ranker_from_file);
  if (ranker_from_file) json.Field("ranker_mlp_generator_matches_file", ranker_matches);
  json.EndObject();
}

void WriteStrings(JsonWriter& json, const char* key, const std::vector<std::string>& values) {
  json.Key(key);
  json.BeginArray();
  for (const std::string& v : values) json.String(v);
  json.EndArray();
}

int Main(int argc, char** argv) {
  CheckContext ctx;
  ctx.start = std::chrono::steady_clock::now();
  if (!ParseArgs(argc, argv, &ctx.args)) return 2;
  ctx.host = {"host", executor::HostDevice(), nullptr, false};
  {
    arena::ArenaConfig config;
    config.backend.kind = arena::BackendKind::kHost;
    config.backend.capacity_bytes = 16 * kGiB;
    Result<std::shared_ptr<arena::Arena>> made =
        arena::Arena::Create("check-host", config, arena::MakeHostBackend(config.backend.capacity_bytes));
    if (!made.ok()) {
      std::fprintf(stderr, "executor_check: host arena: %s\n", made.status().ToString().c_str());
      return 1;
    }
    ctx.host.arena = made.value();
  }

  JsonWriter json;
  json.BeginObject();
  json.Field("check", "executor_check");
  json.Key("host_info");
  json.BeginObject();
  json.FieldUint("cores", std::thread::hardware_concurrency());
  json.EndObject();
  SetUpDevices(ctx, json);
  LoadModels(ctx, json);
  CheckModels(ctx, json);
  if (ctx.args.bench) RunBenchmark(ctx, json);
  CheckDeviceMemory(ctx, json);
  WriteStrings(json, "notes", ctx.notes);
  WriteStrings(json, "failures", ctx.failures);
  json.Field("elapsed_s", ctx.Elapsed());
  json.Field("ok", ctx.failures.empty());
  json.EndObject();
  std::string text = json.Take();
  text += '\n';

  if (!ctx.args.json_path.empty()) {
    std::FILE* out = std::fopen(ctx.args.json_path.c_str(), "w");
    bool wrote = out != nullptr && std::fwrite(text.data(), 1, text.size(), out) == text.size();
    if (out != nullptr) wrote = std::fclose(out) == 0 && wrote;
    if (!wrote) {
      std::fprintf(stderr, "executor_check: cannot write %s\n", ctx.args.json_path.c_str());
      return 1;
    }
  } else {
    std::fputs(text.c_str(), stdout);
  }
  // The summary goes to stdout unless the JSON does.
  std::FILE* summary = ctx.args.json_path.empty() ? stderr : stdout;
  std::fprintf(summary, "executor_check: %s, %zu models, %zu failures, %.1f s%s%s\n",
              ctx.cuda.empty() ? "device none" : ctx.cuda.front().kernels.c_str(), ctx.models.size(),
              ctx.failures.size(), ctx.Elapsed(), ctx.args.json_path.empty() ? "" : ", JSON in ",
              ctx.args.json_path.c_str());
  for (const std::string& f : ctx.failures) std::fprintf(summary, "  FAIL %s\n", f.c_str());
  return ctx.failures.empty() ? 0 : 1;
}

}  // namespace
}  // namespace hotpath::bench

int main(int argc, char** argv) { return hotpath::bench::Main(argc, argv); }
