// The cost of one Batcher::Enqueue on the calling thread, in ns, for a
// 1-row request shaped like ctr_mlp's (one FP32 input of 32 values; batches
// of up to 64 rows, preferred sizes 16/32/64, a 200 us queue delay, one
// instance). Prints one JSON object on stdout.
//
//   batcher_enqueue_bench [--requests N]
//
// Batch memory is a host arena (ArenaBatchMemory), as in the server. Two
// scenarios, each N requests, every one timed as part of a round:
//   busy   the instance is busy, so every request just joins its open batch;
//          between rounds (untimed) the instance is given back and the loop
//          seals the 64-row batch. What an enqueue costs under load.
//   idle   the instance is idle: the first request of a round opens a batch
//          and starts the delay timer, the 16th completes a preferred size
//          and the enqueuing thread seals and dispatches it itself; the
//          dispatch callback frees the batch and gives the instance back at
//          once (a worker that takes no time).
// Reported per enqueue: wall ns (steady_clock over the timed rounds) and the
// calling thread's CPU ns (CLOCK_THREAD_CPUTIME_ID), median over 5 runs.
// Wall includes time the thread was preempted, e.g. by the loop thread it
// woke; CPU does not.
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "batcher/arena_batch_memory.h"
#include "batcher/batcher.h"
#include "json_writer.h"

namespace hotpath::bench {
namespace {

using batcher::Batcher;
using batcher::BatcherCallbacks;
using batcher::BatcherConfig;
using batcher::EnqueueRequest;
using batcher::RequestInput;
using batcher::SealedBatch;

constexpr int kRuns = 5;

uint64_t ThreadCpuNs() {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
    std::perror("clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    std::exit(1);
  }
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

struct Figure {
  double wall_ns = 0;
  double cpu_ns = 0;
};

struct Setup {
  std::shared_ptr<arena::Arena> arena;
  std::shared_ptr<batcher::BatchMemory> memory;
  arena::OwnerId owner = 0;
};

Setup MakeSetup() {
  arena::ArenaConfig config;
  config.backend.kind = arena::BackendKind::kHost;
  config.backend.capacity_bytes = 256ull << 20;
  auto arena = arena::Arena::Create("enqueue-bench", config);
  if (!arena.ok()) {
    std::fprintf(stderr, "arena: %s\n", arena.status().message().c_str());
    std::exit(1);
  }
  Setup setup;
  setup.arena = arena.value();
  setup.owner = setup.arena->CreateOwner(arena::OwnerKind::kModel, "ctr_mlp/1").value();
  setup.memory = batcher::ArenaBatchMemory::Create(setup.arena, arena::kDefaultTenant).value();
  return setup;
}

BatcherConfig CtrMlpConfig(uint64_t owner) {
  BatcherConfig config;
  config.model_name = "ctr_mlp:1";
  config.input_count = 1;
  config.instance_count = 1;
  config.max_batch_size = 64;
  config.preferred_batch_sizes = {16, 32, 64};
  config.max_queue_delay_us = 200;
  config.memory_owner = owner;
  return config;
}

// The same request every time, as the server's door would hand it over.
EnqueueRequest MakeRequest(const std::vector<float>& features) {
  EnqueueRequest request;
  request.rows = 1;
  request.inputs.push_back(RequestInput{features.data(), features.size() * sizeof(float), {32}});
  return request;
}

Figure RunBusy(const Setup& setup, uint64_t requests) {
  BatcherCallbacks callbacks;
  callbacks.dispatch = [](SealedBatch) {};  // the batch frees its memory here
  callbacks.reject = [](std::vector<batcher::RejectedRequest>) {};
  auto batcher = Batcher::Create(CtrMlpConfig(setup.owner), std::make_shared<batcher::SteadyClock>(), setup.memory,
                                 callbacks)
                     .value();
  (void)batcher->InstanceBusy();
  std::vector<float> features(32, 0.5f);
  EnqueueRequest request = MakeRequest(features);
  uint64_t wall = 0;
  uint64_t cpu = 0;
  for (uint64_t done = 0; done < requests; done += 64) {
    const auto w0 = std::chrono::steady_clock::now();
    const uint64_t c0 = ThreadCpuNs();
    for (int i = 0; i < 64; ++i) {
      request.id = done + static_cast<uint64_t>(i);
      if (!batcher->Enqueue(request).ok()) std::abort();
    }
    cpu += ThreadCpuNs() - c0;
    wall += static_cast<uint64_t>((std::chrono::steady_clock::now() - w0).count());
    // Untimed: the loop seals the full batch for the returned instance,
    // which it takes (busy again).
    (void)batcher->InstanceIdle();
    batcher->Flush();
  }
  return Figure{double(wall) / double(requests), double(cpu) / double(requests)};
}

Figure RunIdle(const Setup& setup, uint64_t requests) {
  Batcher* self = nullptr;
  BatcherCallbacks callbacks;
  callbacks.dispatch = [&self](SealedBatch) { (void)self->InstanceIdle(); };
  callbacks.reject = [](std::vector<batcher::RejectedRequest>) {};
  auto batcher = Batcher::Create(CtrMlpConfig(setup.owner), std::make_shared<batcher::SteadyClock>(), setup.memory,
                                 callbacks)
                     .value();
  self = batcher.get();
  std::vector<float> features(32, 0.5f);
  EnqueueRequest request = MakeRequest(features);
  const auto w0 = std::chrono::steady_clock::now();
  const uint64_t c0 = ThreadCpuNs();
  for (uint64_t i = 0; i < requests; ++i) {
    request.id = i;
    if (!batcher->Enqueue(request).ok()) std::abort();
  }
  const uint64_t cpu = ThreadCpuNs() - c0;
  const uint64_t wall = static_cast<uint64_t>((std::chrono::steady_clock::now() - w0).count());
  batcher->Stop();
  return Figure{double(wall) / double(requests), double(cpu) / double(requests)};
}

Figure Median(std::vector<Figure> runs) {
  auto mid = [&runs](double Figure::*field) {
    std::vector<double> values;
    for (const Figure& f : runs) values.push_back(f.*field);
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
  };
  return Figure{mid(&Figure::wall_ns), mid(&Figure::cpu_ns)};
}

void WriteFigure(JsonWriter& j, const char* name, const Figure& f) {
  j.Key(name);
  j.BeginObject();
  j.Key("wall_ns_per_enqueue");
  j.Number(f.wall_ns);
  j.Key("cpu_ns_per_enqueue");
  j.Number(f.cpu_ns);
  j.EndObject();
}

}  // namespace
}  // namespace hotpath::bench

int main(int argc, char** argv) {
  using namespace hotpath::bench;
  uint64_t requests = 64 * 4096;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--requests") == 0 && i + 1 < argc) {
      requests = std::max<uint64_t>(64, std::strtoull(argv[++i], nullptr, 10) / 64 * 64);
    } else {
      std::fprintf(stderr, "usage: batcher_enqueue_bench [--requests N]\n");
      return 2;
    }
  }
  const Setup setup = MakeSetup();
  // One untimed pass of each warms the arena's size classes and the caches.
  (void)RunBusy(setup, 64 * 64);
  (void)RunIdle(setup, 64 * 64);
  std::vector<Figure> busy, idle;
  for (int run = 0; run < kRuns; ++run) {
    busy.push_back(RunBusy(setup, requests));
    idle.push_back(RunIdle(setup, requests));
  }
  JsonWriter j;
  j.BeginObject();
  j.Key("requests_per_run");
  j.Uint(requests);
  j.Key("runs");
  j.Int(kRuns);
  WriteFigure(j, "busy", Median(busy));
  WriteFigure(j, "idle", Median(idle));
  j.EndObject();
  std::printf("%s\n", j.Take().c_str());
  return 0;
}
