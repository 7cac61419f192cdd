// Builds GraphPlans by hand for the executor tests (what TypeScript's ONNX
// parser produces in production).
//
//   PlanMaker p(/*max_batch_size=*/8);
//   int32_t x = p.Input("x", {-1, 4});
//   int32_t w = p.Floats("w", {4, 3}, {...});
//   int32_t y = p.Node("Gemm", {x, w}, {{"transB", Int(0)}});
//   p.Output(y);
//
// Thread-safety: test-local values.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "executor/plan.h"

namespace hotpath::executor::testing {

inline PlanAttribute Int(int64_t v) {
  PlanAttribute a;
  a.type = PlanAttribute::Type::kInt;
  a.i = v;
  return a;
}
inline PlanAttribute Float(float v) {
  PlanAttribute a;
  a.type = PlanAttribute::Type::kFloat;
  a.f = v;
  return a;
}
inline PlanAttribute Ints(std::vector<int64_t> v) {
  PlanAttribute a;
  a.type = PlanAttribute::Type::kInts;
  a.ints = std::move(v);
  return a;
}

using Attrs = std::map<std::string, PlanAttribute>;

class PlanMaker {
 public:
  explicit PlanMaker(uint32_t max_batch_size, int64_t opset = 17) {
    plan.model_name = "test:1";
    plan.max_batch_size = max_batch_size;
    plan.opset = opset;
  }

  int32_t Input(const std::string& name, std::vector<int64_t> dims, DType dtype = DType::kFloat32) {
    const int32_t t = Add(name, dtype, std::move(dims));
    plan.inputs.push_back(t);
    return t;
  }

  int32_t Floats(const std::string& name, std::vector<int64_t> dims, const std::vector<float>& values) {
    return Init(name, DType::kFloat32, std::move(dims), values.data(), values.size() * sizeof(float));
  }
  int32_t Int64s(const std::string& name, std::vector<int64_t> dims, const std::vector<int64_t>& values) {
    return Init(name, DType::kInt64, std::move(dims), values.data(), values.size() * sizeof(int64_t));
  }
  // Deterministic pseudo-random floats in [-scale, scale).
  int32_t Random(const std::string& name, std::vector<int64_t> dims, uint32_t seed, float scale = 0.5f) {
    int64_t count = 1;
    for (int64_t d : dims) count *= d;
    return Floats(name, dims, RandomFloats(static_cast<size_t>(count), seed, scale));
  }

  // One node with one output (a fresh tensor), returned. More outputs (for
  // optional ones) via `extra_outputs`.
  int32_t Node(const std::string& op, std::vector<int32_t> inputs, Attrs attrs = {},
               std::string name = "", int extra_outputs = 0) {
    PlanNode node;
    node.name = name.empty() ? op + "_" + std::to_string(plan.nodes.size()) : name;
    node.op_type = op;
    node.inputs = std::move(inputs);
    node.attributes = std::move(attrs);
    for (int i = 0; i <= extra_outputs; ++i) {
      node.outputs.push_back(Add(node.name + "_out" + std::to_string(i), DType::kFloat32, {}));
    }
    plan.nodes.push_back(std::move(node));
    return plan.nodes.back().outputs[0];
  }

  void Output(int32_t t) { plan.outputs.push_back(t); }

  static std::vector<float> RandomFloats(size_t count, uint32_t seed, float scale = 0.5f) {
    std::vector<float> out(count);
    uint32_t state = seed * 2654435761u + 12345u;
    for (float& v : out) {
      state = state * 1664525u + 1013904223u;
      v = (static_cast<float>(state >> 8) / 16777216.0f * 2.0f - 1.0f) * scale;
    }
    return out;
  }

  GraphPlan plan;

 private:
  int32_t Add(const std::string& name, DType dtype, std::vector<int64_t> dims) {
    PlanTensor t;
    t.name = name;
    t.dtype = dtype;
    t.dims = std::move(dims);
    plan.tensors.push_back(std::move(t));
    return static_cast<int32_t>(plan.tensors.size() - 1);
  }
  int32_t Init(const std::string& name, DType dtype, std::vector<int64_t> dims, const void* data, size_t bytes) {
    const int32_t t = Add(name, dtype, std::move(dims));
    PlanTensor& tensor = plan.tensors[static_cast<size_t>(t)];
    tensor.is_initializer = true;
    tensor.data.resize(bytes);
    if (bytes > 0) std::memcpy(tensor.data.data(), data, bytes);
    return t;
  }
};

}  // namespace hotpath::executor::testing
