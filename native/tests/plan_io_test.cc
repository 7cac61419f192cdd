// Plan and sample files (executor/plan_io.h): round trips through memory and
// disk, the exact bytes of a small plan (the format is shared with
// bench/gpu/export-plans.ts), and corrupt input: every truncation, trailing
// bytes, bad magic, absurd counts and lengths, and seeded random byte flips
// are INVALID_ARGUMENT, never a crash or a huge allocation (run under ASan).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "executor/plan_io.h"
#include "tests/check.h"

namespace hotpath::executor {
namespace {

using test::Checker;

std::vector<uint8_t> FloatBytes(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// A plan touching every field: all attribute types, an omitted operand, an
// empty node name, initializer data and a batch dimension.
GraphPlan SamplePlan() {
  GraphPlan plan;
  plan.model_name = "tiny:1";
  plan.opset = 13;
  plan.max_batch_size = 8;
  plan.tensors = {
      {"x", DType::kFloat32, {-1, 2}, false, {}},
      {"w", DType::kFloat32, {3, 2}, true, FloatBytes({1, 2, 3, 4, 5, 6})},
      {"b", DType::kFloat32, {3}, true, FloatBytes({0.5f, -0.5f, 0})},
      {"ids", DType::kInt64, {-1, 1}, false, {}},
      {"y", DType::kFloat32, {}, false, {}},
      {"z\xc3\xa9", DType::kFloat32, {}, false, {}},
  };
  PlanNode gemm;
  gemm.name = "fc";
  gemm.op_type = "Gemm";
  gemm.inputs = {0, 1, 2};
  gemm.outputs = {4};
  gemm.attributes["transB"] = PlanAttribute{PlanAttribute::Type::kInt, 1, 0, {}, {}, ""};
  gemm.attributes["alpha"] = PlanAttribute{PlanAttribute::Type::kFloat, 0, 0.25f, {}, {}, ""};
  PlanNode clip;
  clip.op_type = "Clip";
  clip.inputs = {4, -1, -1};
  clip.outputs = {5};
  clip.attributes["axes"] = PlanAttribute{PlanAttribute::Type::kInts, 0, 0, {-1, 0, 1LL << 40}, {}, ""};
  clip.attributes["scales"] = PlanAttribute{PlanAttribute::Type::kFloats, 0, 0, {}, {1.5f, -2.0f}, ""};
  clip.attributes["mode"] = PlanAttribute{PlanAttribute::Type::kString, 0, 0, {}, {}, "constant"};
  plan.nodes = {gemm, clip};
  plan.inputs = {0, 3};
  plan.outputs = {5};
  return plan;
}

bool SameAttribute(const PlanAttribute& a, const PlanAttribute& b) {
  if (a.type != b.type) return false;
  switch (a.type) {
    case PlanAttribute::Type::kInt: return a.i == b.i;
    case PlanAttribute::Type::kFloat: return std::memcmp(&a.f, &b.f, sizeof(float)) == 0;
    case PlanAttribute::Type::kInts: return a.ints == b.ints;
    case PlanAttribute::Type::kFloats:
      return a.floats.size() == b.floats.size() &&
             std::memcmp(a.floats.data(), b.floats.data(), a.floats.size() * sizeof(float)) == 0;
    case PlanAttribute::Type::kString: return a.s == b.s;
  }
  return false;
}

void CheckSamePlan(Checker& check, const GraphPlan& got, const GraphPlan& want) {
  check.Equal(got.model_name, want.model_name, "model name");
  check.Equal(got.opset, want.opset, "opset");
  check.Equal(got.max_batch_size, want.max_batch_size, "max batch size");
  check.True(got.inputs == want.inputs, "graph inputs");
  check.True(got.outputs == want.outputs, "graph outputs");
  if (!check.Equal(got.tensors.size(), want.tensors.size(), "tensor count")) return;
  for (size_t i = 0; i < want.tensors.size(); ++i) {
    const PlanTensor& g = got.tensors[i];
    const PlanTensor& w = want.tensors[i];
    check.Equal(g.name, w.name, "tensor name");
    check.True(g.dtype == w.dtype, "tensor dtype " + w.name);
    check.True(g.dims == w.dims, "tensor dims " + w.name);
    check.Equal(g.is_initializer, w.is_initializer, "initializer flag " + w.name);
    check.True(g.data == w.data, "tensor data " + w.name);
  }
  if (!check.Equal(got.nodes.size(), want.nodes.size(), "node count")) return;
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    const PlanNode& g = got.nodes[i];
    const PlanNode& w = want.nodes[i];
    check.Equal(g.name, w.name, "node name");
    check.Equal(g.op_type, w.op_type, "op type");
    check.True(g.inputs == w.inputs && g.outputs == w.outputs, "node operands " + w.op_type);
    if (!check.Equal(g.attributes.size(), w.attributes.size(), "attribute count " + w.op_type)) continue;
    for (const auto& [name, attribute] : w.attributes) {
      auto found = g.attributes.find(name);
      check.True(found != g.attributes.end() && SameAttribute(found->second, attribute), "attribute " + name);
    }
  }
}

void RoundTripInMemory(Checker& check) {
  GraphPlan plan = SamplePlan();
  Result<std::vector<uint8_t>> bytes = EncodePlan(plan);
  if (!check.True(bytes.ok(), "encode: " + bytes.status().ToString())) return;
  Result<GraphPlan> back = DecodePlan(bytes.value().data(), bytes.value().size(), "memory");
  if (!check.True(back.ok(), "decode: " + back.status().ToString())) return;
  CheckSamePlan(check, back.value(), plan);

  GraphPlan empty;  // no tensors, nodes, inputs or outputs: structurally fine
  Result<std::vector<uint8_t>> empty_bytes = EncodePlan(empty);
  Result<GraphPlan> empty_back = DecodePlan(empty_bytes.value().data(), empty_bytes.value().size(), "memory");
  check.True(empty_back.ok() && empty_back.value().tensors.empty(), "empty plan round trip");
}

// The exact bytes of a one-node plan, written out by hand from the format in
// plan_io.h: bench/gpu/export-plans.ts must produce the same.
void ExactBytes(Checker& check) {
  GraphPlan plan;
  plan.model_name = "m";
  plan.opset = 17;
  plan.max_batch_size = 4;
  plan.tensors = {{"x", DType::kFloat32, {-1, 2}, false, {}}, {"y", DType::kFloat32, {}, false, {}}};
  PlanNode relu;
  relu.name = "r";
  relu.op_type = "Relu";
  relu.inputs = {0};
  relu.outputs = {1};
  relu.attributes["a"] = PlanAttribute{PlanAttribute::Type::kFloat, 0, 1.0f, {}, {}, ""};
  plan.nodes = {relu};
  plan.inputs = {0};
  plan.outputs = {1};
  const std::vector<uint8_t> want = {
      'H', 'P', 'P', 'L', 'A', 'N', '1', 0,                  // magic
      1, 0, 0, 0, 'm',                                       // model name
      17, 0, 0, 0, 0, 0, 0, 0,                               // opset
      4, 0, 0, 0,                                            // max batch size
      2, 0, 0, 0,                                            // 2 tensors
      1, 0, 0, 0, 'x', 1, 0, 0, 0, 0,                        //   "x" FLOAT, flags 0
      2, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0,                                //   no data
      1, 0, 0, 0, 'y', 1, 0, 0, 0, 0, 0, 0, 0, 0,            //   "y" FLOAT, flags 0, no dims
      0, 0, 0, 0, 0, 0, 0, 0,                                //   no data
      1, 0, 0, 0,                                            // 1 node
      1, 0, 0, 0, 'r', 4, 0, 0, 0, 'R', 'e', 'l', 'u',       //   name, op
      1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,        //   inputs [0], outputs [1]
      1, 0, 0, 0, 1, 0, 0, 0, 'a', 1, 0x00, 0x00, 0x80, 0x3f,  // 1 attribute: a = 1.0f
      1, 0, 0, 0, 0, 0, 0, 0,                                // graph inputs [0]
      1, 0, 0, 0, 1, 0, 0, 0,                                // graph outputs [1]
  };
  Result<std::vector<uint8_t>> bytes = EncodePlan(plan);
  check.True(bytes.ok() && bytes.value() == want, "plan bytes match the documented format");
}

void Truncations(Checker& check) {
  std::vector<uint8_t> bytes = EncodePlan(SamplePlan()).value();
  int bad = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    Result<GraphPlan> r = DecodePlan(bytes.data(), n, "cut");
    if (r.ok() || r.status().code() != StatusCode::kInvalidArgument) ++bad;
  }
  check.Equal(bad, 0, "every truncation is INVALID_ARGUMENT");
  Result<GraphPlan> cut = DecodePlan(bytes.data(), 5, "plan file 'x.plan'");
  check.Contains(cut.status().message(), "plan file 'x.plan': truncated: magic needs 8 bytes, 5 left",
                 "truncation message");
  Result<GraphPlan> cut_end = DecodePlan(bytes.data(), bytes.size() - 3, "plan file 'x.plan'");
  check.Contains(cut_end.status().message(), "graph outputs count 1 does not fit", "truncated array");
  check.True(!DecodePlan(nullptr, 100, "null").ok(), "null bytes");

  bytes.push_back(0);
  Result<GraphPlan> trailing = DecodePlan(bytes.data(), bytes.size(), "trailing");
  check.Contains(trailing.status().message(), "1 unexpected trailing bytes", "trailing byte");
}

// Overwrites 4 little-endian bytes at `offset`.
void PutU32(std::vector<uint8_t>& bytes, size_t offset, uint32_t value) {
  for (int i = 0; i < 4; ++i) bytes[offset + i] = static_cast<uint8_t>(value >> (8 * i));
}

void CorruptFields(Checker& check) {
  const std::vector<uint8_t> good = EncodePlan(SamplePlan()).value();
  auto decode = [](const std::vector<uint8_t>& b) { return DecodePlan(b.data(), b.size(), "corrupt"); };

  std::vector<uint8_t> magic = good;
  magic[3] = 'X';
  check.Contains(decode(magic).status().message(), "bad magic", "bad magic");

  // Offsets: magic 8, name "tiny:1" 4+6, opset 8, max batch 4 -> tensor count at 30.
  constexpr size_t kTensorCount = 8 + 10 + 8 + 4;
  std::vector<uint8_t> count = good;
  PutU32(count, kTensorCount, 0xffffffffu);
  Result<GraphPlan> huge = decode(count);
  check.Equal(std::string(StatusCodeName(huge.status().code())), std::string("INVALID_ARGUMENT"), "huge tensor count");
  check.Contains(huge.status().message(), "does not fit", "huge count message");

  std::vector<uint8_t> name_length = good;
  PutU32(name_length, 8, 0x7fffffffu);
  check.Contains(decode(name_length).status().message(), "model name count", "huge string length");

  // Tensor 0 "x": count 4, name 4+1, dtype 4, flags 1, dims 4+16 -> data length.
  constexpr size_t kFirstDataLength = kTensorCount + 4 + 5 + 4 + 1 + 4 + 16;
  std::vector<uint8_t> blob = good;
  PutU32(blob, kFirstDataLength, 0xfffffff0u);
  PutU32(blob, kFirstDataLength + 4, 0xffffffffu);
  Result<GraphPlan> blob_r = decode(blob);
  check.Contains(blob_r.status().message(), "data length", "huge data length");
  check.Contains(blob_r.status().message(), "tensor 0 'x'", "message names the tensor");

  std::vector<uint8_t> flags = good;
  flags[kTensorCount + 4 + 5 + 4] = 0x80;
  check.Contains(decode(flags).status().message(), "unknown flags", "unknown tensor flags");

  // Attributes are stored in name order: "alpha" (float) first in node "fc".
  // Find its type byte right after the name.
  const char* alpha = "alpha";
  auto at = std::search(good.begin(), good.end(), alpha, alpha + 5);
  if (check.True(at != good.end(), "alpha in the bytes")) {
    std::vector<uint8_t> type = good;
    type[static_cast<size_t>(at - good.begin()) + 5] = 9;
    check.Contains(decode(type).status().message(), "unknown type 9", "unknown attribute type");
  }
  // Renaming "mode" to "axes" (same length) makes node 2 hold "axes" twice.
  const char* mode = "mode";
  auto mode_at = std::search(good.begin(), good.end(), mode, mode + 4);
  if (check.True(mode_at != good.end(), "mode in the bytes")) {
    std::vector<uint8_t> dup = good;
    std::memcpy(&dup[static_cast<size_t>(mode_at - good.begin())], "axes", 4);
    check.Contains(decode(dup).status().message(), "appears twice", "duplicate attribute");
  }
}

void RandomFlips(Checker& check) {
  const std::vector<uint8_t> good = EncodePlan(SamplePlan()).value();
  std::mt19937 rng(20240917);
  int bad_code = 0;
  int decoded = 0;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bytes = good;
    int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) bytes[rng() % bytes.size()] = static_cast<uint8_t>(rng());
    if (rng() % 4 == 0) bytes.resize(rng() % bytes.size());
    Result<GraphPlan> r = DecodePlan(bytes.data(), bytes.size(), "flip");
    if (r.ok()) {
      ++decoded;  // a flip inside data or a name can still be a valid file
    } else if (r.status().code() != StatusCode::kInvalidArgument) {
      ++bad_code;
    }
  }
  check.Equal(bad_code, 0, "random corruption is INVALID_ARGUMENT or a valid plan");
  std::printf("random flips: %d of 3000 still decoded\n", decoded);
}

void Samples(Checker& check) {
  SampleInputs samples;
  samples.rows = 2;
  samples.tensors = {{"x", DType::kFloat32, {2, 2}, FloatBytes({1, 2, 3, 4})},
                     {"ids", DType::kInt64, {2, 1}, std::vector<uint8_t>(16, 7)}};
  std::vector<uint8_t> bytes = EncodeSamples(samples).value();
  Result<SampleInputs> back = DecodeSamples(bytes.data(), bytes.size(), "samples");
  if (check.True(back.ok(), "samples decode: " + back.status().ToString())) {
    check.Equal(back.value().rows, 2u, "sample rows");
    check.Equal(back.value().tensors.size(), size_t{2}, "sample tensors");
    check.True(back.value().tensors[1].name == "ids" && back.value().tensors[1].dtype == DType::kInt64 &&
                   back.value().tensors[1].dims == std::vector<int64_t>{2, 1} &&
                   back.value().tensors[1].data == samples.tensors[1].data,
               "sample tensor round trip");
  }
  int bad = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    if (DecodeSamples(bytes.data(), n, "cut").status().code() != StatusCode::kInvalidArgument) ++bad;
  }
  check.Equal(bad, 0, "every sample truncation is INVALID_ARGUMENT");
  Result<SampleInputs> as_plan = DecodeSamples(EncodePlan(SamplePlan()).value().data(), 40, "plan");
  check.Contains(as_plan.status().message(), "not a sample file", "a plan is not a sample file");
}

void Files(Checker& check) {
  char dir_template[] = "/tmp/plan_io_test.XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!check.True(dir != nullptr, "mkdtemp")) return;
  const std::string plan_path = std::string(dir) + "/tiny.plan";
  const std::string sample_path = std::string(dir) + "/tiny.sample";

  Status wrote = WritePlanFile(plan_path, SamplePlan());
  check.True(wrote.ok(), "write plan: " + wrote.ToString());
  Result<GraphPlan> read = ReadPlanFile(plan_path);
  if (check.True(read.ok(), "read plan: " + read.status().ToString())) CheckSamePlan(check, read.value(), SamplePlan());

  SampleInputs samples;
  samples.rows = 1;
  samples.tensors = {{"x", DType::kFloat32, {1, 2}, FloatBytes({1, 2})}};
  check.True(WriteSampleFile(sample_path, samples).ok(), "write samples");
  Result<SampleInputs> read_samples = ReadSampleFile(sample_path);
  check.True(read_samples.ok() && read_samples.value().tensors.size() == 1, "read samples");

  Result<GraphPlan> missing = ReadPlanFile(std::string(dir) + "/missing.plan");
  check.Equal(std::string(StatusCodeName(missing.status().code())), std::string("NOT_FOUND"), "missing file");
  Result<GraphPlan> directory = ReadPlanFile(dir);
  check.Equal(std::string(StatusCodeName(directory.status().code())), std::string("INVALID_ARGUMENT"), "a directory");
  Result<GraphPlan> wrong_kind = ReadPlanFile(sample_path);
  check.Contains(wrong_kind.status().message(), "not a plan file", "sample file read as a plan");
  Status no_dir = WritePlanFile(std::string(dir) + "/no/such/dir.plan", SamplePlan());
  check.Equal(std::string(StatusCodeName(no_dir.code())), std::string("INTERNAL"), "write into a missing directory");

  std::remove(plan_path.c_str());
  std::remove(sample_path.c_str());
  check.True(rmdir(dir) == 0, "temp dir empty (no .tmp left)");
}

}  // namespace
}  // namespace hotpath::executor

int main() {
  hotpath::test::Checker check;
  hotpath::executor::RoundTripInMemory(check);
  hotpath::executor::ExactBytes(check);
  hotpath::executor::Truncations(check);
  hotpath::executor::CorruptFields(check);
  hotpath::executor::RandomFlips(check);
  hotpath::executor::Samples(check);
  hotpath::executor::Files(check);
  return check.ExitCode();
}
