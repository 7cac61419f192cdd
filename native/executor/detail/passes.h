// Passes over the compiler's step list (compiler_passes.cc). Internal.
//
//   RemoveDeadSteps  drops every step whose result no graph output needs.
//   FuseSteps        folds, where the intermediate has no other reader and is
//                    not a graph output:
//                      Gemm/MatMul + Add(row or scalar bias) -> Gemm with bias
//                      Gemm/MatMul + activation              -> Gemm epilogue
//                      Add/Sub/Mul/Div + activation          -> Binary epilogue
//                    (so Gemm + Add + Relu is one step).
//
// Thread-safety: run on the compiling thread only.
#pragma once

#include <vector>

#include "executor/detail/graph_builder.h"

namespace hotpath::executor::detail {

// Per value: needed by a graph output (through steps and aliases).
std::vector<bool> LiveValues(GraphBuilder& b);
void RemoveDeadSteps(GraphBuilder& b);
void FuseSteps(GraphBuilder& b);

}  // namespace hotpath::executor::detail
