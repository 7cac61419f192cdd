// The models executor_check runs: plan files exported from the sample models
// (bench/gpu/export-plans.ts) and MLPs generated here from a seed, so the
// large benchmark model is built on the GPU node instead of being sent.
//
// The generator mirrors models/lib/mlp.ts and models/lib/seeded-random.ts
// bit for bit (mulberry32, the same uniform draws, Gemm with transB=1, Relu
// between layers): MlpPlan("ranker_mlp", {256, 1024, 1024, 256, 1},
// 0x4a4c3e, ...) has the weights of models/ranker_mlp/1/model.onnx, and
// "mlp_4x1024" is the model of `npm run bench -- gpu`.
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "executor/plan.h"
#include "executor/plan_io.h"

namespace hotpath::bench {

// models/lib/seeded-random.ts in C++: mulberry32, uniform = low + (high -
// low) * u32 / 2^32 in double, stored as float. The executor_check target
// is built with -ffp-contract=off so no fused multiply-add changes a bit.
class SeededRandom {
 public:
  explicit SeededRandom(uint32_t seed) : state_(seed) {}
  uint32_t NextUint32() {
    state_ += 0x6d2b79f5u;
    uint32_t t = state_;
    t = (t ^ (t >> 15)) * (t | 1u);
    t ^= t + (t ^ (t >> 7)) * (t | 61u);
    return t ^ (t >> 14);
  }
  double Next() { return NextUint32() / 4294967296.0; }
  double Uniform(double low, double high) { return low + (high - low) * Next(); }

 private:
  uint32_t state_;
};

inline constexpr uint32_t kRankerSeed = 0x4a4c3e;  // models/lib/sample-models.ts SEED_RANKER
inline constexpr uint32_t kMlp4x1024Seed = 0x4b1024;  // bench/suites/gpu.ts
// The benchmark's inputs (executor_check_bench.cc); phase A's generated
// models take UniformSamples(plan, 256, seed ^ 0x5eed).
inline constexpr uint32_t kBenchSeed = 0xbe7c4;

struct CheckModel {
  std::string name;
  std::string source;  // the plan file, or "generated (seed 0x...)"
  executor::GraphPlan plan;
  executor::SampleInputs samples;  // model input order; rows >= 1
  bool generated = false;
};

// An MLP as models/lib/mlp.ts builds it: input "features" [-1, sizes[0]],
// Gemm(transB=1) + Relu per hidden layer, a linear last layer to "score";
// weights from initMlp(SeededRandom(seed), {sizes, finalActivation: 'none'}).
executor::GraphPlan MlpPlan(const std::string& name, const std::vector<int64_t>& sizes, uint32_t seed,
                            uint32_t max_batch_size);

// `rows` rows (1 when the plan does not batch) of every graph input, uniform
// in [-1, 1) from `seed`. FAILED_PRECONDITION for an input that is not FLOAT
// (ids need the table sizes only the exporter knows).
Result<executor::SampleInputs> UniformSamples(const executor::GraphPlan& plan, uint32_t rows, uint32_t seed);

// Every <name>.plan in `dir` with its <name>.sample, sorted by name. A plan
// without a sample file gets UniformSamples when it can; otherwise a note
// says why it was left out. A missing directory is an empty list.
Result<std::vector<CheckModel>> LoadPlanDir(const std::string& dir, std::vector<std::string>* notes);

// True when every initializer of `a` has a same-named initializer in `b`
// with the same dtype, dims and bytes, and the counts match.
bool SameInitializers(const executor::GraphPlan& a, const executor::GraphPlan& b);

}  // namespace hotpath::bench
