// JS bindings for build and environment facts: version(), buildInfo(),
// envInfo(). Paired with src/native/device.ts (build facts) and
// src/native/loader.ts (environment facts for logging).
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds:
//   version(): string                       package version compiled in
//   buildInfo(): {version, cudaCompiledIn, build: 'cmake'|'gyp', napiVersion}
//   envInfo(): {id, live, created}          this environment's AddonData id and
//                                           the process-wide environment counts
void RegisterBuildInfoBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
