// Per-environment addon state. Node loads the addon once per environment: the
// main thread and every worker_threads worker (piscina loads it in each
// worker). Each environment gets its own AddonData, stored as the env's
// instance data, so nothing native is shared between threads by accident.
//
// Ownership: the environment's cleanup hook owns the AddonData and destroys
// it when the environment tears down (worker exit or process exit). Owners of
// native resources that later issues add (arena tenants, batcher threads,
// CUDA streams) hang off this object and are released in its destructor, which
// runs before the environment is gone.
//
// Thread-safety: an AddonData is touched only on its environment's JS thread.
// The process-wide environment counters are atomics.
#pragma once

#include <napi.h>

#include <cstdint>

namespace hotpath::napi {

struct EnvCounters {
  uint64_t live = 0;     // environments that loaded the addon and are not torn down
  uint64_t created = 0;  // environments that ever loaded the addon in this process
};

class AddonData {
 public:
  // Creates this environment's AddonData, sets it as instance data and
  // registers the cleanup hook that destroys it. Call once, from module init.
  static AddonData& Install(Napi::Env env);
  // The AddonData installed for `env`. Install() must have run.
  static AddonData& Of(Napi::Env env);
  // Process-wide snapshot.
  static EnvCounters Counters();

  AddonData(const AddonData&) = delete;
  AddonData& operator=(const AddonData&) = delete;
  ~AddonData();

  // 1-based, unique within the process, in load order.
  uint64_t id() const { return id_; }

 private:
  AddonData();
  static void OnEnvCleanup(AddonData* data);

  const uint64_t id_;
};

}  // namespace hotpath::napi
