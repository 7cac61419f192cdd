/**
 * Watches the rollback arm's outcomes over a rolling window. When the error
 * rate or the share of answers slower than slow_ms reaches its threshold
 * (over at least min_requests), the arm is rolled back: the route table sets
 * its weight to 0 and sends its header mapping to the stable arm. It stays
 * rolled back for the life of this watch, which is the life of the route
 * table: a routes file that changes builds a new table, and so a new watch.
 *
 * Single-threaded; the clock is injected.
 */
import type { Outcome } from './breaker.js';
import type { RollbackConfig } from './routes-config.js';
import { crossing, RollingWindow, type Crossing, type WindowCounts } from './rolling-window.js';

export interface RollbackTrigger {
  readonly arm: string;
  readonly reason: Crossing;
  /** The window that crossed. */
  readonly counts: WindowCounts;
}

export interface RollbackOptions {
  readonly now: () => number;
  /** Called once, synchronously, when the arm is rolled back; it must not throw. */
  readonly onRollback?: (trigger: RollbackTrigger) => void;
}

export class RollbackWatch {
  private readonly window: RollingWindow;
  private trigger: RollbackTrigger | undefined;

  constructor(
    readonly config: RollbackConfig,
    private readonly options: RollbackOptions,
  ) {
    this.window = new RollingWindow(config.windowMs);
  }

  get rolledBack(): boolean {
    return this.trigger !== undefined;
  }

  /** Why and when it was rolled back; undefined while it was not. */
  get triggered(): RollbackTrigger | undefined {
    return this.trigger;
  }

  /** Records one outcome of the arm; returns true when this outcome rolled it back. */
  record(outcome: Outcome, latencyMs: number): boolean {
    if (this.trigger !== undefined || outcome === 'abandoned') return false;
    const now = this.options.now();
    const slow = this.config.slowMs !== undefined && latencyMs > this.config.slowMs;
    this.window.record(now, outcome === 'error', slow);
    const counts = this.window.counts(now);
    const reason = crossing(counts, this.config);
    if (reason === undefined) return false;
    this.trigger = Object.freeze({ arm: this.config.arm, reason, counts });
    this.options.onRollback?.(this.trigger);
    return true;
  }
}
