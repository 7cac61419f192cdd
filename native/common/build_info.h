// Facts about how this native library was built, fixed at compile time.
//
// The version string comes from package.json (the build systems pass it in as
// HOTPATH_VERSION); the build system name from HOTPATH_BUILD_SYSTEM. All
// functions return pointers to static storage and are safe from any thread.
#pragma once

namespace hotpath {

// The package version, e.g. "0.1.0". Never null.
const char* Version();

// "cmake" or "gyp": which build system produced this binary. Never null.
const char* BuildSystem();

// True when the CUDA backend was compiled in (HOTPATH_WITH_CUDA). Whether a
// device is present at run time is a separate question: see device/device_info.h.
bool CudaCompiledIn();

}  // namespace hotpath
