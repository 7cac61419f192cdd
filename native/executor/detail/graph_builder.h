// The compiler's working state (compiler.h): the value table, the steps
// emitted so far, and the node being compiled, with the helpers every op
// compiler uses (operands, attributes, constants, messages). Internal.
//
// Values are indexed like GraphPlan::tensors; constants the compiler folds
// (BatchNormalization's scale and shift, broadcast LayerNormalization
// parameters) are appended after them.
//
// Thread-safety: one builder per Compile call, used by one thread.
#pragma once

#include <cstdint>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "common/result.h"
#include "executor/detail/shape_math.h"
#include "executor/detail/steps.h"
#include "executor/plan.h"

namespace hotpath::executor::detail {

struct Value {
  enum class Kind : uint8_t {
    kUndefined,    // not produced (yet)
    kInput,        // graph input: a workspace slot filled by CopyIn
    kInitializer,  // plan data, packed into the weights image when read
    kConstant,     // folded by the compiler, packed like an initializer
    kRuntime,      // written by a step into the workspace
    kAlias,        // shares alias_of's buffer with another shape
  };
  Kind kind = Kind::kUndefined;
  DType dtype = DType::kFloat32;
  Shape dims;
  std::string name;
  int32_t alias_of = -1;                       // kAlias
  const std::vector<uint8_t>* data = nullptr;  // kInitializer, kConstant
};

class GraphBuilder {
 public:
  explicit GraphBuilder(const GraphPlan& plan);

  const GraphPlan& plan() const { return plan_; }
  int64_t opset() const { return plan_.opset; }
  // Rows at which sizes are checked against the caps (max_batch_size, or 1).
  int64_t max_rows() const { return plan_.max_batch_size == 0 ? 1 : plan_.max_batch_size; }

  // A deque: references stay valid while constants are appended.
  std::deque<Value>& values() { return values_; }
  const Value& value(int32_t v) const { return values_[static_cast<size_t>(v)]; }
  // Follows aliases to the value that owns the buffer.
  int32_t Root(int32_t v) const;
  bool IsConstant(int32_t v) const;  // initializer or folded constant (or an alias of one)

  // Graph inputs and initializers, before any node.
  Status DefineInput(int32_t v);
  Status DefineInitializer(int32_t v);

  // --- The node being compiled ---------------------------------------------
  void BeginNode(int32_t index);
  const PlanNode& node() const { return *node_; }
  // "node 'fc1' (Gemm)"; "#3" stands in for an empty node name.
  std::string Label() const;
  // FAILED_PRECONDITION / INVALID_ARGUMENT "<label>: <why>".
  Status Unsupported(const std::string& why) const;
  Status Invalid(const std::string& why) const;

  // Operand i of the node, or -1 when omitted (or beyond the inputs given).
  int32_t input(size_t i) const;
  int32_t output(size_t i) const;
  // INVALID_ARGUMENT unless the node has [min, max] inputs (trailing omitted
  // ones count as given) and at least one output.
  Status ExpectInputs(size_t min, size_t max) const;
  // FAILED_PRECONDITION naming the op, node and dtype unless `v` is FLOAT.
  Status ExpectFloat(int32_t v, const char* role) const;
  // FAILED_PRECONDITION when output i (i >= 1) is present and read by anyone:
  // optional outputs the executor does not compute (e.g. LayerNorm's Mean).
  Status ExpectUnusedOutputsFrom(size_t i) const;

  // --- Attributes ----------------------------------------------------------
  // FAILED_PRECONDITION naming the first attribute not in `allowed`.
  Status CheckAttributes(std::initializer_list<const char*> allowed) const;
  bool HasAttr(const char* name) const;
  // INVALID_ARGUMENT when present with another type.
  Result<int64_t> IntAttr(const char* name, int64_t fallback) const;
  Result<float> FloatAttr(const char* name, float fallback) const;
  Result<std::vector<int64_t>> IntsAttr(const char* name) const;  // empty when absent

  // --- Constant operands ---------------------------------------------------
  // Reads an INT64/INT32 constant (any shape); FAILED_PRECONDITION when `v`
  // is computed at run time, `role` naming the operand.
  Result<std::vector<int64_t>> ConstInts(int32_t v, const char* role) const;
  Result<std::vector<float>> ConstFloats(int32_t v, const char* role) const;

  // --- Results -------------------------------------------------------------
  // Declares `v` (a node output) as a workspace tensor: checks the shape
  // (rank, non-negative, linear in the rows, sizes capped) and that `v` was
  // not produced before.
  Status DefineRuntime(int32_t v, DType dtype, Shape dims);
  // `v` shares the buffer of `source` (same element count) with `dims`.
  Status DefineAlias(int32_t v, int32_t source, Shape dims);
  // A new folded constant value.
  Result<int32_t> AddConstant(DType dtype, Shape dims, std::vector<uint8_t> bytes);
  // Appends a step labelled with the current node.
  void Emit(StepArgs args);

  std::vector<Step>& steps() { return steps_; }

 private:
  Status CheckShape(const std::string& what, DType dtype, const Shape& dims) const;
  Status CheckFresh(int32_t v) const;
  const PlanAttribute* FindAttr(const char* name) const;

  const GraphPlan& plan_;
  std::deque<Value> values_;
  std::deque<std::vector<uint8_t>> constants_;  // folded data; deque: stable addresses
  std::vector<Step> steps_;
  const PlanNode* node_ = nullptr;
  int32_t node_index_ = -1;
  // Per plan tensor: how many node inputs and graph outputs read it.
  std::vector<uint32_t> readers_;
};

// Normalises an axis in [-rank, rank) (or [-rank, rank] when `inclusive`,
// for Flatten); negative axes count from the end. INVALID_ARGUMENT otherwise.
Result<size_t> NormalizeAxis(const GraphBuilder& b, int64_t axis, size_t rank,
                             bool inclusive = false);

// The op compilers (compiler_ops.cc, compiler_shape_ops.cc). Each reads the
// builder's current node, defines its outputs and emits its steps.
using OpCompiler = Status (*)(GraphBuilder&);
// nullptr for an op the executor does not run.
OpCompiler FindOpCompiler(const std::string& op_type);

Status CompileGemm(GraphBuilder& b);
Status CompileMatMul(GraphBuilder& b);
Status CompileBinary(GraphBuilder& b);
Status CompileActivation(GraphBuilder& b);
Status CompileSoftmax(GraphBuilder& b);
Status CompileBatchNorm(GraphBuilder& b);
Status CompileLayerNorm(GraphBuilder& b);
Status CompileReduce(GraphBuilder& b);
Status CompileConcat(GraphBuilder& b);
Status CompileFlatten(GraphBuilder& b);
Status CompileReshape(GraphBuilder& b);
Status CompileSqueeze(GraphBuilder& b);
Status CompileUnsqueeze(GraphBuilder& b);
Status CompileTranspose(GraphBuilder& b);
Status CompileIdentity(GraphBuilder& b);
Status CompileGather(GraphBuilder& b);
Status CompileCast(GraphBuilder& b);

}  // namespace hotpath::executor::detail
