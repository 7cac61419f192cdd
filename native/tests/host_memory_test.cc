// Tests for device/host_memory.h: /proc/meminfo parsing (pure) and the live
// query on this machine.
#include <string>

#include "device/host_memory.h"
#include "tests/check.h"

namespace hotpath::device {
namespace {

constexpr uint64_t kKiB = 1024;

void TestParseModernKernel(test::Checker& check) {
  Result<HostMemory> memory = ParseMeminfo(
      "MemTotal:       24683620 kB\n"
      "MemFree:        24010744 kB\n"
      "MemAvailable:   24329528 kB\n"
      "Buffers:           12345 kB\n");
  if (!check.True(memory.ok(), "parses a modern meminfo")) return;
  check.Equal(memory.value().total_bytes, 24683620 * kKiB, "MemTotal in bytes");
  check.Equal(memory.value().available_bytes, 24329528 * kKiB, "MemAvailable preferred");
}

void TestParseOldKernel(test::Checker& check) {
  Result<HostMemory> memory = ParseMeminfo(
      "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 20 kB\nCached: 30 kB\nSwapCached: 999 kB\n");
  if (!check.True(memory.ok(), "parses meminfo without MemAvailable")) return;
  check.Equal(memory.value().available_bytes, 150 * kKiB,
              "MemFree+Buffers+Cached, SwapCached not mistaken for Cached");
}

void TestParseClampsAvailable(test::Checker& check) {
  Result<HostMemory> memory = ParseMeminfo("MemTotal: 10 kB\nMemAvailable: 20 kB\n");
  if (!check.True(memory.ok(), "parses")) return;
  check.Equal(memory.value().available_bytes, 10 * kKiB, "available clamped to total");
}

void TestParseErrors(test::Checker& check) {
  Result<HostMemory> empty = ParseMeminfo("");
  check.True(!empty.ok() && empty.status().code() == StatusCode::kNotFound, "empty: NOT_FOUND");

  Result<HostMemory> zero = ParseMeminfo("MemTotal: 0 kB\nMemAvailable: 0 kB\n");
  check.True(!zero.ok() && zero.status().code() == StatusCode::kNotFound, "zero total: NOT_FOUND");

  Result<HostMemory> malformed = ParseMeminfo("MemTotal: lots kB\n");
  check.True(!malformed.ok() && malformed.status().code() == StatusCode::kInvalidArgument,
             "malformed: INVALID_ARGUMENT");
  check.Contains(malformed.status().message(), "MemTotal", "message names the field");

  Result<HostMemory> overflow = ParseMeminfo("MemTotal: 99999999999999999999 kB\n");
  check.True(!overflow.ok() && overflow.status().code() == StatusCode::kInvalidArgument,
             "overflow: INVALID_ARGUMENT");

  Result<HostMemory> kb_overflow = ParseMeminfo("MemTotal: 18014398509481984 kB\n");
  check.True(!kb_overflow.ok(), "overflow when scaling kB to bytes");

  Result<HostMemory> unit = ParseMeminfo("MemTotal: 10 MB\n");
  check.True(!unit.ok() && unit.status().code() == StatusCode::kInvalidArgument,
             "unknown unit: INVALID_ARGUMENT");

  Result<HostMemory> no_available = ParseMeminfo("MemTotal: 10 kB\nMemFree: 1 kB\n");
  check.True(!no_available.ok() && no_available.status().code() == StatusCode::kNotFound,
             "no MemAvailable and no Cached: NOT_FOUND");
}

void TestQueryThisMachine(test::Checker& check) {
  Result<HostMemory> memory = QueryHostMemory();
  if (!check.True(memory.ok(), "QueryHostMemory succeeds: " + memory.status().ToString())) return;
  check.True(memory.value().total_bytes >= 64 * kKiB * kKiB, "at least 64 MiB of RAM");
  check.True(memory.value().available_bytes > 0, "some memory available");
  check.True(memory.value().available_bytes <= memory.value().total_bytes, "available <= total");
}

}  // namespace
}  // namespace hotpath::device

int main() {
  hotpath::test::Checker check;
  hotpath::device::TestParseModernKernel(check);
  hotpath::device::TestParseOldKernel(check);
  hotpath::device::TestParseClampsAvailable(check);
  hotpath::device::TestParseErrors(check);
  hotpath::device::TestQueryThisMachine(check);
  return check.ExitCode();
}
