// Plan and sample files (plan_io.h): a byte writer, a checking byte reader,
// and the two record layouts on top of them.
#include "executor/plan_io.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>

namespace hotpath::executor {
namespace {

// Attribute type codes in the file (fixed; independent of the enum's values).
enum AttributeCode : uint8_t { kInt = 0, kFloat = 1, kInts = 2, kFloats = 3, kString = 4 };

constexpr uint8_t kInitializerFlag = 1;

// Smallest encoding of one item, to bound a count by the bytes left before
// anything is allocated.
constexpr size_t kMinTensorBytes = 4 + 4 + 1 + 4 + 8;    // name, dtype, flags, dims, data
constexpr size_t kMinNodeBytes = 4 + 4 + 4 + 4 + 4;      // name, op, inputs, outputs, attrs
constexpr size_t kMinAttributeBytes = 4 + 1 + 4;         // name, type, smallest payload
constexpr size_t kMinSampleBytes = 4 + 4 + 4 + 8;        // name, dtype, dims, data

class Writer {
 public:
  void Bytes(const void* data, size_t size) {
    const auto* p = static_cast<const uint8_t*>(data);
    out_.insert(out_.end(), p, p + size);
  }
  void Le(uint64_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  }
  void U8(uint8_t v) { Le(v, 1); }
  void U32(uint32_t v) { Le(v, 4); }
  void I32(int32_t v) { Le(static_cast<uint32_t>(v), 4); }
  void I64(int64_t v) { Le(static_cast<uint64_t>(v), 8); }
  void U64(uint64_t v) { Le(v, 8); }
  void F32(float v) {
    uint32_t bits = 0;
    std::memcpy(&bits, &v, sizeof(bits));
    U32(bits);
  }
  // False (and nothing written) when `count` does not fit a u32 field.
  bool Count(size_t count) {
    if (count > std::numeric_limits<uint32_t>::max()) return false;
    U32(static_cast<uint32_t>(count));
    return true;
  }
  bool String(const std::string& s) {
    if (!Count(s.size())) return false;
    Bytes(s.data(), s.size());
    return true;
  }
  bool I32s(const std::vector<int32_t>& values) {
    if (!Count(values.size())) return false;
    for (int32_t v : values) I32(v);
    return true;
  }
  bool I64s(const std::vector<int64_t>& values) {
    if (!Count(values.size())) return false;
    for (int64_t v : values) I64(v);
    return true;
  }
  void Blob(const std::vector<uint8_t>& data) {
    U64(data.size());
    Bytes(data.data(), data.size());
  }
  std::vector<uint8_t> Take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Reads little-endian fields, checking each against the bytes left. The
// first failure sticks: later reads return false and keep the first message.
class Reader {
 public:
  Reader(const uint8_t* bytes, size_t size, std::string what)
      : p_(bytes), size_(bytes == nullptr ? 0 : size), what_(std::move(what)) {}

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  size_t left() const { return size_ - offset_; }
  // What is being read, for messages ("tensor 3 'fc0.weight'").
  void Context(std::string context) { context_ = std::move(context); }

  bool Fail(const std::string& reason) {
    if (status_.ok()) {
      std::string where = context_.empty() ? "" : " (" + context_ + ")";
      status_ = Status(StatusCode::kInvalidArgument, what_ + ": " + reason + " at byte " +
                                                         std::to_string(offset_) + where);
    }
    return false;
  }

  bool Bytes(void* out, size_t n, const char* field) {
    if (!ok()) return false;
    if (n > left()) {
      return Fail(std::string("truncated: ") + field + " needs " + std::to_string(n) + " bytes, " +
                  std::to_string(left()) + " left");
    }
    if (n > 0) std::memcpy(out, p_ + offset_, n);
    offset_ += n;
    return true;
  }
  bool Le(uint64_t* value, int bytes, const char* field) {
    uint8_t raw[8] = {};
    if (!Bytes(raw, static_cast<size_t>(bytes), field)) return false;
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(raw[i]) << (8 * i);
    *value = v;
    return true;
  }
  bool U8(uint8_t* out, const char* field) {
    uint64_t v = 0;
    if (!Le(&v, 1, field)) return false;
    *out = static_cast<uint8_t>(v);
    return true;
  }
  bool U32(uint32_t* out, const char* field) {
    uint64_t v = 0;
    if (!Le(&v, 4, field)) return false;
    *out = static_cast<uint32_t>(v);
    return true;
  }
  bool I32(int32_t* out, const char* field) {
    uint32_t v = 0;
    if (!U32(&v, field)) return false;
    *out = static_cast<int32_t>(v);  // two's complement (C++20)
    return true;
  }
  bool U64(uint64_t* out, const char* field) { return Le(out, 8, field); }
  bool I64(int64_t* out, const char* field) {
    uint64_t v = 0;
    if (!U64(&v, field)) return false;
    *out = static_cast<int64_t>(v);
    return true;
  }
  bool F32(float* out, const char* field) {
    uint32_t bits = 0;
    if (!U32(&bits, field)) return false;
    std::memcpy(out, &bits, sizeof(bits));
    return true;
  }
  // A u32 count whose items take at least `min_item_bytes` each: the count
  // is refused when even that many bytes are not left.
  bool Count(uint32_t* out, size_t min_item_bytes, const char* field) {
    if (!U32(out, field)) return false;
    if (static_cast<uint64_t>(*out) * min_item_bytes > left()) {
      return Fail(std::string("corrupt: ") + field + " count " + std::to_string(*out) +
                  " does not fit in the " + std::to_string(left()) + " bytes left");
    }
    return true;
  }
  bool String(std::string* out, const char* field) {
    uint32_t n = 0;
    if (!Count(&n, 1, field)) return false;
    out->assign(reinterpret_cast<const char*>(p_ + offset_), n);
    offset_ += n;
    return true;
  }
  bool I32s(std::vector<int32_t>* out, const char* field) {
    uint32_t n = 0;
    if (!Count(&n, 4, field)) return false;
    out->resize(n);
    for (int32_t& v : *out) I32(&v, field);
    return ok();
  }
  bool I64s(std::vector<int64_t>* out, const char* field) {
    uint32_t n = 0;
    if (!Count(&n, 8, field)) return false;
    out->resize(n);
    for (int64_t& v : *out) I64(&v, field);
    return ok();
  }
  bool Blob(std::vector<uint8_t>* out, const char* field) {
    uint64_t n = 0;
    if (!U64(&n, field)) return false;
    if (n > left()) {
      return Fail(std::string("corrupt: ") + field + " length " + std::to_string(n) +
                  " is more than the " + std::to_string(left()) + " bytes left");
    }
    out->assign(p_ + offset_, p_ + offset_ + n);
    offset_ += static_cast<size_t>(n);
    return true;
  }
  bool Magic(const char (&magic)[8], const char* kind) {
    char got[8] = {};
    if (!Bytes(got, sizeof(got), "magic")) return false;
    if (std::memcmp(got, magic, sizeof(got)) != 0) {
      offset_ = 0;
      return Fail(std::string("not a ") + kind + " (bad magic)");
    }
    return true;
  }
  bool End() {
    if (!ok()) return false;
    Context("");
    if (left() != 0) return Fail(std::to_string(left()) + " unexpected trailing bytes");
    return true;
  }

 private:
  const uint8_t* p_;
  size_t size_;
  size_t offset_ = 0;
  std::string what_;
  std::string context_;
  Status status_;
};

Status TooLarge(const std::string& what) {
  return Status(StatusCode::kInvalidArgument, what + " has more entries or bytes than the file format holds");
}

bool WriteAttribute(Writer& w, const std::string& name, const PlanAttribute& a) {
  if (!w.String(name)) return false;
  switch (a.type) {
    case PlanAttribute::Type::kInt:
      w.U8(kInt);
      w.I64(a.i);
      return true;
    case PlanAttribute::Type::kFloat:
      w.U8(kFloat);
      w.F32(a.f);
      return true;
    case PlanAttribute::Type::kInts:
      w.U8(kInts);
      return w.I64s(a.ints);
    case PlanAttribute::Type::kFloats:
      w.U8(kFloats);
      if (!w.Count(a.floats.size())) return false;
      for (float f : a.floats) w.F32(f);
      return true;
    case PlanAttribute::Type::kString:
      w.U8(kString);
      return w.String(a.s);
  }
  return false;
}

bool ReadAttribute(Reader& r, std::map<std::string, PlanAttribute>* attributes) {
  std::string name;
  uint8_t code = 0;
  if (!r.String(&name, "attribute name") || !r.U8(&code, "attribute type")) return false;
  PlanAttribute a;
  switch (code) {
    case kInt:
      a.type = PlanAttribute::Type::kInt;
      r.I64(&a.i, "int attribute");
      break;
    case kFloat:
      a.type = PlanAttribute::Type::kFloat;
      r.F32(&a.f, "float attribute");
      break;
    case kInts:
      a.type = PlanAttribute::Type::kInts;
      r.I64s(&a.ints, "ints attribute");
      break;
    case kFloats: {
      a.type = PlanAttribute::Type::kFloats;
      uint32_t n = 0;
      if (!r.Count(&n, 4, "floats attribute")) return false;
      a.floats.resize(n);
      for (float& f : a.floats) r.F32(&f, "floats attribute");
      break;
    }
    case kString:
      a.type = PlanAttribute::Type::kString;
      r.String(&a.s, "string attribute");
      break;
    default:
      return r.Fail("corrupt: attribute '" + name + "' has unknown type " + std::to_string(code));
  }
  if (!r.ok()) return false;
  if (!attributes->emplace(name, std::move(a)).second) {
    return r.Fail("corrupt: attribute '" + name + "' appears twice");
  }
  return true;
}

Result<std::vector<uint8_t>> ReadWholeFile(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) {
    int err = errno;
    if (err == ENOENT) return Status(StatusCode::kNotFound, "no such file: " + path);
    return Status::FromErrno("fopen " + path, err);
  }
  struct stat st {};
  if (fstat(fileno(file.get()), &st) != 0) return Status::FromErrno("fstat " + path, errno);
  if (!S_ISREG(st.st_mode)) return Status(StatusCode::kInvalidArgument, path + " is not a regular file");
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > std::numeric_limits<size_t>::max() / 2) {
    return Status(StatusCode::kInvalidArgument, path + " is too large");
  }
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  size_t got = bytes.empty() ? 0 : std::fread(bytes.data(), 1, bytes.size(), file.get());
  if (got != bytes.size()) {
    if (std::ferror(file.get())) return Status::FromErrno("fread " + path, errno);
    bytes.resize(got);  // shrank while reading: the decoder reports the truncation
  }
  return bytes;
}

// Writes to `<path>.tmp` and renames, so a reader never sees half a file.
Status WriteWholeFile(const std::string& path, const std::vector<uint8_t>& bytes) {
  const std::string tmp = path + ".tmp";
  std::FILE* file = std::fopen(tmp.c_str(), "wb");
  if (file == nullptr) return Status::FromErrno("fopen " + tmp, errno);
  bool wrote = bytes.empty() || std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  int write_errno = errno;
  bool closed = std::fclose(file) == 0;
  if (!wrote || !closed) {
    Status status = Status::FromErrno(wrote ? "fclose " + tmp : "fwrite " + tmp, wrote ? errno : write_errno);
    std::remove(tmp.c_str());
    return status;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    Status status = Status::FromErrno("rename " + tmp + " -> " + path, errno);
    std::remove(tmp.c_str());
    return status;
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<uint8_t>> EncodePlan(const GraphPlan& plan) {
  Writer w;
  w.Bytes(kPlanFileMagic, sizeof(kPlanFileMagic));
  bool fits = w.String(plan.model_name);
  w.I64(plan.opset);
  w.U32(plan.max_batch_size);
  fits = fits && w.Count(plan.tensors.size());
  for (size_t i = 0; fits && i < plan.tensors.size(); ++i) {
    const PlanTensor& t = plan.tensors[i];
    fits = w.String(t.name);
    w.I32(static_cast<int32_t>(t.dtype));
    w.U8(t.is_initializer ? kInitializerFlag : 0);
    fits = fits && w.I64s(t.dims);
    w.Blob(t.data);
  }
  fits = fits && w.Count(plan.nodes.size());
  for (size_t i = 0; fits && i < plan.nodes.size(); ++i) {
    const PlanNode& n = plan.nodes[i];
    fits = w.String(n.name) && w.String(n.op_type) && w.I32s(n.inputs) && w.I32s(n.outputs) &&
           w.Count(n.attributes.size());
    for (auto it = n.attributes.begin(); fits && it != n.attributes.end(); ++it) {
      fits = WriteAttribute(w, it->first, it->second);
    }
  }
  fits = fits && w.I32s(plan.inputs) && w.I32s(plan.outputs);
  if (!fits) return TooLarge("plan '" + plan.model_name + "'");
  return w.Take();
}

Result<GraphPlan> DecodePlan(const uint8_t* bytes, size_t size, const std::string& what) {
  Reader r(bytes, size, what);
  GraphPlan plan;
  r.Magic(kPlanFileMagic, "plan file");
  r.String(&plan.model_name, "model name");
  r.I64(&plan.opset, "opset");
  r.U32(&plan.max_batch_size, "max batch size");
  uint32_t count = 0;
  if (r.Count(&count, kMinTensorBytes, "tensor")) plan.tensors.resize(count);
  for (uint32_t i = 0; r.ok() && i < count; ++i) {
    PlanTensor& t = plan.tensors[i];
    r.Context("tensor " + std::to_string(i));
    int32_t dtype = 0;
    uint8_t flags = 0;
    if (!r.String(&t.name, "name")) break;
    r.Context("tensor " + std::to_string(i) + " '" + t.name + "'");
    r.I32(&dtype, "dtype");
    r.U8(&flags, "flags");
    if (r.ok() && (flags & ~kInitializerFlag) != 0) r.Fail("corrupt: unknown flags " + std::to_string(flags));
    r.I64s(&t.dims, "dims");
    r.Blob(&t.data, "data");
    t.dtype = static_cast<DType>(dtype);  // any number: Compile names one it does not know
    t.is_initializer = (flags & kInitializerFlag) != 0;
  }
  if (r.ok()) r.Context("");
  if (r.Count(&count, kMinNodeBytes, "node")) plan.nodes.resize(count);
  for (uint32_t i = 0; r.ok() && i < count; ++i) {
    PlanNode& n = plan.nodes[i];
    r.Context("node " + std::to_string(i));
    if (!r.String(&n.name, "name") || !r.String(&n.op_type, "op type")) break;
    r.Context("node " + std::to_string(i) + " '" + n.name + "' (" + n.op_type + ")");
    r.I32s(&n.inputs, "inputs");
    r.I32s(&n.outputs, "outputs");
    uint32_t attributes = 0;
    r.Count(&attributes, kMinAttributeBytes, "attribute");
    for (uint32_t a = 0; r.ok() && a < attributes; ++a) ReadAttribute(r, &n.attributes);
  }
  if (r.ok()) r.Context("");
  r.I32s(&plan.inputs, "graph inputs");
  r.I32s(&plan.outputs, "graph outputs");
  if (!r.End()) return r.status();
  return plan;
}

Result<std::vector<uint8_t>> EncodeSamples(const SampleInputs& samples) {
  Writer w;
  w.Bytes(kSampleFileMagic, sizeof(kSampleFileMagic));
  w.U32(samples.rows);
  bool fits = w.Count(samples.tensors.size());
  for (size_t i = 0; fits && i < samples.tensors.size(); ++i) {
    const SampleTensor& t = samples.tensors[i];
    fits = w.String(t.name);
    w.I32(static_cast<int32_t>(t.dtype));
    fits = fits && w.I64s(t.dims);
    w.Blob(t.data);
  }
  if (!fits) return TooLarge("sample inputs");
  return w.Take();
}

Result<SampleInputs> DecodeSamples(const uint8_t* bytes, size_t size, const std::string& what) {
  Reader r(bytes, size, what);
  SampleInputs samples;
  r.Magic(kSampleFileMagic, "sample file");
  r.U32(&samples.rows, "rows");
  uint32_t count = 0;
  if (r.Count(&count, kMinSampleBytes, "sample tensor")) samples.tensors.resize(count);
  for (uint32_t i = 0; r.ok() && i < count; ++i) {
    SampleTensor& t = samples.tensors[i];
    r.Context("sample tensor " + std::to_string(i));
    int32_t dtype = 0;
    if (!r.String(&t.name, "name")) break;
    r.Context("sample tensor " + std::to_string(i) + " '" + t.name + "'");
    r.I32(&dtype, "dtype");
    r.I64s(&t.dims, "dims");
    r.Blob(&t.data, "data");
    t.dtype = static_cast<DType>(dtype);
  }
  if (!r.End()) return r.status();
  return samples;
}

Status WritePlanFile(const std::string& path, const GraphPlan& plan) {
  Result<std::vector<uint8_t>> bytes = EncodePlan(plan);
  if (!bytes.ok()) return bytes.status();
  return WriteWholeFile(path, bytes.value());
}

Result<GraphPlan> ReadPlanFile(const std::string& path) {
  Result<std::vector<uint8_t>> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DecodePlan(bytes.value().data(), bytes.value().size(), "plan file '" + path + "'");
}

Status WriteSampleFile(const std::string& path, const SampleInputs& samples) {
  Result<std::vector<uint8_t>> bytes = EncodeSamples(samples);
  if (!bytes.ok()) return bytes.status();
  return WriteWholeFile(path, bytes.value());
}

Result<SampleInputs> ReadSampleFile(const std::string& path) {
  Result<std::vector<uint8_t>> bytes = ReadWholeFile(path);
  if (!bytes.ok()) return bytes.status();
  return DecodeSamples(bytes.value().data(), bytes.value().size(), "sample file '" + path + "'");
}

}  // namespace hotpath::executor
