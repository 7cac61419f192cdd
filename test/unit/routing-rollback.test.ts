import { describe, expect, it } from 'vitest';
import { RollbackWatch, type RollbackTrigger } from '../../src/routing/rollback.js';
import type { RollbackConfig } from '../../src/routing/routes-config.js';

const CONFIG: RollbackConfig = { arm: 'canary', windowMs: 60_000, minRequests: 20, errorRate: 0.05, slowMs: 50, slowRate: 0.2 };

function setup(config: Partial<RollbackConfig> = {}) {
  let t = 0;
  const triggers: RollbackTrigger[] = [];
  const watch = new RollbackWatch({ ...CONFIG, ...config }, { now: () => t, onRollback: (e) => triggers.push(e) });
  return { watch, triggers, advance: (ms: number) => void (t += ms) };
}

describe('RollbackWatch', () => {
  it('triggers under an injected canary failure rate, once', () => {
    const { watch, triggers } = setup();
    for (let i = 0; i < 18; i++) expect(watch.record('ok', 5)).toBe(false);
    expect(watch.record('error', 5)).toBe(false); // 19 requests: below min_requests
    expect(watch.rolledBack).toBe(false);
    expect(watch.record('ok', 5)).toBe(true); // 1/20 = 5% >= 5%
    expect(watch.rolledBack).toBe(true);
    expect(triggers).toEqual([{ arm: 'canary', reason: 'error_rate', counts: { requests: 20, errors: 1, slow: 0 } }]);
    expect(watch.triggered).toBe(triggers[0]);
    for (let i = 0; i < 50; i++) expect(watch.record('error', 5)).toBe(false);
    expect(triggers).toHaveLength(1);
  });

  it('triggers under injected latency', () => {
    const { watch, triggers } = setup({ errorRate: undefined });
    for (let i = 0; i < 16; i++) watch.record('ok', 5);
    for (let i = 0; i < 3; i++) watch.record('ok', 51);
    expect(watch.rolledBack).toBe(false);
    watch.record('ok', 60); // 4/20 = 20% slow
    expect(triggers[0]).toMatchObject({ reason: 'slow_rate', counts: { requests: 20, slow: 4 } });
  });

  it('stays in place while healthy, and forgets old failures', () => {
    const { watch, advance } = setup();
    for (let i = 0; i < 10; i++) watch.record('error', 5);
    advance(61_000);
    for (let i = 0; i < 1_000; i++) watch.record('ok', 5);
    expect(watch.rolledBack).toBe(false);
  });

  it('does not count abandoned requests', () => {
    const { watch } = setup();
    for (let i = 0; i < 100; i++) watch.record('abandoned', 500);
    expect(watch.rolledBack).toBe(false);
  });
});
