// Shared fixtures of the executor tests on the host device
// (executor_run_test.cc, executor_lifecycle_test.cc): an arena with a tenant
// and an owner, a synchronous Run, a tolerance check, naive double-precision
// reference helpers, and an MLP plan with its reference.
//
// Thread-safety: test-local values; Run may be called from any thread.
#pragma once

#include <chrono>
#include <cmath>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "arena/arena.h"
#include "executor/executor.h"
#include "tests/check.h"
#include "tests/executor_plans.h"

namespace hotpath::executor::testing {

using hotpath::test::Checker;
using Vec = std::vector<double>;

inline constexpr uint32_t kMaxBatch = 8;

struct Env {
  std::shared_ptr<arena::Arena> arena;
  arena::TenantId tenant = 0;
  arena::OwnerId owner = 0;

  Env() {
    arena::ArenaConfig config;
    config.backend.kind = arena::BackendKind::kHost;
    config.backend.capacity_bytes = 256ull << 20;
    arena = arena::Arena::Create("exec-test", config, arena::MakeHostBackend(256ull << 20)).value();
    tenant = arena->CreateTenant("team", 64ull << 20).value();
    owner = arena->CreateOwner(arena::OwnerKind::kModel, "model/1").value();
  }
  ExecutorConfig Config(uint32_t instances = 1) const {
    return ExecutorConfig{instances, HostDevice(), arena, tenant, owner};
  }
  uint64_t TenantUsed() const {
    for (const arena::TenantStats& t : arena->Stats().tenants) {
      if (t.id == tenant) return t.used;
    }
    return ~0ull;
  }
};

// Runs one job and waits for it.
inline ExecOutcome Run(Executor& exec, uint32_t rows, const std::vector<const void*>& inputs,
                std::vector<std::vector<float>>& outputs) {
  ExecJob job;
  job.rows = rows;
  for (size_t i = 0; i < inputs.size(); ++i) job.inputs.push_back({inputs[i], exec.InputBytes(i, rows)});
  outputs.resize(exec.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i].assign(exec.OutputBytes(i, rows) / sizeof(float), -7.0f);
    job.outputs.push_back({outputs[i].data(), outputs[i].size() * sizeof(float)});
  }
  std::promise<ExecOutcome> promise;
  job.done = [&promise](ExecOutcome outcome) { promise.set_value(std::move(outcome)); };
  std::future<ExecOutcome> future = promise.get_future();
  exec.Submit(std::move(job));
  if (future.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    return ExecOutcome{Status(StatusCode::kDeadlineExceeded, "job never finished"), FaultClass::kNone, {}};
  }
  return future.get();
}

inline bool Near(Checker& c, const std::vector<float>& got, const Vec& want, const std::string& what,
          double rtol = 1e-5, double atol = 1e-6) {
  if (!c.Equal(got.size(), want.size(), what + ": element count")) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > atol + rtol * std::fabs(want[i])) {
      return c.True(false, what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                               ", expected " + std::to_string(want[i]));
    }
  }
  return true;
}

// --- Naive double references ------------------------------------------------

inline std::string Dims(const std::vector<int64_t>& dims) {
  std::string out;
  for (int64_t d : dims) out += (out.empty() ? "" : ",") + std::to_string(d);
  return "[" + out + "]";
}

inline Vec ToVec(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// y[r, n] = sum_k x[r, k] * w[k, n] (+ bias[n]); w given [K, N], or [N, K] when trans_w.
inline Vec Dense(const Vec& x, size_t rows, size_t k, const Vec& w, size_t n, const Vec& bias, bool trans_w = false) {
  Vec y(rows * n, 0.0);
  for (size_t r = 0; r < rows; ++r) {
    for (size_t j = 0; j < n; ++j) {
      double acc = bias.empty() ? 0.0 : bias[j];
      for (size_t i = 0; i < k; ++i) acc += x[r * k + i] * (trans_w ? w[j * k + i] : w[i * n + j]);
      y[r * n + j] = acc;
    }
  }
  return y;
}
template <typename F>
inline Vec Map(Vec v, F f) {
  for (double& x : v) x = f(x);
  return v;
}
inline double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }
inline double Relu(double x) { return x > 0 ? x : 0; }

// --- The MLP: x[B,16] -> Gemm+Relu -> Gemm(transB)+Relu -> Gemm -> Sigmoid --

struct Mlp {
  PlanMaker p{kMaxBatch};
  std::vector<float> w1 = PlanMaker::RandomFloats(16 * 32, 1), b1 = PlanMaker::RandomFloats(32, 2);
  std::vector<float> w2 = PlanMaker::RandomFloats(8 * 32, 3), b2 = PlanMaker::RandomFloats(8, 4);
  std::vector<float> w3 = PlanMaker::RandomFloats(8, 5), b3 = PlanMaker::RandomFloats(1, 6);

  Mlp() {
    const int32_t x = p.Input("x", {-1, 16});
    int32_t h = p.Node("Relu", {p.Node("Gemm", {x, p.Floats("w1", {16, 32}, w1), p.Floats("b1", {32}, b1)})});
    h = p.Node("Relu", {p.Node("Gemm", {h, p.Floats("w2", {8, 32}, w2), p.Floats("b2", {8}, b2)},
                               {{"transB", Int(1)}})});
    p.Output(p.Node("Sigmoid", {p.Node("Gemm", {h, p.Floats("w3", {8, 1}, w3), p.Floats("b3", {1}, b3)})}));
  }
  Vec Reference(const std::vector<float>& x, size_t rows) const {
    Vec h = Map(Dense(ToVec(x), rows, 16, ToVec(w1), 32, ToVec(b1)), Relu);
    h = Map(Dense(h, rows, 32, ToVec(w2), 8, ToVec(b2), true), Relu);
    return Map(Dense(h, rows, 8, ToVec(w3), 1, ToVec(b3)), Sigmoid);
  }
};

}  // namespace hotpath::executor::testing
