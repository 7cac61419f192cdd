// The graph compiler: GraphPlan -> Program, once per model load.
//
//   Result<Program> program = Compile(plan);
//
// Compile validates the plan (every index, dtype, attribute, initializer
// size; tensors produced once, in topological order; rank <= kMaxRank; sizes
// capped), infers every shape with the batch dimension symbolic (each size a
// linear function of the rows, detail/steps.h), turns each node into kernel
// steps, fuses Gemm/MatMul + bias Add + activation and Binary + activation,
// lets shape-only ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity) share
// their input's buffer, folds BatchNormalization into a per-channel affine,
// drops steps whose results nobody reads, packs the initializers the steps
// read into one weights image, and plans every runtime tensor's offset in one
// workspace (memory_plan.h).
//
// Errors: INVALID_ARGUMENT for a malformed plan (bad index, cycle, wrong
// initializer size, absurd dimensions); FAILED_PRECONDITION naming the node
// and op for valid ONNX the executor does not run (an unsupported op,
// attribute, dtype, broadcast pattern, or a shape that is not linear in the
// batch), e.g. "op 'Conv' (node 'conv1') is not supported by the native
// executor".
//
// Thread-safety: Compile is a pure function; a Program is immutable and may
// be shared by every instance thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "executor/detail/steps.h"
#include "executor/executor.h"
#include "executor/memory_plan.h"
#include "executor/plan.h"

namespace hotpath::executor {

// No tensor, weights image or workspace may exceed this (1 TiB): far above
// any device, low enough that every size computation stays inside int64.
inline constexpr uint64_t kMaxCompiledBytes = 1ull << 40;

// A graph input or output: its public description, its shape as a function
// of the rows, and where it sits (inputs: the workspace slot the job's bytes
// are copied into; outputs: the buffer they are copied out of).
struct ProgramIo {
  IoSpec spec;
  detail::Shape shape;
  detail::Lin bytes;
  detail::BufRef ref;
};

// One workspace buffer, for logs and the no-overlap tests.
struct PlannedBuffer {
  std::string tensor;  // the plan tensor it holds first
  BufferLifetime lifetime;
  uint64_t offset = 0;
};

struct Program {
  std::string model_name;
  uint32_t max_batch_size = 0;
  std::vector<ProgramIo> inputs;
  std::vector<ProgramIo> outputs;
  std::vector<detail::Step> steps;
  // Initializers (and folded constants) the steps read, each at a multiple
  // of kBufferAlignment; uploaded once into the weights block.
  std::vector<uint8_t> weights;
  // One instance's workspace: every planned buffer, then the 4-byte error
  // flag at error_flag_offset; workspace_bytes includes both.
  uint64_t workspace_bytes = 0;
  uint64_t error_flag_offset = 0;
  std::vector<PlannedBuffer> buffers;

  // The rows every linear size is evaluated at: `rows` when batching, else 1
  // (then no size depends on it anyway).
  int64_t EffectiveRows(uint32_t rows) const { return max_batch_size == 0 ? 1 : rows; }
};

Result<Program> Compile(const GraphPlan& plan);

}  // namespace hotpath::executor
