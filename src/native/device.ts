// Typed wrapper for native/napi/device_binding.cc: which memory backend the
// addon uses and how much memory it has, and the GPU's utilisation through
// NVML. CPU-only machines report the host backend; that is a normal answer,
// not an error.
import { nativeAddon, type LoadedAddon } from './loader.js';
import { NativeError, unwrapNative } from './native-error.js';

export type MemoryBackend = 'cuda' | 'host';

export interface DeviceInfo {
  readonly backend: MemoryBackend;
  /** Device name, or "host memory (<why the host backend was chosen>)". */
  readonly name: string;
  readonly totalBytes: number;
  /** A snapshot; at most totalBytes. Host: the kernel's MemAvailable. */
  readonly freeBytes: number;
  /** The CUDA ordinal; -1 on host. */
  readonly ordinal: number;
  /** NVML's UUID ("GPU-..."), Triton's `gpu_uuid` label; '' on host. */
  readonly uuid: string;
}

/**
 * Probes CUDA device `ordinal` (default 0). Synchronous: on a CUDA machine the
 * first call initialises the CUDA runtime, so call it at start-up, not per
 * request. A missing or unusable device answers with the host backend and the
 * reason in `name`.
 * @throws NativeError only if host memory itself cannot be read.
 */
export function deviceInfo(ordinal = 0, addon: LoadedAddon = nativeAddon()): DeviceInfo {
  const raw = unwrapNative(addon.binding.deviceInfo(ordinal), 'deviceInfo', deviceInfo);
  return {
    backend: raw.backend,
    name: raw.name,
    totalBytes: raw.totalBytes,
    freeBytes: raw.freeBytes,
    ordinal: raw.ordinal,
    uuid: raw.uuid,
  };
}

/**
 * The GPU's utilisation (0..1) over NVML's last sample period, or undefined
 * when NVML is not there (no driver, a CPU-only machine): the metric is then
 * simply not exported. Other NVML failures throw.
 */
export function gpuUtilization(uuid: string, addon: LoadedAddon = nativeAddon()): number | undefined {
  try {
    return unwrapNative(addon.binding.gpuUtilization(uuid), 'gpuUtilization', gpuUtilization);
  } catch (err) {
    if (err instanceof NativeError && err.code === 'UNAVAILABLE') return undefined;
    throw err;
  }
}
