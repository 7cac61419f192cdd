import { describe, expect, it } from 'vitest';
import { compareOutputs, SHADOW_DIFF_BUCKETS } from '../../src/routing/shadow-compare.js';
import { ShadowQueue } from '../../src/routing/shadow.js';

/** A promise the test settles by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A schedule the test runs by hand, so nothing starts before it says so. */
function manualSchedule(): { schedule: (run: () => void) => void; flush: () => void } {
  const pending: (() => void)[] = [];
  return { schedule: (run) => void pending.push(run), flush: () => pending.splice(0).forEach((run) => run()) };
}

describe('ShadowQueue', () => {
  it('never runs a job on the caller stack', async () => {
    const queue = new ShadowQueue({ capacity: 4, concurrency: 1 });
    let ran = false;
    expect(queue.offer(async () => void (ran = true))).toBe(true);
    expect(ran).toBe(false);
    await queue.idle();
    expect(ran).toBe(true);
    expect(queue.counts()).toEqual({ accepted: 1, dropped: 0, completed: 1, errors: 0, queued: 0, running: 0 });
  });

  it('drops and counts what does not fit in the queue', () => {
    const { schedule } = manualSchedule();
    const queue = new ShadowQueue({ capacity: 3, concurrency: 1, schedule });
    const results = Array.from({ length: 10 }, () => queue.offer(async () => {}));
    expect(results).toEqual([true, true, true, false, false, false, false, false, false, false]);
    expect(queue.counts()).toMatchObject({ accepted: 3, dropped: 7, queued: 3, running: 0 });
  });

  it('runs at most `concurrency` jobs at once, and frees queue room as they start', async () => {
    const { schedule, flush } = manualSchedule();
    const queue = new ShadowQueue({ capacity: 2, concurrency: 2, schedule });
    const gates = [deferred(), deferred(), deferred(), deferred()];
    let started = 0;
    const job = (i: number) => async () => {
      started++;
      await gates[i]!.promise;
    };
    expect(queue.offer(job(0))).toBe(true);
    expect(queue.offer(job(1))).toBe(true);
    expect(queue.offer(job(2))).toBe(false);
    flush();
    expect(started).toBe(2);
    expect(queue.counts()).toMatchObject({ queued: 0, running: 2 });
    expect(queue.offer(job(2))).toBe(true);
    expect(queue.offer(job(3))).toBe(true);
    flush();
    expect(started).toBe(2); // both slots busy
    gates[0]!.resolve();
    await gates[0]!.promise;
    await Promise.resolve();
    expect(started).toBe(3);
    gates[1]!.resolve();
    gates[2]!.resolve();
    gates[3]!.resolve();
    await queue.idle();
    expect(queue.counts()).toEqual({ accepted: 4, dropped: 1, completed: 4, errors: 0, queued: 0, running: 0 });
  });

  it('counts failing jobs, rejected or thrown, and never throws to the caller', async () => {
    const errors: unknown[] = [];
    const queue = new ShadowQueue({
      capacity: 10,
      concurrency: 2,
      onError: (e) => {
        errors.push(e);
        throw new Error('a listener that throws is ignored');
      },
    });
    expect(queue.offer(() => Promise.reject(new Error('shadow model failed')))).toBe(true);
    expect(
      queue.offer(() => {
        throw new Error('thrown synchronously');
      }),
    ).toBe(true);
    expect(queue.offer(async () => 42)).toBe(true);
    await queue.idle();
    expect(queue.counts()).toMatchObject({ accepted: 3, completed: 1, errors: 2 });
    expect(errors.map((e) => (e as Error).message).sort()).toEqual(['shadow model failed', 'thrown synchronously']);
  });

  it('close drops what is queued and refuses more', async () => {
    const { schedule } = manualSchedule();
    const queue = new ShadowQueue({ capacity: 5, concurrency: 1, schedule });
    queue.offer(async () => {});
    queue.offer(async () => {});
    queue.close();
    expect(queue.offer(async () => {})).toBe(false);
    expect(queue.counts()).toMatchObject({ accepted: 2, dropped: 3, queued: 0 });
    await queue.idle();
  });

  it('refuses a capacity or concurrency below 1', () => {
    expect(() => new ShadowQueue({ capacity: 0, concurrency: 1 })).toThrow(RangeError);
    expect(() => new ShadowQueue({ capacity: 1, concurrency: 0.5 })).toThrow(RangeError);
  });
});

describe('compareOutputs', () => {
  const map = (entries: Record<string, ArrayLike<number> | ArrayLike<bigint>>) => new Map(Object.entries(entries));

  it('reports the largest and the mean absolute difference', () => {
    const result = compareOutputs(
      map({ score: new Float32Array([0.5, 0.25]), rank: new Int32Array([3]) }),
      map({ score: new Float32Array([0.75, 0.25]), rank: new Int32Array([1]) }),
    );
    expect(result).toEqual({ ok: true, maxAbsDiff: 2, meanAbsDiff: (0.25 + 0 + 2) / 3, elements: 3 });
  });

  it('compares only the named outputs, bigint ones included', () => {
    const result = compareOutputs(
      map({ id: new BigInt64Array([5n]), extra: [1] }),
      map({ id: new BigInt64Array([7n]) }),
      ['id'],
    );
    expect(result).toEqual({ ok: true, maxAbsDiff: 2, meanAbsDiff: 2, elements: 1 });
  });

  it('treats a one-sided NaN as infinitely different, and equal values as 0', () => {
    expect(compareOutputs(map({ s: [NaN, 1] }), map({ s: [NaN, 1] }))).toMatchObject({ maxAbsDiff: 0 });
    expect(compareOutputs(map({ s: [Infinity] }), map({ s: [Infinity] }))).toMatchObject({ maxAbsDiff: 0 });
    expect(compareOutputs(map({ s: [NaN] }), map({ s: [0] }))).toMatchObject({ maxAbsDiff: Infinity });
  });

  it('says why answers cannot be compared', () => {
    expect(compareOutputs(map({ s: [1] }), map({}))).toEqual({ ok: false, reason: "output 's' is missing from the shadow answer" });
    expect(compareOutputs(map({ s: [1] }), map({ s: [1, 2] }))).toEqual({
      ok: false,
      reason: "output 's' has 2 elements in the shadow answer, 1 in the primary",
    });
  });

  it('has increasing histogram buckets', () => {
    expect([...SHADOW_DIFF_BUCKETS].sort((a, b) => a - b)).toEqual([...SHADOW_DIFF_BUCKETS]);
  });
});
