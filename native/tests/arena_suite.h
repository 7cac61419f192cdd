// The shared arena invariant suite: a long random sequence of operations
// (alloc, retain, release, reserve, pin/unpin/touch, evictions that accept or
// refuse, destroyOwner) against a shadow model, with fixed seeds. Run on the
// host and simulated backends (arena_invariants_test) and on device memory
// (arena_gpu_test). Checks, every few operations and at the end:
//   - Arena::CheckInvariants: blocks tile segments, slots tile slabs, no two
//     adjacent free chunks, tenant sums == totals, owner lists, LRU order,
//     capacity;
//   - the LRU order equals the model's;
//   - every refcount equals the model's (retains and releases balance);
//   - a host-accessible block's bytes survive (each block is stamped);
//   - after destroying every owner and releasing the cache: 0 bytes anywhere.
#pragma once

#include <algorithm>
#include <cstring>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "tests/check.h"

namespace hotpath::arena::test {

struct SuiteConfig {
  uint64_t seed = 1;
  int operations = 20000;
  int check_every = 97;
  uint64_t capacity = 24ull << 20;
  uint64_t segment_bytes = 2ull << 20;
  uint64_t max_split_bytes = 1ull << 20;
  uint64_t small_max_bytes = 16ull << 10;
  uint64_t max_request = 1536ull << 10;  // > max_split: oversize requests too
};

class InvariantSuite {
 public:
  InvariantSuite(hotpath::test::Checker& check, SuiteConfig config) : check_(check), config_(config), rng_(config.seed) {}

  // Runs the suite on `backend`; returns false if the arena could not be made.
  bool Run(std::unique_ptr<MemoryBackend> backend) {
    ArenaConfig ac;
    ac.backend.capacity_bytes = config_.capacity;
    ac.segment_bytes = config_.segment_bytes;
    ac.max_split_bytes = config_.max_split_bytes;
    ac.small_max_bytes = config_.small_max_bytes;
    ac.clock_ns = [this] { return now_ns_; };
    host_ = backend->host_accessible();
    MemoryBackend* raw_backend = backend.get();
    Result<std::shared_ptr<Arena>> made = Arena::Create("suite", ac, std::move(backend));
    if (!check_.True(made.ok(), "create arena: " + made.status().ToString())) return false;
    arena_ = made.value();
    tenants_.push_back(kDefaultTenant);
    tenants_.push_back(arena_->CreateTenant("small", config_.capacity / 6).value());
    tenants_.push_back(arena_->CreateTenant("medium", config_.capacity / 3).value());
    for (int i = 0; i < 4; ++i) NewOwner();

    for (int op = 0; op < config_.operations; ++op) {
      now_ns_ += 1000;
      Step();
      if (op % config_.check_every == 0 && !CheckAll("after op " + std::to_string(op))) break;
    }
    CheckAll("at the end");
    Cleanup(raw_backend);
    return true;
  }

 private:
  struct Model {
    bool block = true;
    bool evictable = false;
    uint32_t refs = 1;
    uint32_t pins = 0;
    OwnerId owner = kNoOwner;
    uint64_t size = 0;
    unsigned char stamp = 0;
    void* ptr = nullptr;
  };

  uint64_t Pick(uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  // Log-uniform sizes from 1 B to max_request.
  uint64_t RandomSize() {
    double exponent = std::uniform_real_distribution<double>(0, std::log2(double(config_.max_request)))(rng_);
    return std::max<uint64_t>(1, static_cast<uint64_t>(std::exp2(exponent)));
  }

  void NewOwner() {
    OwnerId parent = owners_.empty() || Chance(0.5) ? kNoOwner : owners_[Pick(owners_.size())];
    Result<OwnerId> owner = arena_->CreateOwner(Chance(0.5) ? OwnerKind::kModel : OwnerKind::kBatch,
                                                "owner-" + std::to_string(owners_.size()), parent);
    if (check_.True(owner.ok(), "create owner")) {
      owners_.push_back(owner.value());
      parents_[owner.value()] = parent;
    }
  }

  EvictCallback MakeCallback() {
    return [this](const EvictionInfo& info) {
      auto it = live_.find(info.handle);
      check_.True(it != live_.end(), "evicting a live entry");
      if (it == live_.end()) return false;
      check_.True(it->second.pins == 0 && it->second.refs == 1, "evicting an idle entry");
      check_.Equal(info.idle_ns, now_ns_ - last_use_ns_[info.handle], "idle age");
      if (refuse_next_ || Chance(0.25)) return false;  // the model stays loaded
      Forget(info.handle);
      ++evicted_;
      return true;
    };
  }

  void Forget(Handle h) {
    live_.erase(h);
    lru_.remove(h);
    last_use_ns_.erase(h);
  }

  void Used(Handle h) {
    if (!live_[h].evictable) return;
    lru_.remove(h);
    lru_.push_back(h);
    last_use_ns_[h] = now_ns_;
  }

  std::vector<Handle> LiveHandles() const {
    std::vector<Handle> out;
    for (const auto& [h, m] : live_) out.push_back(h);
    return out;
  }

  void Step() {
    uint64_t dice = Pick(100);
    std::vector<Handle> handles = LiveHandles();
    Handle some = handles.empty() ? 0 : handles[Pick(handles.size())];
    if (dice < 40 || handles.empty()) {
      DoAlloc();
    } else if (dice < 60) {
      DoRelease(some);
    } else if (dice < 66) {
      if (live_[some].block) {
        Result<uint32_t> refs = arena_->Retain(some);
        if (check_.True(refs.ok(), "retain")) check_.Equal(refs.value(), ++live_[some].refs, "refcount after retain");
      }
    } else if (dice < 74) {
      DoReserve();
    } else if (dice < 82) {
      Model& m = live_[some];
      if (m.pins > 0 && Chance(0.6)) {
        check_.True(arena_->Unpin(some).ok(), "unpin");
        --m.pins;
      } else if (Chance(0.5)) {
        check_.True(arena_->Pin(some).ok(), "pin");
        ++m.pins;
      } else {
        check_.True(arena_->Touch(some).ok(), "touch");
      }
      Used(some);
    } else if (dice < 84) {
      NewOwner();
    } else if (dice < 85 && owners_.size() > 2) {
      DoDestroyOwner(owners_[Pick(owners_.size())]);
    } else {
      DoAlloc();
    }
  }

  void DoAlloc() {
    uint64_t bytes = RandomSize();
    bool evictable = Chance(0.05);
    ChargeOptions options{tenants_[Pick(tenants_.size())], evictable, evictable ? MakeCallback() : nullptr};
    OwnerId owner = owners_[Pick(owners_.size())];
    Failure failure;
    Result<BlockInfo> block = arena_->Alloc(owner, bytes, options, &failure);
    if (!block.ok()) {
      check_.True(block.status().code() == StatusCode::kResourceExhausted, "alloc fails only as RESOURCE_EXHAUSTED: " +
                                                                               block.status().ToString());
      check_.True(failure.kind != Failure::Kind::kNone, "a failure says why");
      if (failure.kind == Failure::Kind::kQuota) check_.True(failure.used + failure.requested > failure.quota, "quota math");
      return;
    }
    const BlockInfo& b = block.value();
    check_.True(b.size >= bytes && b.refcount == 1 && b.owner == owner, "block info");
    check_.True(reinterpret_cast<uintptr_t>(b.ptr) % 256 == 0, "256-byte aligned");
    Model m{true, evictable, 1, 0, owner, b.size, static_cast<unsigned char>(Pick(256)), b.ptr};
    if (host_) std::memset(b.ptr, m.stamp, b.size);
    live_[b.handle] = m;
    Used(b.handle);
  }

  void DoReserve() {
    bool evictable = Chance(0.7);
    ChargeOptions options{tenants_[Pick(tenants_.size())], evictable, evictable ? MakeCallback() : nullptr};
    OwnerId owner = owners_[Pick(owners_.size())];
    Result<Handle> handle = arena_->Reserve(owner, RandomSize(), options);
    if (!handle.ok()) {
      check_.True(handle.status().code() == StatusCode::kResourceExhausted, "reserve fails only as RESOURCE_EXHAUSTED");
      return;
    }
    live_[handle.value()] = Model{false, evictable, 1, 0, owner, 0, 0, nullptr};
    Used(handle.value());
  }

  void DoRelease(Handle h) {
    Model& m = live_[h];
    if (host_ && m.block && m.refs == 1) {
      const auto* bytes = static_cast<const unsigned char*>(m.ptr);
      check_.True(bytes[0] == m.stamp && bytes[m.size - 1] == m.stamp, "block contents survive");
    }
    Result<uint32_t> left = arena_->Release(h);
    if (!check_.True(left.ok(), "release: " + left.status().ToString())) return;
    uint32_t expect = m.block ? m.refs - 1 : 0;
    check_.Equal(left.value(), expect, "refcount after release");
    if (expect == 0) {
      Forget(h);
    } else {
      m.refs = expect;
    }
  }

  void DoDestroyOwner(OwnerId owner) {
    Result<ReleaseSummary> summary = arena_->DestroyOwner(owner);
    if (!check_.True(summary.ok(), "destroy owner")) return;
    // The owner and its descendants go, with everything they held.
    std::vector<OwnerId> gone{owner};
    for (bool grew = true; grew;) {
      grew = false;
      for (const auto& [child, parent] : parents_) {
        if (std::find(gone.begin(), gone.end(), parent) != gone.end() &&
            std::find(gone.begin(), gone.end(), child) == gone.end()) {
          gone.push_back(child);
          grew = true;
        }
      }
    }
    uint64_t entries = 0;
    for (Handle h : LiveHandles()) {
      if (std::find(gone.begin(), gone.end(), live_[h].owner) != gone.end()) {
        Forget(h);
        ++entries;
        check_.True(!arena_->Release(h).ok(), "handle of a destroyed owner is stale");
      }
    }
    check_.Equal(summary.value().blocks + summary.value().reservations, entries, "destroyOwner frees what it held");
    check_.Equal(summary.value().owners, static_cast<uint64_t>(gone.size()), "descendants destroyed");
    for (OwnerId id : gone) {
      parents_.erase(id);
      owners_.erase(std::find(owners_.begin(), owners_.end(), id));
    }
    while (owners_.size() < 3) NewOwner();
  }

  bool CheckAll(const std::string& when) {
    Status invariants = arena_->CheckInvariants();
    bool ok = check_.True(invariants.ok(), when + ": " + invariants.ToString());
    std::vector<Handle> order = arena_->LruOrder();
    ok &= check_.True(std::equal(order.begin(), order.end(), lru_.begin(), lru_.end()), when + ": LRU order");
    for (const auto& [h, m] : live_) {
      if (!m.block) continue;
      Result<BlockInfo> info = arena_->Lookup(h);
      ok &= check_.True(info.ok() && info.value().refcount == m.refs, when + ": refcount balance");
    }
    return ok;
  }

  void Cleanup(MemoryBackend* backend) {
    ArenaStats before = arena_->Stats();
    check_.True(before.evictions > 0 && before.eviction_refusals > 0, "the run evicted and refused evictions");
    check_.Equal(before.evictions, evicted_, "eviction count");
    for (OwnerId owner : std::vector<OwnerId>(owners_)) {
      if (parents_.count(owner) != 0 && parents_[owner] == kNoOwner) DoDestroyOwner(owner);
    }
    for (OwnerId owner : std::vector<OwnerId>(owners_)) arena_->DestroyOwner(owner);
    check_.True(arena_->CheckInvariants().ok(), "invariants after destroying every owner");
    ArenaStats after = arena_->Stats();
    check_.Equal(after.allocated + after.requested + after.reservations + after.blocks, uint64_t{0}, "0 bytes held");
    for (const TenantStats& t : after.tenants) check_.Equal(t.used, uint64_t{0}, "tenant " + t.name + " holds 0 bytes");
    arena_->ReleaseCached();
    after = arena_->Stats();
    check_.Equal(after.backend_reserved, uint64_t{0}, "cache released");
    check_.Equal(after.backend_allocs, after.backend_frees, "every backend alloc freed");
    if (backend->kind() != BackendKind::kCuda) {
      BackendMemInfo info = backend->MemInfo();
      check_.Equal(info.free_bytes, info.total_bytes, "backend has everything back");
    }
    std::printf("seed %llu on %s: %llu evictions, %llu refusals, %llu backend allocs, %llu owners left\n",
                static_cast<unsigned long long>(config_.seed), BackendKindName(backend->kind()),
                static_cast<unsigned long long>(before.evictions),
                static_cast<unsigned long long>(before.eviction_refusals),
                static_cast<unsigned long long>(before.backend_allocs),
                static_cast<unsigned long long>(owners_.size()));
    arena_.reset();
  }

  hotpath::test::Checker& check_;
  SuiteConfig config_;
  std::mt19937_64 rng_;
  std::shared_ptr<Arena> arena_;
  bool host_ = false;
  bool refuse_next_ = false;
  uint64_t now_ns_ = 1;
  uint64_t evicted_ = 0;
  std::vector<TenantId> tenants_;
  std::vector<OwnerId> owners_;
  std::map<OwnerId, OwnerId> parents_;
  std::map<Handle, Model> live_;
  std::list<Handle> lru_;
  std::map<Handle, uint64_t> last_use_ns_;
};

}  // namespace hotpath::arena::test
