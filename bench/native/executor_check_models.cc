// Generated MLP plans, seeded inputs and the plan directory (see
// executor_check_models.h).
#include "executor_check_models.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

namespace hotpath::bench {

using executor::DType;
using executor::GraphPlan;
using executor::PlanAttribute;
using executor::PlanNode;
using executor::PlanTensor;
using executor::SampleInputs;
using executor::SampleTensor;

namespace {

std::vector<uint8_t> UniformFloats(SeededRandom& rng, size_t count, double low, double high) {
  std::vector<uint8_t> bytes(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) {
    float value = static_cast<float>(rng.Uniform(low, high));
    std::memcpy(bytes.data() + i * sizeof(float), &value, sizeof(float));
  }
  return bytes;
}

int32_t AddTensor(GraphPlan& plan, PlanTensor tensor) {
  plan.tensors.push_back(std::move(tensor));
  return static_cast<int32_t>(plan.tensors.size() - 1);
}

}  // namespace

GraphPlan MlpPlan(const std::string& name, const std::vector<int64_t>& sizes, uint32_t seed,
                  uint32_t max_batch_size) {
  GraphPlan plan;
  plan.model_name = name + ":1";
  plan.opset = 17;
  plan.max_batch_size = max_batch_size;
  if (sizes.size() < 2) return plan;  // no layers: Compile refuses the empty graph
  SeededRandom rng(seed);
  int32_t current = AddTensor(plan, {"features", DType::kFloat32, {-1, sizes[0]}, false, {}});
  plan.inputs = {current};
  const size_t layers = sizes.size() - 1;
  for (size_t l = 0; l < layers; ++l) {
    const int64_t fan_in = sizes[l];
    const int64_t fan_out = sizes[l + 1];
    const bool last = l + 1 == layers;
    // initMlp: He-uniform before a Relu, Glorot-uniform for the last layer.
    const double limit = last ? std::sqrt(6.0 / static_cast<double>(fan_in + fan_out))
                              : std::sqrt(6.0 / static_cast<double>(fan_in));
    const std::string index = std::to_string(l);
    std::vector<uint8_t> weight = UniformFloats(rng, static_cast<size_t>(fan_out * fan_in), -limit, limit);
    std::vector<uint8_t> bias = UniformFloats(rng, static_cast<size_t>(fan_out), -0.05, 0.05);
    int32_t w = AddTensor(plan, {"fc" + index + ".weight", DType::kFloat32, {fan_out, fan_in}, true, std::move(weight)});
    int32_t b = AddTensor(plan, {"fc" + index + ".bias", DType::kFloat32, {fan_out}, true, std::move(bias)});
    const std::string affine_name = last ? "score" : "fc" + index;
    int32_t affine = AddTensor(plan, {affine_name, DType::kFloat32, {}, false, {}});
    PlanNode gemm;
    gemm.name = "Gemm_" + affine_name;
    gemm.op_type = "Gemm";
    gemm.inputs = {current, w, b};
    gemm.outputs = {affine};
    PlanAttribute trans_b;
    trans_b.type = PlanAttribute::Type::kInt;
    trans_b.i = 1;
    gemm.attributes["transB"] = trans_b;
    plan.nodes.push_back(std::move(gemm));
    current = affine;
    if (!last) {
      int32_t activated = AddTensor(plan, {"act" + index, DType::kFloat32, {}, false, {}});
      PlanNode relu;
      relu.name = "Relu_act" + index;
      relu.op_type = "Relu";
      relu.inputs = {current};
      relu.outputs = {activated};
      plan.nodes.push_back(std::move(relu));
      current = activated;
    }
  }
  plan.outputs = {current};
  return plan;
}

Result<SampleInputs> UniformSamples(const GraphPlan& plan, uint32_t rows, uint32_t seed) {
  SampleInputs samples;
  samples.rows = plan.max_batch_size > 0 ? std::max<uint32_t>(rows, 1) : 1;
  SeededRandom rng(seed);
  for (int32_t index : plan.inputs) {
    if (index < 0 || static_cast<size_t>(index) >= plan.tensors.size()) {
      return Status(StatusCode::kInvalidArgument, "plan input index " + std::to_string(index) + " out of range");
    }
    const PlanTensor& t = plan.tensors[static_cast<size_t>(index)];
    if (t.dtype != DType::kFloat32) {
      return Status(StatusCode::kFailedPrecondition,
                    "input '" + t.name + "' is " + executor::DTypeName(t.dtype) +
                        ": seeded inputs are FLOAT only (export a .sample file for it)");
    }
    SampleTensor sample{t.name, t.dtype, t.dims, {}};
    uint64_t count = 1;
    for (size_t d = 0; d < sample.dims.size(); ++d) {
      if (d == 0 && plan.max_batch_size > 0) sample.dims[d] = samples.rows;
      if (sample.dims[d] < 0 || sample.dims[d] > (int64_t{1} << 32)) {
        return Status(StatusCode::kInvalidArgument, "input '" + t.name + "' has dimension " +
                                                        std::to_string(sample.dims[d]));
      }
      count *= static_cast<uint64_t>(sample.dims[d]);
    }
    if (count > (uint64_t{1} << 28)) {
      return Status(StatusCode::kInvalidArgument, "input '" + t.name + "' is too large for seeded samples");
    }
    sample.data = UniformFloats(rng, static_cast<size_t>(count), -1.0, 1.0);
    samples.tensors.push_back(std::move(sample));
  }
  return samples;
}

Result<std::vector<CheckModel>> LoadPlanDir(const std::string& dir, std::vector<std::string>* notes) {
  namespace fs = std::filesystem;
  std::vector<CheckModel> models;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    notes->push_back("no plan directory " + dir + " (run `npm run bench:gpu-plans` where Node is)");
    return models;
  }
  std::vector<fs::path> plans;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() == ".plan") plans.push_back(it->path());
  }
  if (ec) return Status(StatusCode::kInternal, "listing " + dir + ": " + ec.message());
  std::sort(plans.begin(), plans.end());
  for (const fs::path& path : plans) {
    Result<GraphPlan> plan = executor::ReadPlanFile(path.string());
    if (!plan.ok()) return plan.status();
    CheckModel model;
    model.name = path.stem().string();
    model.source = path.string();
    model.plan = std::move(plan).value();
    fs::path sample_path = path;
    sample_path.replace_extension(".sample");
    Result<SampleInputs> samples = executor::ReadSampleFile(sample_path.string());
    if (!samples.ok() && samples.status().code() == StatusCode::kNotFound) {
      samples = UniformSamples(model.plan, model.plan.max_batch_size, 0x5eed);
      if (!samples.ok()) {
        notes->push_back(model.name + ": left out, no " + sample_path.filename().string() + " and " +
                         samples.status().message());
        continue;
      }
    }
    if (!samples.ok()) return samples.status();
    model.samples = std::move(samples).value();
    models.push_back(std::move(model));
  }
  return models;
}

bool SameInitializers(const GraphPlan& a, const GraphPlan& b) {
  size_t count_a = 0;
  size_t count_b = 0;
  for (const PlanTensor& t : b.tensors) count_b += t.is_initializer ? 1 : 0;
  for (const PlanTensor& t : a.tensors) {
    if (!t.is_initializer) continue;
    ++count_a;
    auto match = std::find_if(b.tensors.begin(), b.tensors.end(),
                              [&](const PlanTensor& u) { return u.is_initializer && u.name == t.name; });
    if (match == b.tensors.end() || match->dtype != t.dtype || match->dims != t.dims || match->data != t.data) {
      return false;
    }
  }
  return count_a == count_b;
}

}  // namespace hotpath::bench
