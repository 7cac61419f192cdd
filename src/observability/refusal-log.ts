/**
 * Logs refusals (no key, a restricted group, a body over the limit, a busy
 * budget, a connection over its cap) without letting the client who causes
 * them decide the log's volume.
 *
 * Each kind of refusal (the `key`, e.g. 'grpc:unauthenticated') gets a token
 * bucket: up to `burst` lines at once, refilled at `perSecond`. A refusal
 * with no token left is counted, not written; the next line written for that
 * key carries `suppressed` (how many were dropped since the last line) and
 * every line carries `total` (all refusals of that key since start-up). So the
 * log stays readable under a flood and the counts stay exact.
 *
 * Main thread (or one door thread) only: the buckets are plain fields.
 * The number of keys is bounded by the callers (a fixed set of door:kind
 * pairs), never by client input.
 */
import type { Logger } from 'pino';

export interface RefusalLogOptions {
  /** Lines per key the bucket holds (written at once before any is dropped); default 5. */
  readonly burst?: number;
  /** Lines per key per second once the burst is spent; default 1. */
  readonly perSecond?: number;
  /** Monotonic milliseconds; default performance.now (tests move it). */
  readonly now?: () => number;
}

interface KeyState {
  tokens: number;
  refilledAtMs: number;
  suppressed: number;
  total: number;
}

export class RefusalLog {
  private readonly keys = new Map<string, KeyState>();
  private readonly burst: number;
  private readonly perSecond: number;
  private readonly now: () => number;

  constructor(
    private readonly log: Logger,
    options: RefusalLogOptions = {},
  ) {
    this.burst = options.burst ?? 5;
    this.perSecond = options.perSecond ?? 1;
    this.now = options.now ?? (() => performance.now());
  }

  /** Records one refusal of `key`; writes `fields` at info level unless this key's rate is spent. */
  refused(key: string, fields: Record<string, unknown>, msg: string): void {
    const nowMs = this.now();
    let state = this.keys.get(key);
    if (state === undefined) {
      state = { tokens: this.burst, refilledAtMs: nowMs, suppressed: 0, total: 0 };
      this.keys.set(key, state);
    }
    state.total += 1;
    state.tokens = Math.min(this.burst, state.tokens + (Math.max(0, nowMs - state.refilledAtMs) * this.perSecond) / 1000);
    state.refilledAtMs = nowMs;
    if (state.tokens < 1) {
      state.suppressed += 1;
      return;
    }
    state.tokens -= 1;
    const suppressed = state.suppressed;
    state.suppressed = 0;
    this.log.info({ ...fields, refusal: key, total: state.total, ...(suppressed > 0 ? { suppressed } : {}) }, msg);
  }

  /** All refusals of `key` so far, written or not. */
  total(key: string): number {
    return this.keys.get(key)?.total ?? 0;
  }
}
