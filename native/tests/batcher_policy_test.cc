// Tests for batcher/policy.h: the pure batching policy, driven with explicit
// time points (no threads, no clock).
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "batcher/policy.h"
#include "tests/check.h"

namespace hotpath::batcher {
namespace {

using std::chrono::microseconds;

const TimePoint kT0 = TimePoint(std::chrono::seconds(100));

BatcherConfig Config(uint32_t max_batch_size, std::vector<uint32_t> preferred = {},
                     uint64_t delay_us = 0) {
  BatcherConfig config;
  config.model_name = "ranker";
  config.max_batch_size = max_batch_size;
  config.preferred_batch_sizes = std::move(preferred);
  config.max_queue_delay_us = delay_us;
  return config;
}

// A tiny stand-in for the loop's bookkeeping: applies Place like Enqueue does
// (without memory), so tests read as "requests arrive, then decide".
struct Sim {
  explicit Sim(BatcherConfig c) : config(std::move(c)) {
    queued.assign(std::max<uint32_t>(config.priority_levels, 1), 0);
  }

  // Returns the placement; on accept the request is queued as kQueued.
  Placement Add(uint32_t rows, TimePoint now, uint32_t priority = 0, ShapeKey shape = {1, 4},
                std::optional<TimePoint> deadline = std::nullopt, uint64_t timeout_us = 0) {
    Arrival arrival;
    arrival.priority_level = EffectiveLevel(config, priority);
    arrival.rows = rows;
    arrival.shape = shape;
    arrival.input_bytes = {uint64_t{16} * rows};
    arrival.deadline = deadline;
    Placement placement = Place(config, batches, arrival, queued, now);
    if (placement.kind == Placement::Kind::kReject) return placement;
    if (placement.kind == Placement::Kind::kOpen) {
      if (placement.close_index) batches[*placement.close_index].closed = true;
      OpenBatch batch;
      batch.id = next_batch++;
      batch.shape = shape;
      batch.bytes_reserved = {0};
      batch.bytes_capacity = placement.capacity_bytes;
      batches.push_back(batch);
    }
    OpenBatch& batch =
        placement.kind == Placement::Kind::kOpen ? batches.back() : batches[placement.batch_index];
    QueuedRequest request;
    request.id = 1000 + next_sequence;
    request.sequence = next_sequence++;
    request.priority_level = arrival.priority_level;
    request.rows = rows;
    request.enqueued = now;
    const QueuePolicy& policy = PolicyForLevel(config, arrival.priority_level);
    if (auto timeout = EffectiveTimeout(policy, timeout_us)) request.timeout_at = now + *timeout;
    request.timeout_action = policy.timeout_action;
    request.deadline = deadline;
    request.state = RequestState::kQueued;
    batch.requests.push_back(request);
    batch.reserved_rows += rows;
    batch.bytes_reserved[0] += arrival.input_bytes[0];
    ++queued[arrival.priority_level - 1];
    return placement;
  }

  Decision DecideAt(TimePoint now, uint32_t idle) { return Decide(config, batches, idle, now); }

  const OpenBatch* Find(uint64_t id) const {
    for (const OpenBatch& b : batches) {
      if (b.id == id) return &b;
    }
    return nullptr;
  }
  uint32_t RowsOf(uint64_t id) const { return Find(id) ? Find(id)->reserved_rows : 0; }

  BatcherConfig config;
  std::vector<OpenBatch> batches;
  std::vector<uint32_t> queued;
  uint64_t next_batch = 1;
  uint64_t next_sequence = 0;
};

void TestLevelsAndTimeouts(test::Checker& check) {
  BatcherConfig config = Config(8);
  check.Equal(EffectiveLevel(config, 0), 1u, "no levels: everything at level 1");
  check.Equal(EffectiveLevel(config, 7), 1u, "no levels: priority ignored");
  config.priority_levels = 3;
  config.default_priority_level = 2;
  check.Equal(EffectiveLevel(config, 0), 2u, "priority 0 -> default level");
  check.Equal(EffectiveLevel(config, 1), 1u, "priority 1 kept");
  check.Equal(EffectiveLevel(config, 3), 3u, "priority 3 kept");
  check.Equal(EffectiveLevel(config, 4), 2u, "priority above levels -> default (Triton)");

  QueuePolicy policy;
  policy.default_timeout_us = 100;
  check.True(EffectiveTimeout(policy, 50) == microseconds(100), "no override: default kept");
  policy.allow_timeout_override = true;
  check.True(EffectiveTimeout(policy, 50) == microseconds(50), "override lowers the timeout");
  check.True(EffectiveTimeout(policy, 200) == microseconds(100), "override never raises it");
  check.True(EffectiveTimeout(policy, 0) == microseconds(100), "no request timeout: default");
  policy.default_timeout_us = 0;
  check.True(EffectiveTimeout(policy, 50) == microseconds(50), "override below 'no timeout'");
  check.True(!EffectiveTimeout(policy, 0).has_value(), "no timeout at all");
  policy.allow_timeout_override = false;
  check.True(!EffectiveTimeout(policy, 50).has_value(), "override ignored when not allowed");
}

void TestValidateConfig(test::Checker& check) {
  check.True(ValidateConfig(Config(8, {2, 4}, 100)).ok(), "valid config");
  check.True(ValidateConfig(Config(0)).ok(), "max_batch_size 0 is valid (no batching)");
  Status bad = ValidateConfig(Config(8, {9}));
  check.True(bad.code() == StatusCode::kInvalidArgument, "preferred above max");
  check.Contains(bad.message(), "preferred_batch_size", "names the field");
  check.True(!ValidateConfig(Config(0, {1})).ok(), "preferred sizes need batching");
  BatcherConfig levels = Config(8);
  levels.priority_levels = 2;
  levels.default_priority_level = 3;
  check.Contains(ValidateConfig(levels).message(), "default_priority_level", "default level");
  levels.default_priority_level = 1;
  levels.priority_queue_policy[5] = QueuePolicy{};
  check.Contains(ValidateConfig(levels).message(), "priority_queue_policy[5]", "policy level");
  levels.priority_queue_policy.clear();
  levels.instance_count = 0;
  check.Contains(ValidateConfig(levels).message(), "instance_count", "instances");
}

void TestWorkConserving(test::Checker& check) {
  Sim sim(Config(8));  // delay 0
  sim.Add(1, kT0);
  Decision busy = sim.DecideAt(kT0, 0);
  check.True(busy.seal.empty(), "all instances busy: nothing is sent");
  check.True(!busy.next_wakeup.has_value(), "busy and nothing expires: no timer");
  Decision idle = sim.DecideAt(kT0, 1);
  check.Equal(idle.seal.size(), size_t{1}, "delay 0: a lone request goes at once");
}

void TestDelayHoldsThenSendsAsIs(test::Checker& check) {
  Sim sim(Config(8, {4}, 100));
  sim.Add(1, kT0);
  sim.Add(2, kT0 + microseconds(30));
  Decision early = sim.DecideAt(kT0 + microseconds(50), 1);
  check.True(early.seal.empty(), "held while the oldest waited less than the delay");
  check.True(early.next_wakeup == kT0 + microseconds(100), "wake when the oldest's delay ends");
  Decision due = sim.DecideAt(kT0 + microseconds(100), 1);
  check.Equal(due.seal.size(), size_t{1}, "an expired delay sends the batch as it is");
  check.Equal(sim.RowsOf(due.seal[0]), 3u, "with its 3 rows (not a preferred size)");
}

void TestPreferredAndMaxSendAtOnce(test::Checker& check) {
  Sim preferred(Config(8, {2, 4}, 1'000'000));
  preferred.Add(1, kT0);
  check.True(preferred.DecideAt(kT0, 1).seal.empty(), "1 row: not preferred, held");
  preferred.Add(1, kT0);
  check.Equal(preferred.DecideAt(kT0, 1).seal.size(), size_t{1},
              "the request completing a preferred size (2) sends it at once");

  Sim max(Config(4, {}, 1'000'000));
  max.Add(3, kT0);
  check.True(max.DecideAt(kT0, 1).seal.empty(), "3 of max 4: held");
  max.Add(1, kT0);
  check.Equal(max.DecideAt(kT0, 1).seal.size(), size_t{1}, "reaching max sends at once");
}

void TestGrowsWhileBusyUpToLargestPreferred(test::Checker& check) {
  Sim sim(Config(16, {2, 4}, 1'000'000));
  for (int i = 0; i < 3; ++i) sim.Add(1, kT0);
  check.Equal(sim.batches.size(), size_t{1}, "past preferred 2 the batch keeps growing");
  check.True(sim.DecideAt(kT0, 0).seal.empty(), "busy: nothing sent");
  sim.Add(1, kT0);
  Placement fifth = sim.Add(1, kT0);
  check.True(fifth.kind == Placement::Kind::kOpen && fifth.close_index == size_t{0},
             "the largest preferred size (4) closes the batch; the next request opens one");
  Decision freed = sim.DecideAt(kT0, 1);
  check.Equal(freed.seal.size(), size_t{1}, "one instance frees: one batch");
  check.Equal(sim.RowsOf(freed.seal[0]), 4u, "the largest preferred batch goes");
}

void TestRowsNeverSplitAndShapesNeverMix(test::Checker& check) {
  Sim sim(Config(8, {}, 1000));
  sim.Add(6, kT0);
  Placement big = sim.Add(3, kT0);
  check.True(big.kind == Placement::Kind::kOpen, "6 + 3 > 8: a new batch, rows not split");
  check.True(sim.batches[0].closed, "the batch it did not fit is closed");
  check.Equal(sim.batches[1].reserved_rows, 3u, "all 3 rows in the new batch");
  Decision decision = sim.DecideAt(kT0, 2);
  check.Equal(decision.seal.size(), size_t{1}, "closed batch is ready; the new one waits");
  check.Equal(sim.RowsOf(decision.seal[0]), 6u, "the closed batch goes as it is");

  Sim shapes(Config(8, {}, 1000));
  shapes.Add(1, kT0, 0, {1, 4});
  Placement other = shapes.Add(1, kT0, 0, {1, 5});
  check.True(other.kind == Placement::Kind::kOpen && !other.close_index.has_value(),
             "a different non-batch shape opens its own batch, closing nothing");
  Placement same = shapes.Add(1, kT0, 0, {1, 4});
  check.True(same.kind == Placement::Kind::kJoin && same.batch_index == 0,
             "same shape joins its own batch");
  check.Equal(shapes.batches[0].reserved_rows, 2u, "two rows of shape [4]");
  check.Equal(shapes.batches[1].reserved_rows, 1u, "one row of shape [5]");
  check.True(shapes.batches[0].bytes_capacity == std::vector<uint64_t>{16 * 8},
             "capacity for the largest batch it may reach");
}

void TestVariableBytesCloseEarly(test::Checker& check) {
  BatcherConfig config = Config(4);
  std::vector<OpenBatch> batches(1);
  batches[0].id = 1;
  batches[0].shape = {1, 1};
  batches[0].reserved_rows = 1;
  batches[0].bytes_reserved = {10};
  batches[0].bytes_capacity = {40};
  Arrival arrival;
  arrival.shape = {1, 1};
  arrival.input_bytes = {31};  // e.g. a longer BYTES string
  std::vector<uint32_t> queued{1};
  Placement placement = Place(config, batches, arrival, queued, kT0);
  check.True(placement.kind == Placement::Kind::kOpen && placement.close_index == size_t{0},
             "bytes that do not fit close the batch");
  check.True(placement.capacity_bytes == std::vector<uint64_t>{31 * 4}, "new capacity");
}

void TestNoBatching(test::Checker& check) {
  BatcherConfig config = Config(0, {}, 1'000'000);
  config.default_queue_policy.max_queue_size = 2;
  Sim sim(config);
  sim.Add(1, kT0);
  sim.Add(1, kT0);
  check.Equal(sim.batches.size(), size_t{2}, "max_batch_size 0: a batch per request");
  check.True(sim.batches[1].bytes_capacity == std::vector<uint64_t>{16}, "exact capacity");
  Placement full = sim.Add(1, kT0);
  check.True(full.kind == Placement::Kind::kReject &&
                 full.rejection.kind == RejectKind::kQueueFull,
             "queue policy still applies without batching");
  Decision decision = sim.DecideAt(kT0, 1);
  check.Equal(decision.seal.size(), size_t{1}, "no delay without batching; one per instance");
  check.Equal(decision.seal[0], uint64_t{1}, "oldest first");
}

void TestQueueFull(test::Checker& check) {
  BatcherConfig config = Config(8);
  config.priority_levels = 2;
  config.default_priority_level = 1;
  config.default_queue_policy.max_queue_size = 2;
  QueuePolicy roomy;
  roomy.max_queue_size = 3;
  config.priority_queue_policy[2] = roomy;
  Sim sim(config);
  sim.Add(1, kT0, 1);
  sim.Add(1, kT0, 1);
  Placement full = sim.Add(1, kT0, 1);
  check.True(full.kind == Placement::Kind::kReject, "third request at level 1 refused");
  Status status = ToStatus(full.rejection);
  check.True(status.code() == StatusCode::kUnavailable, "queue full is UNAVAILABLE");
  check.Contains(status.message(), "model 'ranker'", "names the model");
  check.Contains(status.message(), "max_queue_size 2", "names the queue size");
  for (int i = 0; i < 3; ++i) {
    check.True(sim.Add(1, kT0, 2).kind != Placement::Kind::kReject, "level 2 has its own queue");
  }
  check.True(sim.Add(1, kT0, 2).kind == Placement::Kind::kReject, "level 2 override size 3");
}

void TestDeadlines(test::Checker& check) {
  Sim sim(Config(8, {}, 1000));
  Placement late = sim.Add(1, kT0, 0, {1, 4}, kT0);
  check.True(late.kind == Placement::Kind::kReject &&
                 late.rejection.kind == RejectKind::kDeadlineExceeded,
             "a deadline already passed is refused at enqueue");
  check.True(ToStatus(late.rejection).code() == StatusCode::kDeadlineExceeded, "its status");

  sim.Add(1, kT0, 0, {1, 4}, kT0 + microseconds(300));
  sim.Add(1, kT0, 0, {1, 4});
  Decision waiting = sim.DecideAt(kT0 + microseconds(100), 0);
  check.True(waiting.next_wakeup == kT0 + microseconds(300), "busy: still wakes for a deadline");
  Decision expired = sim.DecideAt(kT0 + microseconds(300), 0);
  check.Equal(expired.expired.size(), size_t{1}, "the deadline expires while queued");
  check.True(expired.expired[0].kind == RejectKind::kDeadlineExceeded, "as DEADLINE_EXCEEDED");
  check.Equal(expired.expired[0].sequence, uint64_t{0}, "the right request");
}

void TestRejectVersusDelay(test::Checker& check) {
  BatcherConfig reject_config = Config(8, {}, 1'000'000);
  reject_config.default_queue_policy.default_timeout_us = 50;
  Sim reject(reject_config);
  reject.Add(1, kT0);
  Decision before = reject.DecideAt(kT0 + microseconds(49), 0);
  check.True(before.expired.empty() && before.next_wakeup == kT0 + microseconds(50),
             "wakes for the timeout");
  Decision after = reject.DecideAt(kT0 + microseconds(50), 0);
  check.True(after.expired.size() == 1 && after.expired[0].kind == RejectKind::kTimeout,
             "REJECT: expired with TIMEOUT");
  check.Equal(after.discard.size(), size_t{1}, "its now-empty batch is discarded");
  check.True(ToStatus(Rejection{RejectKind::kTimeout, "ranker", 1, 50}).code() ==
                 StatusCode::kDeadlineExceeded,
             "a queue timeout answers DEADLINE_EXCEEDED");

  BatcherConfig delay_config = reject_config;
  delay_config.default_queue_policy.timeout_action = TimeoutAction::kDelay;
  Sim delay(delay_config);
  delay.Add(1, kT0);
  Decision delayed = delay.DecideAt(kT0 + microseconds(50), 0);
  check.True(delayed.expired.empty(), "DELAY: kept");
  check.True(delayed.delayed == std::vector<uint64_t>{0}, "DELAY: marked delayed");
  delay.batches[0].requests[0].state = RequestState::kDelayed;
  Decision again = delay.DecideAt(kT0 + microseconds(60), 0);
  check.True(again.delayed.empty() && !again.next_wakeup.has_value(),
             "a delayed request is not re-reported and sets no timer");
}

void TestTimeoutOverrideOnlyLowers(test::Checker& check) {
  BatcherConfig config = Config(8, {}, 1'000'000);
  config.default_queue_policy.default_timeout_us = 100;
  config.default_queue_policy.allow_timeout_override = true;
  Sim sim(config);
  sim.Add(1, kT0, 0, {1, 4}, std::nullopt, 40);   // lowered to 40
  sim.Add(1, kT0, 0, {1, 5}, std::nullopt, 500);  // capped at the default 100
  Decision at40 = sim.DecideAt(kT0 + microseconds(40), 0);
  check.True(at40.expired.size() == 1 && at40.expired[0].sequence == 0, "lowered timeout fires");
  Decision at99 = sim.DecideAt(kT0 + microseconds(99), 0);
  check.Equal(at99.expired.size(), size_t{1}, "at 99 us only the lowered one has expired");
  Decision at100 = sim.DecideAt(kT0 + microseconds(100), 0);
  check.Equal(at100.expired.size(), size_t{2}, "it fires at the default, not at 500");
}

void TestPriorityOrdering(test::Checker& check) {
  BatcherConfig config = Config(4, {}, 0);
  config.priority_levels = 3;
  config.default_priority_level = 3;
  config.default_queue_policy.timeout_action = TimeoutAction::kDelay;
  config.default_queue_policy.default_timeout_us = 10;
  Sim sim(config);
  sim.Add(1, kT0, 2, {1, 1});                      // batch 1: level 2, oldest
  sim.Add(1, kT0 + microseconds(1), 1, {1, 2});    // batch 2: level 1
  sim.Add(1, kT0 + microseconds(2), 0, {1, 3});    // batch 3: default level 3
  Decision one = sim.DecideAt(kT0 + microseconds(5), 1);
  check.True(one.seal == std::vector<uint64_t>{2}, "one idle instance: level 1 first");
  Decision all = sim.DecideAt(kT0 + microseconds(5), 3);
  check.True(all.seal == (std::vector<uint64_t>{2, 1, 3}), "then level 2, then level 3");

  // Batch 2's request passes its DELAY timeout: it now goes after undelayed
  // level-1 work, but still before level 2.
  sim.batches[1].requests[0].state = RequestState::kDelayed;
  sim.Add(1, kT0 + microseconds(6), 1, {1, 4});  // batch 4: level 1, fresh
  Decision delayed = sim.DecideAt(kT0 + microseconds(7), 4);
  check.True(delayed.seal == (std::vector<uint64_t>{4, 2, 1, 3}),
             "delayed level-1 after fresh level-1, before level 2");
}

void TestPreserveOrdering(test::Checker& check) {
  BatcherConfig config = Config(4, {}, 0);
  config.priority_levels = 2;
  config.default_priority_level = 2;
  Sim plain(config);
  plain.Add(1, kT0, 2, {1, 1});
  plain.Add(1, kT0 + microseconds(1), 1, {1, 2});
  check.True(plain.DecideAt(kT0 + microseconds(1), 2).seal == (std::vector<uint64_t>{2, 1}),
             "without preserve_ordering: priority first");
  config.preserve_ordering = true;
  Sim ordered(config);
  ordered.Add(1, kT0, 2, {1, 1});
  ordered.Add(1, kT0 + microseconds(1), 1, {1, 2});
  check.True(ordered.DecideAt(kT0 + microseconds(1), 2).seal == (std::vector<uint64_t>{1, 2}),
             "with preserve_ordering: arrival order");
}

void TestCopiesInFlight(test::Checker& check) {
  Sim sim(Config(2, {}, 0));
  sim.Add(2, kT0);
  sim.batches[0].copies_in_flight = 1;
  Decision copying = sim.DecideAt(kT0, 1);
  check.True(copying.seal.empty(), "a batch is not sealed while a copy is in flight");
  check.True(!copying.next_wakeup.has_value(), "the finished copy is the event, not a timer");
  sim.batches[0].requests[0].deadline = kT0;
  Decision expired = sim.DecideAt(kT0, 1);
  check.Equal(expired.expired.size(), size_t{1}, "expiry still applies while copying");
  check.True(expired.discard.empty(), "but the batch is not freed under the copy");
}

void TestLoopTimerLinger(test::Checker& check) {
  const BatcherConfig config = Config(8, {}, 200);
  Decision none;
  Decision soon;
  soon.next_wakeup = kT0 + microseconds(50);
  Decision late;
  late.next_wakeup = kT0 + microseconds(500);  // a deadline, say
  check.True(LoopTimer(config, none, 1, kT0, true) == kT0 + microseconds(200), "after an event: lingers one delay");
  check.True(!LoopTimer(config, none, 1, kT0, false), "after its own timer: sleeps until an event");
  check.True(!LoopTimer(config, none, 0, kT0, true), "no idle instance: no delay can run out, no linger");
  check.True(!LoopTimer(Config(8), none, 1, kT0, true), "delay 0: Enqueue seals, no linger");
  check.True(LoopTimer(config, soon, 1, kT0, true) == kT0 + microseconds(50), "an earlier decision stands");
  check.True(LoopTimer(config, late, 1, kT0, true) == kT0 + microseconds(200), "a later one is brought forward");
  check.True(LoopTimer(config, late, 1, kT0, false) == kT0 + microseconds(500), "without an event, Decide's time");
}

// The loop and Enqueue's wake rule, simulated microsecond by microsecond
// with one instance: requests arrive at random gaps, a sealed batch runs for
// a random time, the loop runs a pass when woken (an enqueue the rule says
// must wake it, an instance coming back while a batch waits) or when its timer (LoopTimer) runs
// out. After every microsecond's events no batch may be ready with the
// instance idle: that would be a request waiting past its max queue delay
// because a wake was skipped. With the linger the enqueuing threads wake
// the loop less often than without it (the per-batch futex wake it saves).
void TestNoLostWakeWithTheLinger(test::Checker& check) {
  auto run = [&check](bool linger) {
    BatcherConfig config = Config(8, {4}, 200);
    Sim sim(config);
    std::mt19937 random(7);
    std::uniform_int_distribution<int> gap(0, 300);
    std::uniform_int_distribution<int> run_time(20, 400);
    uint32_t idle = 1;
    std::optional<TimePoint> timer;
    std::optional<TimePoint> done_at;
    uint64_t enqueue_wakes = 0;
    uint64_t sealed_requests = 0;
    bool lost = false;
    // Applies seals like ApplyLocked (the instance runs the batch), as often
    // as Decide finds some; returns the last decision.
    auto seal_ready = [&](TimePoint now) {
      for (;;) {
        Decision decision = sim.DecideAt(now, idle);
        if (decision.seal.empty()) return decision;
        for (uint64_t id : decision.seal) {
          for (size_t i = 0; i < sim.batches.size(); ++i) {
            if (sim.batches[i].id != id) continue;
            sealed_requests += sim.batches[i].requests.size();
            sim.batches.erase(sim.batches.begin() + static_cast<long>(i));
            break;
          }
          --idle;
          done_at = now + microseconds(run_time(random));
        }
      }
    };
    auto loop_pass = [&](TimePoint now, bool after_event) {
      const Decision decision = seal_ready(now);
      timer = linger ? LoopTimer(config, decision, idle, now, after_event) : decision.next_wakeup;
    };
    loop_pass(kT0, true);  // Create
    TimePoint next_arrival = kT0 + microseconds(gap(random));
    for (TimePoint now = kT0; now < kT0 + std::chrono::milliseconds(200); now += microseconds(1)) {
      if (done_at && *done_at <= now) {  // InstanceIdle: wakes the loop only for waiting batches
        done_at.reset();
        ++idle;
        if (!sim.batches.empty()) loop_pass(now, true);
      }
      while (next_arrival <= now) {
        sim.Add(1, now);
        next_arrival = now + microseconds(gap(random));
        if (idle == 0) continue;  // with every instance busy, batches just grow
        const Decision next = sim.DecideAt(now, idle);
        if (!next.seal.empty()) {
          seal_ready(now);  // the enqueuing thread seals and dispatches inline
        } else if (next.next_wakeup && (!timer || *next.next_wakeup < *timer)) {
          ++enqueue_wakes;
          loop_pass(now, true);
        }
      }
      if (timer && *timer <= now) loop_pass(now, false);
      if (idle > 0 && !sim.DecideAt(now, idle).seal.empty()) lost = true;
    }
    check.True(!lost, linger ? "with the linger: no ready batch left waiting" : "without: no ready batch left waiting");
    check.True(sealed_requests > 500, "the simulation ran batches");
    return enqueue_wakes;
  };
  const uint64_t without = run(false);
  const uint64_t with = run(true);
  check.True(with < without, "the linger spares enqueues wakes of the loop");
}

}  // namespace
}  // namespace hotpath::batcher

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::batcher;
  TestLevelsAndTimeouts(check);
  TestValidateConfig(check);
  TestWorkConserving(check);
  TestDelayHoldsThenSendsAsIs(check);
  TestPreferredAndMaxSendAtOnce(check);
  TestGrowsWhileBusyUpToLargestPreferred(check);
  TestRowsNeverSplitAndShapesNeverMix(check);
  TestVariableBytesCloseEarly(check);
  TestNoBatching(check);
  TestQueueFull(check);
  TestDeadlines(check);
  TestRejectVersusDelay(check);
  TestTimeoutOverrideOnlyLowers(check);
  TestPriorityOrdering(check);
  TestPreserveOrdering(check);
  TestCopiesInFlight(check);
  TestLoopTimerLinger(check);
  TestNoLostWakeWithTheLinger(check);
  return check.ExitCode();
}
