/**
 * A circuit breaker for one route arm.
 *
 *   closed ──(window crosses error_rate or slow_rate, over >= min_requests)──▶ open
 *   open ──(open_s elapsed; noticed on the next tryAcquire or state read)──▶ half-open
 *   half-open ──(`probes` probe requests all succeed)──▶ closed (with an empty window)
 *   half-open ──(a probe fails: an error, or slower than slow_ms)──▶ open (for open_s again)
 *
 * While open, and for requests beyond the probes while half-open, tryAcquire
 * refuses and the caller answers with the route's fallback. Half-open admits
 * `probes` requests in all (3 by default), not `probes` at a time: a probe
 * slot frees again only when its request is abandoned.
 *
 * Every admitted request carries a permit stamped with the breaker's
 * generation, which changes with each state change, so an answer that arrives
 * after the state changed (a slow request admitted while closed, finishing
 * while half-open) is not mistaken for a probe or counted in a new window.
 * The caller must `record` every permit exactly once (in a `finally`), with
 * 'abandoned' for a request that never got an answer (cancelled), or a
 * half-open breaker would wait for its probes forever.
 *
 * Single-threaded (the main thread); the clock is injected.
 */
import type { BreakerConfig } from './routes-config.js';
import { crossing, RollingWindow, type Crossing, type WindowCounts } from './rolling-window.js';

export type BreakerStateName = 'closed' | 'half_open' | 'open';

/** The state as the `hotpath_breaker_state` gauge shows it. */
export const BREAKER_STATE_VALUE: Readonly<Record<BreakerStateName, 0 | 1 | 2>> = Object.freeze({
  closed: 0,
  half_open: 1,
  open: 2,
});

/**
 * How a request ended, as the breaker counts it. 'error' is for failures of
 * the model or the server (what a fallback helps with), not for the client's
 * own mistakes (invalid arguments), which the caller records as 'ok' or
 * 'abandoned'.
 */
export type Outcome = 'ok' | 'error' | 'abandoned';

export interface BreakerPermit {
  readonly probe: boolean;
  /** The breaker generation that admitted the request. */
  readonly generation: number;
}

export type BreakerTransitionReason = Crossing | 'open_elapsed' | 'probe_failed' | 'probes_succeeded';

export interface BreakerTransition {
  readonly from: BreakerStateName;
  readonly to: BreakerStateName;
  readonly reason: BreakerTransitionReason;
  /** The window when it opened from closed; the probe's latency when a probe failed or the last one succeeded. */
  readonly counts?: WindowCounts;
  readonly latencyMs?: number;
}

export interface BreakerOptions {
  /** Milliseconds on a monotonic clock (performance.now in production). */
  readonly now: () => number;
  /** Called synchronously on every state change; it must not throw. */
  readonly onTransition?: (transition: BreakerTransition) => void;
}

export interface BreakerSnapshot {
  readonly state: BreakerStateName;
  readonly value: 0 | 1 | 2;
  /** Outcomes in the current window (closed only; empty otherwise). */
  readonly window: WindowCounts;
  /** When open: milliseconds until it admits probes. */
  readonly retryInMs?: number;
}

export class CircuitBreaker {
  private current: BreakerStateName = 'closed';
  private generation = 0;
  private openedAtMs = 0;
  private probesAdmitted = 0;
  private probesSucceeded = 0;
  private readonly window: RollingWindow;

  constructor(
    readonly config: BreakerConfig,
    private readonly options: BreakerOptions,
  ) {
    this.window = new RollingWindow(config.windowMs);
  }

  /** The state now; an open breaker whose open_s has elapsed becomes half-open here. */
  state(): BreakerStateName {
    if (this.current === 'open' && this.options.now() - this.openedAtMs >= this.config.openMs) {
      this.transition('half_open', 'open_elapsed');
    }
    return this.current;
  }

  /** A permit to send the request to the arm, or undefined: answer with the fallback. */
  tryAcquire(): BreakerPermit | undefined {
    switch (this.state()) {
      case 'closed':
        return { probe: false, generation: this.generation };
      case 'half_open':
        if (this.probesAdmitted >= this.config.probes) return undefined;
        this.probesAdmitted++;
        return { probe: true, generation: this.generation };
      case 'open':
        return undefined;
    }
  }

  /** Records how an admitted request ended. */
  record(permit: BreakerPermit, outcome: Outcome, latencyMs: number): void {
    if (permit.generation !== this.generation) return;
    const slow = this.config.slowMs !== undefined && latencyMs > this.config.slowMs;
    if (permit.probe) {
      if (outcome === 'abandoned') {
        this.probesAdmitted--;
      } else if (outcome === 'error' || slow) {
        this.transition('open', 'probe_failed', undefined, latencyMs);
      } else if (++this.probesSucceeded >= this.config.probes) {
        this.transition('closed', 'probes_succeeded', undefined, latencyMs);
      }
      return;
    }
    if (outcome === 'abandoned' || this.current !== 'closed') return;
    const now = this.options.now();
    this.window.record(now, outcome === 'error', slow);
    const counts = this.window.counts(now);
    const crossed = crossing(counts, this.config);
    if (crossed !== undefined) this.transition('open', crossed, counts);
  }

  snapshot(): BreakerSnapshot {
    const state = this.state();
    const now = this.options.now();
    return {
      state,
      value: BREAKER_STATE_VALUE[state],
      window: state === 'closed' ? this.window.counts(now) : { requests: 0, errors: 0, slow: 0 },
      ...(state === 'open' ? { retryInMs: Math.max(0, this.openedAtMs + this.config.openMs - now) } : {}),
    };
  }

  private transition(to: BreakerStateName, reason: BreakerTransitionReason, counts?: WindowCounts, latencyMs?: number): void {
    const from = this.current;
    this.current = to;
    this.generation++;
    this.probesAdmitted = 0;
    this.probesSucceeded = 0;
    if (to === 'open') this.openedAtMs = this.options.now();
    if (to === 'closed') this.window.clear();
    this.options.onTransition?.({
      from,
      to,
      reason,
      ...(counts !== undefined ? { counts } : {}),
      ...(latencyMs !== undefined ? { latencyMs } : {}),
    });
  }
}
