// Loads cuBLAS with dlopen. See cublas_loader.h.
#include "executor/cublas_loader.h"

#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace hotpath::executor {

namespace {

// Newest first: the CUDA 13 library, then 12 (which also runs on a CUDA 13
// driver).
const char* const kSonames[] = {"libcublas.so.13", "libcublas.so.12"};

bool EndsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(separator, start);
    if (end == std::string::npos) end = text.size();
    if (end > start) parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Every existing path matching a shell pattern, sorted (glob's default).
std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> paths;
  glob_t matches{};
  if (glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
    for (size_t i = 0; i < matches.gl_pathc; ++i) paths.emplace_back(matches.gl_pathv[i]);
  }
  globfree(&matches);
  return paths;
}

// Library candidates in search order (see the header).
std::vector<std::string> Candidates() {
  std::vector<std::string> candidates;
  auto add_dir = [&](const std::string& dir) {
    for (const char* soname : kSonames) candidates.push_back(dir + "/" + soname);
  };
  if (const char* paths = std::getenv("HOTPATH_CUBLAS_PATH"); paths != nullptr) {
    for (const std::string& entry : Split(paths, ':')) {
      if (EndsWith(entry, ".so") || entry.find(".so.") != std::string::npos) {
        candidates.push_back(entry);
      } else {
        add_dir(entry);
      }
    }
  }
  for (const char* soname : kSonames) candidates.emplace_back(soname);
  add_dir("/usr/local/cuda/lib64");
  std::vector<std::string> prefixes;
  for (const char* variable : {"VIRTUAL_ENV", "CONDA_PREFIX"}) {
    if (const char* value = std::getenv(variable); value != nullptr && *value != '\0') prefixes.emplace_back(value);
  }
  for (const char* prefix : {"/usr", "/usr/local", "/opt/conda"}) prefixes.emplace_back(prefix);
  for (const std::string& prefix : prefixes) {
    for (const char* packages : {"site-packages", "dist-packages"}) {
      for (const char* layout : {"nvidia/cublas/lib", "nvidia/cu13/lib"}) {
        for (const std::string& dir : Glob(prefix + "/lib/python3.*/" + packages + "/" + layout)) add_dir(dir);
      }
    }
  }
  return candidates;
}

template <typename Fn>
bool Bind(void* library, const char* symbol, Fn* fn) {
  void* address = dlsym(library, symbol);
  if (address == nullptr) return false;
  *fn = reinterpret_cast<Fn>(address);
  return true;
}

// Opens one candidate and binds every function; on failure appends why to
// `tried` and leaves nothing open.
bool TryLoad(const std::string& candidate, CublasApi* api, std::string* tried) {
  // A bare soname goes through the loader's search; a path that does not
  // exist is skipped quietly (most of the candidate directories won't).
  const bool is_path = candidate.find('/') != std::string::npos;
  if (is_path && access(candidate.c_str(), F_OK) != 0) return false;
  void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = dlerror();
    *tried += "; " + candidate + ": " + (error != nullptr ? error : "dlopen failed");
    return false;
  }
  bool bound = Bind(library, "cublasCreate_v2", &api->create) &&
               Bind(library, "cublasDestroy_v2", &api->destroy) &&
               Bind(library, "cublasSetStream_v2", &api->set_stream) &&
               Bind(library, "cublasSetMathMode", &api->set_math_mode) &&
               Bind(library, "cublasSgemmStridedBatched", &api->sgemm_strided_batched);
  if (!bound) {
    *tried += "; " + candidate + ": missing cuBLAS symbols";
    dlclose(library);
    *api = CublasApi{};
    return false;
  }
  api->library = candidate;
  return true;  // intentionally never dlclose'd (see the header)
}

Result<const CublasApi*> LoadOnce() {
  static CublasApi api;
  std::string tried;
  for (const std::string& candidate : Candidates()) {
    if (TryLoad(candidate, &api, &tried)) return static_cast<const CublasApi*>(&api);
  }
  return Status(StatusCode::kUnavailable,
                "cuBLAS not found (set HOTPATH_CUBLAS_PATH to its directory)" + tried);
}

}  // namespace

Result<const CublasApi*> LoadCublas() {
  // A function-local static: loaded once, thread-safe, the outcome cached
  // (also a failure, so a missing library costs one search per process).
  static const Result<const CublasApi*> loaded = LoadOnce();
  return loaded;
}

std::string CublasStatusName(cublasStatus_t status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_" + std::to_string(status);
  }
}

}  // namespace hotpath::executor
