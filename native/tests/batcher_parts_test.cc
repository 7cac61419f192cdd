// Tests for the batcher's building blocks: batch_memory.h, clock.h and the
// names and messages in types.h.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "batcher/batch_memory.h"
#include "batcher/clock.h"
#include "batcher/types.h"
#include "tests/check.h"

namespace hotpath::batcher {
namespace {

void TestHostBatchMemory(test::Checker& check) {
  auto memory = std::make_shared<HostBatchMemory>(100);
  const BufferSpec spec{7, 1, 0, 60};
  Result<MemoryBlock> block = memory->Allocate(spec);
  if (!check.True(block.ok(), "60 of 100 bytes")) return;
  check.True(reinterpret_cast<uintptr_t>(block.value().data) % 64 == 0, "64-byte aligned");
  check.Equal(memory->live_bytes(), uint64_t{60}, "live bytes");
  Result<MemoryBlock> over = memory->Allocate(BufferSpec{7, 2, 0, 41});
  check.True(!over.ok() && over.status().code() == StatusCode::kResourceExhausted,
             "over the limit: RESOURCE_EXHAUSTED");
  check.Contains(over.status().message(), "batch 2", "names the batch");
  check.Equal(memory->live_bytes(), uint64_t{60}, "a failed allocation is rolled back");
  {
    BatchBuffer buffer(memory, block.value(), spec);
    BatchBuffer moved = std::move(buffer);
    check.True(buffer.data() == nullptr, "moved-from buffer is empty");
    check.Equal(moved.capacity(), uint64_t{60}, "capacity travels");
    Result<MemoryBlock> empty = memory->Allocate(BufferSpec{7, 3, 1, 0});
    check.True(empty.ok() && empty.value().data != nullptr, "0 bytes: a valid pointer");
    BatchBuffer zero(memory, empty.value(), BufferSpec{7, 3, 1, 0});
    check.Equal(memory->live_buffers(), uint64_t{2}, "two live buffers");
  }
  check.Equal(memory->live_buffers(), uint64_t{0}, "buffers free themselves");
  check.Equal(memory->live_bytes(), uint64_t{0}, "and their bytes");
}

void TestManualClock(test::Checker& check) {
  ManualClock clock;
  const TimePoint start = clock.Now();
  std::atomic<int> woken{0};
  const uint64_t id = clock.Subscribe([&] { woken.fetch_add(1); });
  check.True(clock.Advance(std::chrono::microseconds(5)) == start + std::chrono::microseconds(5),
             "Advance returns the new time");
  check.True(clock.Now() == start + std::chrono::microseconds(5), "Now follows");
  check.Equal(woken.load(), 1, "Advance wakes subscribers");
  clock.Advance(Duration(-3));
  check.True(clock.Now() == start + std::chrono::microseconds(5), "never goes back");
  clock.Unsubscribe(id);
  clock.Advance(std::chrono::microseconds(1));
  check.Equal(woken.load(), 2, "no wake after Unsubscribe");

  // WaitUntil ignores the deadline: only the predicate ends the wait.
  std::mutex mu;
  std::condition_variable cv;
  std::unique_lock<std::mutex> lock(mu);
  bool ready = true;
  clock.WaitUntil(cv, lock, clock.Now(), [&] { return ready; });
  check.True(true, "returns at once when already woken");

  SteadyClock steady;
  const TimePoint before = steady.Now();
  steady.WaitUntil(cv, lock, before, [] { return false; });
  check.True(steady.Now() >= before, "a steady wait with a passed deadline returns");
}

void TestNamesAndMessages(test::Checker& check) {
  check.Equal(std::string(RejectKindName(RejectKind::kQueueFull)), std::string("QUEUE_FULL"),
              "name");
  check.Equal(std::string(RequestStateName(RequestState::kDelayed)), std::string("delayed"),
              "state name");
  Status shutdown = ToStatus(Rejection{RejectKind::kShutdown, "m:1", 1, 0});
  check.True(shutdown.code() == StatusCode::kUnavailable, "shutdown is UNAVAILABLE");
  check.Contains(shutdown.message(), "model 'm:1'", "names the model");
  Status timeout = ToStatus(Rejection{RejectKind::kTimeout, "m", 1, 250});
  check.Contains(timeout.message(), "250 us", "names the timeout");
  check.Equal(std::string(RejectKindName(RejectKind::kOverQuota)), std::string("OVER_QUOTA"),
              "over-quota name");
  check.Equal(std::string(RejectKindName(RejectKind::kInvalid)), std::string("INVALID"),
              "invalid name");
  check.True(ToStatus(Rejection{RejectKind::kOverQuota, "m", 1, 0}).code() ==
                 StatusCode::kResourceExhausted,
             "over quota is RESOURCE_EXHAUSTED");
  check.True(ToStatus(Rejection{RejectKind::kInvalid, "m", 1, 0}).code() ==
                 StatusCode::kInvalidArgument,
             "invalid is INVALID_ARGUMENT");
}

}  // namespace
}  // namespace hotpath::batcher

int main() {
  hotpath::test::Checker check;
  using namespace hotpath::batcher;
  TestHostBatchMemory(check);
  TestManualClock(check);
  TestNamesAndMessages(check);
  return check.ExitCode();
}
