// The tenant limiter in shared mode (src/security/tenant-limits.ts), as the
// main thread and its front-door threads use it: real worker_threads attach
// the main thread's limiter through share()'s plain data (posted by
// structured clone, as a door thread receives it) and admit against one
// in-flight cap and one token bucket at the same time, started together off
// one barrier. The cap is never passed (each worker counts its holders in a
// separate shared cell and checks the total on every admission), the bucket
// gives exactly its tokens, and every thread's refusals are in one
// rejections() read. The workers load the compiled module, as door threads do.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { TenantLimiter, TenantLimitError, type SharedTenantLimits } from '../../src/security/tenant-limits.js';
import { fakeClock, refusal as refusalOf } from '../helpers/tenant-limits.js';

const compiled = pathToFileURL(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src', 'security', 'tenant-limits.js'),
).href;

/**
 * One admitting thread: waits on the barrier, then `attempts` admissions of
 * `tenant`. An admitted request adds itself to `held` (a cell apart from the
 * limiter's), records the most it saw, holds for `holdSpins` loop turns and
 * leaves. Posts its counts and one refusal message of each reason.
 */
const workerCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
import(data.module).then(({ TenantLimiter }) => {
  const limiter = TenantLimiter.attach(data.limits, { shard: data.shard });
  const cells = new Int32Array(data.cells);
  Atomics.add(cells, 1, 1);
  while (Atomics.load(cells, 2) === 0) Atomics.wait(cells, 2, 0, 5);
  let admitted = 0, refused = 0, mostHeld = 0;
  const messages = {};
  for (let i = 0; i < data.attempts; i += 1) {
    let release;
    try {
      release = limiter.admit(data.tenant);
    } catch (err) {
      refused += 1;
      messages[err.reason] = err.message;
      continue;
    }
    admitted += 1;
    const held = Atomics.add(cells, 0, 1) + 1;
    if (held > mostHeld) mostHeld = held;
    let x = 0;
    for (let s = 0; s < data.holdSpins; s += 1) x += s;
    Atomics.sub(cells, 0, 1);
    release();
  }
  parentPort.postMessage({ admitted, refused, mostHeld, messages });
});
`;

interface WorkerResult {
  readonly admitted: number;
  readonly refused: number;
  readonly mostHeld: number;
  readonly messages: Record<string, string>;
}

/** Runs `threads` admitting workers on `limits` together; resolves with each one's counts. */
async function admitTogether(limits: SharedTenantLimits, tenant: string, threads: number, attempts: number, holdSpins: number): Promise<WorkerResult[]> {
  // [holders now, workers ready, go]
  const cells = new SharedArrayBuffer(3 * 4);
  const flags = new Int32Array(cells);
  const workers = Array.from(
    { length: threads },
    (_, index) =>
      new Worker(workerCode, { eval: true, workerData: { module: compiled, limits, shard: index + 1, cells, tenant, attempts, holdSpins } }),
  );
  const results = workers.map(
    (worker) =>
      new Promise<WorkerResult>((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`worker exited with ${code} before it was done`)));
      }),
  );
  while (Atomics.load(flags, 1) < threads) await new Promise((resolve) => setTimeout(resolve, 5));
  Atomics.store(flags, 2, 1);
  Atomics.notify(flags, 2);
  try {
    return await Promise.all(results);
  } finally {
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

const THREADS = 4;

describe('shared tenant limits across worker threads', () => {
  it('never admits above max_inflight, counting in one cell for every thread (compare-exchange path)', async () => {
    // A cap of 1 with threads on two or more cores: the threads do collide on it.
    const limiter = new TenantLimiter([{ tenant: 'capped', maxInflight: 1 }], { shards: THREADS + 1 });
    const results = await admitTogether(limiter.share(), 'capped', THREADS, 4000, 2000);
    expect(Math.max(...results.map((result) => result.mostHeld))).toBe(1);
    const admitted = results.reduce((sum, result) => sum + result.admitted, 0);
    const refused = results.reduce((sum, result) => sum + result.refused, 0);
    expect(admitted + refused).toBe(THREADS * 4000);
    // Contention did happen (else the cap was never tested) and every place was given back.
    expect(refused).toBeGreaterThan(0);
    expect(limiter.inflight('capped')).toBe(0);
    expect(limiter.rejections()).toEqual([
      { tenant: 'capped', reason: 'rate', count: 0 },
      { tenant: 'capped', reason: 'inflight', count: refused },
    ]);
    const message = results.find((result) => result.messages.inflight !== undefined)!.messages.inflight;
    expect(message).toMatch(
      /^tenant 'capped' is over its in-flight limit \(max_inflight 1 in the tenants file\): 1 of its requests are already in flight; retry when one is answered$/,
    );
  });

  it('holds max_inflight for a tenant with a rate too (the locked path)', async () => {
    // A bucket that never runs dry within the test: only the cap refuses.
    const limiter = new TenantLimiter([{ tenant: 'both', rate: 1e9, burst: 1e9, maxInflight: 1 }], { shards: THREADS + 1 });
    const results = await admitTogether(limiter.share(), 'both', THREADS, 4000, 2000);
    expect(Math.max(...results.map((result) => result.mostHeld))).toBe(1);
    expect(results.reduce((sum, result) => sum + result.refused, 0)).toBeGreaterThan(0);
    expect(limiter.inflight('both')).toBe(0);
  });

  it('gives exactly the bucket\'s tokens among threads admitting at once, and counts every refusal', async () => {
    // 0.001 tokens/s: well under one token refills while the test runs, so exactly the burst is admitted.
    const limiter = new TenantLimiter([{ tenant: 'metered', rate: 0.001, burst: 1000 }], { shards: THREADS + 1 });
    const results = await admitTogether(limiter.share(), 'metered', THREADS, 600, 0);
    const admitted = results.reduce((sum, result) => sum + result.admitted, 0);
    expect(admitted).toBe(1000);
    // Every thread got some: they really raced for the same bucket.
    expect(results.filter((result) => result.admitted > 0).length).toBeGreaterThan(1);
    expect(limiter.tokens('metered')).toBeLessThan(1);
    // One more on the main thread: refused, and counted with the threads' refusals.
    expect(() => limiter.admit('metered')).toThrow(TenantLimitError);
    expect(limiter.rejections()).toEqual([
      { tenant: 'metered', reason: 'rate', count: THREADS * 600 - 1000 + 1 },
      { tenant: 'metered', reason: 'inflight', count: 0 },
    ]);
    const message = results.find((result) => result.messages.rate !== undefined)!.messages.rate;
    expect(message).toMatch(
      /^tenant 'metered' is over its request rate limit \(rate 0\.001 requests\/s, burst 1000 in the tenants file\): no request left in the bucket; the next is allowed in \d+ ms$/,
    );
  });
});

describe('the clock across threads', () => {
  it("refills by the time that passed, whichever thread reads: one process-wide clock, not each thread's own origin", async () => {
    // 1 token per ms, so a clock that differs between threads shows as tokens: read on the main thread just
    // after the worker drained the bucket, it holds what refilled in between, within 1 ms. (Each thread's own
    // performance.now() differs by up to about 0.5 ms on Node 20, and by the threads' start times where each
    // worker has its own origin.)
    await new Promise((resolve) => setTimeout(resolve, 600));
    const limiter = new TenantLimiter([{ tenant: 'fast', rate: 1000, burst: 1000 }], { shards: 2 });
    const code = `
      const { parentPort, workerData: data } = require('node:worker_threads');
      import(data.module).then(({ TenantLimiter }) => {
        const door = TenantLimiter.attach(data.limits, { shard: 1 });
        let admitted = 0;
        for (let i = 0; i < 5000; i += 1) {
          try { door.admit('fast')(); admitted += 1; } catch {}
        }
        parentPort.postMessage({ admitted, tokens: door.tokens('fast') });
      });`;
    const worker = new Worker(code, { eval: true, workerData: { module: compiled, limits: limiter.share() } });
    const started = performance.now();
    const seen = await new Promise<{ admitted: number; tokens: number }>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    const tokensHere = limiter.tokens('fast')!;
    const elapsedMs = performance.now() - started;
    await worker.terminate();
    // The worker drained the bucket (what refilled while it ran, it took too).
    expect(seen.admitted).toBeGreaterThanOrEqual(1000);
    expect(seen.tokens).toBeLessThan(1000);
    // Read here, the bucket holds at most what refilled since: never a gap between the threads' clocks.
    expect(tokensHere).toBeLessThanOrEqual(Math.min(1000, seen.tokens + elapsedMs + 1));
    expect(tokensHere).toBeLessThan(600);
  });
});

describe('a thread that exits holding requests', () => {
  it('frees its share of the in-flight count with releaseShard, and only its share', async () => {
    const limiter = new TenantLimiter([{ tenant: 'capped', maxInflight: 3 }, { tenant: 'metered', rate: 0.001, burst: 10, maxInflight: 5 }], { shards: 3 });
    const mainHold = limiter.admit('capped');
    // Door thread 1 admits two of each tenant and exits without releasing them (a thread that died mid-request).
    const code = `
      const { workerData: data } = require('node:worker_threads');
      import(data.module).then(({ TenantLimiter }) => {
        const door = TenantLimiter.attach(data.limits, { shard: 1 });
        for (const tenant of ['capped', 'capped', 'metered', 'metered']) door.admit(tenant);
        process.exit(0);
      });`;
    const worker = new Worker(code, { eval: true, workerData: { module: compiled, limits: limiter.share() } });
    await new Promise((resolve) => worker.once('exit', resolve));
    expect(limiter.inflight('capped')).toBe(3);
    expect(limiter.inflight('metered')).toBe(2);
    expect(() => limiter.admit('capped')).toThrow(/over its in-flight limit/);
    limiter.releaseShard(1);
    expect(limiter.inflight('capped')).toBe(1); // the main thread's own request still holds its place
    expect(limiter.inflight('metered')).toBe(0);
    // Tokens are not given back: the requests did take them.
    expect(limiter.tokens('metered')).toBeLessThan(9);
    limiter.releaseShard(1);
    expect(limiter.inflight('capped')).toBe(1);
    mainHold();
    expect(limiter.inflight('capped')).toBe(0);
    expect(() => limiter.releaseShard(0)).toThrow("tenant limits: 'shard': expected an integer in 1..2, got 0");
  });
});

describe('shared mode on one thread', () => {
  it('answers as the local mode does: the same admissions, tokens and messages', () => {
    const spec = [{ tenant: 'ads', rate: 4, burst: 2, maxInflight: 2 }];
    const outcomes = (limiter: TenantLimiter, clock: ReturnType<typeof fakeClock>) => {
      const seen: unknown[] = [];
      const releases = [limiter.admit('ads'), limiter.admit('ads')];
      seen.push(refusalOf(() => limiter.admit('ads')).message, limiter.inflight('ads'));
      releases.forEach((release) => release());
      seen.push(refusalOf(() => limiter.admit('ads')).message, limiter.tokens('ads'));
      clock.advance(125);
      seen.push(refusalOf(() => limiter.check('ads')).message);
      clock.advance(125);
      limiter.admit('ads')();
      limiter.refund('ads');
      seen.push(limiter.tokens('ads'));
      clock.advance(60_000);
      seen.push(limiter.tokens('ads'), limiter.inflight('ads'));
      return seen;
    };
    const localClock = fakeClock();
    const sharedClock = fakeClock();
    const local = outcomes(new TenantLimiter(spec, { now: localClock.now }), localClock);
    const shared = outcomes(new TenantLimiter(spec, { now: sharedClock.now, shards: 1 }), sharedClock);
    expect(shared).toEqual(local);
    expect(local[0]).toMatch(/2 of its requests are already in flight/);
    expect(local[2]).toMatch(/the next is allowed in 250 ms$/);
  });

  it('calls onRejected and counts the refusal in its shard', () => {
    const rejected: string[] = [];
    const limiter = new TenantLimiter([{ tenant: 'one', maxInflight: 1 }], { shards: 2, onRejected: (tenant, reason) => rejected.push(`${tenant}:${reason}`) });
    const door = TenantLimiter.attach(limiter.share(), { shard: 1 });
    const release = limiter.admit('one');
    expect(() => door.admit('one')).toThrow(/over its in-flight limit/);
    expect(() => door.check('one')).toThrow(/over its in-flight limit/);
    expect(rejected).toEqual([]); // the door's limiter has no callback: the main thread's is its own
    expect(() => limiter.check('one')).toThrow(TenantLimitError);
    expect(rejected).toEqual(['one:inflight']);
    release();
    door.admit('one')();
    expect(limiter.rejections()).toEqual([
      { tenant: 'one', reason: 'rate', count: 0 },
      { tenant: 'one', reason: 'inflight', count: 3 },
    ]);
  });

  it('refuses a bad shard, a bad shard count and share() of a local limiter, naming the field', () => {
    const limiter = new TenantLimiter([{ tenant: 'one', maxInflight: 1 }], { shards: 3 });
    expect(() => TenantLimiter.attach(limiter.share(), { shard: 0 })).toThrow("tenant limits: 'shard': expected an integer in 1..2, got 0");
    expect(() => TenantLimiter.attach(limiter.share(), { shard: 3 })).toThrow("tenant limits: 'shard': expected an integer in 1..2, got 3");
    expect(() => new TenantLimiter([], { shards: 0 })).toThrow("tenant limits: 'shards': expected an integer >= 1, got 0");
    expect(() => new TenantLimiter([{ tenant: 'one', maxInflight: 1 }]).share()).toThrow(/share\(\) needs a shared limiter/);
    expect(limiter.share().shards).toBe(3);
    expect(new TenantLimiter([]).rejections()).toBeUndefined();
  });
});
