// JS binding for the failure vocabulary shared with TypeScript
// (common/failure_kind.h). Paired with src/native/failure-vocabulary.ts, whose
// test compares it with src/common/error-kinds.ts.
#pragma once

#include <napi.h>

namespace hotpath::napi {

// Adds:
//   failureVocabulary(): {
//     kinds: string[],                                         every FailureKind name
//     statusCodes: [{name, kind | null}],                      OK's kind is null
//     rejections: [{name, code, kind}],                        batcher RejectKind
//     executionFailures: [{name, code, kind, workerMayReport}] batcher ExecutionFailure
//   }
// Built on each call from the native tables; read by tests, never per request.
void RegisterFailureVocabularyBinding(Napi::Env env, Napi::Object exports);

}  // namespace hotpath::napi
