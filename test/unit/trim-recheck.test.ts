// TrimRecheck (src/native/trim-recheck.ts): one more trim for memory freed
// after the last one, and none while RSS stays near its base or once a
// trim showed the memory is in use.
import { describe, expect, it } from 'vitest';
import { TrimRecheck } from '../../src/native/trim-recheck.js';

const MiB = 1024 * 1024;

describe('TrimRecheck', () => {
  it('asks once RSS stayed above its base for everyTicks reports after a trim, and not again until that trim is seen', () => {
    const recheck = new TrimRecheck({ minGrowthBytes: 32 * MiB, everyTicks: 3 });
    expect(recheck.observe(136 * MiB, 0, 0)).toBe(false); // the base
    // A burst: the native policy trims while it is in use, leaving 280 MiB.
    expect(recheck.observe(290 * MiB, 1, 280 * MiB)).toBe(false);
    expect(recheck.observe(280 * MiB, 1, 280 * MiB)).toBe(false);
    expect(recheck.observe(280 * MiB, 1, 280 * MiB)).toBe(false);
    expect(recheck.observe(280 * MiB, 1, 280 * MiB)).toBe(true); // third report without a trim
    expect(recheck.observe(280 * MiB, 1, 280 * MiB)).toBe(false); // requested, not yet done
    // The trim gave it back: nothing more to do.
    expect(recheck.observe(140 * MiB, 2, 140 * MiB)).toBe(false);
    for (let i = 0; i < 10; i += 1) expect(recheck.observe(140 * MiB, 2, 140 * MiB)).toBe(false);
  });

  it('takes a level its trim could not lower as the new base (memory in use), so it does not trim again', () => {
    const recheck = new TrimRecheck({ minGrowthBytes: 32 * MiB, everyTicks: 2 });
    expect(recheck.observe(100 * MiB, 0, 0)).toBe(false); // the base; one report without a trim
    expect(recheck.observe(300 * MiB, 0, 0)).toBe(true); // the second: 200 MiB above the base
    expect(recheck.observe(300 * MiB, 0, 0)).toBe(false); // requested, not yet done
    expect(recheck.observe(298 * MiB, 1, 298 * MiB)).toBe(false); // the trim gave back 2 MiB
    for (let i = 0; i < 10; i += 1) expect(recheck.observe(298 * MiB, 1, 298 * MiB)).toBe(false);
    // Growth above the new base is trimmed again.
    expect(recheck.observe(400 * MiB, 1, 298 * MiB)).toBe(true);
  });

  it('never asks while RSS stays within minGrowthBytes of its base', () => {
    const recheck = new TrimRecheck({ minGrowthBytes: 32 * MiB, everyTicks: 1 });
    for (let i = 0; i < 20; i += 1) expect(recheck.observe((136 + (i % 30)) * MiB, 0, 0)).toBe(false);
  });
});
