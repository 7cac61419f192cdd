// MemoryTrimmer and the process's one trimmer. See memory_trimmer.h.
#include "process/memory_trimmer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#if __has_include(<features.h>)
#include <features.h>  // defines __GLIBC__ on glibc, and nothing of the kind on musl
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#define HOTPATH_HAVE_MALLOC_TRIM 1
#else
#define HOTPATH_HAVE_MALLOC_TRIM 0
#endif

namespace hotpath::process {

bool TrimSupported() { return HOTPATH_HAVE_MALLOC_TRIM != 0; }

Result<uint64_t> ReadResidentBytes() {
  const long page = ::sysconf(_SC_PAGESIZE);
  if (page <= 0) return Status::FromErrno("sysconf(_SC_PAGESIZE)", errno);
  int fd;
  do {
    fd = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return Status::FromErrno("open /proc/self/statm", errno);
  char text[256];
  ssize_t got;
  do {
    got = ::read(fd, text, sizeof(text) - 1);
  } while (got < 0 && errno == EINTR);
  const int read_errno = errno;
  if (::close(fd) != 0 && got >= 0) return Status::FromErrno("close /proc/self/statm", errno);
  if (got < 0) return Status::FromErrno("read /proc/self/statm", read_errno);
  text[got] = '\0';
  // "size resident shared text lib data dt", in pages.
  char* end = nullptr;
  errno = 0;
  std::strtoull(text, &end, 10);
  if (end == text || errno != 0) return Status(StatusCode::kInternal, "malformed /proc/self/statm: no size field");
  char* resident_end = nullptr;
  errno = 0;
  const unsigned long long resident = std::strtoull(end, &resident_end, 10);
  if (resident_end == end || errno != 0) {
    return Status(StatusCode::kInternal, "malformed /proc/self/statm: no resident field");
  }
  return static_cast<uint64_t>(resident) * static_cast<uint64_t>(page);
}

TrimProbe SystemTrimProbe() {
  TrimProbe probe;
  probe.read_rss = [] { return ReadResidentBytes(); };
#if HOTPATH_HAVE_MALLOC_TRIM
  // malloc_trim has no error to check: it returns 1 when it released memory, 0 when not.
  probe.trim = [] { return ::malloc_trim(0) == 1; };
#endif
  return probe;
}

struct MemoryTrimmer::State {
  TrimSettings settings;
  std::chrono::milliseconds interval{0};
  TrimProbe probe;
  std::atomic<uint64_t> accounted{0};
  std::atomic<bool> trim_requested{false};
  std::atomic<bool> stop{false};

  // Guards everything below; never held across the probe's calls.
  mutable std::mutex mutex;
  std::condition_variable wake;
  TrimStats stats;             // guarded by mutex
  uint64_t requested = 0;      // CheckNowForTest requests; guarded by mutex
  uint64_t completed = 0;      // checks finished; guarded by mutex
  std::condition_variable done;

  // Touched by the thread only.
  bool trimmed_before = false;
  uint64_t floor = 0;

  std::thread thread;

  void Loop() {
    std::unique_lock lock(mutex);
    uint64_t served = 0;  // CheckNowForTest requests answered
    while (!stop.load(std::memory_order_acquire)) {
      wake.wait_for(lock, interval, [&] { return stop.load(std::memory_order_acquire) || requested != served; });
      if (stop.load(std::memory_order_acquire)) break;
      served = requested;
      lock.unlock();
      CheckOnce();
      lock.lock();
      completed += 1;
      done.notify_all();
    }
  }

  // One measurement and, when the policy says so, one trim. Runs on the thread, unlocked.
  void CheckOnce() {
    Result<uint64_t> rss = probe.read_rss();
    if (!rss.ok()) {
      std::lock_guard guard(mutex);
      stats.failures += 1;
      stats.last_error = rss.status().message();
      return;
    }
    const uint64_t accounted_now = accounted.load(std::memory_order_relaxed);
    uint64_t current = rss.value();
    if (trimmed_before && current < floor) floor = current;
    TrimInputs inputs{current, accounted_now, floor, trimmed_before,
                      trim_requested.exchange(false, std::memory_order_acq_rel)};
    bool trimmed = false;
    uint64_t released = 0;
    if (ShouldTrim(settings, inputs)) {
      probe.trim();
      trimmed = true;
      Result<uint64_t> after = probe.read_rss();
      if (after.ok()) {
        if (after.value() < current) released = current - after.value();
        current = after.value();
      }
      trimmed_before = true;
      floor = current;
    }
    std::lock_guard guard(mutex);
    stats.checks += 1;
    stats.last_rss_bytes = current;
    stats.accounted_bytes = accounted_now;
    if (trimmed) {
      stats.trims += 1;
      stats.released_bytes += released;
    }
  }
};

MemoryTrimmer::MemoryTrimmer(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<MemoryTrimmer>> MemoryTrimmer::Create(TrimSettings settings,
                                                             std::chrono::milliseconds interval,
                                                             TrimProbe probe) {
  if (interval.count() <= 0) return Status(StatusCode::kInvalidArgument, "trim interval must be > 0 ms");
  if (!probe.read_rss || !probe.trim) {
    return Status(StatusCode::kInvalidArgument,
                  TrimSupported() ? "trim probe needs read_rss and trim"
                                  : "memory trimming needs glibc's malloc_trim, which this C library lacks");
  }
  auto state = std::make_unique<State>();
  state->settings = settings;
  state->interval = interval;
  state->probe = std::move(probe);
  State* raw = state.get();
  try {
    raw->thread = std::thread([raw] { raw->Loop(); });
  } catch (const std::system_error& err) {
    return Status(StatusCode::kUnavailable, std::string("cannot start the memory trimmer thread: ") + err.what());
  }
  return std::unique_ptr<MemoryTrimmer>(new MemoryTrimmer(std::move(state)));
}

MemoryTrimmer::~MemoryTrimmer() {
  {
    std::lock_guard guard(state_->mutex);
    state_->stop.store(true, std::memory_order_release);
  }
  state_->wake.notify_all();
  state_->done.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

void MemoryTrimmer::ReportAccounted(uint64_t bytes) { state_->accounted.store(bytes, std::memory_order_relaxed); }

void MemoryTrimmer::RequestTrim() { state_->trim_requested.store(true, std::memory_order_release); }

TrimStats MemoryTrimmer::Stats() const {
  std::lock_guard guard(state_->mutex);
  TrimStats copy = state_->stats;
  copy.accounted_bytes = state_->accounted.load(std::memory_order_relaxed);
  return copy;
}

void MemoryTrimmer::CheckNowForTest() {
  std::unique_lock lock(state_->mutex);
  const uint64_t target = state_->completed + 1;
  state_->requested += 1;
  state_->wake.notify_all();
  state_->done.wait(lock, [&] { return state_->completed >= target || state_->stop.load(std::memory_order_acquire); });
}

namespace {

// The process's one trimmer; guarded by ProcessMutex().
std::unique_ptr<MemoryTrimmer>& ProcessTrimmer() {
  static std::unique_ptr<MemoryTrimmer> trimmer;
  return trimmer;
}

std::mutex& ProcessMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

Status StartProcessTrimmer(TrimSettings settings, std::chrono::milliseconds interval) {
  std::lock_guard guard(ProcessMutex());
  if (ProcessTrimmer() != nullptr) return Status(StatusCode::kFailedPrecondition, "the memory trimmer runs already");
  Result<std::unique_ptr<MemoryTrimmer>> created = MemoryTrimmer::Create(settings, interval, SystemTrimProbe());
  if (!created.ok()) return created.status();
  ProcessTrimmer() = std::move(created.value());
  return Status::Ok();
}

void StopProcessTrimmer() {
  std::unique_ptr<MemoryTrimmer> stopping;
  {
    std::lock_guard guard(ProcessMutex());
    stopping = std::move(ProcessTrimmer());
  }
  // Joined outside the lock: a check in progress may take a while.
  stopping.reset();
}

void ReportProcessAccounted(uint64_t bytes) {
  std::lock_guard guard(ProcessMutex());
  if (ProcessTrimmer() != nullptr) ProcessTrimmer()->ReportAccounted(bytes);
}

void RequestProcessTrim() {
  std::lock_guard guard(ProcessMutex());
  if (ProcessTrimmer() != nullptr) ProcessTrimmer()->RequestTrim();
}

std::optional<TrimStats> ProcessTrimmerStats() {
  std::lock_guard guard(ProcessMutex());
  if (ProcessTrimmer() == nullptr) return std::nullopt;
  return ProcessTrimmer()->Stats();
}

}  // namespace hotpath::process
