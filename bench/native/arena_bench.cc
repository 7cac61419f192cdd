// Native arena benchmark; prints one JSON object on stdout (see bench/README.md).
//
//   arena_bench [--quick] [--backend host|cuda|auto] [--seed N]
//
// (a) alloc+free latency: one random sequence of 10k operations (73% alloc,
//     sizes log-uniform 256 B .. 4 MiB, live set capped at 512 MiB by
//     freeing instead), replayed against the arena and against the raw
//     backend (malloc/free on host; cudaMalloc/cudaFree on a GPU). Each
//     sequence runs once to warm up and once timed; every operation is timed
//     alone with steady_clock, so the figures include ~20 ns of clock cost.
// (b) the inference replay (arena_replay.h), in simulated time.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "arena_replay.h"
#ifdef HOTPATH_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace hotpath::bench {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;

struct Op {
  bool alloc = true;
  uint64_t bytes = 0;   // alloc
  uint64_t pick = 0;    // free: index = pick % live
};

std::vector<Op> MakeOps(uint64_t seed, int count) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution alloc(0.73);
  std::uniform_real_distribution<double> exponent(8.0, 22.0);  // 256 B .. 4 MiB
  std::vector<Op> ops;
  std::vector<uint64_t> live;
  uint64_t live_bytes = 0;
  for (int i = 0; i < count; ++i) {
    Op op;
    op.bytes = static_cast<uint64_t>(std::exp2(exponent(rng)));
    op.pick = rng();
    op.alloc = live.empty() || (alloc(rng) && live_bytes + op.bytes <= 512 * kMiB);
    if (op.alloc) {
      live.push_back(op.bytes);
      live_bytes += op.bytes;
    } else {
      size_t index = op.pick % live.size();
      live_bytes -= live[index];
      live[index] = live.back();
      live.pop_back();
    }
    ops.push_back(op);
  }
  return ops;
}

struct Latency {
  double p50 = 0, p99 = 0, alloc_p50 = 0, free_p50 = 0;
};

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  size_t k = static_cast<size_t>(q * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

// Replays `ops` through alloc/free callables; returns per-operation latency.
template <typename Alloc, typename Free>
Latency Measure(const std::vector<Op>& ops, Alloc alloc, Free release) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> all, allocs, frees;
  for (int pass = 0; pass < 2; ++pass) {
    std::vector<void*> live;
    all.clear(), allocs.clear(), frees.clear();
    for (const Op& op : ops) {
      Clock::time_point start = Clock::now();
      if (op.alloc) {
        void* p = alloc(op.bytes);
        Clock::time_point end = Clock::now();
        live.push_back(p);
        double ns = std::chrono::duration<double, std::nano>(end - start).count();
        all.push_back(ns), allocs.push_back(ns);
      } else {
        size_t index = op.pick % live.size();
        void* p = live[index];
        live[index] = live.back();
        live.pop_back();
        start = Clock::now();
        release(p);
        double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
        all.push_back(ns), frees.push_back(ns);
      }
    }
    for (void* p : live) release(p);
  }
  return Latency{Percentile(all, 0.5), Percentile(all, 0.99), Percentile(allocs, 0.5), Percentile(frees, 0.5)};
}

int Main(int argc, char** argv) {
  bool quick = false;
  std::string backend_name = "auto";
  uint64_t seed = 42;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--quick") {
      quick = true;
    } else if (arg == "--backend" && i + 1 < argc) {
      backend_name = argv[++i];
    } else if (arg == "--seed" && i + 1 < argc) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else {
      std::fprintf(stderr, "usage: arena_bench [--quick] [--backend auto|cuda|host] [--seed N]\n");
      return 2;
    }
  }
  Result<arena::BackendKind> kind = arena::ParseBackendKind(backend_name);
  if (!kind.ok()) {
    std::fprintf(stderr, "arena_bench: %s\n", kind.status().message().c_str());
    return 2;
  }
  arena::ArenaConfig config;
  config.backend.kind = kind.value();
  config.backend.capacity_bytes = 2048 * kMiB;
  Result<std::shared_ptr<arena::Arena>> made = arena::Arena::Create("bench", config);
  if (!made.ok()) {
    std::fprintf(stderr, "arena_bench: %s\n", made.status().ToString().c_str());
    return 1;
  }
  arena::Arena& arena = *made.value();
  bool cuda = arena.backend().kind() == arena::BackendKind::kCuda;
  arena.SetTenantQuota(arena::kDefaultTenant, config.backend.capacity_bytes);

  // (a) latency.
  std::vector<Op> ops = MakeOps(seed, 10000);
  arena::OwnerId owner = arena.CreateOwner(arena::OwnerKind::kBatch, "bench").value();
  Latency arena_latency = Measure(
      ops,
      [&](uint64_t bytes) {
        Result<arena::BlockInfo> b = arena.Alloc(owner, bytes, arena::ChargeOptions{});
        if (!b.ok()) {
          std::fprintf(stderr, "arena_bench: alloc failed: %s\n", b.status().ToString().c_str());
          std::exit(1);
        }
        return reinterpret_cast<void*>(static_cast<uintptr_t>(b.value().handle));
      },
      [&](void* handle) { arena.Release(static_cast<arena::Handle>(reinterpret_cast<uintptr_t>(handle))); });
  arena::ArenaStats after_latency = arena.Stats();
  Latency baseline;
#ifdef HOTPATH_WITH_CUDA
  if (cuda) {
    baseline = Measure(
        ops,
        [](uint64_t bytes) {
          void* p = nullptr;
          if (cudaMalloc(&p, bytes) != cudaSuccess) std::exit(1);
          return p;
        },
        [](void* p) { cudaFree(p); });
  }
#endif
  if (!cuda) {
    baseline = Measure(ops, [](uint64_t bytes) { return std::malloc(bytes); }, [](void* p) { std::free(p); });
  }
  arena.DestroyOwner(owner);
  arena.ReleaseCached();

  // (b) replay, on a fresh arena with the same backend.
  Result<std::shared_ptr<arena::Arena>> replay_arena = arena::Arena::Create("replay", config);
  ReplayConfig replay_config;
  replay_config.seconds = quick ? 30 : 300;
  replay_config.seed = seed;
  ReplayResult replay = RunReplay(*replay_arena.value(), replay_config);

  std::printf(
      "{\"suite\":\"arena\",\"backend\":\"%s\",\"device\":\"%s\",\"results\":{"
      "\"alloc_free_p50_ns\":%.0f,\"alloc_free_p99_ns\":%.0f,"
      "\"baseline_alloc_free_p50_ns\":%.0f,\"baseline_alloc_free_p99_ns\":%.0f,"
      "\"baseline\":\"%s\",\"alloc_p50_ns\":%.0f,\"free_p50_ns\":%.0f,"
      "\"baseline_alloc_p50_ns\":%.0f,\"baseline_free_p50_ns\":%.0f,\"speedup_p50\":%.1f,"
      "\"latency_ops\":%zu,\"latency_backend_calls\":%llu,"
      "\"replay\":{\"requests\":%llu,\"batches\":%llu,\"simulated_seconds\":%.0f,"
      "\"backend_calls_steady_per_1k\":%.3f,\"backend_calls_total\":%llu,"
      "\"external_frag_peak\":%.4f,\"external_frag_final\":%.4f,"
      "\"cache_overhead_peak\":%.4f,\"cache_overhead_final\":%.4f,"
      "\"internal_frag_peak\":%.4f,\"internal_frag_final\":%.4f,"
      "\"cached_bytes_peak\":%llu,\"backend_reserved_peak\":%llu,"
      "\"evictions\":%llu,\"model_loads\":%llu,\"quota_rejections\":%llu,\"end_bytes_held\":%llu}}}\n",
      arena::BackendKindName(arena.backend().kind()), arena.backend().description().c_str(), arena_latency.p50,
      arena_latency.p99, baseline.p50, baseline.p99, cuda ? "cudaMalloc/cudaFree" : "malloc/free",
      arena_latency.alloc_p50, arena_latency.free_p50, baseline.alloc_p50, baseline.free_p50,
      arena_latency.p50 > 0 ? baseline.p50 / arena_latency.p50 : 0.0, ops.size(),
      static_cast<unsigned long long>(after_latency.backend_allocs + after_latency.backend_frees),
      static_cast<unsigned long long>(replay.requests), static_cast<unsigned long long>(replay.batches),
      replay_config.seconds, replay.backend_calls_steady_per_1k,
      static_cast<unsigned long long>(replay.backend_calls_total), replay.external_frag.peak,
      replay.external_frag.final, replay.cache_overhead.peak, replay.cache_overhead.final, replay.internal_frag.peak,
      replay.internal_frag.final, static_cast<unsigned long long>(replay.cached_bytes_peak),
      static_cast<unsigned long long>(replay.backend_reserved_peak), static_cast<unsigned long long>(replay.evictions),
      static_cast<unsigned long long>(replay.model_loads), static_cast<unsigned long long>(replay.quota_rejections),
      static_cast<unsigned long long>(replay.end_bytes_held));
  return replay.end_bytes_held == 0 ? 0 : 1;
}

}  // namespace
}  // namespace hotpath::bench

int main(int argc, char** argv) { return hotpath::bench::Main(argc, argv); }
