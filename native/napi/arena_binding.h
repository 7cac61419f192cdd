// JS bindings for the memory ledger (native/arena). Paired with
// src/native/arena.ts, which validates arguments and throws typed errors;
// these functions only translate, with guard checks on argument types.
//
// Arenas are process-global (arena/registry.h): a JS thread creates one by
// name, other threads (piscina workers) attach to it by name. Each
// environment keeps its own table of attached arenas, addressed from JS by a
// small integer, plus the owners it created and its eviction callbacks.
// The environment's cleanup hook destroys the owners it created (a worker
// that exits leaves zero bytes), shuts down the arenas it created, and drops
// its callbacks. cudaDeviceReset is never called.
//
// Eviction callbacks (onEvict) are JS functions and run synchronously on the
// thread that registered them, while that thread is inside an alloc/reserve
// call that needs room. An eviction needed by another thread (a worker, the
// batcher) cannot call into this thread's JS and is refused.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds the arena* functions (see src/native/arena-binding-types.ts for their
// exact shapes). Call once per environment, after AddonData::Install.
void RegisterArenaBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
