// SteadyClock and ManualClock. See clock.h.
#include "batcher/clock.h"

#include <utility>

namespace hotpath::batcher {

TimePoint SteadyClock::Now() const { return std::chrono::steady_clock::now(); }

void SteadyClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            std::optional<TimePoint> deadline,
                            const std::function<bool()>& woken) const {
  if (deadline) {
    cv.wait_until(lock, *deadline, woken);
  } else {
    cv.wait(lock, woken);
  }
}

ManualClock::ManualClock(TimePoint start) : now_ns_(start.time_since_epoch().count()) {}

TimePoint ManualClock::Now() const {
  return TimePoint(Duration(now_ns_.load(std::memory_order_acquire)));
}

void ManualClock::WaitUntil(std::condition_variable& cv, std::unique_lock<std::mutex>& lock,
                            std::optional<TimePoint> /*deadline*/,
                            const std::function<bool()>& woken) const {
  cv.wait(lock, woken);
}

uint64_t ManualClock::Subscribe(std::function<void()> wake) {
  std::lock_guard<std::mutex> guard(wakers_mu_);
  const uint64_t id = next_id_++;
  wakers_.emplace(id, std::move(wake));
  return id;
}

void ManualClock::Unsubscribe(uint64_t id) {
  std::lock_guard<std::mutex> guard(wakers_mu_);
  wakers_.erase(id);
}

TimePoint ManualClock::Advance(Duration by) {
  const int64_t step = by.count() > 0 ? by.count() : 0;
  const int64_t now = now_ns_.fetch_add(step, std::memory_order_acq_rel) + step;
  std::lock_guard<std::mutex> guard(wakers_mu_);
  for (auto& [id, wake] : wakers_) wake();
  return TimePoint(Duration(now));
}

}  // namespace hotpath::batcher
