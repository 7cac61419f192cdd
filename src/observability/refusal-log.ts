/**
 * Logs refusals (no key, a restricted group, a body over the limit, a busy
 * budget, a connection over its cap) without letting the client who causes
 * them decide the log's volume.
 *
 * Each kind of refusal (the `key`, e.g. 'grpc:unauthenticated') gets a token
 * bucket: up to `burst` lines at once, refilled at `perSecond`. A refusal
 * with no token left is counted, not written; the next line written for that
 * key carries `suppressed` (how many were dropped since the last line) and
 * every line carries `total` (all refusals of that key since start-up). A
 * flood that ends while lines are being dropped is summed up by one line a
 * refill later (an unref'd timer), so no count is lost. So the log stays
 * readable under a flood and the counts stay exact.
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
  /** The summary line's timer, while lines are being dropped. */
  summary: NodeJS.Timeout | undefined;
  /** The last dropped refusal, for the summary line. */
  last: { fields: Record<string, unknown>; msg: string } | undefined;
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
      state = { tokens: this.burst, refilledAtMs: nowMs, suppressed: 0, total: 0, summary: undefined, last: undefined };
      this.keys.set(key, state);
    }
    state.total += 1;
    state.tokens = Math.min(this.burst, state.tokens + (Math.max(0, nowMs - state.refilledAtMs) * this.perSecond) / 1000);
    state.refilledAtMs = nowMs;
    if (state.tokens < 1) {
      state.suppressed += 1;
      state.last = { fields, msg };
      state.summary ??= this.summarizeLater(key, state);
      return;
    }
    state.tokens -= 1;
    this.write(key, state, fields, msg);
  }

  private write(key: string, state: KeyState, fields: Record<string, unknown>, msg: string): void {
    const suppressed = state.suppressed;
    state.suppressed = 0;
    this.log.info({ ...fields, refusal: key, total: state.total, ...(suppressed > 0 ? { suppressed } : {}) }, msg);
  }

  /** One line, a refill from now, for what was dropped since the last (unless a line has carried it by then). */
  private summarizeLater(key: string, state: KeyState): NodeJS.Timeout {
    const timer = setTimeout(() => {
      state.summary = undefined;
      if (state.suppressed > 0 && state.last !== undefined) this.write(key, state, state.last.fields, state.last.msg);
    }, 1000 / this.perSecond);
    timer.unref();
    return timer;
  }

  /** All refusals of `key` so far, written or not. */
  total(key: string): number {
    return this.keys.get(key)?.total ?? 0;
  }
}
