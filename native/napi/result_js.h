// How core results cross to JS: errors are data, not exceptions.
//
// Every fallible binding returns either `{ok: true, value}` or
// `{ok: false, code, message}` (code is a StatusCodeName, e.g. "INTERNAL").
// src/native/native-error.ts unwraps it and throws a typed NativeError that
// carries the JS call-site stack.
//
// Thread-safety: JS thread only (takes a Napi::Env).
#pragma once

#include <napi.h>

#include "common/status.h"

namespace hotpath::napi {

Napi::Object OkResult(Napi::Env env, Napi::Value value);

// `status` must not be OK.
Napi::Object ErrorResult(Napi::Env env, const Status& status);

}  // namespace hotpath::napi
