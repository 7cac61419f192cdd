// Compile: validation of the plan's structure, node-by-node compilation (op
// compilers in compiler_ops.cc / compiler_shape_ops.cc), the passes
// (compiler_passes.cc), then memory planning, weights packing and operand
// resolution into the final Program.
#include "executor/compiler.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <utility>

#include "executor/detail/graph_builder.h"
#include "executor/detail/passes.h"

namespace hotpath::executor {

using detail::BufRef;
using detail::GraphBuilder;
using detail::Lin;
using detail::Region;
using detail::Shape;
using detail::Value;

namespace {

Status Invalid(const GraphPlan& plan, const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "plan '" + plan.model_name + "': " + message);
}

// Every index in range, so the builder can index without checks.
Status ValidateStructure(const GraphPlan& plan) {
  const int64_t n = static_cast<int64_t>(plan.tensors.size());
  if (n > INT32_MAX) return Invalid(plan, "too many tensors");
  if (plan.opset < 1) return Invalid(plan, "opset " + std::to_string(plan.opset) + " is invalid");
  if (plan.outputs.empty()) return Invalid(plan, "the graph has no outputs");
  auto check = [&](int32_t t, bool optional, const std::string& where) -> Status {
    if ((optional && t == -1) || (t >= 0 && t < n)) return Status::Ok();
    return Invalid(plan, where + ": tensor index " + std::to_string(t) + " is out of range [0, " +
                             std::to_string(n) + ")");
  };
  for (size_t i = 0; i < plan.inputs.size(); ++i) {
    if (Status s = check(plan.inputs[i], false, "graph input " + std::to_string(i)); !s.ok()) return s;
  }
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (Status s = check(plan.outputs[i], false, "graph output " + std::to_string(i)); !s.ok()) return s;
  }
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    const PlanNode& node = plan.nodes[i];
    const std::string where = "node '" + (node.name.empty() ? "#" + std::to_string(i) : node.name) + "'";
    for (int32_t t : node.inputs) {
      if (Status s = check(t, true, where + " input"); !s.ok()) return s;
    }
    for (int32_t t : node.outputs) {
      if (Status s = check(t, true, where + " output"); !s.ok()) return s;
    }
  }
  return Status::Ok();
}

Status CompileNodes(GraphBuilder& b) {
  const GraphPlan& plan = b.plan();
  for (int32_t v : plan.inputs) {
    if (Status s = b.DefineInput(v); !s.ok()) return s;
  }
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    if (!plan.tensors[t].is_initializer) continue;
    if (Status s = b.DefineInitializer(static_cast<int32_t>(t)); !s.ok()) return s;
  }
  for (size_t i = 0; i < plan.nodes.size(); ++i) {
    b.BeginNode(static_cast<int32_t>(i));
    const PlanNode& node = plan.nodes[i];
    for (int32_t t : node.inputs) {
      if (t >= 0 && b.value(t).kind == Value::Kind::kUndefined) {
        return b.Invalid("input '" + b.value(t).name +
                         "' is used before it is produced (nodes out of topological order, or a cycle)");
      }
    }
    detail::OpCompiler compile = detail::FindOpCompiler(node.op_type);
    if (compile == nullptr) {
      return Status(StatusCode::kFailedPrecondition,
                    "op '" + node.op_type + "' (node '" +
                        (node.name.empty() ? "#" + std::to_string(i) : node.name) +
                        "') is not supported by the native executor");
    }
    if (Status s = compile(b); !s.ok()) return s;
  }
  for (int32_t t : plan.outputs) {
    if (b.value(t).kind == Value::Kind::kUndefined) {
      return Invalid(plan, "graph output '" + b.value(t).name + "' is never produced");
    }
  }
  return Status::Ok();
}

Lin Bytes(const Value& value) {
  const std::optional<Lin> bytes = detail::MulLin(detail::Numel(value.dims), detail::Fixed(DTypeSize(value.dtype)));
  return bytes ? *bytes : detail::Fixed(detail::kSaturated);
}

uint64_t AlignUp(uint64_t v) { return (v + kBufferAlignment - 1) / kBufferAlignment * kBufferAlignment; }

// Plans the workspace, packs the weights and resolves every operand.
Status Layout(GraphBuilder& b, Program& program) {
  const GraphPlan& plan = b.plan();
  std::deque<Value>& values = b.values();
  std::vector<detail::Step>& steps = b.steps();
  const int32_t last_time = static_cast<int32_t>(steps.size()) + 1;  // copy-out

  // Lifetimes of workspace buffers (per root value), in step times.
  std::vector<int32_t> buffer_of(values.size(), -1);
  std::vector<BufferLifetime> lifetimes;
  auto buffer = [&](int32_t root, int32_t time) {
    int32_t& index = buffer_of[static_cast<size_t>(root)];
    if (index < 0) {
      index = static_cast<int32_t>(lifetimes.size());
      const Lin bytes = Bytes(values[static_cast<size_t>(root)]);
      lifetimes.push_back({static_cast<uint64_t>(detail::SatAt(bytes, b.max_rows())), time, time});
    }
    BufferLifetime& life = lifetimes[static_cast<size_t>(index)];
    life.first = std::min(life.first, time);
    life.last = std::max(life.last, time);
  };
  std::vector<int64_t> weight_offset(values.size(), -1);
  auto touch = [&](int32_t v, int32_t time) {
    const int32_t root = b.Root(v);
    const Value::Kind kind = values[static_cast<size_t>(root)].kind;
    if (kind == Value::Kind::kInput || kind == Value::Kind::kRuntime) {
      buffer(root, time);
    } else if (weight_offset[static_cast<size_t>(root)] < 0) {
      const std::vector<uint8_t>& data = *values[static_cast<size_t>(root)].data;
      weight_offset[static_cast<size_t>(root)] = static_cast<int64_t>(program.weights.size());
      program.weights.insert(program.weights.end(), data.begin(), data.end());
      program.weights.resize(AlignUp(program.weights.size()), 0);
    }
  };
  for (int32_t v : plan.inputs) touch(v, 0);
  for (size_t s = 0; s < steps.size(); ++s) {
    detail::ForEachOperand(steps[s].args, [&](detail::Operand& op, bool) {
      touch(op.value, static_cast<int32_t>(s) + 1);
    });
  }
  for (int32_t v : plan.outputs) touch(v, last_time);

  const MemoryPlan memory = PlanMemory(lifetimes);
  program.error_flag_offset = memory.total_bytes;
  program.workspace_bytes = memory.total_bytes + kBufferAlignment;
  if (program.workspace_bytes > kMaxCompiledBytes || program.weights.size() > kMaxCompiledBytes) {
    return Invalid(plan, "the workspace (" + std::to_string(program.workspace_bytes) + " bytes) or weights (" +
                             std::to_string(program.weights.size()) + " bytes) exceed the executor's limit");
  }
  for (size_t v = 0; v < values.size(); ++v) {
    if (buffer_of[v] < 0) continue;
    const size_t index = static_cast<size_t>(buffer_of[v]);
    program.buffers.push_back({values[v].name, lifetimes[index], memory.offsets[index]});
  }

  auto resolve = [&](int32_t v) -> BufRef {
    const size_t root = static_cast<size_t>(b.Root(v));
    if (buffer_of[root] >= 0) return {Region::kWorkspace, memory.offsets[static_cast<size_t>(buffer_of[root])]};
    return {Region::kWeights, static_cast<uint64_t>(weight_offset[root])};
  };
  for (detail::Step& step : steps) {
    detail::ForEachOperand(step.args, [&](detail::Operand& op, bool) { op.ref = resolve(op.value); });
  }
  auto io = [&](int32_t v) {
    const Value& value = values[static_cast<size_t>(v)];
    ProgramIo out;
    out.spec.name = value.name;
    out.spec.dtype = value.dtype;
    for (const Lin& d : value.dims) out.spec.dims.push_back(d.is_fixed() ? d.fixed : -1);
    out.shape = value.dims;
    out.bytes = Bytes(value);
    out.ref = resolve(v);
    return out;
  };
  for (int32_t v : plan.inputs) program.inputs.push_back(io(v));
  for (int32_t v : plan.outputs) program.outputs.push_back(io(v));
  program.steps = std::move(steps);
  return Status::Ok();
}

// A batching model's outputs are sliced per request by rows: the batch must
// be their first dimension, and only it may depend on the rows.
Status CheckBatchedOutputs(const GraphBuilder& b) {
  if (b.plan().max_batch_size == 0) return Status::Ok();
  for (int32_t t : b.plan().outputs) {
    const Shape& dims = b.value(t).dims;
    bool ok = !dims.empty() && dims[0] == Lin{1, 0};
    for (size_t i = 1; ok && i < dims.size(); ++i) ok = dims[i].is_fixed();
    if (!ok) {
      return Status(StatusCode::kFailedPrecondition,
                    "plan '" + b.plan().model_name + "': graph output '" + b.value(t).name + "' has shape " +
                        detail::ShapeString(dims) +
                        "; a batching model's outputs need the batch dimension (B) first");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Program> Compile(const GraphPlan& plan) {
  if (Status s = ValidateStructure(plan); !s.ok()) return s;
  GraphBuilder builder(plan);
  if (Status s = CompileNodes(builder); !s.ok()) return s;
  if (Status s = CheckBatchedOutputs(builder); !s.ok()) return s;
  detail::RemoveDeadSteps(builder);
  detail::FuseSteps(builder);
  Program program;
  program.model_name = plan.model_name;
  program.max_batch_size = plan.max_batch_size;
  if (Status s = Layout(builder, program); !s.ok()) return s;
  return program;
}

}  // namespace hotpath::executor
