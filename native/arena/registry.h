// Process-wide arenas, by name.
//
// An arena is process-global: the main JS thread creates it (e.g. "main"),
// piscina worker threads and the native batcher thread attach to it by name
// and see the same blocks, so a worker can map a batch the main thread
// allocated. The registry holds one reference per registered arena; each
// attacher holds its own, so an arena outlives its unregistration until the
// last attacher lets go (after Shutdown it only answers FAILED_PRECONDITION).
//
// Thread-safety: all functions may be called from any thread; one
// process-wide mutex guards the name map (never held while calling into an
// arena).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "arena/arena.h"

namespace hotpath::arena {

// Creates and registers an arena. FAILED_PRECONDITION if the name is taken.
Result<std::shared_ptr<Arena>> CreateRegisteredArena(const std::string& name, ArenaConfig config);
// The registered arena called `name`, or NOT_FOUND (naming the ones that exist).
Result<std::shared_ptr<Arena>> FindRegisteredArena(const std::string& name);
// Removes `arena` from the registry if it is registered under its name.
void UnregisterArena(const Arena& arena);
std::vector<std::string> RegisteredArenaNames();

}  // namespace hotpath::arena
