import { describe, expect, it } from 'vitest';
import { createSessionCreationLock, measureSessionFootprint } from '../../src/workers/session-footprint.js';

describe('session footprint measurement', () => {
  it('never runs two measured creations at once', async () => {
    const lock = createSessionCreationLock();
    const events: string[] = [];
    const create = (label: string) => async () => {
      events.push(`start ${label}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      events.push(`end ${label}`);
      return label;
    };
    const results = await Promise.all(['a', 'b', 'c'].map((l) => measureSessionFootprint(lock, 0, create(l))));
    expect(results.map((r) => r.value)).toEqual(['a', 'b', 'c']);
    for (let i = 0; i < events.length; i += 2) {
      expect(events[i]?.replace('start', 'end')).toBe(events[i + 1]);
    }
  });

  it('charges at least the floor, and the RSS growth when larger', async () => {
    const lock = createSessionCreationLock();
    const small = await measureSessionFootprint(lock, 1234, async () => 0);
    expect(small.bytes).toBe(Math.max(1234, small.rssDeltaBytes));
    const keep: Buffer[] = [];
    const big = await measureSessionFootprint(lock, 1, async () => {
      // Touch every page so the growth is resident, as a session's weights are.
      for (let i = 0; i < 8; i++) keep.push(Buffer.alloc(8 * 2 ** 20, i + 1));
      return keep.length;
    });
    expect(big.rssDeltaBytes).toBeGreaterThan(32 * 2 ** 20);
    expect(big.bytes).toBe(big.rssDeltaBytes);
  });
});
