// LoadDeadline (src/repository/load-deadline.ts): the server's limit, a
// model's own limit counted from the start, the reason naming the stage, the
// abandon hooks run once, and no timer without a limit.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LoadDeadline, LoadTimeoutError } from '../../src/repository/load-deadline.js';

beforeEach(() => vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] }));
afterEach(() => vi.useRealTimers());

describe('LoadDeadline', () => {
  it('rejects the race at the limit, naming the source and the stage, and runs each hook once', async () => {
    const deadline = new LoadDeadline(2000, () => 'warming up (version 1)');
    const reasons: string[] = [];
    deadline.onAbandon((reason) => reasons.push(reason));
    const race = deadline.race(new Promise<never>(() => undefined));
    const outcome = race.catch((err: unknown) => err);
    vi.advanceTimersByTime(1999);
    expect(deadline.abandoned).toBe(false);
    vi.advanceTimersByTime(1);
    const err = await outcome;
    expect(err).toBeInstanceOf(LoadTimeoutError);
    expect((err as LoadTimeoutError).kind).toBe('deadline');
    expect((err as Error).message).toBe('load timed out after 2 s (--model-load-timeout) while warming up (version 1)');
    expect(reasons).toEqual([(err as Error).message]);
    // A hook registered late runs at once; the checkpoint throws the same reason.
    deadline.onAbandon((reason) => reasons.push(`late: ${reason}`));
    expect(reasons).toHaveLength(2);
    expect(() => deadline.throwIfAbandoned()).toThrow(/^load timed out after 2 s/);
  });

  it('takes the model’s own limit, counted from the start of the load', async () => {
    const deadline = new LoadDeadline(60_000, () => 'starting workers');
    vi.advanceTimersByTime(400);
    deadline.setModelLimit(500);
    const outcome = deadline.race(new Promise<never>(() => undefined)).catch((err: Error) => err.message);
    vi.advanceTimersByTime(100);
    expect(await outcome).toBe('load timed out after 0.5 s (config parameter model_load_timeout_secs) while starting workers');
  });

  it('never fires without a limit, or once cleared', async () => {
    const none = new LoadDeadline(0, () => '');
    const cleared = new LoadDeadline(100, () => '');
    cleared.clear();
    vi.advanceTimersByTime(3_600_000);
    expect(none.abandoned).toBe(false);
    expect(cleared.abandoned).toBe(false);
    await expect(none.race(Promise.resolve(7))).resolves.toBe(7);
  });
});
