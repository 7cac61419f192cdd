/**
 * The life-cycle flags (options table, common/option-table.ts): how long a
 * model may take to load, what readiness means, whether a failed start-up
 * model ends the process, the drain on SIGTERM, the memory trimmer, and the
 * test-only fault hooks.
 *
 *   --model-load-timeout S     load + warm-up + golden checks of one model
 *   --strict-readiness BOOL    [T] ready only while every start-up model is
 *   --exit-on-error BOOL       [T] a start-up model that fails ends the process
 *   --drain-delay S, --drain-timeout S (--exit-timeout-secs [T])
 *   --memory-trim-interval S   how often the addon's trimmer looks at RSS
 */
import type { Logger } from 'pino';
import { aliasedFlag, booleanFlag, numberFlag, UsageError } from '../common/flag-values.js';
import { integerIn, isBoolean, option, type OptionEntry } from '../common/option-table.js';
import { MemoryTrimmer } from '../native/memory-trimmer.js';

export interface LifecycleOptions {
  /** `--model-load-timeout` in ms; 0 = no limit (a model's `model_load_timeout_secs` overrides). */
  modelLoadTimeoutMs: number;
  /** `--strict-readiness`: ready only while every start-up model is (Triton's default, true). */
  strictReadiness: boolean;
  /**
   * `--exit-on-error`: a start-up model that fails to load ends the process
   * (exit 1, naming it). Default false, unlike Triton: the other models serve
   * and readiness says the server is not ready.
   */
  exitOnError: boolean;
  /** `--memory-trim-interval` in ms; 0 = the trimmer is off. */
  memoryTrimIntervalMs: number;
  /** `--drain-delay` in ms. */
  drainDelayMs: number;
  /** `--drain-timeout` (`--exit-timeout-secs`) in ms. */
  drainTimeoutMs: number;
  /** `--enable-fault-injection`: honour test-only fault hooks. */
  faultInjection: boolean;
}

export const DEFAULT_MODEL_LOAD_TIMEOUT_S = 300;
export const DEFAULT_MEMORY_TRIM_INTERVAL_S = 5;

/** Seconds on the command line, ms in the options. */
function seconds<K extends string>(flag: string, field: K, defaultS: number, maxS: number, help: string, triton = false) {
  return option<K, number>({
    flag, field, arg: 'S', default: defaultS * 1000, help, triton,
    parse: (raw, name) => Math.round(numberFlag(name, raw, 0, maxS) * 1000),
    check: integerIn(0, maxS * 1000),
  });
}

function bool<K extends string>(flag: string, field: K, fallback: boolean, help: string, triton = false) {
  return option<K, boolean>({ flag, field, default: fallback, help, triton, parse: (raw, name) => booleanFlag(name, raw, fallback), check: isBoolean });
}

export const LIFECYCLE_OPTIONS: readonly OptionEntry<object>[] = [
  seconds('model-load-timeout', 'modelLoadTimeoutMs', DEFAULT_MODEL_LOAD_TIMEOUT_S, 86_400,
    "seconds one model's load, warm-up and golden checks may take; past it the model fails with the reason, its slot and memory are released, and the others load on " +
      `(default ${DEFAULT_MODEL_LOAD_TIMEOUT_S}; 0 = no limit; config parameter model_load_timeout_secs overrides it per model)`),
  bool('strict-readiness', 'strictReadiness', true,
    'ready only while every start-up model is ready (default true); false: ready once serving, whatever the models', true),
  bool('exit-on-error', 'exitOnError', false,
    "a start-up model that fails to load ends the process (exit 1, naming it). Default false, unlike Triton's true: the other models serve, and readiness says not ready", true),
  seconds('memory-trim-interval', 'memoryTrimIntervalMs', DEFAULT_MEMORY_TRIM_INTERVAL_S, 3600,
    "seconds between the addon's looks at RSS: when it is far above the JS heap and external memory, freed memory goes back to the system " +
      `(glibc's malloc_trim, on a native thread; default ${DEFAULT_MEMORY_TRIM_INTERVAL_S}; 0 = off)`),
  seconds('drain-delay', 'drainDelayMs', 5, 3600, 'on SIGTERM/SIGINT, seconds between turning unready and refusing new calls (default 5)'),
  {
    flags: [
      { name: 'drain-timeout', arg: 'S', help: 'seconds in-flight requests get to finish after that (default 30)' },
      { name: 'exit-timeout-secs', arg: 'S', triton: true, help: 'the same as --drain-timeout' },
    ],
    defaults: () => ({ drainTimeoutMs: 30_000 }),
    parse: (values) => {
      const raw = aliasedFlag(values, 'drain-timeout', 'exit-timeout-secs');
      if (raw === undefined) return {};
      const flag = values['drain-timeout'] === undefined ? '--exit-timeout-secs' : '--drain-timeout';
      return { drainTimeoutMs: Math.round(numberFlag(flag, raw, 0, 3600) * 1000) };
    },
    check: (o: Pick<LifecycleOptions, 'drainTimeoutMs'>, name) => {
      const problem = integerIn(0, 3_600_000)(o.drainTimeoutMs);
      if (problem !== undefined) throw new UsageError(`${name('drainTimeoutMs')}: ${problem}, got ${o.drainTimeoutMs}`);
    },
    fields: { 'drain-timeout': 'drainTimeoutMs', 'exit-timeout-secs': 'drainTimeoutMs' },
  },
  bool('enable-fault-injection', 'faultInjection', false, 'honour test-only fault hooks (never in production)'),
];

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
