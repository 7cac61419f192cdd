import { describe, expect, it } from 'vitest';
import { CircuitBreaker, type BreakerTransition } from '../../src/routing/breaker.js';
import type { BreakerConfig } from '../../src/routing/routes-config.js';
import { crossing, RollingWindow } from '../../src/routing/rolling-window.js';

/** A clock the test moves by hand. */
function fakeClock(start = 1_000_000): { now: () => number; advance: (ms: number) => void } {
  let t = start;
  return { now: () => t, advance: (ms) => void (t += ms) };
}

const CONFIG: BreakerConfig = { windowMs: 30_000, minRequests: 20, errorRate: 0.5, slowMs: 50, slowRate: 0.5, openMs: 10_000, probes: 3 };

function setup(config: Partial<BreakerConfig> = {}) {
  const clock = fakeClock();
  const events: BreakerTransition[] = [];
  const breaker = new CircuitBreaker({ ...CONFIG, ...config }, { now: clock.now, onTransition: (e) => events.push(e) });
  /** Sends `n` requests through the breaker with one outcome; returns how many were admitted. */
  const send = (n: number, outcome: 'ok' | 'error', latencyMs = 5): number => {
    let admitted = 0;
    for (let i = 0; i < n; i++) {
      const permit = breaker.tryAcquire();
      if (permit === undefined) continue;
      admitted++;
      breaker.record(permit, outcome, latencyMs);
    }
    return admitted;
  };
  return { clock, events, breaker, send };
}

describe('RollingWindow', () => {
  it('counts outcomes within the window and forgets older ones', () => {
    const w = new RollingWindow(10_000, 10);
    w.record(0, true, false);
    w.record(500, false, true);
    w.record(9_000, false, false);
    expect(w.counts(9_999)).toEqual({ requests: 3, errors: 1, slow: 1 });
    // The window is the last 10 buckets, the current one included: bucket [0, 1000) leaves at 10,000.
    expect(w.counts(10_000)).toEqual({ requests: 1, errors: 0, slow: 0 });
    expect(w.counts(18_999)).toEqual({ requests: 1, errors: 0, slow: 0 });
    expect(w.counts(19_000)).toEqual({ requests: 0, errors: 0, slow: 0 });
  });

  it('reuses ring slots when time wraps around', () => {
    const w = new RollingWindow(1_000, 4);
    for (let t = 0; t < 10_000; t += 100) w.record(t, t % 200 === 0, false);
    expect(w.counts(9_999)).toEqual({ requests: 10, errors: 5, slow: 0 });
    w.clear();
    expect(w.counts(9_999).requests).toBe(0);
  });

  it('refuses a window that is not positive', () => {
    expect(() => new RollingWindow(0)).toThrow(RangeError);
    expect(() => new RollingWindow(1000, 0)).toThrow(RangeError);
  });

  it('crossing needs min requests and compares rates with >=', () => {
    const t = { minRequests: 4, errorRate: 0.5, slowMs: 10, slowRate: 0.75 };
    expect(crossing({ requests: 3, errors: 3, slow: 3 }, t)).toBeUndefined();
    expect(crossing({ requests: 4, errors: 2, slow: 0 }, t)).toBe('error_rate');
    expect(crossing({ requests: 4, errors: 1, slow: 3 }, t)).toBe('slow_rate');
    expect(crossing({ requests: 4, errors: 1, slow: 2 }, t)).toBeUndefined();
    expect(crossing({ requests: 4, errors: 0, slow: 4 }, { ...t, slowMs: undefined })).toBeUndefined();
    expect(crossing({ requests: 4, errors: 4, slow: 0 }, { ...t, errorRate: undefined })).toBeUndefined();
  });
});

describe('CircuitBreaker', () => {
  it('starts closed and admits everything', () => {
    const { breaker, send } = setup();
    expect(breaker.state()).toBe('closed');
    expect(send(100, 'ok')).toBe(100);
    expect(breaker.snapshot()).toEqual({ state: 'closed', value: 0, window: { requests: 100, errors: 0, slow: 0 } });
  });

  it('opens under an error rate, only once min_requests are in the window', () => {
    const { breaker, send, events } = setup();
    expect(send(19, 'error')).toBe(19);
    expect(breaker.state()).toBe('closed'); // 19 < min_requests
    send(1, 'error');
    expect(breaker.state()).toBe('open');
    expect(events).toEqual([{ from: 'closed', to: 'open', reason: 'error_rate', counts: { requests: 20, errors: 20, slow: 0 } }]);
    expect(breaker.tryAcquire()).toBeUndefined();
    expect(breaker.snapshot()).toMatchObject({ state: 'open', value: 2, retryInMs: 10_000 });
  });

  it('opens under latency: answers slower than slow_ms', () => {
    const { breaker, send, events } = setup();
    send(10, 'ok', 5);
    send(9, 'ok', 80);
    expect(breaker.state()).toBe('closed');
    send(1, 'ok', 51);
    expect(breaker.state()).toBe('open');
    expect(events[0]).toMatchObject({ to: 'open', reason: 'slow_rate', counts: { requests: 20, errors: 0, slow: 10 } });
  });

  it('does not check latency without slow_ms', () => {
    const { breaker, send } = setup({ slowMs: undefined });
    send(100, 'ok', 10_000);
    expect(breaker.state()).toBe('closed');
  });

  it('stays closed below the error rate, and forgets errors older than the window', () => {
    const { breaker, send, clock } = setup();
    send(16, 'ok');
    send(15, 'error'); // 15/31 < 0.5 at every step
    expect(breaker.state()).toBe('closed');
    clock.advance(31_500);
    send(5, 'error');
    send(15, 'ok');
    expect(breaker.state()).toBe('closed'); // 5/20 in the window
  });

  it('goes half-open after open_s and admits exactly `probes` probes', () => {
    const { breaker, send, clock, events } = setup();
    send(20, 'error');
    clock.advance(9_999);
    expect(breaker.tryAcquire()).toBeUndefined();
    clock.advance(1);
    const probes = [breaker.tryAcquire(), breaker.tryAcquire(), breaker.tryAcquire()];
    expect(probes.every((p) => p?.probe === true)).toBe(true);
    expect(breaker.tryAcquire()).toBeUndefined();
    expect(breaker.snapshot()).toMatchObject({ state: 'half_open', value: 1 });
    expect(events.at(-1)).toEqual({ from: 'open', to: 'half_open', reason: 'open_elapsed' });
  });

  it('closes when every probe succeeds, with a fresh window', () => {
    const { breaker, send, clock, events } = setup();
    send(20, 'error');
    clock.advance(10_000);
    const probes = [breaker.tryAcquire()!, breaker.tryAcquire()!, breaker.tryAcquire()!];
    breaker.record(probes[0]!, 'ok', 5);
    breaker.record(probes[1]!, 'ok', 5);
    expect(breaker.state()).toBe('half_open');
    breaker.record(probes[2]!, 'ok', 5);
    expect(breaker.state()).toBe('closed');
    expect(events.at(-1)).toEqual({ from: 'half_open', to: 'closed', reason: 'probes_succeeded', latencyMs: 5 });
    expect(breaker.snapshot().window.requests).toBe(0);
    expect(send(19, 'error')).toBe(19);
    expect(breaker.state()).toBe('closed');
  });

  it('re-opens when a probe fails or is slow, for another open_s', () => {
    for (const [outcome, latency] of [['error', 5], ['ok', 500]] as const) {
      const { breaker, send, clock, events } = setup();
      send(20, 'error');
      clock.advance(10_000);
      const first = breaker.tryAcquire()!;
      const second = breaker.tryAcquire()!;
      breaker.record(first, 'ok', 5);
      breaker.record(second, outcome, latency);
      expect(breaker.state()).toBe('open');
      expect(events.at(-1)).toEqual({ from: 'half_open', to: 'open', reason: 'probe_failed', latencyMs: latency });
      clock.advance(9_999);
      expect(breaker.state()).toBe('open');
      clock.advance(1);
      expect(breaker.state()).toBe('half_open');
    }
  });

  it('recovers after the fault ends: open, probes, closed, then serving', () => {
    const { breaker, send, clock, events } = setup();
    send(40, 'error');
    expect(breaker.state()).toBe('open');
    clock.advance(10_000);
    expect(send(10, 'ok')).toBe(10); // three probes in turn close it, then the rest pass
    expect(breaker.state()).toBe('closed');
    expect(events.map((e) => `${e.from}->${e.to}`)).toEqual(['closed->open', 'open->half_open', 'half_open->closed']);
  });

  it('ignores outcomes of requests admitted before a state change', () => {
    const { breaker, send, clock } = setup();
    const late = breaker.tryAcquire()!; // admitted while closed
    send(20, 'error');
    clock.advance(10_000);
    expect(breaker.state()).toBe('half_open');
    breaker.record(late, 'error', 5); // not a probe: must not re-open
    expect(breaker.state()).toBe('half_open');
    const probes = [breaker.tryAcquire()!, breaker.tryAcquire()!, breaker.tryAcquire()!];
    for (const p of probes) breaker.record(p, 'ok', 1);
    expect(breaker.state()).toBe('closed');
    breaker.record(late, 'error', 5); // nor count in the new window
    expect(breaker.snapshot().window.requests).toBe(0);
  });

  it('frees a probe slot when a probe is abandoned', () => {
    const { breaker, send, clock } = setup({ probes: 1 });
    send(20, 'error');
    clock.advance(10_000);
    const probe = breaker.tryAcquire()!;
    expect(breaker.tryAcquire()).toBeUndefined();
    breaker.record(probe, 'abandoned', 0);
    expect(breaker.state()).toBe('half_open');
    const again = breaker.tryAcquire()!;
    expect(again.probe).toBe(true);
    breaker.record(again, 'ok', 1);
    expect(breaker.state()).toBe('closed');
  });

  it('does not count abandoned requests while closed', () => {
    const { breaker } = setup();
    for (let i = 0; i < 50; i++) breaker.record(breaker.tryAcquire()!, 'abandoned', 1_000);
    expect(breaker.snapshot().window.requests).toBe(0);
  });
});
