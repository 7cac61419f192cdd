// IdleGc (src/native/idle-gc.ts): once heap + external memory is well above
// its idle level and no longer rising, the caches are released and one full
// collection runs, at most once a minGapMs; never while a burst still grows.
import { describe, expect, it } from 'vitest';
import { IdleGc } from '../../src/native/idle-gc.js';

const MiB = 1024 * 1024;

describe('IdleGc', () => {
  it('acts once the figure is high and has stopped rising, then waits minGapMs', () => {
    const idle = new IdleGc({ minExcessBytes: 64 * MiB, minGapMs: 10_000 });
    let released = 0;
    const onIdle = () => (released += 1);
    expect(idle.observe(40 * MiB, onIdle, 0)).toBe(false); // the idle level
    expect(idle.observe(80 * MiB, onIdle, 1000)).toBe(false); // 40 MiB above: too little
    expect(idle.observe(300 * MiB, onIdle, 2000)).toBe(false); // rising: a burst
    expect(idle.observe(500 * MiB, onIdle, 3000)).toBe(false); // still rising
    expect(idle.observe(500 * MiB, onIdle, 4000)).toBe(true); // over
    expect(released).toBe(1);
    expect(idle.observe(480 * MiB, onIdle, 5000)).toBe(false); // within minGapMs
    expect(idle.observe(480 * MiB, onIdle, 14_001)).toBe(true);
    expect(released).toBe(2);
  });

  it('never acts near the idle level', () => {
    const idle = new IdleGc({ minExcessBytes: 64 * MiB, minGapMs: 0 });
    for (let t = 0; t < 10; t++) expect(idle.observe((40 + t) * MiB, undefined, t * 1000)).toBe(false);
  });

  it('collects twice when it acts: once at once, once on the next turn (finalizer-freed Buffers)', async () => {
    let passes = 0;
    const idle = new IdleGc({ minExcessBytes: 64 * MiB, minGapMs: 0, collect: () => (passes += 1) });
    idle.observe(40 * MiB, undefined, 0);
    expect(idle.observe(500 * MiB, undefined, 1000)).toBe(false); // rising
    expect(idle.observe(500 * MiB, undefined, 2000)).toBe(true);
    expect(passes).toBe(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(passes).toBe(2);
  });
});
