// The pure batching policy. See policy.h for the rules.
#include "batcher/policy.h"

#include <algorithm>
#include <limits>

namespace hotpath::batcher {
namespace {

// Same bound ValidateConfig puts on configured durations; a request may ask
// for any timeout, so clamp it before it reaches time-point arithmetic.
constexpr uint64_t kMaxMicroseconds = 1'000'000'000'000;

Placement Reject(RejectKind kind, const BatcherConfig& config, uint32_t level, uint64_t limit) {
  Placement placement;
  placement.kind = Placement::Kind::kReject;
  placement.rejection = Rejection{kind, config.model_name, level, limit};
  return placement;
}

bool Fits(const OpenBatch& batch, const Arrival& arrival, uint32_t row_limit) {
  if (batch.reserved_rows + uint64_t{arrival.rows} > row_limit) return false;
  for (size_t i = 0; i < arrival.input_bytes.size() && i < batch.bytes_capacity.size(); ++i) {
    if (batch.bytes_reserved[i] + arrival.input_bytes[i] > batch.bytes_capacity[i]) return false;
  }
  return true;
}

// Dispatch order of a ready batch; smaller goes first.
struct ReadyBatch {
  uint64_t id = 0;
  uint32_t rank = 0;  // 2 * best level, +1 when only delayed requests hold it
  TimePoint oldest{};
  uint64_t first_sequence = 0;
};

}  // namespace

uint32_t EffectiveLevel(const BatcherConfig& config, uint32_t requested_priority) {
  if (config.priority_levels == 0) return 1;
  if (requested_priority == 0 || requested_priority > config.priority_levels) {
    return config.default_priority_level;
  }
  return requested_priority;
}

std::optional<Duration> EffectiveTimeout(const QueuePolicy& policy, uint64_t requested_timeout_us) {
  uint64_t timeout_us = policy.default_timeout_us;
  if (policy.allow_timeout_override && requested_timeout_us != 0 &&
      (timeout_us == 0 || requested_timeout_us < timeout_us)) {
    timeout_us = std::min(requested_timeout_us, kMaxMicroseconds);
  }
  if (timeout_us == 0) return std::nullopt;
  return std::chrono::microseconds(timeout_us);
}

uint32_t MaxPreferredBatchSize(const BatcherConfig& config) {
  if (config.max_batch_size == 0) return 1;
  if (config.preferred_batch_sizes.empty()) return config.max_batch_size;
  return *std::max_element(config.preferred_batch_sizes.begin(),
                           config.preferred_batch_sizes.end());
}

bool IsPreferredBatchSize(const BatcherConfig& config, uint32_t rows) {
  return std::find(config.preferred_batch_sizes.begin(), config.preferred_batch_sizes.end(),
                   rows) != config.preferred_batch_sizes.end();
}

Placement Place(const BatcherConfig& config, std::span<const OpenBatch> batches,
                const Arrival& arrival, std::span<const uint32_t> queued_per_level,
                TimePoint now) {
  const uint32_t level = arrival.priority_level;
  if (arrival.deadline && *arrival.deadline <= now) {
    return Reject(RejectKind::kDeadlineExceeded, config, level, 0);
  }
  const QueuePolicy& policy = PolicyForLevel(config, level);
  const uint32_t queued = level - 1 < queued_per_level.size() ? queued_per_level[level - 1] : 0;
  if (policy.max_queue_size != 0 && queued >= policy.max_queue_size) {
    return Reject(RejectKind::kQueueFull, config, level, policy.max_queue_size);
  }

  Placement placement;
  placement.kind = Placement::Kind::kOpen;
  if (config.max_batch_size == 0) {
    placement.capacity_bytes = arrival.input_bytes;
    return placement;
  }
  const uint32_t row_limit = MaxPreferredBatchSize(config);
  // At most one batch per shape is still growing (a batch closes before the
  // next one of its shape opens), so the first match decides.
  for (size_t i = 0; i < batches.size(); ++i) {
    const OpenBatch& batch = batches[i];
    if (batch.closed || batch.shape != arrival.shape) continue;
    if (Fits(batch, arrival, row_limit)) {
      placement.kind = Placement::Kind::kJoin;
      placement.batch_index = i;
      return placement;
    }
    placement.close_index = i;
    break;
  }
  // Room for the largest batch this one may grow to. Bytes per row come from
  // the opener; fixed-size types make that exact, variable-size (BYTES)
  // requests that do not fit close the batch early instead.
  const uint64_t rows = std::max<uint64_t>(row_limit, arrival.rows);
  placement.capacity_bytes.reserve(arrival.input_bytes.size());
  for (uint64_t bytes : arrival.input_bytes) {
    const uint64_t per_row = (bytes + arrival.rows - 1) / arrival.rows;
    placement.capacity_bytes.push_back(std::max(bytes, per_row * rows));
  }
  return placement;
}

Decision Decide(const BatcherConfig& config, std::span<const OpenBatch> batches,
                uint32_t idle_instances, TimePoint now) {
  Decision decision;
  auto wake_at = [&decision](TimePoint at) {
    if (!decision.next_wakeup || at < *decision.next_wakeup) decision.next_wakeup = at;
  };
  const Duration delay = std::chrono::microseconds(config.max_queue_delay_us);
  const uint32_t row_limit = MaxPreferredBatchSize(config);
  std::vector<ReadyBatch> ready;

  for (const OpenBatch& batch : batches) {
    uint32_t live = 0;
    uint32_t live_rows = 0;
    ReadyBatch order{batch.id, std::numeric_limits<uint32_t>::max(), TimePoint::max(),
                     std::numeric_limits<uint64_t>::max()};
    for (const QueuedRequest& request : batch.requests) {
      if (request.deadline && *request.deadline <= now) {
        decision.expired.push_back({request.sequence, batch.id, RejectKind::kDeadlineExceeded});
        continue;
      }
      bool delayed = request.state == RequestState::kDelayed;
      if (!delayed && request.timeout_at && *request.timeout_at <= now) {
        if (request.timeout_action == TimeoutAction::kReject) {
          decision.expired.push_back({request.sequence, batch.id, RejectKind::kTimeout});
          continue;
        }
        decision.delayed.push_back(request.sequence);
        delayed = true;
      }
      if (request.deadline) wake_at(*request.deadline);
      if (!delayed && request.timeout_at) wake_at(*request.timeout_at);
      ++live;
      live_rows += request.rows;
      order.rank = std::min(order.rank, request.priority_level * 2 + (delayed ? 1 : 0));
      order.oldest = std::min(order.oldest, request.enqueued);
      order.first_sequence = std::min(order.first_sequence, request.sequence);
    }
    if (live == 0) {
      if (batch.copies_in_flight == 0) decision.discard.push_back(batch.id);
      continue;
    }
    const bool is_ready = config.max_batch_size == 0 || batch.closed ||
                          batch.reserved_rows >= row_limit ||
                          IsPreferredBatchSize(config, live_rows) || delay.count() == 0 ||
                          now - order.oldest >= delay;
    if (!is_ready) {
      // While every instance is busy the batch keeps growing; the next
      // InstanceIdle is an event, so no timer is needed for the delay.
      if (idle_instances > 0) wake_at(order.oldest + delay);
      continue;
    }
    if (batch.copies_in_flight > 0) continue;
    ready.push_back(order);
  }

  if (config.preserve_ordering) {
    std::sort(ready.begin(), ready.end(), [](const ReadyBatch& a, const ReadyBatch& b) {
      return a.first_sequence < b.first_sequence;
    });
  } else {
    std::sort(ready.begin(), ready.end(), [](const ReadyBatch& a, const ReadyBatch& b) {
      if (a.rank != b.rank) return a.rank < b.rank;
      if (a.oldest != b.oldest) return a.oldest < b.oldest;
      return a.first_sequence < b.first_sequence;
    });
  }
  const size_t take = std::min<size_t>(idle_instances, ready.size());
  for (size_t i = 0; i < take; ++i) decision.seal.push_back(ready[i].id);
  return decision;
}

std::optional<TimePoint> LoopTimer(const BatcherConfig& config, const Decision& decision,
                                   uint32_t idle_instances, TimePoint now, bool after_event) {
  if (!after_event || idle_instances == 0 || config.max_queue_delay_us == 0) return decision.next_wakeup;
  const TimePoint linger = now + std::chrono::microseconds(config.max_queue_delay_us);
  if (decision.next_wakeup && *decision.next_wakeup <= linger) return decision.next_wakeup;
  return linger;
}

}  // namespace hotpath::batcher
