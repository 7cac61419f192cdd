/**
 * Counts of outcomes over the last `windowMs`, kept in a fixed ring of time
 * buckets, so memory and the cost of a record or a read are constant however
 * many requests arrive. The window is the last `buckets` buckets, the current
 * one included, so it is exact to one bucket (windowMs / buckets): an outcome
 * leaves the window between windowMs - one bucket and windowMs after it was
 * recorded.
 *
 * The clock is read by the caller and passed in (milliseconds, any monotonic
 * origin), so breakers and rollback watches test without timers.
 */

export interface WindowCounts {
  readonly requests: number;
  readonly errors: number;
  /** Outcomes slower than the threshold, errors included. */
  readonly slow: number;
}

export class RollingWindow {
  private readonly bucketMs: number;
  /** The bucket index (time / bucketMs, floored) each slot holds; -Infinity when unused. */
  private readonly indices: Float64Array;
  private readonly requests: Uint32Array;
  private readonly errors: Uint32Array;
  private readonly slow: Uint32Array;

  constructor(
    readonly windowMs: number,
    buckets = 20,
  ) {
    if (!(windowMs > 0) || !Number.isInteger(buckets) || buckets < 1) {
      throw new RangeError(`RollingWindow: expected windowMs > 0 and an integer buckets >= 1, got ${windowMs}, ${buckets}`);
    }
    this.bucketMs = windowMs / buckets;
    this.indices = new Float64Array(buckets).fill(-Infinity);
    this.requests = new Uint32Array(buckets);
    this.errors = new Uint32Array(buckets);
    this.slow = new Uint32Array(buckets);
  }

  record(nowMs: number, error: boolean, slow: boolean): void {
    const slot = this.slotFor(nowMs);
    this.requests[slot]!++;
    if (error) this.errors[slot]!++;
    if (slow) this.slow[slot]!++;
  }

  /** The counts of the last `buckets` buckets, the current one included. */
  counts(nowMs: number): WindowCounts {
    const oldest = Math.floor(nowMs / this.bucketMs) - this.indices.length;
    let requests = 0;
    let errors = 0;
    let slow = 0;
    for (let i = 0; i < this.indices.length; i++) {
      if (this.indices[i]! > oldest) {
        requests += this.requests[i]!;
        errors += this.errors[i]!;
        slow += this.slow[i]!;
      }
    }
    return { requests, errors, slow };
  }

  clear(): void {
    this.indices.fill(-Infinity);
    this.requests.fill(0);
    this.errors.fill(0);
    this.slow.fill(0);
  }

  private slotFor(nowMs: number): number {
    const index = Math.floor(nowMs / this.bucketMs);
    const n = this.indices.length;
    const slot = ((index % n) + n) % n;
    if (this.indices[slot] !== index) {
      this.indices[slot] = index;
      this.requests[slot] = 0;
      this.errors[slot] = 0;
      this.slow[slot] = 0;
    }
    return slot;
  }
}

/** Which threshold a window crosses, if any. */
export type Crossing = 'error_rate' | 'slow_rate';

export interface Thresholds {
  readonly minRequests: number;
  /** Undefined: errors are not checked. */
  readonly errorRate: number | undefined;
  /** Undefined: slowness is not checked. */
  readonly slowMs: number | undefined;
  readonly slowRate: number;
}

/** The first threshold `counts` reaches (rates compared with >=), or undefined. */
export function crossing(counts: WindowCounts, thresholds: Thresholds): Crossing | undefined {
  if (counts.requests < thresholds.minRequests || counts.requests === 0) return undefined;
  if (thresholds.errorRate !== undefined && counts.errors / counts.requests >= thresholds.errorRate) return 'error_rate';
  if (thresholds.slowMs !== undefined && counts.slow / counts.requests >= thresholds.slowRate) return 'slow_rate';
  return undefined;
}
