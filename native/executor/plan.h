// The graph plan: what TypeScript hands the executor for one ONNX model.
//
// TypeScript (src/executor/onnx-plan.ts) parses the ONNX file and flattens
// it into this table form: every value (graph input, initializer, node
// output) is one PlanTensor, and every node names its operands by index into
// the tensor table. Nothing here is trusted: Compile (compiler.h) validates
// every index, dtype, shape and attribute and answers INVALID_ARGUMENT (a bad
// plan) or FAILED_PRECONDITION naming the op and node (valid ONNX that the
// executor does not run, e.g. an unsupported op), never a crash.
//
// Shapes: graph inputs declare their full ONNX shape. When the model batches
// (max_batch_size > 0) the first dimension of every graph input is the batch
// dimension and is given as -1; every other dimension is fixed (>= 0).
// Initializers have fixed shapes and carry their data (little-endian, dense,
// row-major, exactly element_count * dtype size bytes).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace hotpath::executor {

// ONNX TensorProto.DataType numbers, so TS passes them through unchanged.
enum class DType : int32_t {
  kFloat32 = 1,
  kInt32 = 6,
  kInt64 = 7,
  kFloat16 = 10,
  kFloat64 = 11,
};
// "FLOAT", "INT32", ... ; "UNKNOWN(<n>)" for anything else. Never null.
const char* DTypeName(DType dtype);
// Bytes per element; 0 for an unsupported dtype.
uint32_t DTypeSize(DType dtype);

struct PlanTensor {
  std::string name;
  DType dtype = DType::kFloat32;
  // Graph inputs: -1 for the batch dimension (first, when batching).
  // Initializers: fixed. Node outputs: ignored (the compiler infers them).
  std::vector<int64_t> dims;
  bool is_initializer = false;
  std::vector<uint8_t> data;  // initializers only
};

// One ONNX attribute; exactly the field matching `type` is meaningful.
struct PlanAttribute {
  enum class Type { kInt, kFloat, kInts, kFloats, kString };
  Type type = Type::kInt;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  std::vector<float> floats;
  std::string s;
};

struct PlanNode {
  std::string name;     // for messages; may be empty (then "#<index>" is used)
  std::string op_type;  // ONNX op name, domain "" (ai.onnx) only
  // Operand indices into GraphPlan::tensors; -1 for an omitted optional input.
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  std::map<std::string, PlanAttribute> attributes;
};

struct GraphPlan {
  std::string model_name;  // "name:version", for messages
  int64_t opset = 17;      // the model's ai.onnx opset (Softmax, ReduceSum, Squeeze... vary)
  uint32_t max_batch_size = 0;  // 0: no batch dimension, every shape fixed
  std::vector<PlanTensor> tensors;
  std::vector<PlanNode> nodes;     // in ONNX's (topological) order
  std::vector<int32_t> inputs;     // graph inputs, model order
  std::vector<int32_t> outputs;    // graph outputs, model order
};

}  // namespace hotpath::executor
