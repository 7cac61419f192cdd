// The raw shape of hotpath_native.node's exports, exactly as the C++ bindings
// in native/napi/ register them. Only the typed wrappers in this directory
// (build-info.ts, device.ts) call these; everything else uses the wrappers.
import type { NativeResult } from './native-error.js';

export interface RawDeviceInfo {
  readonly backend: 'cuda' | 'host';
  readonly name: string;
  readonly totalBytes: number;
  readonly freeBytes: number;
  /** CUDA: the ordinal asked for; host: -1. */
  readonly ordinal: number;
  /** CUDA: NVML's UUID form ("GPU-..."); host: ''. */
  readonly uuid: string;
}

export interface RawBuildInfo {
  readonly version: string;
  readonly cudaCompiledIn: boolean;
  readonly build: 'cmake' | 'gyp';
  readonly napiVersion: number;
}

export interface RawEnvInfo {
  readonly id: number;
  readonly live: number;
  readonly created: number;
}

export interface NativeBinding {
  version(): string;
  buildInfo(): RawBuildInfo;
  envInfo(): RawEnvInfo;
  deviceInfo(ordinal?: number): NativeResult<RawDeviceInfo>;
  gpuUtilization(uuid: string): NativeResult<number>;
}

/** Export names the loader requires before it accepts a file as the addon. */
export const requiredExports: readonly (keyof NativeBinding)[] = [
  'version',
  'buildInfo',
  'envInfo',
  'deviceInfo',
  'gpuUtilization',
];
