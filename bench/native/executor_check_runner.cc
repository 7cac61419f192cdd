// Jobs, latencies and output comparison for executor_check (see
// executor_check_runner.h).
#include "executor_check_runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <utility>

namespace hotpath::bench {

using executor::DType;
using executor::ExecJob;
using executor::ExecOutcome;
using executor::Executor;
using Clock = std::chrono::steady_clock;

Result<JobInputs> PrepareInputs(const Executor& exec, const executor::SampleInputs& samples) {
  const std::vector<executor::IoSpec>& specs = exec.inputs();
  if (samples.tensors.size() != specs.size()) {
    return Status(StatusCode::kInvalidArgument, "the samples hold " + std::to_string(samples.tensors.size()) +
                                                    " inputs, the model " + std::to_string(specs.size()));
  }
  const bool batched = exec.max_batch_size() > 0;
  JobInputs inputs;
  inputs.rows = batched ? std::min(samples.rows, exec.max_batch_size()) : 1;
  if (inputs.rows == 0) return Status(StatusCode::kInvalidArgument, "the samples hold no rows");
  for (size_t i = 0; i < specs.size(); ++i) {
    const executor::SampleTensor& t = samples.tensors[i];
    if (t.name != specs[i].name || t.dtype != specs[i].dtype) {
      return Status(StatusCode::kInvalidArgument, "sample input " + std::to_string(i) + " is '" + t.name + "' " +
                                                      executor::DTypeName(t.dtype) + ", the model wants '" +
                                                      specs[i].name + "' " + executor::DTypeName(specs[i].dtype));
    }
    const uint64_t row_bytes = exec.InputBytes(i, 1);
    const uint64_t sample_rows = batched ? samples.rows : 1;
    if (row_bytes == 0 || t.data.size() != row_bytes * sample_rows || exec.InputBytes(i, inputs.rows) != row_bytes * inputs.rows) {
      return Status(StatusCode::kInvalidArgument, "sample input '" + t.name + "' holds " +
                                                      std::to_string(t.data.size()) + " bytes, expected " +
                                                      std::to_string(row_bytes) + " per row x " +
                                                      std::to_string(sample_rows) + " rows");
    }
    inputs.data.push_back(t.data.data());
    inputs.row_bytes.push_back(row_bytes);
  }
  return inputs;
}

JobsResult RunJobs(Executor& exec, const JobInputs& inputs, const JobsConfig& config) {
  JobsResult result;
  const uint32_t rows = exec.max_batch_size() > 0 ? config.rows : 1;
  if (rows == 0 || rows > inputs.rows || config.in_flight == 0) {
    result.status = Status(StatusCode::kInvalidArgument, "RunJobs: " + std::to_string(config.rows) +
                                                             " rows of " + std::to_string(inputs.rows) +
                                                             ", in flight " + std::to_string(config.in_flight));
    return result;
  }
  // One set of output buffers per slot: jobs in flight never share them.
  struct Slot {
    std::vector<std::vector<uint8_t>> outputs;
    Clock::time_point start;
  };
  std::vector<Slot> slots(config.in_flight);
  for (Slot& slot : slots) {
    for (size_t o = 0; o < exec.outputs().size(); ++o) slot.outputs.emplace_back(exec.OutputBytes(o, rows));
  }
  std::mutex mu;
  std::condition_variable cv;
  std::deque<uint32_t> finished;  // slots whose job completed, guarded by mu
  uint32_t last_slot = 0;

  auto submit = [&](uint32_t index) {
    Slot& slot = slots[index];
    ExecJob job;
    job.rows = rows;
    for (size_t i = 0; i < inputs.data.size(); ++i) {
      job.inputs.push_back({inputs.data[i], inputs.row_bytes[i] * rows});
    }
    for (std::vector<uint8_t>& out : slot.outputs) job.outputs.push_back({out.data(), out.size()});
    job.done = [&, index](ExecOutcome outcome) {
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - slots[index].start).count();
      {
        std::lock_guard<std::mutex> lock(mu);
        if (outcome.status.ok()) {
          result.latency_ms.push_back(ms);
          result.compute_ms.push_back(static_cast<double>(outcome.timing.compute_ns) / 1e6);
          result.rows += rows;
        } else if (result.status.ok()) {
          result.status = outcome.status;
        }
        finished.push_back(index);
        // Notified under the lock: once it is released the waiting thread
        // may return and destroy `cv`, so nothing here may touch it after.
        cv.notify_one();
      }
    };
    slot.start = Clock::now();
    exec.Submit(std::move(job));  // `done` may run before this returns
  };

  const Clock::time_point begin = Clock::now();
  uint64_t submitted = 0;
  uint64_t completed = 0;
  for (uint32_t s = 0; s < config.in_flight && submitted < std::max<uint64_t>(config.max_jobs, 1); ++s, ++submitted) {
    submit(s);
  }
  Clock::time_point end = begin;
  while (completed < submitted) {
    uint32_t index = 0;
    bool stop = false;
    {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return !finished.empty(); });
      index = finished.front();
      finished.pop_front();
      ++completed;
      stop = !result.status.ok();
    }
    end = Clock::now();
    last_slot = index;
    const double elapsed = std::chrono::duration<double>(end - begin).count();
    const bool enough = completed >= config.min_jobs && elapsed >= config.min_seconds;
    if (!stop && !enough && submitted < config.max_jobs) {
      submit(index);
      ++submitted;
    }
  }
  result.elapsed_s = std::chrono::duration<double>(end - begin).count();
  result.outputs = std::move(slots[last_slot].outputs);
  return result;
}

Comparison CompareOutputs(const std::vector<std::vector<uint8_t>>& a, const std::vector<std::vector<uint8_t>>& b,
                          const std::vector<executor::IoSpec>& specs, double rtol) {
  Comparison c;
  c.rtol = rtol;
  if (a.size() != b.size() || a.size() != specs.size()) {
    c.error = "output counts differ";
    return c;
  }
  uint64_t base = 0;  // element index across outputs
  bool first = true;
  for (size_t o = 0; o < a.size(); ++o) {
    if (a[o].size() != b[o].size()) {
      c.error = "output '" + specs[o].name + "' sizes differ: " + std::to_string(a[o].size()) + " vs " +
                std::to_string(b[o].size());
      return c;
    }
    if (specs[o].dtype != DType::kFloat32) {
      c.elements += a[o].size();
      if (a[o] != b[o]) {
        ++c.failures;  // not float: must be identical
        if (c.detail.empty()) c.detail = "output '" + specs[o].name + "' (" + executor::DTypeName(specs[o].dtype) + ") differs";
      }
      base += a[o].size();
      continue;
    }
    const size_t n = a[o].size() / sizeof(float);
    // Copies: the byte buffers carry no float alignment guarantee.
    std::vector<float> fa(n);
    std::vector<float> fb(n);
    if (n > 0) {
      std::memcpy(fa.data(), a[o].data(), n * sizeof(float));
      std::memcpy(fb.data(), b[o].data(), n * sizeof(float));
    }
    const executor::FloatComparison f = executor::CompareFloats(fa.data(), fb.data(), n, rtol);
    c.elements += n;
    c.failures += f.failures;
    c.max_abs = std::max(c.max_abs, f.max_abs);
    if (n > 0 && (first || f.max_ratio > c.max_ratio)) {
      c.max_ratio = f.max_ratio;
      c.worst = base + f.worst;
      c.worst_a = f.worst_got;
      c.worst_b = f.worst_want;
      first = false;
    }
    if (!f.ok() && c.detail.empty()) c.detail = "output '" + specs[o].name + "': " + executor::DescribeComparison(f);
    base += n;
  }
  return c;
}

std::string DescribeFailure(const Comparison& c) {
  if (!c.error.empty()) return c.error;
  return c.detail.empty() ? "ok (max |d - h| " + executor::FormatNumber(c.max_abs) + ")" : c.detail;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(values.size()));
  size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return values[std::min(index, values.size() - 1)];
}

double Mean(const std::vector<double>& values) {
  if (values.empty()) return 0;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

}  // namespace hotpath::bench
