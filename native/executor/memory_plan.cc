// Greedy-by-size, best-fit placement of buffers with known lifetimes (the
// approach TFLite's arena planner takes). O(n^2) in the number of buffers,
// which is the number of runtime tensors: compile time only.
#include "executor/memory_plan.h"

#include <algorithm>
#include <numeric>
#include <string>

namespace hotpath::executor {
namespace {

uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

bool LifetimesIntersect(const BufferLifetime& a, const BufferLifetime& b) {
  return a.first <= b.last && b.first <= a.last;
}

}  // namespace

MemoryPlan PlanMemory(const std::vector<BufferLifetime>& buffers, uint64_t alignment) {
  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);

  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // Largest first; ties by first use, then index, so the plan is deterministic.
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (buffers[x].bytes != buffers[y].bytes) return buffers[x].bytes > buffers[y].bytes;
    return buffers[x].first < buffers[y].first;
  });

  struct Placed {
    uint64_t offset;
    uint64_t end;  // aligned
  };
  std::vector<size_t> placed;  // indices into buffers, in placement order
  std::vector<Placed> live;    // scratch: placed buffers live at the same time
  for (size_t index : order) {
    const BufferLifetime& buffer = buffers[index];
    const uint64_t size = AlignUp(buffer.bytes, alignment);
    if (size == 0) continue;  // an empty tensor needs no room; offset 0 is as good as any
    live.clear();
    for (size_t other : placed) {
      if (LifetimesIntersect(buffer, buffers[other])) {
        live.push_back({plan.offsets[other],
                        plan.offsets[other] + AlignUp(buffers[other].bytes, alignment)});
      }
    }
    std::sort(live.begin(), live.end(),
              [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
    uint64_t best = 0;
    uint64_t best_gap = UINT64_MAX;
    uint64_t cursor = 0;  // lowest free offset above the buffers seen so far
    for (const Placed& other : live) {
      if (other.offset > cursor) {
        const uint64_t gap = other.offset - cursor;
        if (gap >= size && gap < best_gap) {
          best = cursor;
          best_gap = gap;
        }
      }
      cursor = std::max(cursor, other.end);
    }
    plan.offsets[index] = best_gap == UINT64_MAX ? cursor : best;
    plan.total_bytes = std::max(plan.total_bytes, plan.offsets[index] + size);
    placed.push_back(index);
  }
  return plan;
}

Status CheckMemoryPlan(const std::vector<BufferLifetime>& buffers, const MemoryPlan& plan,
                       uint64_t alignment) {
  if (plan.offsets.size() != buffers.size()) {
    return Status(StatusCode::kInternal, "memory plan: " + std::to_string(plan.offsets.size()) +
                                             " offsets for " + std::to_string(buffers.size()) +
                                             " buffers");
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    if (plan.offsets[i] % alignment != 0 || plan.offsets[i] + buffers[i].bytes > plan.total_bytes) {
      return Status(StatusCode::kInternal, "memory plan: buffer " + std::to_string(i) +
                                               " at offset " + std::to_string(plan.offsets[i]) +
                                               " is misaligned or outside the workspace");
    }
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      if (buffers[i].bytes == 0 || buffers[j].bytes == 0) continue;
      if (!LifetimesIntersect(buffers[i], buffers[j])) continue;
      const uint64_t a = plan.offsets[i], b = plan.offsets[j];
      if (a < b + buffers[j].bytes && b < a + buffers[i].bytes) {
        return Status(StatusCode::kInternal, "memory plan: buffers " + std::to_string(i) +
                                                 " and " + std::to_string(j) +
                                                 " are live together and overlap");
      }
    }
  }
  return Status::Ok();
}

}  // namespace hotpath::executor
