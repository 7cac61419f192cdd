// JS binding for handing an accepted socket to a door thread (a duplicated
// descriptor). Paired with src/native/socket-handoff.ts. Translation only:
// process/socket_handoff.h acts.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds:
//   duplicateSocket(fd: number): {ok, value: number} | {ok:false, code, message}
void RegisterSocketHandoffBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
