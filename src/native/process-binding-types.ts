// The raw shape of the processExit/armExitWatchdog and memoryTrimmer* exports
// of hotpath_native.node, exactly as native/napi/process_exit_binding.cc and
// native/napi/memory_trimmer_binding.cc register them. Only
// src/native/process-exit.ts and src/native/memory-trimmer.ts call these;
// each checks its exports exist before use (as arena.ts does), so the
// loader's required exports stay unchanged.
import type { NativeResult } from './native-error.js';

export interface RawTrimmerOptions {
  readonly intervalMs: number;
  readonly minExcessBytes: number;
  readonly excessRatio: number;
  readonly minGrowthBytes: number;
}

export interface RawTrimmerStats {
  readonly checks: number;
  readonly trims: number;
  readonly releasedBytes: number;
  readonly lastRssBytes: number;
  readonly accountedBytes: number;
  readonly failures: number;
  readonly lastError: string;
}

export interface ProcessExitBinding {
  processExit(status: number): never;
  armExitWatchdog(delayMs: number, status: number): NativeResult<undefined>;
}

export interface MemoryTrimmerBinding {
  memoryTrimmerSupported(): boolean;
  memoryTrimmerStart(options: RawTrimmerOptions): NativeResult<undefined>;
  memoryTrimmerStop(): void;
  memoryTrimmerReport(accountedBytes: number): void;
  memoryTrimmerRequest(): void;
  memoryTrimmerStats(): RawTrimmerStats | null;
}

export const processExitExports: readonly (keyof ProcessExitBinding)[] = ['processExit', 'armExitWatchdog'];

export const memoryTrimmerExports: readonly (keyof MemoryTrimmerBinding)[] = [
  'memoryTrimmerSupported',
  'memoryTrimmerStart',
  'memoryTrimmerStop',
  'memoryTrimmerReport',
  'memoryTrimmerRequest',
  'memoryTrimmerStats',
];

/** The addon's exports as `T`, or an error naming the missing ones (a stale build). */
export function exportsOf<T>(binding: object, names: readonly string[], what: string, path: string): T {
  const record = binding as Record<string, unknown>;
  const missing = names.filter((name) => typeof record[name] !== 'function');
  if (missing.length > 0) {
    throw new Error(`${path} has no ${what} bindings (${missing.join(', ')}); rebuild it with \`npm run build:native\``);
  }
  return binding as T;
}
