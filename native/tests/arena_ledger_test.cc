// Ledger behaviour: tenant quotas (reserve-then-rollback), reservations,
// LRU eviction order with refusals and pins, the reclamation order, owners
// and destroyOwner, typed failures, statistics and fragmentation formulas,
// shutdown and the process-wide registry.
#include <string>
#include <vector>

#include "arena/arena.h"
#include "arena/registry.h"
#include "tests/check.h"

namespace hotpath::arena {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

std::shared_ptr<Arena> MakeArena(uint64_t capacity, uint64_t* clock = nullptr) {
  ArenaConfig config;
  config.backend.capacity_bytes = capacity;
  config.segment_bytes = 4 * kMiB;
  config.max_split_bytes = 2 * kMiB;
  if (clock != nullptr) config.clock_ns = [clock] { return *clock; };
  return Arena::Create("ledger-test", config, MakeSimulatedBackend(capacity)).value();
}

void TestQuota(test::Checker& check) {
  auto arena = MakeArena(64 * kMiB);
  TenantId a = arena->CreateTenant("a", 1 * kMiB).value();
  TenantId b = arena->CreateTenant("b", 8 * kMiB).value();
  check.True(!arena->CreateTenant("a", 1).ok(), "duplicate tenant rejected");
  check.Equal(arena->FindTenant("b").value(), b, "find tenant");
  OwnerId owner = arena->CreateOwner(OwnerKind::kBatch, "batch-1").value();
  BlockInfo first = arena->Alloc(owner, 600 * kKiB, {a, false, nullptr}).value();
  Failure failure;
  Result<BlockInfo> over = arena->Alloc(owner, 600 * kKiB, {a, false, nullptr}, &failure);
  check.True(!over.ok() && over.status().code() == StatusCode::kResourceExhausted, "over quota");
  check.True(failure.kind == Failure::Kind::kQuota, "quota failure");
  check.Equal(failure.tenant, std::string("a"), "names the tenant");
  check.Equal(failure.requested, 600 * kKiB, "requested");
  check.Equal(failure.used, 600 * kKiB, "used");
  check.Equal(failure.quota, 1 * kMiB, "quota");
  check.Contains(over.status().message(), "tenant 'a' over quota: requested 600.0 KiB, using 600.0 KiB of its 1.0 MiB",
                 "message");
  check.True(arena->Alloc(owner, 600 * kKiB, {b, false, nullptr}).ok(), "another tenant is unaffected");
  ArenaStats stats = arena->Stats();
  check.Equal(stats.tenants[a].used, 600 * kKiB, "failed charge rolled back");
  check.Equal(stats.tenants[a].quota_failures, uint64_t{1}, "quota failures counted");
  check.True(arena->SetTenantQuota(a, 2 * kMiB).ok(), "raise quota");
  check.True(arena->Alloc(owner, 600 * kKiB, {a, false, nullptr}).ok(), "fits after raising the quota");
  arena->Release(first.handle);
  check.True(arena->CheckInvariants().ok(), "invariants");
}

void TestReservationsAndEvictionOrder(test::Checker& check) {
  uint64_t now = 1000;
  auto arena = MakeArena(64 * kMiB, &now);
  TenantId t = arena->CreateTenant("t", 10 * kMiB).value();
  std::vector<std::string> asked;
  bool refuse_b = true;
  auto model = [&](const std::string& label) {
    OwnerId owner = arena->CreateOwner(OwnerKind::kModel, label).value();
    ChargeOptions options{t, true, [&asked, &refuse_b, label](const EvictionInfo& info) {
                            asked.push_back(label + "@" + std::to_string(info.idle_ns));
                            return !(label == "b" && refuse_b);
                          }};
    return std::pair(owner, arena->Reserve(owner, 3 * kMiB, options).value());
  };
  auto [oa, ra] = model("a");
  now += 10;
  auto [ob, rb] = model("b");
  now += 10;
  auto [oc, rc] = model("c");
  now += 10;
  check.True(arena->LruOrder() == std::vector<Handle>{ra, rb, rc}, "creation order");
  check.True(arena->Touch(ra).ok(), "touch a");
  check.True(arena->LruOrder() == std::vector<Handle>{rb, rc, ra}, "touch moves to the back");
  check.True(arena->Pin(rc).ok(), "pin c (in use)");
  now += 100;
  // 9 MiB used of 10: a 5 MiB model needs two evictions. LRU is b (refuses),
  // c (pinned: skipped), a (accepts), then nothing left: fail.
  Failure failure;
  OwnerId od = arena->CreateOwner(OwnerKind::kModel, "d").value();
  Result<Handle> rd = arena->Reserve(od, 5 * kMiB, {t, true, [](const EvictionInfo&) { return true; }}, &failure);
  check.True(asked == std::vector<std::string>{"b@120", "a@100"}, "LRU order, refusal, pin respected, idle ages");
  check.True(!rd.ok() && failure.kind == Failure::Kind::kQuota, "still over quota after what could be evicted");
  check.True(!arena->Release(ra).ok(), "a was evicted");
  check.Equal(arena->Stats().tenants[t].evictions, uint64_t{1}, "eviction counted");
  check.Equal(arena->Stats().eviction_refusals, uint64_t{1}, "refusal counted");
  // Unpin c and let b agree: now it fits (b goes first, LRU).
  check.True(arena->Unpin(rc).ok(), "unpin");
  check.True(arena->Unpin(rc).code() == StatusCode::kFailedPrecondition, "unpin below zero");
  refuse_b = false;
  asked.clear();
  rd = arena->Reserve(od, 5 * kMiB, {t, true, [](const EvictionInfo&) { return true; }});
  check.True(rd.ok(), "fits after evicting b");
  check.Equal(asked.size(), size_t{1}, "only as many evictions as needed");
  ArenaStats stats = arena->Stats();
  check.Equal(stats.tenants[t].reserved, 8 * kMiB, "c + d reserved");
  check.Equal(stats.evictions, uint64_t{2}, "two evictions");
  check.Equal(stats.eviction_age_max_ns, uint64_t{120}, "age at eviction");
  check.True(arena->CheckInvariants().ok(), "invariants");
  (void)oa, (void)ob, (void)oc;
}

void TestCapacityReclamationOrder(test::Checker& check) {
  // 16 MiB capacity: cached segments go before any model is evicted.
  auto arena = MakeArena(16 * kMiB);
  arena->SetTenantQuota(kDefaultTenant, 1024 * kMiB);  // only the capacity limits here
  OwnerId batch = arena->CreateOwner(OwnerKind::kBatch, "batch").value();
  OwnerId model = arena->CreateOwner(OwnerKind::kModel, "resnet/1").value();
  int evictions = 0;
  Handle weights = arena->Reserve(model, 6 * kMiB, {kDefaultTenant, true, [&](const EvictionInfo&) {
                                                      ++evictions;
                                                      return true;
                                                    }})
                       .value();
  BlockInfo a = arena->Alloc(batch, 3 * kMiB, {}).value();
  BlockInfo b = arena->Alloc(batch, 3 * kMiB, {}).value();
  arena->Release(a.handle);
  arena->Release(b.handle);
  check.Equal(arena->Stats().backend_reserved, 6 * kMiB, "two cached oversize segments");
  // 8 MiB needs room: both cached segments go first, no eviction needed.
  BlockInfo c = arena->Alloc(batch, 8 * kMiB, {}).value();
  check.Equal(evictions, 0, "cache released before evicting");
  check.Equal(arena->Stats().backend_frees, uint64_t{2}, "cached segments released");
  // Another 4 MiB: nothing cached; the idle model is evicted.
  BlockInfo d = arena->Alloc(batch, 4 * kMiB, {}).value();
  check.Equal(evictions, 1, "then the idle model");
  check.True(!arena->Release(weights).ok(), "the model's reservation is gone");
  // Nothing left: out of memory, naming the holders.
  Failure failure;
  Result<BlockInfo> e = arena->Alloc(batch, 8 * kMiB, {}, &failure);
  check.True(!e.ok() && failure.kind == Failure::Kind::kOutOfMemory, "out of memory");
  check.Contains(e.status().message(), "arena 'ledger-test' out of memory: 8.0 MiB for tenant 'default'", "message");
  check.Contains(e.status().message(), "held by tenant 'default' 12.0 MiB, batch 'batch' 12.0 MiB", "who holds what");
  check.True(failure.holders.size() == 2 && failure.holders[1].name == "batch", "holders as data");
  check.Equal(arena->Stats().oom_failures, uint64_t{1}, "counted");
  (void)c, (void)d;
}

void TestOwnersAndDestroy(test::Checker& check) {
  auto arena = MakeArena(64 * kMiB);
  TenantId t = arena->CreateTenant("t", 32 * kMiB).value();
  OwnerId generation = arena->CreateOwner(OwnerKind::kWorkerGeneration, "gen-1").value();
  OwnerId batch = arena->CreateOwner(OwnerKind::kBatch, "batch-7", generation).value();
  OwnerId model = arena->CreateOwner(OwnerKind::kModel, "bert/2").value();
  check.True(arena->CreateOwner(OwnerKind::kBatch, "x", 999).status().code() == StatusCode::kNotFound, "bad parent");
  BlockInfo in = arena->Alloc(batch, 5000, {t, false, nullptr}).value();
  check.Equal(arena->Retain(in.handle).value(), 2u, "retained twice");
  arena->Alloc(generation, 3 * kMiB, {t, false, nullptr}).value();
  arena->Reserve(batch, kMiB, {t, false, nullptr}).value();
  // A failed model load: its partial allocations go with the owner.
  arena->Alloc(model, 100 * kKiB, {t, false, nullptr}).value();
  arena->Reserve(model, 2 * kMiB, {t, false, nullptr}).value();
  ReleaseSummary failed_load = arena->DestroyOwner(model).value();
  check.Equal(failed_load.blocks + failed_load.reservations, uint64_t{2}, "model's entries freed");
  // OwnerUsage reports exactly what DestroyOwner then frees, without freeing it.
  ReleaseSummary usage = arena->OwnerUsage(generation).value();
  check.Equal(arena->OwnerUsage(generation).value().bytes, usage.bytes, "usage is read-only");
  ReleaseSummary summary = arena->DestroyOwner(generation).value();
  check.Equal(usage.owners, summary.owners, "usage owners");
  check.Equal(usage.blocks, summary.blocks, "usage blocks");
  check.Equal(usage.reservations, summary.reservations, "usage reservations");
  check.Equal(usage.bytes, summary.bytes, "usage bytes");
  check.True(arena->OwnerUsage(generation).status().code() == StatusCode::kNotFound, "usage of a destroyed owner");
  check.Equal(summary.owners, uint64_t{2}, "generation and its batch");
  check.Equal(summary.blocks, uint64_t{2}, "blocks freed whatever their refcount");
  check.Equal(summary.reservations, uint64_t{1}, "reservation freed");
  check.True(arena->Release(in.handle).status().code() == StatusCode::kNotFound, "stale handle");
  check.True(arena->DestroyOwner(batch).status().code() == StatusCode::kNotFound, "descendant destroyed");
  ArenaStats stats = arena->Stats();
  check.Equal(stats.allocated + stats.reservations + stats.tenants[t].used, uint64_t{0}, "zero bytes left");
  check.Equal(stats.owners, uint64_t{0}, "no owners left");
  check.True(arena->CheckInvariants().ok(), "invariants");
}

void TestFragmentationFormulas(test::Checker& check) {
  auto arena = MakeArena(64 * kMiB);
  OwnerId owner = arena->CreateOwner(OwnerKind::kBatch, "b").value();
  BlockInfo x = arena->Alloc(owner, 1 * kMiB, {}).value();
  BlockInfo y = arena->Alloc(owner, 1 * kMiB - 100, {}).value();
  arena->Alloc(owner, 1 * kMiB, {}).value();
  arena->Release(x.handle);
  ArenaStats s = arena->Stats();
  // Segment 4 MiB: [free 1 MiB][y ~1 MiB][z 1 MiB][free 1 MiB].
  check.Equal(s.total_free, 2 * kMiB, "total free");
  check.Equal(s.largest_free, 1 * kMiB, "largest free");
  check.Equal(s.external_fragmentation, 0.5, "1 - largest/total");
  check.Equal(s.cache_overhead, 0.5, "(reserved-allocated)/reserved");
  check.Equal(s.allocated, 2 * kMiB, "rounded to 256: 1 MiB - 100 -> 1 MiB");
  double internal = static_cast<double>(s.allocated - s.requested) / static_cast<double>(s.allocated);
  check.Equal(s.internal_fragmentation, internal, "(allocated-requested)/allocated");
  check.Equal(s.requested, 2 * kMiB - 100, "requested");
  (void)y;
}

void TestShutdownAndRegistry(test::Checker& check) {
  ArenaConfig config;
  config.backend.kind = BackendKind::kHost;
  config.backend.capacity_bytes = 64 * kMiB;
  Result<std::shared_ptr<Arena>> created = CreateRegisteredArena("reg-test", config);
  if (!check.True(created.ok(), "create registered")) return;
  check.True(!CreateRegisteredArena("reg-test", config).ok(), "name taken");
  std::shared_ptr<Arena> attached = FindRegisteredArena("reg-test").value();
  check.True(attached == created.value(), "attach finds the same arena");
  check.Contains(FindRegisteredArena("nope").status().message(), "existing: reg-test", "lists existing names");
  OwnerId owner = attached->CreateOwner(OwnerKind::kBatch, "b").value();
  BlockInfo block = attached->Alloc(owner, 4096, {}).value();
  static_cast<char*>(block.ptr)[4095] = 1;  // host memory is real
  check.True(attached->backend().host_accessible(), "host backend");
  check.Equal(attached->fallback_reason(), std::string(), "host asked, host given");
  created.value()->Shutdown();
  UnregisterArena(*created.value());
  check.True(!FindRegisteredArena("reg-test").ok(), "unregistered");
  check.True(attached->Alloc(owner, 1, {}).status().code() == StatusCode::kFailedPrecondition, "shut down");
  ArenaStats stats = attached->Stats();
  check.Equal(stats.backend_reserved + stats.allocated, uint64_t{0}, "shutdown freed everything");
}

void TestAutoBackendFallsBackToHost(test::Checker& check) {
  ArenaConfig config;
  config.backend.kind = BackendKind::kCuda;
  config.backend.capacity_bytes = 8 * kMiB;
  Result<std::shared_ptr<Arena>> arena = Arena::Create("auto", config);
  if (!check.True(arena.ok(), "create")) return;
  if (arena.value()->backend().kind() == BackendKind::kHost) {
    check.True(!arena.value()->fallback_reason().empty(), "says why it is not cuda");
  }
}

}  // namespace
}  // namespace hotpath::arena

int main() {
  hotpath::test::Checker check;
  hotpath::arena::TestQuota(check);
  hotpath::arena::TestReservationsAndEvictionOrder(check);
  hotpath::arena::TestCapacityReclamationOrder(check);
  hotpath::arena::TestOwnersAndDestroy(check);
  hotpath::arena::TestFragmentationFormulas(check);
  hotpath::arena::TestShutdownAndRegistry(check);
  hotpath::arena::TestAutoBackendFallsBackToHost(check);
  return check.ExitCode();
}
