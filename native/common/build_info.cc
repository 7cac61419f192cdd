// Compile-time build facts. See build_info.h.
#include "common/build_info.h"

#ifndef HOTPATH_VERSION
#error "HOTPATH_VERSION must be defined by the build (read from package.json)"
#endif
#ifndef HOTPATH_BUILD_SYSTEM
#error "HOTPATH_BUILD_SYSTEM must be defined by the build (\"cmake\" or \"gyp\")"
#endif

namespace hotpath {

const char* Version() { return HOTPATH_VERSION; }

const char* BuildSystem() { return HOTPATH_BUILD_SYSTEM; }

bool CudaCompiledIn() {
#ifdef HOTPATH_WITH_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace hotpath
