// executor_check's set-up helpers and phase A (executor_check.h): device vs
// host results on every model.
#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <utility>

#include "executor_check.h"
#include "executor_check_runner.h"

namespace hotpath::bench {

using executor::Executor;
using executor::ExecutorConfig;
using executor::GraphPlan;

namespace {

constexpr uint32_t kCheckMaxRows = 256;  // largest batch compared in phase A

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void WriteComparison(JsonWriter& json, const Comparison& c) {
  json.FieldUint("elements", c.elements);
  json.FieldUint("failures", c.failures);
  json.Field("rtol", c.rtol);
  json.Field("max_abs", c.max_abs);
  json.Field("max_ratio", c.max_ratio);
  json.Field("ok", c.ok());
  if (!c.error.empty()) json.Field("error", c.error);
  if (!c.detail.empty()) json.Field("detail", c.detail);
  if (c.failures > 0) {
    json.Key("worst");
    json.BeginObject();
    json.FieldUint("index", c.worst);
    json.Field("device", c.worst_a);
    json.Field("host", c.worst_b);
    json.EndObject();
  }
}

void WriteFacts(JsonWriter& json, const LoadedExecutor& loaded) {
  json.BeginObject();
  json.Field("kernels", loaded.exec->kernels_name());
  json.FieldUint("weights_bytes", loaded.exec->weights_bytes());
  json.FieldUint("workspace_bytes", loaded.exec->workspace_bytes());
  json.FieldUint("steps", loaded.exec->step_count());
  json.FieldUint("instances", loaded.exec->instances());
  json.Field("create_ms", loaded.create_ms);
  json.EndObject();
}

void WriteIo(JsonWriter& json, const std::vector<executor::IoSpec>& specs) {
  json.BeginArray();
  for (const executor::IoSpec& s : specs) {
    json.BeginObject();
    json.Field("name", s.name);
    json.Field("dtype", executor::DTypeName(s.dtype));
    json.Key("dims");
    json.BeginArray();
    for (int64_t d : s.dims) json.Int(d);
    json.EndArray();
    json.EndObject();
  }
  json.EndArray();
}

std::vector<uint32_t> CheckBatches(uint32_t rows) {
  std::set<uint32_t> batches = {1, std::min<uint32_t>(7, rows), std::min(rows, kCheckMaxRows)};
  return {batches.begin(), batches.end()};
}

}  // namespace

void CheckContext::Fail(const std::string& what) {
  std::fprintf(stderr, "executor_check: FAIL %s\n", what.c_str());
  failures.push_back(what);
}

void CheckContext::Note(const std::string& what) {
  std::fprintf(stderr, "executor_check: note: %s\n", what.c_str());
  notes.push_back(what);
}

Result<LoadedExecutor> Load(CheckContext& /*ctx*/, const GraphPlan& plan, DeviceSlot& slot, uint32_t instances) {
  LoadedExecutor loaded;
  Result<arena::OwnerId> owner = slot.arena->CreateOwner(arena::OwnerKind::kModel, plan.model_name + "@" + slot.kernels);
  if (!owner.ok()) return owner.status();
  loaded.owner = owner.value();
  ExecutorConfig config;
  config.instances = instances;
  config.device = slot.device;
  config.arena = slot.arena;
  config.owner = loaded.owner;
  const auto start = std::chrono::steady_clock::now();
  Result<std::unique_ptr<Executor>> made = Executor::Create(plan, config);
  loaded.create_ms = Ms(std::chrono::steady_clock::now() - start);
  if (!made.ok()) {
    (void)slot.arena->DestroyOwner(loaded.owner);
    return made.status();
  }
  loaded.exec = std::move(made).value();
  return loaded;
}

void Unload(CheckContext& ctx, LoadedExecutor& loaded, DeviceSlot& slot) {
  if (loaded.owner == arena::kNoOwner) return;
  loaded.exec.reset();
  Result<arena::ReleaseSummary> left = slot.arena->DestroyOwner(loaded.owner);
  loaded.owner = arena::kNoOwner;
  if (!left.ok()) {
    ctx.Fail("DestroyOwner after an executor (" + slot.kernels + "): " + left.status().ToString());
  } else if (left.value().bytes > 0) {
    ctx.Fail("an executor on " + slot.kernels + " left " + std::to_string(left.value().bytes) + " bytes in " +
             std::to_string(left.value().blocks) + " arena blocks after it was destroyed");
  }
}

void CheckModels(CheckContext& ctx, JsonWriter& json) {
  json.Key("models");
  json.BeginArray();
  for (CheckModel& model : ctx.models) {
    std::fprintf(stderr, "executor_check: %s (%s)\n", model.name.c_str(), model.source.c_str());
    json.BeginObject();
    json.Field("name", model.name);
    json.Field("source", model.source);
    json.Field("generated", model.generated);
    json.FieldUint("max_batch_size", model.plan.max_batch_size);
    Result<LoadedExecutor> host = Load(ctx, model.plan, ctx.host, 1);
    if (!host.ok()) {
      // Valid ONNX the executor does not run (a tree ensemble, say) is the
      // onnxruntime fallback's business, not a failed check.
      const bool unsupported = host.status().code() == StatusCode::kFailedPrecondition;
      json.Field("status", unsupported ? "unsupported" : "failed");
      json.Field("reason", host.status().ToString());
      if (unsupported) ctx.Note(model.name + ": not run by the executor: " + host.status().message());
      if (!unsupported) ctx.Fail(model.name + ": host executor: " + host.status().ToString());
      json.EndObject();
      continue;
    }
    LoadedExecutor& reference = host.value();
    json.Key("inputs");
    WriteIo(json, reference.exec->inputs());
    json.Key("outputs");
    WriteIo(json, reference.exec->outputs());
    Result<JobInputs> inputs = PrepareInputs(*reference.exec, model.samples);
    if (!inputs.ok()) {
      ctx.Fail(model.name + ": samples: " + inputs.status().ToString());
      json.Field("status", "failed");
      json.Field("reason", inputs.status().ToString());
      json.EndObject();
      Unload(ctx, reference, ctx.host);
      continue;
    }
    const std::vector<uint32_t> batches = CheckBatches(inputs.value().rows);
    std::vector<JobsResult> expected;
    bool ok = true;
    for (uint32_t batch : batches) {
      expected.push_back(RunJobs(*reference.exec, inputs.value(), JobsConfig{batch, 1, 1, 0, 1}));
      if (!expected.back().status.ok()) {
        ctx.Fail(model.name + ": host run at batch " + std::to_string(batch) + ": " +
                 expected.back().status.ToString());
        ok = false;
      }
    }
    // A row's result must not depend on the batch it is in: each smaller
    // batch against the first rows of the largest, on the host itself.
    std::vector<Comparison> consistency;
    for (size_t b = 0; b + 1 < batches.size(); ++b) {
      Comparison c;
      if (expected[b].status.ok() && expected.back().status.ok()) {
        std::vector<std::vector<uint8_t>> head;
        for (size_t o = 0; o < expected.back().outputs.size(); ++o) {
          const std::vector<uint8_t>& all = expected.back().outputs[o];
          const size_t bytes = std::min<size_t>(all.size(), reference.exec->OutputBytes(o, batches[b]));
          head.emplace_back(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(bytes));
        }
        c = CompareOutputs(expected[b].outputs, head, reference.exec->outputs());
      } else {
        c.error = "a host run failed";
      }
      if (!c.ok()) {
        ok = false;
        ctx.Fail(model.name + " on host: batch " + std::to_string(batches[b]) + " differs from the first rows of batch " +
                 std::to_string(batches.back()) + ": " + DescribeFailure(c));
      }
      consistency.push_back(c);
    }
    json.Key("facts");
    json.BeginObject();
    json.Key("host");
    WriteFacts(json, reference);
    std::vector<std::pair<std::string, std::vector<Comparison>>> compared;
    for (DeviceSlot& slot : ctx.cuda) {
      Result<LoadedExecutor> device = Load(ctx, model.plan, slot, 1);
      if (!device.ok()) {
        ctx.Fail(model.name + ": executor on " + slot.kernels + ": " + device.status().ToString());
        ok = false;
        continue;
      }
      json.Key(slot.kernels);
      WriteFacts(json, device.value());
      std::vector<Comparison> results;
      for (size_t b = 0; b < batches.size(); ++b) {
        JobsResult got = RunJobs(*device.value().exec, inputs.value(), JobsConfig{batches[b], 1, 1, 0, 1});
        Comparison c;
        if (!got.status.ok()) {
          c.error = got.status.ToString();
        } else if (expected[b].status.ok()) {
          c = CompareOutputs(got.outputs, expected[b].outputs, reference.exec->outputs());
        } else {
          c.error = "no host reference";
        }
        if (!c.ok()) {
          ok = false;
          ctx.Fail(model.name + " on " + slot.kernels + " at batch " + std::to_string(batches[b]) + ": " +
                   DescribeFailure(c));
        }
        results.push_back(c);
      }
      compared.emplace_back(slot.kernels, std::move(results));
      Unload(ctx, device.value(), slot);
    }
    json.EndObject();  // facts
    json.Key("checks");
    json.BeginArray();
    for (size_t b = 0; b < consistency.size(); ++b) {
      json.BeginObject();
      json.Field("kernels", "host");
      json.FieldUint("batch", batches[b]);
      json.Field("reference", "host, first rows of batch " + std::to_string(batches.back()));
      WriteComparison(json, consistency[b]);
      json.EndObject();
    }
    for (const auto& [kernels, results] : compared) {
      for (size_t b = 0; b < results.size(); ++b) {
        json.BeginObject();
        json.Field("kernels", kernels);
        json.FieldUint("batch", batches[b]);
        json.Field("reference", "host, same batch");
        WriteComparison(json, results[b]);
        json.EndObject();
      }
    }
    json.EndArray();
    json.Field("status", ok ? (ctx.cuda.empty() ? "host-only" : "ok") : "failed");
    json.EndObject();
    Unload(ctx, reference, ctx.host);
  }
  json.EndArray();
}

}  // namespace hotpath::bench
