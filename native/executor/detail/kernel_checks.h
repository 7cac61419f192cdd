// Guard checks shared by every kernel set (host_kernels.cc, cuda_kernels.cu),
// so both refuse exactly the same arguments with the same messages.
//
// Each Check* returns OK or INVALID_ARGUMENT "<Kernel>: <what>" for a null
// pointer with a non-zero count, a negative size, a rank over kMaxRank, an
// unknown enum value, a leading dimension or pitch too small for its rows,
// or sizes whose extent overflows int64. On OK, `*work` (never null) is the
// number of output elements (bytes for Copy2D); 0 means there is nothing to
// do. Data errors (a Gather index) are not checked here.
//
// Thread-safety: pure functions. The header stays C++17 (nvcc includes it).
#pragma once

#include <cstdint>

#include "common/status.h"
#include "executor/kernels.h"

namespace hotpath::executor::detail {

// `*resolved` is `args` with lda/ldb/ldc of 0 replaced by the dense leading
// dimension (k or m for A, n or k for B, n for C).
Status CheckGemm(const GemmArgs& args, GemmArgs* resolved, int64_t* work);
Status CheckBinary(const BinaryArgs& args, int64_t* work);
Status CheckActivation(const ActivationArgs& args, int64_t* work);
Status CheckSoftmax(const SoftmaxArgs& args, int64_t* work);
Status CheckLayerNorm(const LayerNormArgs& args, int64_t* work);
Status CheckChannelAffine(const ChannelAffineArgs& args, int64_t* work);
Status CheckReduce(const ReduceArgs& args, int64_t* work);
Status CheckGather(const GatherArgs& args, int64_t* work);
Status CheckTranspose(const TransposeArgs& args, int64_t* work);
Status CheckCopy2D(const Copy2DArgs& args, int64_t* work);
Status CheckCast(const CastArgs& args, int64_t* work);

// INVALID_ARGUMENT "Gather index <value> at position <position> is out of
// range for axis length <axis_len>" (the host's data error).
Status GatherIndexError(int64_t value, int64_t position, int64_t axis_len);

}  // namespace hotpath::executor::detail
