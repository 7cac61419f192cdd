// Tests for process/trim_policy.h, process/memory_trimmer.h and
// process/process_exit.h: the trigger as a pure function, the thread loop
// driven by a fake probe (CheckNowForTest, no sleeping for the interval), the
// real probe on this process, and the exit watchdog in a forked child.
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "process/memory_trimmer.h"
#include "process/process_exit.h"
#include "process/trim_policy.h"
#include "tests/check.h"

#if defined(__SANITIZE_ADDRESS__)
#define HOTPATH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HOTPATH_UNDER_ASAN 1
#endif
#endif
#ifndef HOTPATH_UNDER_ASAN
#define HOTPATH_UNDER_ASAN 0
#endif

namespace hotpath::process {
namespace {

constexpr uint64_t kMiB = 1ull << 20;

void TestThreshold(test::Checker& check) {
  TrimSettings settings;  // 64 MiB, 0.5, 32 MiB
  check.Equal(ExcessThreshold(settings, 0), 64 * kMiB, "floor applies with nothing accounted");
  check.Equal(ExcessThreshold(settings, 100 * kMiB), 64 * kMiB, "floor above half of 100 MiB");
  check.Equal(ExcessThreshold(settings, 400 * kMiB), 200 * kMiB, "half of 400 MiB");
  settings.excess_ratio = -1;
  check.Equal(ExcessThreshold(settings, 400 * kMiB), 64 * kMiB, "a negative ratio counts as 0");
  settings.excess_ratio = 1e30;
  check.True(ExcessThreshold(settings, 400 * kMiB) >= (1ull << 63), "a huge ratio clamps, no overflow");
}

void TestShouldTrim(test::Checker& check) {
  const TrimSettings settings;
  // The row: 1.23 GB RSS with a 20 MB heap.
  check.True(ShouldTrim(settings, {1230 * kMiB, 20 * kMiB, 0, false}), "far above the heap: trim");
  check.True(!ShouldTrim(settings, {80 * kMiB, 20 * kMiB, 0, false}), "60 MiB above: under the 64 MiB floor");
  check.True(!ShouldTrim(settings, {20 * kMiB, 40 * kMiB, 0, false}), "RSS below the accounted memory");
  check.True(!ShouldTrim(settings, {500 * kMiB, 400 * kMiB, 0, false}), "100 MiB above 400: under half");
  // After a trim that could not give much back (worker heaps): no trim each tick...
  check.True(!ShouldTrim(settings, {300 * kMiB, 20 * kMiB, 290 * kMiB, true}), "10 MiB growth: wait");
  // ...until RSS grows again.
  check.True(ShouldTrim(settings, {330 * kMiB, 20 * kMiB, 290 * kMiB, true}), "40 MiB growth: trim");
  check.True(!ShouldTrim(settings, {280 * kMiB, 20 * kMiB, 290 * kMiB, true}), "below the floor: wait");
  // A full collection freed a burst's garbage: asked for, it trims whatever the thresholds.
  check.True(ShouldTrim(settings, {280 * kMiB, 270 * kMiB, 290 * kMiB, true, true}), "requested: trim");
}

// A fake process: RSS is a number the test sets; a trim brings it to `after_trim`.
struct FakeProcess {
  std::atomic<uint64_t> rss{0};
  std::atomic<uint64_t> after_trim{0};
  std::atomic<int> trims{0};
  std::atomic<bool> fail_read{false};

  TrimProbe Probe() {
    TrimProbe probe;
    probe.read_rss = [this]() -> Result<uint64_t> {
      if (fail_read.load()) return Status(StatusCode::kInternal, "read failed (fake)");
      return rss.load();
    };
    probe.trim = [this] {
      trims.fetch_add(1);
      rss.store(after_trim.load());
      return true;
    };
    return probe;
  }
};

void TestTrimmerLoop(test::Checker& check) {
  FakeProcess fake;
  // An hour: only CheckNowForTest wakes it.
  Result<std::unique_ptr<MemoryTrimmer>> created = MemoryTrimmer::Create({}, std::chrono::hours(1), fake.Probe());
  if (!check.True(created.ok(), "Create")) return;
  MemoryTrimmer& trimmer = *created.value();
  trimmer.ReportAccounted(20 * kMiB);

  fake.rss = 60 * kMiB;
  trimmer.CheckNowForTest();
  check.Equal(fake.trims.load(), 0, "no trim near the baseline");

  fake.rss = 1230 * kMiB;
  fake.after_trim = 195 * kMiB;
  trimmer.CheckNowForTest();
  check.Equal(fake.trims.load(), 1, "a burst's leftovers are trimmed");
  TrimStats stats = trimmer.Stats();
  check.Equal(stats.trims, uint64_t{1}, "stats.trims");
  check.Equal(stats.released_bytes, 1035 * kMiB, "released = before - after");
  check.Equal(stats.last_rss_bytes, 195 * kMiB, "last RSS is after the trim");
  check.Equal(stats.accounted_bytes, 20 * kMiB, "accounted as reported");

  // 195 MiB is still far above 20 MiB, but nothing grew: no second trim.
  trimmer.CheckNowForTest();
  check.Equal(fake.trims.load(), 1, "no trim without growth since the last");
  fake.rss = 240 * kMiB;
  fake.after_trim = 200 * kMiB;
  trimmer.CheckNowForTest();
  check.Equal(fake.trims.load(), 2, "growth past 32 MiB trims again");

  // Asked for (after a collection), a trim runs although nothing grew; once.
  trimmer.RequestTrim();
  trimmer.CheckNowForTest();
  check.Equal(fake.trims.load(), 3, "a requested trim runs");
  trimmer.CheckNowForTest();
  check.Equal(fake.trims.load(), 3, "and only once");

  fake.fail_read = true;
  trimmer.CheckNowForTest();
  stats = trimmer.Stats();
  check.Equal(stats.failures, uint64_t{1}, "a failed read is counted");
  check.Contains(stats.last_error, "read failed", "and its message kept");
  check.Equal(stats.checks, uint64_t{6}, "checks count successful reads");
}

void TestCreateRefusals(test::Checker& check) {
  FakeProcess fake;
  check.True(!MemoryTrimmer::Create({}, std::chrono::milliseconds(0), fake.Probe()).ok(), "interval 0 refused");
  TrimProbe empty;
  Result<std::unique_ptr<MemoryTrimmer>> no_probe = MemoryTrimmer::Create({}, std::chrono::seconds(1), empty);
  check.True(!no_probe.ok() && no_probe.status().code() == StatusCode::kInvalidArgument, "empty probe refused");
}

void TestStopIsPrompt(test::Checker& check) {
  FakeProcess fake;
  auto started = std::chrono::steady_clock::now();
  {
    Result<std::unique_ptr<MemoryTrimmer>> created = MemoryTrimmer::Create({}, std::chrono::hours(1), fake.Probe());
    check.True(created.ok(), "Create");
  }
  check.True(std::chrono::steady_clock::now() - started < std::chrono::seconds(5), "the destructor wakes and joins");
}

void TestSystemProbe(test::Checker& check) {
  Result<uint64_t> rss = ReadResidentBytes();
  if (!check.True(rss.ok(), "ReadResidentBytes")) return;
  check.True(rss.value() > kMiB, "a process has more than 1 MiB resident");
  check.True(TrimSupported(), "glibc build: malloc_trim is there");
  if (!TrimSupported() || HOTPATH_UNDER_ASAN) return;  // ASan's allocator is not glibc's
  // 2048 chunks of 64 KiB (below glibc's 128 KiB mmap threshold, so from the
  // heap), touched, then freed but the last: the heap's top stays in use, so
  // glibc keeps the 128 MiB below it and only a trim gives it back.
  constexpr size_t kChunk = 64 * 1024;
  std::vector<void*> chunks;
  for (int i = 0; i < 2048; i++) {
    void* chunk = std::malloc(kChunk);
    if (chunk == nullptr) break;
    std::memset(chunk, 1, kChunk);
    chunks.push_back(chunk);
  }
  for (size_t i = 0; i + 1 < chunks.size(); i++) std::free(chunks[i]);
  Result<uint64_t> before = ReadResidentBytes();
  SystemTrimProbe().trim();
  Result<uint64_t> after = ReadResidentBytes();
  std::free(chunks.back());
  if (!check.True(before.ok() && after.ok(), "RSS readable around the trim")) return;
  std::printf("malloc_trim: RSS %llu MiB -> %llu MiB\n", static_cast<unsigned long long>(before.value() / kMiB),
              static_cast<unsigned long long>(after.value() / kMiB));
  check.True(before.value() >= after.value() + 64 * kMiB, "malloc_trim gave at least 64 of the 128 MiB back");
}

// The watchdog ends a child that is blocked (sleeping here; joining a stuck
// thread in the server) with the status it was given.
void TestExitWatchdog(test::Checker& check) {
  const pid_t child = ::fork();
  if (!check.True(child >= 0, "fork")) return;
  if (child == 0) {
    if (!ArmExitWatchdog(std::chrono::milliseconds(50), 42).ok()) ::_exit(3);
    std::this_thread::sleep_for(std::chrono::seconds(30));
    ::_exit(4);
  }
  const auto started = std::chrono::steady_clock::now();
  int status = 0;
  pid_t waited;
  do {
    waited = ::waitpid(child, &status, 0);
  } while (waited < 0 && errno == EINTR);
  check.Equal(waited, child, "waitpid");
  check.True(WIFEXITED(status), "the child exited (not killed)");
  check.Equal(WEXITSTATUS(status), 42, "with the watchdog's status");
  check.True(std::chrono::steady_clock::now() - started < std::chrono::seconds(10), "promptly");
  check.True(!ArmExitWatchdog(std::chrono::milliseconds(-1), 1).ok(), "a negative delay is refused");
}

}  // namespace
}  // namespace hotpath::process

int main() {
  hotpath::test::Checker check;
  hotpath::process::TestThreshold(check);
  hotpath::process::TestShouldTrim(check);
  hotpath::process::TestTrimmerLoop(check);
  hotpath::process::TestCreateRefusals(check);
  hotpath::process::TestStopIsPrompt(check);
  hotpath::process::TestSystemProbe(check);
  hotpath::process::TestExitWatchdog(check);
  return check.ExitCode();
}
