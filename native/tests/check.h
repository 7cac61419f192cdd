// A tiny assertion helper for the CTest executables (no test framework, so the
// tests build and run on a bare GPU machine with only CMake and a compiler).
//
// Usage: each test main creates one Checker, passes it to test functions, and
// returns check.ExitCode(). A failed check prints file:line and keeps going so
// one run reports every failure. Tests that need hardware that is absent
// return kSkipExitCode, which CMake maps to "skipped" (SKIP_RETURN_CODE).
//
// Thread-safety: a Checker is used from one thread.
#pragma once

#include <cstdio>
#include <source_location>
#include <sstream>
#include <string>
#include <string_view>

namespace hotpath::test {

inline constexpr int kSkipExitCode = 77;

class Checker {
 public:
  // Records a failure with `what` when `condition` is false. Returns condition
  // so callers can stop a test that cannot continue.
  bool True(bool condition, std::string_view what,
            std::source_location where = std::source_location::current()) {
    ++checks_;
    if (!condition) Fail(what, where);
    return condition;
  }

  template <typename A, typename B>
  bool Equal(const A& actual, const B& expected, std::string_view what,
             std::source_location where = std::source_location::current()) {
    ++checks_;
    if (actual == expected) return true;
    std::ostringstream out;
    out << what << ": expected [" << expected << "], got [" << actual << "]";
    Fail(out.str(), where);
    return false;
  }

  bool Contains(std::string_view haystack, std::string_view needle, std::string_view what,
                std::source_location where = std::source_location::current()) {
    ++checks_;
    if (haystack.find(needle) != std::string_view::npos) return true;
    Fail(std::string(what) + ": [" + std::string(haystack) + "] does not contain [" +
             std::string(needle) + "]",
         where);
    return false;
  }

  // 0 when every check passed, 1 otherwise; prints a one-line summary.
  int ExitCode() const {
    std::printf("%d checks, %d failed\n", checks_, failures_);
    return failures_ == 0 ? 0 : 1;
  }

 private:
  void Fail(std::string_view what, const std::source_location& where) {
    ++failures_;
    std::fprintf(stderr, "FAIL %s:%u: %.*s\n", where.file_name(),
                 static_cast<unsigned>(where.line()), static_cast<int>(what.size()), what.data());
  }

  int checks_ = 0;
  int failures_ = 0;
};

}  // namespace hotpath::test
