// Tests for common/status.h and common/result.h.
#include <cerrno>
#include <string>

#include "common/build_info.h"
#include "common/result.h"
#include "common/status.h"
#include "tests/check.h"

namespace hotpath {
namespace {

void TestStatus(test::Checker& check) {
  Status ok;
  check.True(ok.ok(), "default Status is OK");
  check.Equal(ok.ToString(), std::string("OK"), "OK ToString");

  Status exhausted(StatusCode::kResourceExhausted, "tenant a over quota");
  check.True(!exhausted.ok(), "non-OK status");
  check.Equal(std::string(StatusCodeName(exhausted.code())), std::string("RESOURCE_EXHAUSTED"),
              "code name");
  check.Equal(exhausted.ToString(), std::string("RESOURCE_EXHAUSTED: tenant a over quota"),
              "ToString");

  Status from_errno = Status::FromErrno("open /nope", ENOENT);
  check.True(from_errno.code() == StatusCode::kInternal, "FromErrno is INTERNAL");
  check.Contains(from_errno.message(), "open /nope: ", "FromErrno prefix");
  check.Contains(from_errno.message(), "No such file", "FromErrno errno text");
}

void TestCodeNamesAreDistinct(test::Checker& check) {
  const StatusCode codes[] = {
      StatusCode::kOk,           StatusCode::kInvalidArgument,   StatusCode::kNotFound,
      StatusCode::kFailedPrecondition, StatusCode::kResourceExhausted, StatusCode::kUnavailable,
      StatusCode::kDeadlineExceeded,   StatusCode::kInternal,
  };
  for (StatusCode a : codes) {
    check.True(std::string(StatusCodeName(a)) != "UNKNOWN", "every code has a name");
    for (StatusCode b : codes) {
      if (a != b) {
        check.True(std::string(StatusCodeName(a)) != StatusCodeName(b), "code names distinct");
      }
    }
  }
}

void TestResult(test::Checker& check) {
  Result<int> value = 42;
  check.True(value.ok(), "Result with value is ok");
  check.True(value.status().ok(), "its status is OK");
  check.Equal(value.value(), 42, "value");

  Result<std::string> error = Status(StatusCode::kNotFound, "missing");
  check.True(!error.ok(), "Result with error is not ok");
  check.True(error.status().code() == StatusCode::kNotFound, "error code kept");
  check.Equal(error.status().message(), std::string("missing"), "error message kept");

  Result<std::string> moved = std::string("abc");
  std::string taken = std::move(moved).value();
  check.Equal(taken, std::string("abc"), "rvalue value()");
}

void TestBuildInfo(test::Checker& check) {
  std::string version = Version();
  check.True(!version.empty() && version[0] >= '0' && version[0] <= '9',
             "Version() starts with a digit");
  check.Equal(std::string(BuildSystem()), std::string("cmake"), "BuildSystem()");
#ifdef HOTPATH_WITH_CUDA
  check.True(CudaCompiledIn(), "CudaCompiledIn() with HOTPATH_WITH_CUDA");
#else
  check.True(!CudaCompiledIn(), "CudaCompiledIn() without HOTPATH_WITH_CUDA");
#endif
#ifdef HOTPATH_EXPECTED_VERSION
  check.Equal(version, std::string(HOTPATH_EXPECTED_VERSION), "Version() matches package.json");
#endif
}

}  // namespace
}  // namespace hotpath

int main() {
  hotpath::test::Checker check;
  hotpath::TestStatus(check);
  hotpath::TestCodeNamesAreDistinct(check);
  hotpath::TestResult(check);
  hotpath::TestBuildInfo(check);
  return check.ExitCode();
}
