// 8 threads on one arena (the host backend, so blocks are real memory):
// private and shared tenants, blocks handed between threads with
// retain/release, evictable reservations that other threads' allocations may
// evict, pin/unpin, and owners destroyed while others allocate. Afterwards
// the invariants hold and destroying every owner leaves 0 bytes.
// Under ThreadSanitizer-free CI this mostly proves absence of crashes,
// deadlocks and accounting drift; ASan catches lifetime bugs.
#include <atomic>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "arena/arena.h"
#include "tests/check.h"

namespace hotpath::arena {
namespace {

constexpr uint64_t kMiB = 1024 * 1024;
constexpr int kThreads = 8;
constexpr int kOpsPerThread = 4000;

struct Shared {
  std::shared_ptr<Arena> arena;
  TenantId shared_tenant = kDefaultTenant;
  std::mutex handoff_mu;
  std::vector<Handle> handoff;  // retained blocks for another thread to release; guarded by handoff_mu
  std::atomic<int> failures{0};
  std::vector<OwnerId> owners = std::vector<OwnerId>(8);  // one per thread, each writes its own slot
  std::atomic<uint64_t> evicted{0};
};

struct Reservation {
  Handle handle = 0;
  bool pinned = false;
  std::shared_ptr<std::atomic<bool>> evicted;
};

void Worker(Shared& shared, int index) {
  Arena& arena = *shared.arena;
  std::mt19937_64 rng(1000 + index);
  auto pick = [&rng](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  // (Not "t" + to_string: GCC 12 raises a false -Wrestrict on it.)
  std::string suffix = std::to_string(index);
  TenantId own = arena.CreateTenant(std::string("t").append(suffix), 6 * kMiB).value();
  OwnerId owner = arena.CreateOwner(OwnerKind::kWorkerGeneration, std::string("w").append(suffix)).value();
  shared.owners[static_cast<size_t>(index)] = owner;
  std::vector<std::pair<Handle, unsigned char>> blocks;
  std::vector<Reservation> reservations;
  auto fail = [&shared](const char* what, const Status& status) {
    std::fprintf(stderr, "thread failure: %s: %s\n", what, status.ToString().c_str());
    shared.failures.fetch_add(1);
  };
  for (int op = 0; op < kOpsPerThread; ++op) {
    uint64_t dice = pick(100);
    if (dice < 45) {
      uint64_t bytes = uint64_t{1} << pick(21);
      Result<BlockInfo> block = arena.Alloc(owner, bytes, {pick(2) == 0 ? own : shared.shared_tenant, false, nullptr});
      if (!block.ok()) {
        if (block.status().code() != StatusCode::kResourceExhausted) fail("alloc", block.status());
        continue;
      }
      auto stamp = static_cast<unsigned char>(index * 31 + op);
      std::memset(block.value().ptr, stamp, block.value().size);
      blocks.emplace_back(block.value().handle, stamp);
    } else if (dice < 75 && !blocks.empty()) {
      size_t i = pick(blocks.size());
      Result<BlockInfo> info = arena.Lookup(blocks[i].first);
      if (info.ok() && static_cast<unsigned char*>(info.value().ptr)[info.value().size - 1] != blocks[i].second) {
        fail("block contents", Status(StatusCode::kInternal, "another thread wrote into my block"));
      }
      Result<uint32_t> left = arena.Release(blocks[i].first);
      if (!left.ok()) fail("release", left.status());
      blocks.erase(blocks.begin() + static_cast<long>(i));
    } else if (dice < 82 && !blocks.empty()) {
      // Hand a reference to whichever thread looks next.
      Handle h = blocks[pick(blocks.size())].first;
      if (Result<uint32_t> r = arena.Retain(h); !r.ok()) fail("retain", r.status());
      std::lock_guard<std::mutex> lock(shared.handoff_mu);
      shared.handoff.push_back(h);
    } else if (dice < 88) {
      Handle h = 0;
      {
        std::lock_guard<std::mutex> lock(shared.handoff_mu);
        if (shared.handoff.empty()) continue;
        h = shared.handoff.back();
        shared.handoff.pop_back();
      }
      Result<uint32_t> left = arena.Release(h);
      // Each reference is released exactly once, by whoever holds it.
      if (!left.ok()) fail("release handed-off block", left.status());
    } else if (dice < 94) {
      auto evicted = std::make_shared<std::atomic<bool>>(false);
      auto on_evict = [evicted, &shared](const EvictionInfo&) {
        evicted->store(true);
        shared.evicted.fetch_add(1);
        return true;
      };
      Result<Handle> r = arena.Reserve(owner, (pick(4) + 1) * kMiB / 2, {own, true, on_evict});
      if (r.ok()) reservations.push_back({r.value(), false, evicted});
    } else if (!reservations.empty()) {
      size_t i = pick(reservations.size());
      Reservation& r = reservations[i];
      if (pick(3) == 0) {
        Result<uint32_t> freed = arena.Release(r.handle);
        // NOT_FOUND only if evicted, and eviction happens after the callback said so.
        if (!freed.ok() && !r.evicted->load()) fail("release reservation", freed.status());
        reservations.erase(reservations.begin() + static_cast<long>(i));
      } else {
        Status s = r.pinned ? arena.Unpin(r.handle) : arena.Pin(r.handle);
        if (s.ok()) r.pinned = !r.pinned;
        if (!s.ok() && !r.evicted->load()) fail("pin", s);
      }
    }
  }
  for (auto& [h, stamp] : blocks) {
    if (Result<uint32_t> left = arena.Release(h); !left.ok()) fail("final release", left.status());
  }
  // Reservations stay: destroying the owners (in main) must free them.
}

}  // namespace
}  // namespace hotpath::arena

int main() {
  using namespace hotpath::arena;
  hotpath::test::Checker check;
  ArenaConfig config;
  config.backend.capacity_bytes = 48 * kMiB;
  config.segment_bytes = 8 * kMiB;
  config.max_split_bytes = 4 * kMiB;
  auto arena = Arena::Create("concurrency", config, MakeHostBackend(config.backend.capacity_bytes)).value();
  Shared shared;
  shared.arena = arena;
  shared.shared_tenant = arena->CreateTenant("shared", 16 * kMiB).value();
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(Worker, std::ref(shared), i);
  for (std::thread& t : threads) t.join();
  check.Equal(shared.failures.load(), 0, "no thread saw an error");
  check.True(arena->CheckInvariants().ok(), "invariants after 8 threads: " + arena->CheckInvariants().ToString());
  // References handed off but not yet taken: each still has its count.
  for (Handle h : shared.handoff) check.True(arena->Release(h).ok(), "release a leftover hand-off");
  check.Equal(arena->Stats().blocks, uint64_t{0}, "refcounts balance: every block freed by its last release");
  for (OwnerId owner : shared.owners) check.True(arena->DestroyOwner(owner).ok(), "destroy a thread's owner");
  check.True(arena->CheckInvariants().ok(), "invariants after cleanup");
  ArenaStats stats = arena->Stats();
  check.Equal(stats.allocated + stats.reservations + stats.blocks, uint64_t{0}, "0 bytes after every owner is gone");
  check.Equal(stats.evictions, shared.evicted.load(), "evictions counted once each");
  std::printf("%llu evictions, %llu backend allocs, %llu quota failures, %llu out-of-memory failures\n",
              static_cast<unsigned long long>(stats.evictions), static_cast<unsigned long long>(stats.backend_allocs),
              static_cast<unsigned long long>(stats.quota_failures), static_cast<unsigned long long>(stats.oom_failures));
  arena->ReleaseCached();
  check.Equal(arena->Stats().backend_reserved, uint64_t{0}, "cache released");
  return check.ExitCode();
}
