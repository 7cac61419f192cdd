// The batcher's source of time, and the hook that makes its timing
// deterministic in tests.
//
// SteadyClock is the real one: Now() is std::chrono::steady_clock and
// WaitUntil is a timed condition-variable wait. ManualClock only moves when a
// test calls Advance(); waits never time out on their own, and Advance() runs
// every subscribed wake callback so waiting batcher loops re-evaluate at the
// new time. Tests therefore never sleep to check a timing rule.
//
// Thread-safety: all members may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>

#include "batcher/types.h"

namespace hotpath::batcher {

class Clock {
 public:
  virtual ~Clock() = default;

  virtual TimePoint Now() const = 0;

  // Blocks on `cv` (`lock` holds its mutex) until `woken()` is true or this
  // clock reaches `deadline` (never, when nullopt). May return early
  // (spurious wake-ups); callers re-check their state.
  virtual void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                         std::optional<TimePoint> deadline,
                         const std::function<bool()>& woken) const = 0;

  // Registers `wake`, to be called (with no lock of the caller's held) when
  // this clock's time jumps. Real clocks never call it. Returns an id for
  // Unsubscribe; after Unsubscribe returns, `wake` is not running and will not
  // be called again.
  virtual uint64_t Subscribe(std::function<void()> wake) = 0;
  virtual void Unsubscribe(uint64_t id) = 0;
};

class SteadyClock final : public Clock {
 public:
  TimePoint Now() const override;
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 std::optional<TimePoint> deadline,
                 const std::function<bool()>& woken) const override;
  uint64_t Subscribe(std::function<void()>) override { return 0; }
  void Unsubscribe(uint64_t) override {}
};

class ManualClock final : public Clock {
 public:
  // Starts at `start` (an arbitrary, fixed point by default).
  explicit ManualClock(TimePoint start = TimePoint(std::chrono::hours(1)));

  TimePoint Now() const override;
  // Waits for `woken()` only; `deadline` is reached through Advance().
  void WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                 std::optional<TimePoint> deadline,
                 const std::function<bool()>& woken) const override;
  uint64_t Subscribe(std::function<void()> wake) override;
  void Unsubscribe(uint64_t id) override;

  // Moves time forward by `by` (>= 0) and runs every wake callback on the
  // calling thread. Returns the new time.
  TimePoint Advance(Duration by);

 private:
  // Nanoseconds since the steady-clock epoch; atomic so Now() takes no lock
  // (batchers call it under their own mutex, and Advance calls into them).
  std::atomic<int64_t> now_ns_;
  // Guards wakers_ and next_id_. Held while callbacks run, which is what lets
  // Unsubscribe promise that a callback is not running. Lock order:
  // wakers_mu_ before any batcher mutex.
  std::mutex wakers_mu_;
  std::map<uint64_t, std::function<void()>> wakers_;
  uint64_t next_id_ = 1;
};

}  // namespace hotpath::batcher
