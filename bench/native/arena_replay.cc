// The replay model (simulated time; one event queue):
//   - 6 models in 3 tenants. Each loaded model version is an evictable
//     reservation of its footprint, charged to its tenant; tenant "c" cannot
//     hold both its models, so they evict each other (LRU), as ModelMesh does.
//   - Requests arrive as a Poisson process (120/s overall), pick a model
//     (skewed), and carry a sequence length of 16..64 tokens.
//   - Each model batches: a batch opens with a target size of 1..5 requests
//     (mean 3) and seals at that size or after a 100 ms queue delay.
//   - A sealed batch allocates, under a batch owner (child of the model's
//     owner): input ids and mask (rows x max_seq x int64), then per request a
//     hidden-state and an attention buffer (seq x 768 x fp32 each), and the
//     output (rows x 2 x fp32). The model's reservation is pinned while it
//     runs (2 ms + 0.1 ms per request-token/64); then the batch owner is destroyed.
#include "arena_replay.h"

#include <algorithm>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace hotpath::bench {

namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kHidden = 768;
constexpr double kMaxQueueDelay = 0.1;

struct Model {
  std::string name;
  int tenant = 0;
  uint64_t footprint = 0;
  double weight = 1;
  arena::OwnerId owner = arena::kNoOwner;
  arena::Handle reservation = 0;
  bool loaded = false;
  bool running = false;
  std::vector<uint32_t> open;  // sequence lengths of the open batch
  uint32_t target = 0;
  uint64_t open_serial = 0;  // which open batch a delay timer belongs to
};

struct Event {
  double time = 0;
  enum Kind { kArrival, kSealTimer, kDone } kind = kArrival;
  size_t model = 0;
  uint64_t serial = 0;
  arena::OwnerId batch_owner = arena::kNoOwner;
  bool operator>(const Event& other) const { return time > other.time; }
};

}  // namespace

ReplayResult RunReplay(arena::Arena& arena, const ReplayConfig& config) {
  std::mt19937_64 rng(config.seed);
  ReplayResult result;
  std::vector<arena::TenantId> tenants = {
      arena.CreateTenant("a", 256 * kMiB).value(),
      arena.CreateTenant("b", 160 * kMiB).value(),
      arena.CreateTenant("c", 300 * kMiB).value(),
  };
  // Named fields, not a brace list: -Wextra (and -Werror builds) flag the
  // state members a brace list would leave to their defaults.
  auto model = [](std::string name, int tenant, uint64_t footprint, double weight) {
    Model m;
    m.name = std::move(name);
    m.tenant = tenant;
    m.footprint = footprint;
    m.weight = weight;
    return m;
  };
  std::vector<Model> models = {
      model("a-ranker", 0, 120 * kMiB, 4), model("a-embed", 0, 80 * kMiB, 2), model("b-ranker", 1, 60 * kMiB, 3),
      model("b-embed", 1, 60 * kMiB, 1),   model("c-large", 2, 200 * kMiB, 2), model("c-xl", 2, 150 * kMiB, 1),
  };
  std::vector<double> weights;
  for (Model& m : models) {
    m.owner = arena.CreateOwner(arena::OwnerKind::kModel, m.name).value();
    weights.push_back(m.weight);
  }
  std::discrete_distribution<size_t> pick_model(weights.begin(), weights.end());
  std::exponential_distribution<double> gap(config.rate_per_s);
  std::uniform_int_distribution<uint32_t> seq_len(16, 64);
  std::uniform_int_distribution<uint32_t> batch_target(1, 5);

  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  events.push({gap(rng), Event::kArrival});
  const uint64_t planned = static_cast<uint64_t>(config.seconds * config.rate_per_s);
  const uint64_t warmup = static_cast<uint64_t>(static_cast<double>(planned) * config.warmup_fraction);
  uint64_t calls_at_warmup = 0;
  auto backend_calls = [&arena] {
    arena::ArenaStats s = arena.Stats();
    return s.backend_allocs + s.backend_frees;
  };

  auto load = [&](size_t index) {
    Model& m = models[index];
    if (m.loaded) return true;
    arena::ChargeOptions options;
    options.tenant = tenants[m.tenant];
    options.evictable = true;
    options.on_evict = [&models, index](const arena::EvictionInfo&) {
      if (models[index].running) return false;  // pinned anyway; belt and braces
      models[index].loaded = false;             // "unload the session"
      return true;
    };
    Result<arena::Handle> r = arena.Reserve(m.owner, m.footprint, options);
    if (!r.ok()) return false;
    m.reservation = r.value();
    m.loaded = true;
    ++result.model_loads;
    return true;
  };

  auto seal = [&](size_t index, double now) {
    Model& m = models[index];
    std::vector<uint32_t> seqs;
    seqs.swap(m.open);
    ++m.open_serial;
    if (!load(index)) {
      result.quota_rejections += seqs.size();
      return;
    }
    arena.Pin(m.reservation);
    m.running = true;
    arena::OwnerId batch = arena.CreateOwner(arena::OwnerKind::kBatch, "batch", m.owner).value();
    uint32_t rows = static_cast<uint32_t>(seqs.size());
    uint32_t max_seq = *std::max_element(seqs.begin(), seqs.end());
    arena::ChargeOptions charge;
    charge.tenant = tenants[m.tenant];
    std::vector<uint64_t> sizes = {uint64_t{rows} * max_seq * 8, uint64_t{rows} * max_seq * 8};
    uint64_t tokens = 0;
    for (uint32_t s : seqs) {
      sizes.push_back(uint64_t{s} * kHidden * 4);
      sizes.push_back(uint64_t{s} * kHidden * 4);
      tokens += s;
    }
    sizes.push_back(uint64_t{rows} * 2 * 4);
    for (uint64_t bytes : sizes) {
      if (!arena.Alloc(batch, bytes, charge).ok()) ++result.quota_rejections;
    }
    ++result.batches;
    if (result.requests > warmup) {
      arena::ArenaStats s = arena.Stats();
      result.external_frag.peak = std::max(result.external_frag.peak, s.external_fragmentation);
      result.cache_overhead.peak = std::max(result.cache_overhead.peak, s.cache_overhead);
      result.internal_frag.peak = std::max(result.internal_frag.peak, s.internal_fragmentation);
      result.external_frag.final = s.external_fragmentation;
      result.cache_overhead.final = s.cache_overhead;
      result.internal_frag.final = s.internal_fragmentation;
      result.cached_bytes_peak = std::max(result.cached_bytes_peak, s.cached);
      result.backend_reserved_peak = std::max(result.backend_reserved_peak, s.backend_reserved);
    }
    double run = 0.002 + 0.0001 * static_cast<double>(tokens) / 64.0;
    events.push({now + run, Event::kDone, index, 0, batch});
  };

  while (!events.empty()) {
    Event e = events.top();
    events.pop();
    if (e.kind == Event::kArrival) {
      if (result.requests >= planned) continue;
      ++result.requests;
      if (result.requests == warmup + 1) calls_at_warmup = backend_calls();
      size_t index = pick_model(rng);
      Model& m = models[index];
      if (m.loaded) arena.Touch(m.reservation);
      if (m.open.empty()) {
        m.target = batch_target(rng);
        events.push({e.time + kMaxQueueDelay, Event::kSealTimer, index, m.open_serial});
      }
      m.open.push_back(seq_len(rng));
      if (m.open.size() >= m.target) seal(index, e.time);
      events.push({e.time + gap(rng), Event::kArrival});
    } else if (e.kind == Event::kSealTimer) {
      Model& m = models[e.model];
      if (e.serial == m.open_serial && !m.open.empty()) seal(e.model, e.time);
    } else {
      Model& m = models[e.model];
      arena.DestroyOwner(e.batch_owner);
      m.running = false;
      if (m.loaded) arena.Unpin(m.reservation);
    }
  }
  result.steady_requests = result.requests - warmup;
  result.steady_backend_calls = backend_calls() - calls_at_warmup;
  result.backend_calls_steady_per_1k =
      result.steady_requests == 0 ? 0
                                  : 1000.0 * static_cast<double>(result.steady_backend_calls) /
                                        static_cast<double>(result.steady_requests);
  result.backend_calls_total = backend_calls();
  result.evictions = arena.Stats().evictions;
  for (Model& m : models) arena.DestroyOwner(m.owner);
  arena::ArenaStats end = arena.Stats();
  result.end_bytes_held = end.allocated + end.reservations;
  return result;
}

}  // namespace hotpath::bench
