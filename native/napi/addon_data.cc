// Per-environment addon state and its cleanup hook. See addon_data.h.
#include "napi/addon_data.h"

#include <atomic>
#include <memory>

namespace hotpath::napi {

namespace {

// Process-wide, shared by all environments: atomics, never locked.
std::atomic<uint64_t> g_created{0};
std::atomic<uint64_t> g_live{0};

// The cleanup hook owns the data; instance data only borrows it.
void BorrowedFinalizer(Napi::Env, AddonData*) {}

}  // namespace

AddonData::AddonData() : id_(g_created.fetch_add(1, std::memory_order_relaxed) + 1) {
  g_live.fetch_add(1, std::memory_order_relaxed);
}

AddonData::~AddonData() { g_live.fetch_sub(1, std::memory_order_relaxed); }

AddonData& AddonData::Install(Napi::Env env) {
  std::unique_ptr<AddonData> data(new AddonData());
  AddonData* raw = data.get();
  // The hook is the single owner: whichever of it and Node's instance-data
  // finalizer runs first, the finalizer never frees and nothing reads the
  // instance data once cleanup hooks run (no more JS executes).
  if (env.AddCleanupHook(OnEnvCleanup, raw).IsEmpty()) {
    // Built with C++ exceptions (NODE_ADDON_API_CPP_EXCEPTIONS): module
    // loading fails with this message; `data` frees the state.
    throw Napi::Error::New(env, "hotpath_native: cannot register the environment cleanup hook");
  }
  data.release();  // now owned by the cleanup hook
  env.SetInstanceData<AddonData, BorrowedFinalizer>(raw);
  return *raw;
}

AddonData& AddonData::Of(Napi::Env env) { return *env.GetInstanceData<AddonData>(); }

EnvCounters AddonData::Counters() {
  EnvCounters counters;
  counters.created = g_created.load(std::memory_order_relaxed);
  counters.live = g_live.load(std::memory_order_relaxed);
  return counters;
}

void AddonData::OnEnvCleanup(AddonData* data) { std::unique_ptr<AddonData> owned(data); }

}  // namespace hotpath::napi
