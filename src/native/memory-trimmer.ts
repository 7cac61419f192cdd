// Typed wrapper for native/napi/memory_trimmer_binding.cc: the process's
// memory trimmer, a native thread that gives freed heap memory back to the
// system (glibc's malloc_trim) when RSS is far above the JS heap plus
// external memory, so RSS comes back near its baseline after a burst instead
// of staying at the peak a container limit sees (native/process/trim_policy.h).
//
// The trim never runs on the event loop: the JS side only reports what it
// accounts for, on an unref'd timer, and reads the statistics. Once a burst
// is over it also asks V8 for one full collection (idle-gc.ts): the burst's
// Buffers are garbage but stay allocated until collected. And when memory
// is freed after the last trim, it asks for one more (trim-recheck.ts).
//
// Main thread only; one trimmer per process.
import { IdleGc } from './idle-gc.js';
import { TrimRecheck } from './trim-recheck.js';
import { nativeAddon, type LoadedAddon } from './loader.js';
import { unwrapNative } from './native-error.js';
import { exportsOf, memoryTrimmerExports, type MemoryTrimmerBinding, type RawTrimmerStats } from './process-binding-types.js';

export interface MemoryTrimmerOptions {
  /** How often the native thread looks at RSS (ms). */
  readonly intervalMs: number;
  /** RSS above heap + external by less than this never trims (default 64 MiB). */
  readonly minExcessBytes?: number;
  /** ... nor by less than this fraction of heap + external (default 0.5). */
  readonly excessRatio?: number;
  /** After a trim, RSS must grow this much before the next (default 32 MiB). */
  readonly minGrowthBytes?: number;
  /**
   * Called on the JS thread once a burst is over, before a full collection
   * (idle-gc.ts): release what caches hold, e.g. the arena's free segments.
   */
  readonly onIdle?: () => void;
  /** Called on the JS thread, at the report timer's pace, after the native thread trimmed (for a log line). */
  readonly onTrim?: (stats: MemoryTrimmerStats) => void;
}

export type MemoryTrimmerStats = RawTrimmerStats;

/** Reports without a trim before trim-recheck.ts may ask for one (15 s at the default 5 s interval). */
const RECHECK_TICKS = 3;

const DEFAULTS = { minExcessBytes: 64 * 1024 * 1024, excessRatio: 0.5, minGrowthBytes: 32 * 1024 * 1024 } as const;

function bindingOf(addon: LoadedAddon): MemoryTrimmerBinding {
  return exportsOf<MemoryTrimmerBinding>(addon.binding, memoryTrimmerExports, 'memory trimmer', addon.path);
}

/** What the process accounts for: every JS heap byte V8 holds, plus external memory (Buffers included). */
function accountedBytes(): number {
  const usage = process.memoryUsage();
  return usage.heapTotal + usage.external;
}

export class MemoryTrimmer {
  private readonly timer: NodeJS.Timeout;

  private trimsSeen = 0;

  private constructor(
    private readonly binding: MemoryTrimmerBinding,
    intervalMs: number,
    minExcessBytes: number,
    onTrim: ((stats: MemoryTrimmerStats) => void) | undefined,
    onIdle: (() => void) | undefined,
    minGrowthBytes: number,
  ) {
    binding.memoryTrimmerReport(accountedBytes());
    // Garbage Buffers of a burst are freed only by a collection (idle-gc.ts).
    const idleGc = new IdleGc({ minExcessBytes: minExcessBytes, minGapMs: Math.max(10_000, 5 * intervalMs) });
    // Memory freed after the last trim does not raise RSS, so the native policy alone would never trim it.
    const recheck = new TrimRecheck({ minGrowthBytes, everyTicks: RECHECK_TICKS });
    // Reports at the trimmer's own pace; unref'd so it never keeps the process alive.
    this.timer = setInterval(() => {
      if (idleGc.observe(accountedBytes(), onIdle)) {
        // What the collection freed shows neither as RSS growth nor (V8 updates
        // its external figure later) as less accounted memory: ask for the trim.
        binding.memoryTrimmerReport(accountedBytes());
        binding.memoryTrimmerRequest();
        return;
      }
      binding.memoryTrimmerReport(accountedBytes());
      const stats = binding.memoryTrimmerStats();
      if (stats === null) return;
      if (stats.trims > this.trimsSeen) {
        this.trimsSeen = stats.trims;
        onTrim?.(stats);
      }
      if (recheck.observe(process.memoryUsage.rss(), stats.trims, stats.lastRssBytes)) binding.memoryTrimmerRequest();
    }, intervalMs);
    this.timer.unref();
  }

  /** Whether this addon can trim (built against glibc). */
  static supported(addon: LoadedAddon = nativeAddon()): boolean {
    return bindingOf(addon).memoryTrimmerSupported();
  }

  /** Starts the process's trimmer; throws a NativeError when one runs already or the C library cannot trim. */
  static start(options: MemoryTrimmerOptions, addon: LoadedAddon = nativeAddon()): MemoryTrimmer {
    if (!Number.isInteger(options.intervalMs) || options.intervalMs < 1) {
      throw new RangeError(`memory trimmer interval: expected an integer >= 1 ms, got ${options.intervalMs}`);
    }
    const binding = bindingOf(addon);
    const raw = {
      intervalMs: options.intervalMs,
      minExcessBytes: options.minExcessBytes ?? DEFAULTS.minExcessBytes,
      excessRatio: options.excessRatio ?? DEFAULTS.excessRatio,
      minGrowthBytes: options.minGrowthBytes ?? DEFAULTS.minGrowthBytes,
    };
    unwrapNative(binding.memoryTrimmerStart(raw), 'memoryTrimmerStart', MemoryTrimmer.start);
    return new MemoryTrimmer(binding, options.intervalMs, raw.minExcessBytes, options.onTrim, options.onIdle, raw.minGrowthBytes);
  }

  /** Checks, trims and bytes given back so far; null once stopped. */
  stats(): MemoryTrimmerStats | null {
    return this.binding.memoryTrimmerStats();
  }

  /** Stops the native thread (joins it). Idempotent. */
  stop(): void {
    clearInterval(this.timer);
    this.binding.memoryTrimmerStop();
  }
}
