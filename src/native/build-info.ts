// Typed wrapper for native/napi/build_info_binding.cc: what the addon is and
// how many environments (main thread + workers) have it loaded. For start-up
// logs and the leak patrol.
import { nativeAddon, type LoadedAddon } from './loader.js';

export interface BuildInfo {
  /** package.json version the addon was built from. */
  readonly version: string;
  /** The CUDA backend was compiled in (a device may still be absent). */
  readonly cudaCompiledIn: boolean;
  /** cmake: authoritative CMake build; gyp: CPU-only node-gyp fallback. */
  readonly build: 'cmake' | 'gyp';
  readonly napiVersion: number;
}

export interface AddonEnvInfo {
  /** This thread's environment id, unique in the process (1 = first loaded). */
  readonly id: number;
  /** Environments with the addon loaded right now, process-wide. */
  readonly live: number;
  /** Environments that ever loaded the addon, process-wide. */
  readonly created: number;
}

/** The addon's version string (equals package.json's for a loadable addon). */
export function addonVersion(addon: LoadedAddon = nativeAddon()): string {
  return addon.binding.version();
}

export function buildInfo(addon: LoadedAddon = nativeAddon()): BuildInfo {
  const raw = addon.binding.buildInfo();
  return {
    version: raw.version,
    cudaCompiledIn: raw.cudaCompiledIn,
    build: raw.build,
    napiVersion: raw.napiVersion,
  };
}

export function addonEnvInfo(addon: LoadedAddon = nativeAddon()): AddonEnvInfo {
  const raw = addon.binding.envInfo();
  return { id: raw.id, live: raw.live, created: raw.created };
}
