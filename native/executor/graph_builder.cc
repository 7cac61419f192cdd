// The compiler's working state: value table, messages, attributes, constants
// and the checks every defined tensor passes (detail/graph_builder.h).
#include "executor/detail/graph_builder.h"

#include <cstring>
#include <utility>

#include "executor/compiler.h"

namespace hotpath::executor::detail {
namespace {

int64_t ReadInt(const std::vector<uint8_t>& data, size_t i, DType dtype) {
  if (dtype == DType::kInt64) {
    int64_t v = 0;
    std::memcpy(&v, data.data() + i * 8, 8);
    return v;
  }
  int32_t v = 0;
  std::memcpy(&v, data.data() + i * 4, 4);
  return v;
}

}  // namespace

GraphBuilder::GraphBuilder(const GraphPlan& plan)
    : plan_(plan), values_(plan.tensors.size()), readers_(plan.tensors.size(), 0) {
  for (size_t i = 0; i < plan.tensors.size(); ++i) values_[i].name = plan.tensors[i].name;
  auto read = [&](int32_t t) {
    if (t >= 0 && static_cast<size_t>(t) < readers_.size()) ++readers_[static_cast<size_t>(t)];
  };
  for (const PlanNode& node : plan.nodes) {
    for (int32_t t : node.inputs) read(t);
  }
  for (int32_t t : plan.outputs) read(t);
}

int32_t GraphBuilder::Root(int32_t v) const {
  // Alias chains are acyclic: an alias always points at an earlier-defined value.
  while (v >= 0 && value(v).kind == Value::Kind::kAlias) v = value(v).alias_of;
  return v;
}

bool GraphBuilder::IsConstant(int32_t v) const {
  if (v < 0) return false;
  const Value::Kind kind = value(Root(v)).kind;
  return kind == Value::Kind::kInitializer || kind == Value::Kind::kConstant;
}

Status GraphBuilder::CheckShape(const std::string& what, DType dtype, const Shape& dims) const {
  if (DTypeSize(dtype) == 0) {
    return Status(StatusCode::kFailedPrecondition,
                  what + ": dtype " + DTypeName(dtype) + " is not supported by the native executor");
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return Status(StatusCode::kFailedPrecondition,
                  what + ": rank " + std::to_string(dims.size()) + " exceeds the executor's " +
                      std::to_string(kMaxRank));
  }
  int batch_dims = 0;
  int64_t elements = 1;
  for (const Lin& d : dims) {
    if (d.per_row < 0 || d.fixed < 0) {
      return Status(StatusCode::kInvalidArgument, what + ": negative dimension in " + ShapeString(dims));
    }
    if (!d.is_fixed()) ++batch_dims;
    const int64_t at_max = SatAt(d, max_rows());
    if (at_max != 0) elements = SatMul(elements, at_max);
  }
  if (batch_dims > 1) {
    return Status(StatusCode::kFailedPrecondition,
                  what + ": shape " + ShapeString(dims) +
                      " depends on the batch dimension more than once (not linear in the batch)");
  }
  if (elements > static_cast<int64_t>(kMaxCompiledBytes) ||
      SatMul(elements, DTypeSize(dtype)) > static_cast<int64_t>(kMaxCompiledBytes)) {
    return Status(StatusCode::kInvalidArgument,
                  what + ": shape " + ShapeString(dims) + " exceeds the executor's limit of " +
                      std::to_string(kMaxCompiledBytes) + " bytes");
  }
  return Status::Ok();
}

Status GraphBuilder::CheckFresh(int32_t v) const {
  if (v < 0 || static_cast<size_t>(v) >= values_.size()) {
    return Status(StatusCode::kInvalidArgument, "tensor index " + std::to_string(v) + " out of range");
  }
  if (value(v).kind != Value::Kind::kUndefined) {
    return Status(StatusCode::kInvalidArgument,
                  "tensor '" + value(v).name + "' is produced more than once");
  }
  return Status::Ok();
}

Status GraphBuilder::DefineInput(int32_t v) {
  if (Status fresh = CheckFresh(v); !fresh.ok()) return fresh;
  const PlanTensor& t = plan_.tensors[static_cast<size_t>(v)];
  const std::string what = "graph input '" + t.name + "'";
  if (plan_.max_batch_size > 0 && (t.dims.empty() || t.dims[0] != -1)) {
    return Status(StatusCode::kInvalidArgument,
                  what + ": the model batches, so its first dimension must be -1");
  }
  Shape dims;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (i == 0 && plan_.max_batch_size > 0) {
      dims.push_back(Lin{1, 0});
    } else if (t.dims[i] == -1) {
      return Status(StatusCode::kFailedPrecondition,
                    what + ": dimension " + std::to_string(i) +
                        " is dynamic; the native executor needs fixed shapes apart from the batch");
    } else if (t.dims[i] < 0) {
      return Status(StatusCode::kInvalidArgument,
                    what + ": dimension " + std::to_string(i) + " is " + std::to_string(t.dims[i]));
    } else {
      dims.push_back(Fixed(t.dims[i]));
    }
  }
  if (Status shape = CheckShape(what, t.dtype, dims); !shape.ok()) return shape;
  Value& value = values_[static_cast<size_t>(v)];
  value.kind = Value::Kind::kInput;
  value.dtype = t.dtype;
  value.dims = std::move(dims);
  return Status::Ok();
}

Status GraphBuilder::DefineInitializer(int32_t v) {
  if (Status fresh = CheckFresh(v); !fresh.ok()) return fresh;
  const PlanTensor& t = plan_.tensors[static_cast<size_t>(v)];
  const std::string what = "initializer '" + t.name + "'";
  Shape dims;
  for (int64_t d : t.dims) {
    if (d < 0) return Status(StatusCode::kInvalidArgument, what + ": negative dimension " + std::to_string(d));
    dims.push_back(Fixed(d));
  }
  if (Status shape = CheckShape(what, t.dtype, dims); !shape.ok()) return shape;
  const uint64_t expected = static_cast<uint64_t>(Numel(dims).fixed) * DTypeSize(t.dtype);
  if (t.data.size() != expected) {
    return Status(StatusCode::kInvalidArgument,
                  what + ": " + std::to_string(t.data.size()) + " bytes of data, expected " +
                      std::to_string(expected) + " for " + DTypeName(t.dtype) + ShapeString(dims));
  }
  Value& value = values_[static_cast<size_t>(v)];
  value.kind = Value::Kind::kInitializer;
  value.dtype = t.dtype;
  value.dims = std::move(dims);
  value.data = &t.data;
  return Status::Ok();
}

void GraphBuilder::BeginNode(int32_t index) {
  node_index_ = index;
  node_ = &plan_.nodes[static_cast<size_t>(index)];
}

std::string GraphBuilder::Label() const {
  const std::string name = node_->name.empty() ? "#" + std::to_string(node_index_) : node_->name;
  return "node '" + name + "' (" + node_->op_type + ")";
}

Status GraphBuilder::Unsupported(const std::string& why) const {
  return Status(StatusCode::kFailedPrecondition, Label() + ": " + why);
}

Status GraphBuilder::Invalid(const std::string& why) const {
  return Status(StatusCode::kInvalidArgument, Label() + ": " + why);
}

int32_t GraphBuilder::input(size_t i) const {
  return i < node_->inputs.size() ? node_->inputs[i] : -1;
}

int32_t GraphBuilder::output(size_t i) const {
  return i < node_->outputs.size() ? node_->outputs[i] : -1;
}

Status GraphBuilder::ExpectInputs(size_t min, size_t max) const {
  size_t given = node_->inputs.size();
  while (given > 0 && node_->inputs[given - 1] < 0) --given;  // trailing omitted optionals
  if (given < min || given > max) {
    return Invalid("expected " + (min == max ? std::to_string(min)
                                             : std::to_string(min) + " to " + std::to_string(max)) +
                   " inputs, got " + std::to_string(given));
  }
  for (size_t i = 0; i < min; ++i) {
    if (node_->inputs[i] < 0) return Invalid("required input " + std::to_string(i) + " is missing");
  }
  if (node_->outputs.empty() || node_->outputs[0] < 0) return Invalid("has no output");
  return Status::Ok();
}

Status GraphBuilder::ExpectFloat(int32_t v, const char* role) const {
  if (value(v).dtype == DType::kFloat32) return Status::Ok();
  return Unsupported(std::string(role) + " '" + value(v).name + "' is " + DTypeName(value(v).dtype) +
                     "; the native executor computes " + node_->op_type + " on FLOAT only");
}

Status GraphBuilder::ExpectUnusedOutputsFrom(size_t first) const {
  for (size_t i = first; i < node_->outputs.size(); ++i) {
    const int32_t t = node_->outputs[i];
    if (t >= 0 && readers_[static_cast<size_t>(t)] > 0) {
      return Unsupported("optional output " + std::to_string(i) + " ('" + value(t).name +
                         "') is not computed by the native executor");
    }
  }
  return Status::Ok();
}

const PlanAttribute* GraphBuilder::FindAttr(const char* name) const {
  auto it = node_->attributes.find(name);
  return it == node_->attributes.end() ? nullptr : &it->second;
}

Status GraphBuilder::CheckAttributes(std::initializer_list<const char*> allowed) const {
  for (const auto& [name, attr] : node_->attributes) {
    bool known = false;
    for (const char* a : allowed) known = known || name == a;
    if (!known) return Unsupported("attribute '" + name + "' is not supported");
  }
  return Status::Ok();
}

bool GraphBuilder::HasAttr(const char* name) const { return FindAttr(name) != nullptr; }

Result<int64_t> GraphBuilder::IntAttr(const char* name, int64_t fallback) const {
  const PlanAttribute* attr = FindAttr(name);
  if (attr == nullptr) return fallback;
  if (attr->type != PlanAttribute::Type::kInt) return Invalid("attribute '" + std::string(name) + "' must be an int");
  return attr->i;
}

Result<float> GraphBuilder::FloatAttr(const char* name, float fallback) const {
  const PlanAttribute* attr = FindAttr(name);
  if (attr == nullptr) return fallback;
  if (attr->type != PlanAttribute::Type::kFloat) return Invalid("attribute '" + std::string(name) + "' must be a float");
  return attr->f;
}

Result<std::vector<int64_t>> GraphBuilder::IntsAttr(const char* name) const {
  const PlanAttribute* attr = FindAttr(name);
  if (attr == nullptr) return std::vector<int64_t>{};
  if (attr->type != PlanAttribute::Type::kInts) return Invalid("attribute '" + std::string(name) + "' must be a list of ints");
  return attr->ints;
}

Result<std::vector<int64_t>> GraphBuilder::ConstInts(int32_t v, const char* role) const {
  if (!IsConstant(v)) {
    return Unsupported(std::string(role) + " '" + value(v).name +
                       "' is computed at run time; the native executor needs an initializer");
  }
  const Value& root = value(Root(v));
  if (root.dtype != DType::kInt64 && root.dtype != DType::kInt32) {
    return Invalid(std::string(role) + " '" + value(v).name + "' must be INT64, not " + DTypeName(root.dtype));
  }
  const size_t count = root.data->size() / DTypeSize(root.dtype);
  std::vector<int64_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = ReadInt(*root.data, i, root.dtype);
  return out;
}

Result<std::vector<float>> GraphBuilder::ConstFloats(int32_t v, const char* role) const {
  if (!IsConstant(v)) {
    return Unsupported(std::string(role) + " '" + value(v).name +
                       "' is computed at run time; the native executor needs an initializer");
  }
  const Value& root = value(Root(v));
  if (root.dtype != DType::kFloat32) {
    return Unsupported(std::string(role) + " '" + value(v).name + "' is " + DTypeName(root.dtype) +
                       "; the native executor needs FLOAT");
  }
  std::vector<float> out(root.data->size() / 4);
  if (!out.empty()) std::memcpy(out.data(), root.data->data(), out.size() * 4);
  return out;
}

Status GraphBuilder::DefineRuntime(int32_t v, DType dtype, Shape dims) {
  if (Status fresh = CheckFresh(v); !fresh.ok()) return Invalid(fresh.message());
  if (Status shape = CheckShape(Label() + ": output '" + value(v).name + "'", dtype, dims); !shape.ok()) {
    return shape;
  }
  Value& value = values_[static_cast<size_t>(v)];
  value.kind = Value::Kind::kRuntime;
  value.dtype = dtype;
  value.dims = std::move(dims);
  return Status::Ok();
}

Status GraphBuilder::DefineAlias(int32_t v, int32_t source, Shape dims) {
  if (Status fresh = CheckFresh(v); !fresh.ok()) return Invalid(fresh.message());
  const Value& src = value(source);
  if (Status shape = CheckShape(Label() + ": output '" + value(v).name + "'", src.dtype, dims); !shape.ok()) {
    return shape;
  }
  if (!(Numel(dims) == Numel(src.dims))) {
    return Invalid("output shape " + ShapeString(dims) + " does not hold the " +
                   LinString(Numel(src.dims)) + " elements of its input " + ShapeString(src.dims));
  }
  Value& value = values_[static_cast<size_t>(v)];
  value.kind = Value::Kind::kAlias;
  value.dtype = src.dtype;
  value.dims = std::move(dims);
  value.alias_of = source;
  return Status::Ok();
}

Result<int32_t> GraphBuilder::AddConstant(DType dtype, Shape dims, std::vector<uint8_t> bytes) {
  constants_.push_back(std::move(bytes));
  Value value;
  value.kind = Value::Kind::kConstant;
  value.dtype = dtype;
  value.dims = std::move(dims);
  value.name = "folded constant of " + Label();
  value.data = &constants_.back();
  values_.push_back(std::move(value));
  return static_cast<int32_t>(values_.size() - 1);
}

void GraphBuilder::Emit(StepArgs args) { steps_.push_back(Step{std::move(args), Label()}); }

Result<size_t> NormalizeAxis(const GraphBuilder& b, int64_t axis, size_t rank, bool inclusive) {
  const int64_t r = static_cast<int64_t>(rank);
  const int64_t hi = inclusive ? r : r - 1;
  if (axis < -r || axis > hi) {
    return b.Invalid("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  }
  return static_cast<size_t>(axis < 0 ? axis + r : axis);
}

}  // namespace hotpath::executor::detail
