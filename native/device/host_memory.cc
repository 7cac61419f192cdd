// Host memory probing. See host_memory.h.
#include "device/host_memory.h"

#include <sys/sysinfo.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

namespace hotpath::device {

namespace {

constexpr const char* kMeminfoPath = "/proc/meminfo";

struct FileCloser {
  void operator()(std::FILE* file) const { std::fclose(file); }
};

// Reads a whole (small, procfs) file. procfs reports size 0, so read to EOF.
Result<std::string> ReadSmallFile(const char* path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path, "re"));
  if (!file) return Status::FromErrno(std::string("open ") + path, errno);
  std::string text;
  char buffer[4096];
  for (;;) {
    size_t n = std::fread(buffer, 1, sizeof buffer, file.get());
    text.append(buffer, n);
    if (n < sizeof buffer) break;
  }
  if (std::ferror(file.get())) {
    return Status::FromErrno(std::string("read ") + path, errno != 0 ? errno : EIO);
  }
  return text;
}

// Finds "<key>:   <number> kB" and returns the number in bytes; nullopt when
// the key is absent, an error when the value is malformed or overflows.
Result<std::optional<uint64_t>> MeminfoField(std::string_view text, std::string_view key) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.size() <= key.size() || line.substr(0, key.size()) != key ||
        line[key.size()] != ':') {
      continue;
    }
    std::string_view rest = line.substr(key.size() + 1);
    size_t i = rest.find_first_not_of(' ');
    if (i == std::string_view::npos || rest[i] < '0' || rest[i] > '9') {
      return Status(StatusCode::kInvalidArgument,
                    "meminfo: malformed value for " + std::string(key));
    }
    uint64_t value = 0;
    for (; i < rest.size() && rest[i] >= '0' && rest[i] <= '9'; ++i) {
      if (__builtin_mul_overflow(value, 10u, &value) ||
          __builtin_add_overflow(value, static_cast<uint64_t>(rest[i] - '0'), &value)) {
        return Status(StatusCode::kInvalidArgument,
                      "meminfo: value overflows for " + std::string(key));
      }
    }
    std::string_view unit = rest.substr(i);
    unit.remove_prefix(std::min(unit.find_first_not_of(' '), unit.size()));
    uint64_t multiplier = unit == "kB" ? 1024 : (unit.empty() ? 1 : 0);
    if (multiplier == 0) {
      return Status(StatusCode::kInvalidArgument,
                    "meminfo: unknown unit '" + std::string(unit) + "' for " + std::string(key));
    }
    if (__builtin_mul_overflow(value, multiplier, &value)) {
      return Status(StatusCode::kInvalidArgument,
                    "meminfo: value overflows for " + std::string(key));
    }
    return std::optional<uint64_t>(value);
  }
  return std::optional<uint64_t>();
}

Result<HostMemory> QuerySysinfo() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return Status::FromErrno("sysinfo", errno);
  uint64_t unit = info.mem_unit == 0 ? 1 : info.mem_unit;
  HostMemory memory;
  uint64_t available_units = static_cast<uint64_t>(info.freeram) + info.bufferram;
  if (__builtin_mul_overflow(static_cast<uint64_t>(info.totalram), unit, &memory.total_bytes) ||
      __builtin_mul_overflow(available_units, unit, &memory.available_bytes)) {
    return Status(StatusCode::kInternal, "sysinfo: memory size overflows 64 bits");
  }
  if (memory.total_bytes == 0) return Status(StatusCode::kInternal, "sysinfo: totalram is 0");
  memory.available_bytes = std::min(memory.available_bytes, memory.total_bytes);
  return memory;
}

}  // namespace

Result<HostMemory> ParseMeminfo(std::string_view text) {
  Result<std::optional<uint64_t>> total = MeminfoField(text, "MemTotal");
  if (!total.ok()) return total.status();
  if (!total.value() || *total.value() == 0) {
    return Status(StatusCode::kNotFound, "meminfo: MemTotal missing or zero");
  }
  HostMemory memory;
  memory.total_bytes = *total.value();

  Result<std::optional<uint64_t>> available = MeminfoField(text, "MemAvailable");
  if (!available.ok()) return available.status();
  if (available.value()) {
    memory.available_bytes = *available.value();
  } else {
    // Kernels before 3.14 lack MemAvailable: approximate it.
    uint64_t sum = 0;
    for (std::string_view key : {"MemFree", "Buffers", "Cached"}) {
      Result<std::optional<uint64_t>> part = MeminfoField(text, key);
      if (!part.ok()) return part.status();
      if (!part.value()) {
        return Status(StatusCode::kNotFound, "meminfo: neither MemAvailable nor " +
                                                 std::string(key) + " present");
      }
      if (__builtin_add_overflow(sum, *part.value(), &sum)) {
        return Status(StatusCode::kInvalidArgument, "meminfo: available memory overflows");
      }
    }
    memory.available_bytes = sum;
  }
  memory.available_bytes = std::min(memory.available_bytes, memory.total_bytes);
  return memory;
}

Result<HostMemory> QueryHostMemory() {
  Result<std::string> text = ReadSmallFile(kMeminfoPath);
  Status meminfo_error;
  if (text.ok()) {
    Result<HostMemory> parsed = ParseMeminfo(text.value());
    if (parsed.ok()) return parsed;
    meminfo_error = parsed.status();
  } else {
    meminfo_error = text.status();
  }
  Result<HostMemory> fallback = QuerySysinfo();
  if (fallback.ok()) return fallback;
  return Status(StatusCode::kInternal, "cannot read host memory: " + meminfo_error.message() +
                                           "; " + fallback.status().message());
}

}  // namespace hotpath::device
