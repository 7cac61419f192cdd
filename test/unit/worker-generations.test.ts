/**
 * A version's worker generations (repository/worker-generations.ts) with
 * stand-in pools and a stand-in memory share: the rolling restart switches to
 * a warmed generation and frees the old one's owner, shares one restart
 * between callers, discards a new generation whose version stopped serving,
 * and a CPU pool started on demand is shared by concurrent callers and
 * retired again. Real pools and restarts under load: test/e2e/leak-patrol.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { WorkerGenerations, type WorkerGeneration } from '../../src/repository/worker-generations.js';
import type { ModelPool } from '../../src/workers/model-pool.js';
import type { VersionMemory } from '../../src/repository/version-memory.js';
import type { Owner } from '../../src/native/arena.js';

interface FakePool {
  readonly number: number;
  readonly threadIds: number[];
  readonly footprintBytes: number;
  closed: boolean;
  warmedWith: unknown;
  warmUp(plan: unknown): Promise<unknown>;
  close(): Promise<void>;
  abandon(): void;
}

function fakePool(number: number): FakePool {
  return {
    number,
    threadIds: [number * 10, number * 10 + 1],
    footprintBytes: 1000,
    closed: false,
    warmedWith: undefined,
    async warmUp(plan) {
      this.warmedWith = plan;
      return {};
    },
    async close() {
      this.closed = true;
    },
    abandon() {
      this.closed = true;
    },
  };
}

function fakeMemory() {
  const live = new Set<number>();
  const events: string[] = [];
  const memory = {
    createGenerationOwner: (number: number) => {
      live.add(number);
      events.push(`owner ${number}`);
      return { id: number } as unknown as Owner;
    },
    destroyGenerationOwner: (owner: Owner) => {
      const number = (owner as unknown as { id: number }).id;
      live.delete(number);
      events.push(`destroy ${number}`);
      return 64;
    },
    chargeFootprint: (bytes: number) => events.push(`charge ${bytes}`),
    releaseFootprint: () => events.push('release'),
    generationBytes: () => 0,
  };
  return { memory: memory as unknown as VersionMemory, live, events };
}

function generations(first: FakePool | undefined) {
  const pools: FakePool[] = [];
  const { memory, live, events } = fakeMemory();
  const start = async (number: number) => {
    const pool = fakePool(number);
    pools.push(pool);
    return pool as unknown as ModelPool;
  };
  const initial = first === undefined ? undefined : ({ number: 1, owner: { id: 1 }, pool: first } as unknown as WorkerGeneration);
  if (first !== undefined) live.add(1);
  return { workers: new WorkerGenerations(initial, memory, start, () => undefined), pools, live, events };
}

describe('WorkerGenerations', () => {
  it('restarts onto a warmed generation, then closes the old pool and frees its owner', async () => {
    const first = fakePool(1);
    const { workers, pools, live } = generations(first);
    const plan = { samples: [], delayMs: 0 };
    workers.usePlan(plan);
    let switched = 0;
    const a = workers.restart(() => undefined, () => (switched += 1));
    const b = workers.restart(() => undefined, () => (switched += 1));
    expect(workers.isRestarting).toBe(true);
    const report = await a;
    expect(await b).toBe(report);
    expect(switched).toBe(1);
    expect(pools).toHaveLength(1);
    expect(pools[0]!.warmedWith).toBe(plan);
    expect(first.closed).toBe(true);
    expect(report).toMatchObject({ fromGeneration: 1, toGeneration: 2, oldThreadIds: [10, 11], newThreadIds: [20, 21], freedBytes: 64 });
    expect(workers.generation).toEqual({ number: 2, threadIds: [20, 21] });
    expect([...live]).toEqual([2]);
    expect(workers.isRestarting).toBe(false);
  });

  it('discards the new generation when the version stopped serving meanwhile, and keeps the old one', async () => {
    const first = fakePool(1);
    const { workers, pools, live } = generations(first);
    await expect(workers.restart(() => 'UNLOADING', () => undefined)).rejects.toThrow(/^version became UNLOADING during the restart$/);
    expect(pools[0]!.closed).toBe(true);
    expect(first.closed).toBe(false);
    expect(workers.generation.number).toBe(1);
    expect([...live]).toEqual([1]);
  });

  it('refuses a restart with no pool (a version on its executor)', async () => {
    const { workers } = generations(undefined);
    await expect(workers.restart(() => undefined, () => undefined)).rejects.toThrow(/no worker pool/);
    expect(workers.generation).toEqual({ number: 0, threadIds: [] });
  });

  it('starts one CPU pool on demand for concurrent callers, charges it, and retires it', async () => {
    const { workers, pools, live, events } = generations(undefined);
    const [a, b] = await Promise.all([workers.ensurePool(), workers.ensurePool()]);
    expect(a).toBe(b);
    expect(pools).toHaveLength(1);
    expect(events).toEqual(['owner 2', 'charge 1000']);
    await workers.retire(() => false);
    expect(pools[0]!.closed).toBe(false);
    await workers.retire(() => true);
    expect(pools[0]!.closed).toBe(true);
    expect([...live]).toEqual([]);
    expect(events.slice(2)).toEqual(['destroy 2', 'release']);
    expect(workers.pool).toBeUndefined();
  });
});
