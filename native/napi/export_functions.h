// Puts a binding's functions on the module's exports, each bound to the
// binding's per-environment state (`data`, read back with info.Data()). One
// helper so every *_binding.cc registers the same way.
//
// Thread-safety: module initialisation only (the JS thread of `env`).
#pragma once

#include <napi.h>

#include <initializer_list>

namespace hotpath::napi {

struct ExportedFunction {
  const char* name;  // the export's name, also the JS function's name
  Napi::Function::Callback callback;
};

inline void ExportFunctions(Napi::Env env, Napi::Object exports, void* data,
                            std::initializer_list<ExportedFunction> functions) {
  for (const ExportedFunction& function : functions) {
    exports.Set(function.name, Napi::Function::New(env, function.callback, function.name, data));
  }
}

}  // namespace hotpath::napi
