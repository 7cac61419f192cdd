// Plan files: a GraphPlan (plan.h) and sample inputs for it, on disk, so a
// machine without Node (a GPU node) can run the real sample models. The
// writer on the TypeScript side is bench/gpu/export-plans.ts; the two must
// stay byte-for-byte in step.
//
// Format, version 1. Little-endian throughout; `str` is a u32 byte length
// then the bytes (UTF-8, no terminator); `[T]` is a u32 count then the items.
//
//   plan file                          sample file
//   "HPPLAN1\0"       8 bytes          "HPSAMP1\0"       8 bytes
//   str  model_name                    u32  rows
//   i64  opset                         [sample tensor]
//   u32  max_batch_size                  str  name
//   [tensor]                             i32  dtype
//     str  name                          [i64] dims (full shape, batch first)
//     i32  dtype (ONNX number)           u64  byte length, then the bytes
//     u8   flags (bit 0: initializer)
//     [i64] dims
//     u64  byte length, then the bytes (0 unless an initializer)
//   [node]
//     str  name
//     str  op_type
//     [i32] inputs (-1: omitted)
//     [i32] outputs
//     [attribute]
//       str name
//       u8  type: 0 int (i64), 1 float (f32), 2 ints ([i64]),
//                 3 floats ([f32]), 4 string (str)
//   [i32] graph inputs
//   [i32] graph outputs
//
// The file ends exactly there. A sample file holds `rows` rows of every
// graph input, in model order (the first dimension is the batch when the
// model batches; `rows` is 1 when it does not).
//
// Reading never trusts the file: every count and length is checked against
// the bytes left before anything is allocated, so a truncated or corrupt
// file is INVALID_ARGUMENT naming what and where, never a crash or a huge
// allocation. Only the structure is checked here; what the plan means
// (indices, dtypes, shapes, ops) is Compile's job (compiler.h).
//
// Thread-safety: free functions over values; no shared state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "executor/plan.h"

namespace hotpath::executor {

inline constexpr char kPlanFileMagic[8] = {'H', 'P', 'P', 'L', 'A', 'N', '1', '\0'};
inline constexpr char kSampleFileMagic[8] = {'H', 'P', 'S', 'A', 'M', 'P', '1', '\0'};

// One graph input's sample values.
struct SampleTensor {
  std::string name;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

struct SampleInputs {
  uint32_t rows = 0;
  std::vector<SampleTensor> tensors;  // model input order
};

// In-memory forms. Encode fails (INVALID_ARGUMENT) only when a count or
// length does not fit its field. `what` names the source in messages.
Result<std::vector<uint8_t>> EncodePlan(const GraphPlan& plan);
Result<GraphPlan> DecodePlan(const uint8_t* bytes, size_t size, const std::string& what);
Result<std::vector<uint8_t>> EncodeSamples(const SampleInputs& samples);
Result<SampleInputs> DecodeSamples(const uint8_t* bytes, size_t size, const std::string& what);

// Files. A missing file is NOT_FOUND; another I/O failure INTERNAL naming
// the call and errno; a bad file INVALID_ARGUMENT.
Status WritePlanFile(const std::string& path, const GraphPlan& plan);
Result<GraphPlan> ReadPlanFile(const std::string& path);
Status WriteSampleFile(const std::string& path, const SampleInputs& samples);
Result<SampleInputs> ReadSampleFile(const std::string& path);

}  // namespace hotpath::executor
