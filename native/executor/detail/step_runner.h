// Runs one compiled step (steps.h): evaluates its linear sizes at the job's
// rows, resolves its buffers against the instance's workspace and the shared
// weights, and calls the kernel. A few multiply-adds per step; no lookups,
// no allocation (except to word an error). Internal.
//
// Thread-safety: reads only the step; safe from every instance thread.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "executor/detail/steps.h"
#include "executor/kernels.h"

namespace hotpath::executor::detail {

// The kernel's Status; an error is prefixed with the step's label.
Status RunStep(const Step& step, const KernelSet& kernels, const KernelContext& context,
               std::byte* workspace, const std::byte* weights, int64_t rows);

}  // namespace hotpath::executor::detail
