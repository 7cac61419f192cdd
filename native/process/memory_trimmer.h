// MemoryTrimmer: a native thread that gives freed heap memory back to the
// system after bursts (trim_policy.h says when). It never runs on the JS
// event loop: the JS thread only reports what it accounts for
// (ReportAccounted, an atomic store) and reads the statistics.
//
// System access goes through a TrimProbe so tests can drive the loop with a
// fake RSS and a fake trim; SystemTrimProbe() reads /proc/self/statm and calls
// glibc's malloc_trim(0). Other C libraries (musl, say) have no malloc_trim:
// there TrimSupported() is false (a compile-time check) and Create refuses.
//
// One trimmer per process is enough (RSS is per process): StartProcessTrimmer
// and friends hold it.
//
// Thread-safety: every public member may be called from any thread. The
// trimmer's thread is the only one that calls the probe.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/status.h"
#include "process/trim_policy.h"

namespace hotpath::process {

struct TrimProbe {
  // Resident set size of the process, in bytes.
  std::function<Result<uint64_t>()> read_rss;
  // Returns memory to the system; true when some was released.
  std::function<bool()> trim;
};

// Whether this build can trim (glibc's malloc_trim exists). Compile-time.
bool TrimSupported();

// /proc/self/statm for RSS, malloc_trim(0) for the trim. Every system call is
// checked; a failure comes back from read_rss as a Status. Without glibc,
// `trim` is empty.
TrimProbe SystemTrimProbe();

// RSS of this process from /proc/self/statm (resident pages x page size).
Result<uint64_t> ReadResidentBytes();

struct TrimStats {
  uint64_t checks = 0;          // ticks that measured RSS
  uint64_t trims = 0;           // trims run
  uint64_t released_bytes = 0;  // RSS given back, summed over trims (drops only)
  uint64_t last_rss_bytes = 0;  // RSS at the latest check (after its trim, if any)
  uint64_t accounted_bytes = 0; // the latest ReportAccounted figure
  uint64_t failures = 0;        // checks whose RSS could not be read
  std::string last_error;       // the latest failure's message ('' when none)
};

class MemoryTrimmer {
 public:
  // Starts the thread: one check every `interval`. INVALID_ARGUMENT for a
  // non-positive interval or a probe without read_rss or trim; UNAVAILABLE
  // when the thread cannot start.
  static Result<std::unique_ptr<MemoryTrimmer>> Create(TrimSettings settings,
                                                       std::chrono::milliseconds interval,
                                                       TrimProbe probe);

  // Stops the thread (an atomic flag and a notify) and joins it.
  ~MemoryTrimmer();
  MemoryTrimmer(const MemoryTrimmer&) = delete;
  MemoryTrimmer& operator=(const MemoryTrimmer&) = delete;

  // What the process accounts for (JS heap + external), for the next check.
  void ReportAccounted(uint64_t bytes);

  TrimStats Stats() const;

  // Asks for one trim at the next check, whatever the policy's thresholds
  // (a full garbage collection just freed memory). Only sets a flag.
  void RequestTrim();

  // Test hook: wakes the thread for one check now and waits until it has run
  // (deterministic timing without sleeping for `interval`). Never call it on
  // the JS thread in production: the wait is as long as a trim.
  void CheckNowForTest();

 private:
  struct State;
  explicit MemoryTrimmer(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

// The process's one trimmer. Start refuses (FAILED_PRECONDITION) when one
// runs already; Stop is a no-op without one. Report and Stats act on the one
// running (Stats: nullopt without one).
Status StartProcessTrimmer(TrimSettings settings, std::chrono::milliseconds interval);
void StopProcessTrimmer();
void ReportProcessAccounted(uint64_t bytes);
void RequestProcessTrim();
std::optional<TrimStats> ProcessTrimmerStats();

}  // namespace hotpath::process
