// Names and sizes of the plan's dtypes, and of device fault classes.
#include "executor/plan.h"

#include <cstdio>

#include "executor/device_runtime.h"

namespace hotpath::executor {

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "FLOAT";
    case DType::kInt32: return "INT32";
    case DType::kInt64: return "INT64";
    case DType::kFloat16: return "FLOAT16";
    case DType::kFloat64: return "DOUBLE";
  }
  // Out-of-range values come straight from TypeScript; name the number. One
  // buffer per thread keeps the "never null" promise without allocating per call.
  thread_local char unknown[32];
  std::snprintf(unknown, sizeof(unknown), "UNKNOWN(%d)", static_cast<int>(dtype));
  return unknown;
}

uint32_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kFloat16: return 2;
    case DType::kFloat64: return 8;
  }
  return 0;
}

const char* FaultClassName(FaultClass fault) {
  switch (fault) {
    case FaultClass::kNone: return "none";
    case FaultClass::kTransient: return "transient";
    case FaultClass::kSticky: return "sticky";
  }
  return "unknown";
}

}  // namespace hotpath::executor
