/**
 * The command line's model life-cycle and process-memory flags:
 *
 *   --model-load-timeout S     load + warm-up + golden checks of one model
 *   --strict-readiness BOOL    [T] ready only while every start-up model is
 *   --memory-trim-interval S   how often the addon's trimmer looks at RSS
 *
 * Kept apart from cli.ts so that file stays a list of the flags' groups.
 */
import type { Logger } from 'pino';
import { booleanFlag, numberFlag } from '../common/flag-values.js';
import { MemoryTrimmer } from '../native/memory-trimmer.js';

export interface LifecycleOptions {
  /** `--model-load-timeout` in ms; 0 = no limit (a model's `model_load_timeout_secs` overrides). */
  modelLoadTimeoutMs: number;
  /** `--strict-readiness`: ready only while every start-up model is (Triton's default, true). */
  strictReadiness: boolean;
  /** `--memory-trim-interval` in ms; 0 = the trimmer is off. */
  memoryTrimIntervalMs: number;
}

export const DEFAULT_MODEL_LOAD_TIMEOUT_S = 300;
export const DEFAULT_MEMORY_TRIM_INTERVAL_S = 5;

/** Lines of the usage text, in its column layout. */
export const LIFECYCLE_USAGE = `  --model-load-timeout S       seconds one model's load, warm-up and golden checks may take; past it the
                               model fails with the reason, its slot and memory are released, and the
                               others load on (default ${DEFAULT_MODEL_LOAD_TIMEOUT_S}; 0 = no limit; config parameter
                               model_load_timeout_secs overrides it per model)
  --strict-readiness BOOL      [T] ready only while every start-up model is ready (default true); false:
                               ready once serving, whatever the models
  --memory-trim-interval S     seconds between the addon's looks at RSS: when it is far above the JS heap
                               and external memory, freed memory goes back to the system (glibc's
                               malloc_trim, on a native thread; default ${DEFAULT_MEMORY_TRIM_INTERVAL_S}; 0 = off)
`;

/** Boolean flags of this group (see withBooleanValues). */
export const LIFECYCLE_BOOLEAN_FLAGS = ['strict-readiness'] as const;

export function lifecycleFlagOptions(): Record<string, { type: 'string'; default?: string }> {
  return {
    'model-load-timeout': { type: 'string', default: String(DEFAULT_MODEL_LOAD_TIMEOUT_S) },
    'strict-readiness': { type: 'string' },
    'memory-trim-interval': { type: 'string', default: String(DEFAULT_MEMORY_TRIM_INTERVAL_S) },
  };
}

export function lifecycleOptions(values: Readonly<Record<string, unknown>>): LifecycleOptions {
  return {
    modelLoadTimeoutMs: Math.round(numberFlag('--model-load-timeout', values['model-load-timeout'] as string, 0, 86_400) * 1000),
    strictReadiness: booleanFlag('--strict-readiness', values['strict-readiness'] as string | undefined, true),
    memoryTrimIntervalMs: Math.round(numberFlag('--memory-trim-interval', values['memory-trim-interval'] as string, 0, 3600) * 1000),
  };
}

/**
 * Starts the addon's memory trimmer (src/native/memory-trimmer.ts) unless
 * `intervalMs` is 0; a C library without malloc_trim is logged, not fatal.
 * `releaseCaches` runs once a burst is over (HotpathServer.releaseCachedMemory).
 */
export function startMemoryTrimmer(intervalMs: number, logger: Logger, releaseCaches?: () => number): MemoryTrimmer | undefined {
  if (intervalMs === 0) return undefined;
  try {
    if (!MemoryTrimmer.supported()) {
      logger.info('memory trimmer off: this C library has no malloc_trim');
      return undefined;
    }
    const trimmer = MemoryTrimmer.start({
      intervalMs,
      onIdle: releaseCaches === undefined ? undefined : () => {
        const usage = process.memoryUsage();
        let bytes = 0;
        try {
          bytes = releaseCaches();
        } catch (err) {
          // The arena is closed once a drain has finished: nothing to give back then.
          logger.debug({ error: err instanceof Error ? err.message : String(err) }, 'arena cache not released');
        }
        logger.info(
          { arena_released_bytes: bytes, rss_bytes: usage.rss, heap_total_bytes: usage.heapTotal, external_bytes: usage.external },
          'idle after a burst: arena free segments returned, collecting garbage',
        );
      },
      onTrim: (stats) =>
        logger.info(
          { trims: stats.trims, released_bytes: stats.releasedBytes, rss_bytes: stats.lastRssBytes, accounted_bytes: stats.accountedBytes },
          'freed memory returned to the system (malloc_trim)',
        ),
    });
    logger.info({ interval_ms: intervalMs }, 'memory trimmer started');
    return trimmer;
  } catch (err) {
    logger.warn({ error: err instanceof Error ? err.message : String(err) }, 'memory trimmer not started');
    return undefined;
  }
}
