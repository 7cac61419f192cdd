// Process-wide arena registry. See registry.h.
#include "arena/registry.h"

#include <map>
#include <mutex>

namespace hotpath::arena {

namespace {

// Leaked on purpose: worker threads may still detach during static
// destruction at process exit.
std::mutex& RegistryMutex() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::map<std::string, std::shared_ptr<Arena>>& Registry() {  // guarded by RegistryMutex()
  static auto* map = new std::map<std::string, std::shared_ptr<Arena>>();
  return *map;
}

}  // namespace

Result<std::shared_ptr<Arena>> CreateRegisteredArena(const std::string& name, ArenaConfig config) {
  if (name.empty()) return Status(StatusCode::kInvalidArgument, "arena name must not be empty");
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    if (Registry().count(name) != 0) {
      return Status(StatusCode::kFailedPrecondition, "arena '" + name + "' already exists in this process");
    }
  }
  // Created unlocked: detecting a CUDA device can take seconds.
  Result<std::shared_ptr<Arena>> arena = Arena::Create(name, std::move(config));
  if (!arena.ok()) return arena;
  std::lock_guard<std::mutex> lock(RegistryMutex());
  if (!Registry().emplace(name, arena.value()).second) {
    return Status(StatusCode::kFailedPrecondition, "arena '" + name + "' already exists in this process");
  }
  return arena;
}

Result<std::shared_ptr<Arena>> FindRegisteredArena(const std::string& name) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(name);
  if (it != Registry().end()) return it->second;
  std::string known;
  for (const auto& [key, value] : Registry()) known += (known.empty() ? "" : ", ") + key;
  return Status(StatusCode::kNotFound,
                "no arena '" + name + "' in this process (existing: " + (known.empty() ? "none" : known) + ")");
}

void UnregisterArena(const Arena& arena) {
  std::shared_ptr<Arena> dropped;  // destroyed after the lock is released
  std::lock_guard<std::mutex> lock(RegistryMutex());
  auto it = Registry().find(arena.name());
  if (it != Registry().end() && it->second.get() == &arena) {
    dropped = std::move(it->second);
    Registry().erase(it);
  }
}

std::vector<std::string> RegisteredArenaNames() {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  std::vector<std::string> names;
  for (const auto& [key, value] : Registry()) names.push_back(key);
  return names;
}

}  // namespace hotpath::arena
