// Once a burst is over: the caller's caches are released (the arena's free
// segments) and a full garbage collection runs (two passes), so the memory trimmer has
// something to give back (src/native/memory-trimmer.ts).
//
// After a burst of large requests, most of the RSS is Buffers (decoded
// messages, answers) that are garbage already but still counted as external
// memory: V8 frees them only when it collects their JS wrappers, and an idle
// process allocates nothing that would make it collect. The trimmer cannot
// give back what is not freed. So when the heap plus external memory is well
// above its idle level and no longer rising (the burst is over), one full
// collection runs (twice: see observe), at most once a `minGapMs`. It runs on the JS thread, as every V8 collection does; the trim
// itself stays on the native thread.
//
// V8 exposes its `gc()` only with --expose-gc; setting the flag at run time
// and reading `gc` from a fresh context is the documented way to get it
// without the command-line flag (v8.setFlagsFromString, vm). It is obtained
// once, lazily.
//
// Main thread only.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

export interface IdleGcOptions {
  /** Heap + external above the idle level by more than this makes a collection worthwhile. */
  readonly minExcessBytes: number;
  /** At most one collection in this long. */
  readonly minGapMs: number;
  /** The full collection; default V8's gc() (tests pass their own to count passes). */
  readonly collect?: (() => void) | undefined;
}

let gcFunction: (() => void) | undefined | null;

function fullGc(): (() => void) | undefined {
  if (gcFunction === undefined) {
    try {
      setFlagsFromString('--expose-gc');
      const found = runInNewContext('gc') as unknown;
      gcFunction = typeof found === 'function' ? (found as () => void) : null;
    } catch {
      gcFunction = null;
    }
  }
  return gcFunction ?? undefined;
}

export class IdleGc {
  /** The lowest heap + external seen: the idle level. */
  private idleBytes = Number.POSITIVE_INFINITY;
  private previousBytes = 0;
  private lastGcMs = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: IdleGcOptions) {}

  /**
   * One report of heap + external bytes: when the figure is high and did not
   * rise since the last report, calls `onIdle` and runs a full collection.
   * Returns whether it did.
   */
  observe(accountedBytes: number, onIdle?: () => void, nowMs = performance.now()): boolean {
    const previous = this.previousBytes;
    this.previousBytes = accountedBytes;
    this.idleBytes = Math.min(this.idleBytes, accountedBytes);
    const excess = accountedBytes - this.idleBytes;
    // Not rising by more than an eighth of the excess since the last report: the
    // burst is over or draining (a falling figure is V8 collecting on its own).
    const rising = accountedBytes > previous + excess / 8;
    if (excess < this.options.minExcessBytes || rising || nowMs - this.lastGcMs < this.options.minGapMs) return false;
    this.lastGcMs = nowMs;
    // First what the caller holds in its own caches (the arena's free segments), then the garbage.
    onIdle?.();
    const gc = this.options.collect ?? fullGc();
    gc?.();
    // A second collection on the next turn: Buffers whose memory an addon or
    // Node frees from a finalizer are only released once their finalizers ran
    // (N-API defers them past the collection that found the garbage), so one
    // collection left most of a burst's external memory in place (observed:
    // ~400 MB of 8 MiB requests' buffers still counted 25 s later, until the
    // next idle collection). The trimmer's requested trim runs after both.
    if (gc !== undefined) setImmediate(gc);
    return true;
  }
}
