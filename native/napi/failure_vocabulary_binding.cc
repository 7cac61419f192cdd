// failureVocabulary() binding. See failure_vocabulary_binding.h.
#include "napi/failure_vocabulary_binding.h"

#include "batcher/execution_target.h"
#include "batcher/types.h"
#include "common/failure_kind.h"
#include "common/status.h"

namespace hotpath::napi {

namespace {

namespace bt = hotpath::batcher;

Napi::String Text(Napi::Env env, const char* text) { return Napi::String::New(env, text); }

Napi::Value FailureVocabularyJs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Object out = Napi::Object::New(env);

  Napi::Array kinds = Napi::Array::New(env);
  for (FailureKind kind : kAllFailureKinds) kinds.Set(kinds.Length(), Text(env, FailureKindName(kind)));
  out.Set("kinds", kinds);

  Napi::Array codes = Napi::Array::New(env);
  for (StatusCode code : kAllStatusCodes) {
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("name", Text(env, StatusCodeName(code)));
    entry.Set("kind", code == StatusCode::kOk ? env.Null() : Text(env, FailureKindName(KindOfStatusCode(code))));
    codes.Set(codes.Length(), entry);
  }
  out.Set("statusCodes", codes);

  Napi::Array rejections = Napi::Array::New(env);
  for (bt::RejectKind reason : bt::kAllRejectKinds) {
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("name", Text(env, bt::RejectKindName(reason)));
    entry.Set("code", Text(env, StatusCodeName(bt::RejectStatusCode(reason))));
    entry.Set("kind", Text(env, FailureKindName(bt::KindOf(reason))));
    rejections.Set(rejections.Length(), entry);
  }
  out.Set("rejections", rejections);

  Napi::Array failures = Napi::Array::New(env);
  for (bt::ExecutionFailure failure : bt::kAllExecutionFailures) {
    Napi::Object entry = Napi::Object::New(env);
    entry.Set("name", Text(env, bt::ExecutionFailureName(failure)));
    entry.Set("code", Text(env, StatusCodeName(bt::StatusCodeOf(failure))));
    entry.Set("kind", Text(env, FailureKindName(bt::KindOf(failure))));
    entry.Set("workerMayReport", Napi::Boolean::New(env, bt::WorkerMayReport(failure)));
    failures.Set(failures.Length(), entry);
  }
  out.Set("executionFailures", failures);
  return out;
}

}  // namespace

void RegisterFailureVocabularyBinding(Napi::Env env, Napi::Object exports) {
  exports.Set("failureVocabulary", Napi::Function::New(env, FailureVocabularyJs, "failureVocabulary"));
}

}  // namespace hotpath::napi
