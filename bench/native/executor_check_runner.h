// Running an Executor from executor_check: jobs over a model's sample rows,
// N of them in flight, with per-job latency, and comparing two runs'
// outputs element by element.
//
// Thread-safety: each function runs on the calling thread and waits for
// every job it submitted before it returns; `done` callbacks (instance
// threads) only touch state owned by that call.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "executor/executor.h"
#include "executor/plan_io.h"
#include "executor/tolerance.h"

namespace hotpath::bench {

// A model's sample rows, laid out for jobs of any size up to `rows`: input i
// of a job of r rows is the first r * row_bytes[i] bytes of data[i].
struct JobInputs {
  std::vector<const uint8_t*> data;
  std::vector<uint64_t> row_bytes;
  uint32_t rows = 0;  // available rows; 1 when the model does not batch
};

// Checks the samples against the executor's inputs (names, order, bytes per
// row) and returns views into `samples`, which must outlive the result.
Result<JobInputs> PrepareInputs(const executor::Executor& exec, const executor::SampleInputs& samples);

struct JobsConfig {
  uint32_t rows = 1;       // per job
  uint32_t in_flight = 1;  // jobs queued at once (>= 1)
  uint64_t min_jobs = 1;   // keep submitting until this many are done...
  double min_seconds = 0;  // ...and this much time has passed,
  uint64_t max_jobs = 1;   // but never more than this many
};

struct JobsResult {
  Status status;                    // the first failure, if any (then it stops early)
  std::vector<double> latency_ms;   // per completed job, submit to `done`
  std::vector<double> compute_ms;   // the executor's own kernel time per job
  double elapsed_s = 0;             // first submit to last completion
  uint64_t rows = 0;                // rows in completed jobs
  // The outputs of one completed job (model output order).
  std::vector<std::vector<uint8_t>> outputs;
};

// Runs jobs until the config's stop rule holds; outputs come from the last
// job to complete.
JobsResult RunJobs(executor::Executor& exec, const JobInputs& inputs, const JobsConfig& config);

struct Comparison {
  uint64_t elements = 0;
  uint64_t failures = 0;  // elements outside the tolerance (or NaN/inf mismatches, differing bytes)
  double rtol = 0;
  double max_abs = 0;     // max |a - b|
  double max_ratio = 0;   // max |a - b| / (rtol (|b| + rms(b))), per output: > 1 fails
  std::string detail;     // executor::DescribeComparison of the first failing output
  uint64_t worst = 0;     // index (across outputs) of the element with the largest ratio
  double worst_a = 0, worst_b = 0;
  std::string error;      // a shape or dtype mismatch; then nothing else is meaningful
  bool ok() const { return error.empty() && failures == 0; }
};

// Compares `a` (device) against `b` (host reference), output by output:
// FLOAT with the one device-vs-host tolerance of executor/tolerance.h,
// |a - b| <= rtol (|b| + rms(b)) with rms over that output; other dtypes
// must be identical bytes.
Comparison CompareOutputs(const std::vector<std::vector<uint8_t>>& a, const std::vector<std::vector<uint8_t>>& b,
                          const std::vector<executor::IoSpec>& specs, double rtol = executor::kModelRtol);

// "3 of 256 elements outside ...", or the error: one line for a failure message.
std::string DescribeFailure(const Comparison& c);

// p-th percentile (0..100, nearest rank) of `values`; 0 when empty.
double Percentile(std::vector<double> values, double p);
double Mean(const std::vector<double>& values);

}  // namespace hotpath::bench
