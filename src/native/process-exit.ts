// Typed wrapper for native/napi/process_exit_binding.cc: ending the process
// when Node's own exit cannot. A worker thread stuck inside onnxruntime's
// native code never stops, and process.exit() joins every worker thread, so
// it would wait forever; `exitProcessNow` is _exit(2), which does not join.
// The caller flushes its logs first: nothing runs after it.
//
// Main thread; the watchdog's thread is native.
import { nativeAddon, type LoadedAddon } from './loader.js';
import { unwrapNative } from './native-error.js';
import { exportsOf, processExitExports, type ProcessExitBinding } from './process-binding-types.js';

function bindingOf(addon: LoadedAddon): ProcessExitBinding {
  return exportsOf<ProcessExitBinding>(addon.binding, processExitExports, 'process exit', addon.path);
}

function checkStatus(status: number): void {
  if (!Number.isInteger(status) || status < 0 || status > 255) {
    throw new RangeError(`exit status: expected an integer in 0..255, got ${status}`);
  }
}

/** Ends the process now with `status`, without joining worker threads or running exit handlers. */
export function exitProcessNow(status: number, addon: LoadedAddon = nativeAddon()): never {
  checkStatus(status);
  return bindingOf(addon).processExit(status);
}

/**
 * Ends the process with `status` after `delayMs` from a native thread,
 * whatever the JS thread is doing then (blocked in process.exit(), say). It
 * cannot be disarmed: arm it only once the process is on its way out.
 */
export function armExitWatchdog(delayMs: number, status: number, addon: LoadedAddon = nativeAddon()): void {
  if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > 86_400_000) {
    throw new RangeError(`exit watchdog delay: expected ms in 0..86400000, got ${delayMs}`);
  }
  checkStatus(status);
  unwrapNative(bindingOf(addon).armExitWatchdog(Math.round(delayMs), status), 'armExitWatchdog', armExitWatchdog);
}
