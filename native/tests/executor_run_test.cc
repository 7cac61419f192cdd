// Tests for executor/executor.h on the host device with the real host
// kernels: results against naive double-precision references (an MLP at
// several row counts, a CTR-shaped graph that touches every op, Gemm/MatMul
// variants on a fixed-shape graph), and concurrency across instances and
// submitting threads. Lifecycle tests are in executor_lifecycle_test.cc.
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "executor/executor.h"
#include "tests/check.h"
#include "tests/executor_fixtures.h"
#include "tests/executor_plans.h"

namespace hotpath::executor {
namespace {

using namespace testing;  // NOLINT: the fixtures are this test's vocabulary

void TestMlp(Checker& c) {
  Env env;
  Mlp mlp;
  auto created = Executor::Create(mlp.p.plan, env.Config());
  if (!c.True(created.ok(), "MLP: " + created.status().ToString())) return;
  Executor& exec = *created.value();
  c.Equal(exec.step_count(), 3u, "one fused step per layer");
  c.Equal(std::string(exec.device_kind()), std::string("host"), "device kind");
  c.Equal(Dims(exec.OutputShape(0, 5)), std::string("[5,1]"), "output shape");
  for (uint32_t rows : {1u, 3u, kMaxBatch}) {
    const std::vector<float> x = PlanMaker::RandomFloats(rows * 16, 100 + rows, 2.0f);
    std::vector<std::vector<float>> out;
    ExecOutcome outcome = Run(exec, rows, {x.data()}, out);
    if (!c.True(outcome.status.ok(), "MLP run: " + outcome.status.ToString())) continue;
    Near(c, out[0], mlp.Reference(x, rows), "MLP rows " + std::to_string(rows));
  }
  const ExecutorStats stats = exec.Stats();
  c.Equal(stats.executions, uint64_t{3}, "executions");
  c.Equal(stats.rows, uint64_t{1 + 3 + kMaxBatch}, "rows");
}

// --- A CTR-shaped graph touching every op ------------------------------------
//
// ids[B,3] (INT64) -Gather(table[10,4])-> [B,3,4] -Transpose(0,2,1)-> [B,4,3]
//   -Reshape[0,-1]-> [B,12];  dense[B,5] -Cast f16 -Cast f32-> Clip[-1,1]
// Concat(axis 1) -> [B,17] -LayerNorm-> -MatMul[17,8] -Add b -Relu-> [B,8]
//   -Unsqueeze(2) -BatchNorm(C=8) -Squeeze(2) -Sub(mean_c) -Mul(k) -Div(2)
//   -Tanh -> h[B,8]
// out0 = Softmax(MatMul(h, w2[8,3]))                      [B,3]
// out1 = Sigmoid(ReduceMean(LeakyRelu(h), axis 1, keep))  [B,1]
// out2 = Flatten(ReduceSum(Identity(h3)), axes 1)         [B,4] from h3 = Reshape(h,[0,2,4])
struct Ctr {
  PlanMaker p{kMaxBatch, 17};
  std::vector<float> table = PlanMaker::RandomFloats(40, 11), ln_s = PlanMaker::RandomFloats(17, 12, 1.0f),
                     ln_b = PlanMaker::RandomFloats(17, 13), w1 = PlanMaker::RandomFloats(17 * 8, 14),
                     b1 = PlanMaker::RandomFloats(8, 15), bn_s = PlanMaker::RandomFloats(8, 16),
                     bn_b = PlanMaker::RandomFloats(8, 17), bn_m = PlanMaker::RandomFloats(8, 18),
                     bn_v = Map01(PlanMaker::RandomFloats(8, 19)), sub = PlanMaker::RandomFloats(8, 20),
                     w2 = PlanMaker::RandomFloats(8 * 3, 21, 1.0f);

  static std::vector<float> Map01(std::vector<float> v) {
    for (float& x : v) x = 0.5f + std::fabs(x);
    return v;
  }

  Ctr() {
    const int32_t ids = p.Input("ids", {-1, 3}, DType::kInt64), dense = p.Input("dense", {-1, 5});
    int32_t emb = p.Node("Gather", {p.Floats("table", {10, 4}, table), ids});
    emb = p.Node("Transpose", {emb}, {{"perm", Ints({0, 2, 1})}});
    emb = p.Node("Reshape", {emb, p.Int64s("shape12", {2}, {0, -1})});
    int32_t d = p.Node("Cast", {p.Node("Cast", {dense}, {{"to", Int(10)}})}, {{"to", Int(1)}});
    d = p.Node("Clip", {d, p.Floats("lo", {}, {-1.0f}), p.Floats("hi", {}, {1.0f})});
    int32_t h = p.Node("Concat", {emb, d}, {{"axis", Int(1)}});
    h = p.Node("LayerNormalization", {h, p.Floats("ln_s", {17}, ln_s), p.Floats("ln_b", {17}, ln_b)},
               {{"epsilon", testing::Float(1e-5f)}});
    h = p.Node("Relu", {p.Node("Add", {p.Node("MatMul", {h, p.Floats("w1", {17, 8}, w1)}), p.Floats("b1", {8}, b1)})});
    h = p.Node("Unsqueeze", {h, p.Int64s("ax2", {1}, {2})});
    h = p.Node("BatchNormalization", {h, p.Floats("bn_s", {8}, bn_s), p.Floats("bn_b", {8}, bn_b),
                                      p.Floats("bn_m", {8}, bn_m), p.Floats("bn_v", {8}, bn_v)});
    h = p.Node("Squeeze", {h, p.Int64s("ax2b", {1}, {2})});
    h = p.Node("Sub", {h, p.Floats("sub", {8}, sub)});
    h = p.Node("Mul", {h, p.Floats("k", {1}, {1.5f})});
    h = p.Node("Tanh", {p.Node("Div", {h, p.Floats("two", {}, {2.0f})})});
    p.Output(p.Node("Softmax", {p.Node("MatMul", {h, p.Floats("w2", {8, 3}, w2)})}));
    const int32_t leaky = p.Node("LeakyRelu", {h}, {{"alpha", testing::Float(0.2f)}});
    p.Output(p.Node("Sigmoid", {p.Node("ReduceMean", {leaky}, {{"axes", Ints({1})}})}));
    const int32_t h3 = p.Node("Reshape", {p.Node("Identity", {h}), p.Int64s("shape24", {3}, {0, 2, 4})});
    p.Output(p.Node("Flatten", {p.Node("ReduceSum", {h3, p.Int64s("ax1", {1}, {1})}, {{"keepdims", Int(0)}})}));
  }

  std::vector<Vec> Reference(const std::vector<int64_t>& ids, const std::vector<float>& dense, size_t rows) const {
    Vec x(rows * 17);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t f = 0; f < 4; ++f) {  // transposed: [B,4,3] flattened
        for (size_t j = 0; j < 3; ++j) x[r * 17 + f * 3 + j] = table[static_cast<size_t>(ids[r * 3 + j]) * 4 + f];
      }
      for (size_t j = 0; j < 5; ++j) {
        const double v = dense[r * 5 + j];  // the FLOAT16 round trip is checked with a wider tolerance
        x[r * 17 + 12 + j] = std::min(1.0, std::max(-1.0, v));
      }
      double mean = 0, var = 0;
      for (size_t j = 0; j < 17; ++j) mean += x[r * 17 + j] / 17;
      for (size_t j = 0; j < 17; ++j) var += (x[r * 17 + j] - mean) * (x[r * 17 + j] - mean) / 17;
      for (size_t j = 0; j < 17; ++j) x[r * 17 + j] = (x[r * 17 + j] - mean) / std::sqrt(var + 1e-5) * ln_s[j] + ln_b[j];
    }
    Vec h = Map(Dense(x, rows, 17, ToVec(w1), 8, ToVec(b1)), Relu);
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = 0; c < 8; ++c) {
        double& v = h[r * 8 + c];
        v = (v - bn_m[c]) / std::sqrt(bn_v[c] + 1e-5) * bn_s[c] + bn_b[c];
        v = std::tanh((v - sub[c]) * 1.5 / 2.0);
      }
    }
    Vec logits = Dense(h, rows, 8, ToVec(w2), 3, {});
    Vec out0(rows * 3), out1(rows), out2(rows * 4, 0.0);
    for (size_t r = 0; r < rows; ++r) {
      double mx = -1e300, sum = 0, leaky = 0;
      for (size_t j = 0; j < 3; ++j) mx = std::max(mx, logits[r * 3 + j]);
      for (size_t j = 0; j < 3; ++j) sum += std::exp(logits[r * 3 + j] - mx);
      for (size_t j = 0; j < 3; ++j) out0[r * 3 + j] = std::exp(logits[r * 3 + j] - mx) / sum;
      for (size_t j = 0; j < 8; ++j) leaky += (h[r * 8 + j] < 0 ? 0.2 * h[r * 8 + j] : h[r * 8 + j]) / 8;
      out1[r] = Sigmoid(leaky);
      for (size_t j = 0; j < 8; ++j) out2[r * 4 + j % 4] += h[r * 8 + j];
    }
    return {out0, out1, out2};
  }
};

void TestCtrGraph(Checker& c) {
  Env env;
  Ctr ctr;
  auto created = Executor::Create(ctr.p.plan, env.Config());
  if (!c.True(created.ok(), "CTR graph: " + created.status().ToString())) return;
  Executor& exec = *created.value();
  for (uint32_t rows : {1u, 5u, kMaxBatch}) {
    std::vector<int64_t> ids(rows * 3);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>((i * 7 + rows) % 10) - (i % 4 == 0 ? 10 : 0);
    // Dense features exactly representable in FLOAT16, so the Cast round trip is exact.
    std::vector<float> dense = PlanMaker::RandomFloats(rows * 5, 200 + rows, 2.0f);
    for (float& v : dense) v = std::round(v * 64.0f) / 64.0f;
    std::vector<int64_t> wrapped = ids;
    for (int64_t& i : wrapped) i = i < 0 ? i + 10 : i;
    std::vector<std::vector<float>> out;
    ExecOutcome outcome = Run(exec, rows, {ids.data(), dense.data()}, out);
    if (!c.True(outcome.status.ok(), "CTR run: " + outcome.status.ToString())) continue;
    const std::vector<Vec> want = ctr.Reference(wrapped, dense, rows);
    const std::string tag = " rows " + std::to_string(rows);
    Near(c, out[0], want[0], "softmax" + tag, 1e-5, 1e-6);
    Near(c, out[1], want[1], "reduce-mean" + tag, 1e-5, 1e-6);
    Near(c, out[2], want[2], "reduce-sum" + tag, 1e-5, 1e-6);
    c.Equal(Dims(exec.OutputShape(2, rows)), "[" + std::to_string(rows) + ",4]", "out2 shape");
  }
  {  // an index out of range fails the job as INVALID_ARGUMENT, not a device fault
    std::vector<int64_t> ids = {0, 1, 10};
    std::vector<float> dense(5, 0.0f);
    std::vector<std::vector<float>> out;
    ExecOutcome outcome = Run(exec, 1, {ids.data(), dense.data()}, out);
    c.Equal(StatusCodeName(outcome.status.code()), std::string("INVALID_ARGUMENT"), "bad index");
    c.Contains(outcome.status.message(), "(Gather)", "the node is named");
    c.True(outcome.fault == FaultClass::kNone && !exec.dead(), "not a device fault");
  }
}

// --- Gemm/MatMul variants, Concat and Transpose on a fixed-shape graph -------

void TestFixedShapeVariants(Checker& c) {
  Env env;
  PlanMaker p(0);
  const auto a = PlanMaker::RandomFloats(12, 31), a2 = PlanMaker::RandomFloats(12, 32),
             x = PlanMaker::RandomFloats(24, 33), v = PlanMaker::RandomFloats(4, 34);
  const auto wt = PlanMaker::RandomFloats(20, 35), col = PlanMaker::RandomFloats(3, 36),
             w = PlanMaker::RandomFloats(20, 37), full = PlanMaker::RandomFloats(15, 38),
             yb = PlanMaker::RandomFloats(40, 39), extra = PlanMaker::RandomFloats(8, 40);
  const int32_t ia = p.Input("a", {3, 4}), ia2 = p.Input("a2", {4, 3}), ix = p.Input("x", {2, 3, 4}),
                iv = p.Input("v", {4});
  p.Output(p.Node("Gemm", {ia, p.Floats("wt", {5, 4}, wt), p.Floats("col", {3, 1}, col)},
                  {{"transB", Int(1)}, {"alpha", testing::Float(0.5f)}, {"beta", testing::Float(2.0f)}}));
  p.Output(p.Node("Gemm", {ia2, p.Floats("w", {4, 5}, w), p.Floats("full", {3, 5}, full)}, {{"transA", Int(1)}}));
  p.Output(p.Node("MatMul", {ix, p.Floats("yb", {2, 4, 5}, yb)}));
  p.Output(p.Node("MatMul", {iv, p.Floats("w_again", {4, 5}, w)}));
  p.Output(p.Node("Concat", {ia, p.Floats("extra", {2, 4}, extra)}, {{"axis", Int(0)}}));
  p.Output(p.Node("Transpose", {ix}, {{"perm", Ints({2, 0, 1})}}));
  auto created = Executor::Create(p.plan, env.Config());
  if (!c.True(created.ok(), "fixed graph: " + created.status().ToString())) return;
  std::vector<std::vector<float>> out;
  ExecOutcome outcome = Run(*created.value(), 1, {a.data(), a2.data(), x.data(), v.data()}, out);
  if (!c.True(outcome.status.ok(), "fixed run: " + outcome.status.ToString())) return;
  Vec g0(15), g1(15), mm(30), mv(5), cat(20), tr(24);
  for (size_t i = 0; i < 3; ++i) {
    for (size_t j = 0; j < 5; ++j) {
      double s0 = 0, s1 = 0;
      for (size_t k = 0; k < 4; ++k) s0 += a[i * 4 + k] * static_cast<double>(wt[j * 4 + k]);
      for (size_t k = 0; k < 4; ++k) s1 += a2[k * 3 + i] * static_cast<double>(w[k * 5 + j]);
      g0[i * 5 + j] = 0.5 * s0 + 2.0 * col[i];
      g1[i * 5 + j] = s1 + full[i * 5 + j];
    }
  }
  for (size_t b = 0; b < 2; ++b) {
    for (size_t i = 0; i < 3; ++i) {
      for (size_t j = 0; j < 5; ++j) {
        double acc = 0;
        for (size_t k = 0; k < 4; ++k) acc += x[b * 12 + i * 4 + k] * static_cast<double>(yb[b * 20 + k * 5 + j]);
        mm[b * 15 + i * 5 + j] = acc;
      }
      for (size_t k = 0; k < 4; ++k) tr[k * 6 + b * 3 + i] = x[b * 12 + i * 4 + k];  // [4,2,3]
    }
  }
  for (size_t j = 0; j < 5; ++j) {
    for (size_t k = 0; k < 4; ++k) mv[j] += v[k] * static_cast<double>(w[k * 5 + j]);
  }
  for (size_t i = 0; i < 20; ++i) cat[i] = i < 12 ? a[i] : extra[i - 12];
  Near(c, out[0], g0, "Gemm transB alpha beta column bias");
  Near(c, out[1], g1, "Gemm transA full bias");
  Near(c, out[2], mm, "batched MatMul");
  Near(c, out[3], mv, "1-D MatMul");
  Near(c, out[4], cat, "Concat axis 0", 0, 0);
  Near(c, out[5], tr, "Transpose (2,0,1)", 0, 0);
}

// --- Concurrency -------------------------------------------------------------

// 3 instances, 4 submitting threads, 60 jobs each with its own rows and data:
// every result right, every `done` exactly once.
void TestConcurrency(Checker& c) {
  Env env;
  Mlp mlp;
  auto created = Executor::Create(mlp.p.plan, env.Config(3));
  if (!c.True(created.ok(), "concurrent MLP: " + created.status().ToString())) return;
  Executor& exec = *created.value();
  constexpr int kThreads = 4, kJobs = 60;
  struct Slot {
    std::vector<float> x, y;
    uint32_t rows = 0;
    std::atomic<int> done_calls{0};
    std::atomic<bool> ok{false};
  };
  std::vector<Slot> slots(kThreads * kJobs);
  std::atomic<int> finished{0};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int j = 0; j < kJobs; ++j) {
        Slot& slot = slots[static_cast<size_t>(t * kJobs + j)];
        slot.rows = 1 + static_cast<uint32_t>((t * 7 + j) % kMaxBatch);
        slot.x = PlanMaker::RandomFloats(slot.rows * 16, static_cast<uint32_t>(1000 + t * kJobs + j), 2.0f);
        slot.y.assign(slot.rows, -1.0f);
        ExecJob job;
        job.rows = slot.rows;
        job.inputs.push_back({slot.x.data(), slot.x.size() * sizeof(float)});
        job.outputs.push_back({slot.y.data(), slot.y.size() * sizeof(float)});
        job.done = [&slot, &finished, &mu, &cv](ExecOutcome outcome) {
          slot.ok = outcome.status.ok();
          slot.done_calls.fetch_add(1);
          {
            std::lock_guard<std::mutex> guard(mu);
            finished.fetch_add(1);
          }
          cv.notify_all();
        };
        exec.Submit(std::move(job));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished.load() == kThreads * kJobs; });
  }
  c.Equal(finished.load(), kThreads * kJobs, "every job finished");
  int wrong = 0, twice = 0;
  for (Slot& slot : slots) {
    if (slot.done_calls.load() != 1) ++twice;
    const Vec want = mlp.Reference(slot.x, slot.rows);
    for (size_t i = 0; i < want.size(); ++i) {
      if (!slot.ok || std::fabs(slot.y[i] - want[i]) > 1e-6 + 1e-5 * std::fabs(want[i])) ++wrong;
    }
  }
  c.Equal(twice, 0, "done exactly once per job");
  c.Equal(wrong, 0, "concurrent results");
  c.Equal(exec.Stats().executions, uint64_t{kThreads * kJobs}, "executions counted");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::executor;
  TestMlp(check);
  TestCtrGraph(check);
  TestFixedShapeVariants(check);
  TestConcurrency(check);
  return check.ExitCode();
}
