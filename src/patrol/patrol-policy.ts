/**
 * The leak patrol's decisions as pure functions: samples in, decision out, no
 * clock and no threads, so they are unit-tested deterministically
 * (leak-patrol.ts is the loop that feeds them).
 */

/** One sample of a worker generation. */
export interface PatrolSample {
  /** Milliseconds on any monotonic clock (only differences matter). */
  readonly atMs: number;
  /** Bytes the generation holds beyond its baseline (see leak-patrol.ts for what counts). */
  readonly leakBytes: number;
}

export interface PatrolThresholds {
  /** An absolute leak above this restarts the pool. */
  readonly leakThresholdBytes: number;
  /** A least-squares slope above this (bytes/s) over `window` samples restarts the pool. */
  readonly growthBytesPerSecond: number;
  /** Samples in the growth window (K ≥ 2). */
  readonly window: number;
}

/** Why a restart happened: a bounded enum, used as a metric label (its values live with the metric names). */
export { PATROL_REASONS, type PatrolReason } from '../observability/metric-names.js';
import type { PatrolReason } from '../observability/metric-names.js';

export interface Trigger {
  readonly reason: PatrolReason;
  /** The leak in bytes, or the slope in bytes/s. */
  readonly value: number;
  readonly threshold: number;
}

/** Least-squares slope of leakBytes over time, in bytes per second; 0 for fewer than 2 samples. */
export function slopeBytesPerSecond(samples: readonly PatrolSample[]): number {
  if (samples.length < 2) return 0;
  const n = samples.length;
  const meanT = samples.reduce((sum, s) => sum + s.atMs, 0) / n;
  const meanY = samples.reduce((sum, s) => sum + s.leakBytes, 0) / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.atMs - meanT) * (s.leakBytes - meanY);
    den += (s.atMs - meanT) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 1000;
}

/** Whether the latest samples call for a restart: the absolute leak first, then sustained growth. */
export function evaluate(samples: readonly PatrolSample[], thresholds: PatrolThresholds): Trigger | undefined {
  const last = samples.at(-1);
  if (last === undefined) return undefined;
  if (last.leakBytes > thresholds.leakThresholdBytes) {
    return { reason: 'leak_threshold', value: last.leakBytes, threshold: thresholds.leakThresholdBytes };
  }
  if (samples.length < thresholds.window) return undefined;
  const slope = slopeBytesPerSecond(samples.slice(-thresholds.window));
  if (slope > 0 && slope > thresholds.growthBytesPerSecond) {
    return { reason: 'sustained_growth', value: slope, threshold: thresholds.growthBytesPerSecond };
  }
  return undefined;
}

/** The wait after the `restarts`-th restart before another may start: base, 2×base, 4×base …, capped. */
export function backoffMs(restarts: number, baseMs: number, maxMs: number): number {
  if (restarts <= 0) return 0;
  return Math.min(maxMs, baseMs * 2 ** (restarts - 1));
}

export interface RestartHistory {
  /** Restarts done for this model version so far. */
  readonly restarts: number;
  readonly lastRestartAtMs: number | undefined;
}

export interface RestartPolicy {
  readonly maxRestarts: number;
  readonly backoffBaseMs: number;
  readonly backoffMaxMs: number;
}

/**
 * What to do about a trigger: restart; wait (still backing off); or degrade,
 * when the leak is back after `maxRestarts` restarts (no restart loop).
 */
export function decide(history: RestartHistory, nowMs: number, policy: RestartPolicy): 'restart' | 'wait' | 'degrade' {
  if (history.restarts >= policy.maxRestarts) return 'degrade';
  if (history.lastRestartAtMs !== undefined &&
      nowMs - history.lastRestartAtMs < backoffMs(history.restarts, policy.backoffBaseMs, policy.backoffMaxMs)) {
    return 'wait';
  }
  return 'restart';
}
