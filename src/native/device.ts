// Typed wrapper for native/napi/device_binding.cc: which memory backend the
// addon uses and how much memory it has. CPU-only machines report the host
// backend; that is a normal answer, not an error.
import { nativeAddon, type LoadedAddon } from './loader.js';
import { unwrapNative } from './native-error.js';

export type MemoryBackend = 'cuda' | 'host';

export interface DeviceInfo {
  readonly backend: MemoryBackend;
  /** Device name, or "host memory (<why the host backend was chosen>)". */
  readonly name: string;
  readonly totalBytes: number;
  /** A snapshot; at most totalBytes. Host: the kernel's MemAvailable. */
  readonly freeBytes: number;
}

/**
 * Probes the device. Synchronous: on a CUDA machine the first call initialises
 * the CUDA runtime, so call it at start-up, not per request.
 * @throws NativeError only if host memory itself cannot be read.
 */
export function deviceInfo(addon: LoadedAddon = nativeAddon()): DeviceInfo {
  const raw = unwrapNative(addon.binding.deviceInfo(), 'deviceInfo', deviceInfo);
  return { backend: raw.backend, name: raw.name, totalBytes: raw.totalBytes, freeBytes: raw.freeBytes };
}
