// Typed wrapper for native/napi/socket_handoff_binding.cc: a duplicate of an
// accepted socket's descriptor, so the front-door acceptor (main thread) can
// hand the connection to a door thread (src/server/door-acceptor.ts). A
// libuv handle cannot move between threads' event loops; a descriptor can.
//
// Ownership: the returned descriptor is the caller's; whoever ends up with
// it closes it (the door thread's net.Socket does, or the acceptor with
// fs.closeSync when no door adopts it). Any thread.
import { nativeAddon, type LoadedAddon } from './loader.js';
import { unwrapNative, type NativeResult } from './native-error.js';
import { exportsOf } from './process-binding-types.js';

interface SocketHandoffBinding {
  duplicateSocket(fd: number): NativeResult<number>;
}

const socketHandoffExports: readonly (keyof SocketHandoffBinding)[] = ['duplicateSocket'];

/**
 * A close-on-exec duplicate of the socket descriptor `fd`. Throws RangeError
 * for a value that is not a descriptor number, and a NativeError for one that
 * is not an open socket (INVALID_ARGUMENT: not a socket; NOT_FOUND: not open,
 * EBADF; RESOURCE_EXHAUSTED: out of descriptors, EMFILE).
 */
export function duplicateSocket(fd: number, addon: LoadedAddon = nativeAddon()): number {
  if (!Number.isInteger(fd) || fd < 0 || fd > 2 ** 31 - 1) {
    throw new RangeError(`socket descriptor: expected an integer in 0..2^31-1, got ${fd}`);
  }
  const binding = exportsOf<SocketHandoffBinding>(addon.binding, socketHandoffExports, 'socket handoff', addon.path);
  return unwrapNative(binding.duplicateSocket(fd), 'duplicateSocket', duplicateSocket);
}
