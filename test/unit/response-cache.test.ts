/**
 * The response cache (src/datachecks/cache): the key material, the collision
 * guard (a forced-equal hash), LRU by bytes, the tenant charge, and single
 * flight (64 concurrent identical misses run once; errors reach every waiter
 * and are not stored).
 */
import { describe, expect, it } from 'vitest';
import { create } from '@bufbuild/protobuf';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { cacheKeyMaterial } from '../../src/datachecks/cache/cache-key.js';
import { ResponseCache, type CacheCharge } from '../../src/datachecks/cache/response-cache.js';

const bytes = (...values: number[]) => new Uint8Array(values);

function request(data: number[], extra: Record<string, unknown> = {}) {
  return create(ModelInferRequestSchema, {
    modelName: 'm',
    id: 'req-1',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [1n, BigInt(data.length)] }],
    rawInputContents: [new Uint8Array(new Float32Array(data).buffer)],
    ...extra,
  });
}

describe('cache key material', () => {
  it('ignores the id, scheduling parameters and parameter order', () => {
    const a = request([1, 2], {
      id: 'a',
      parameters: { priority: { parameterChoice: { case: 'uint64Param', value: 1n } }, z: { parameterChoice: { case: 'boolParam', value: true } }, y: { parameterChoice: { case: 'stringParam', value: 's' } } },
    });
    const b = request([1, 2], {
      id: 'b',
      parameters: { y: { parameterChoice: { case: 'stringParam', value: 's' } }, z: { parameterChoice: { case: 'boolParam', value: true } } },
    });
    expect(Buffer.from(cacheKeyMaterial(a, 'm', '1'))).toEqual(Buffer.from(cacheKeyMaterial(b, 'm', '1')));
  });

  it('differs by version, bytes, shape, datatype, requested outputs and parameters', () => {
    const base = Buffer.from(cacheKeyMaterial(request([1, 2]), 'm', '1'));
    const variants = [
      cacheKeyMaterial(request([1, 2]), 'm', '2'),
      cacheKeyMaterial(request([1, 2]), 'n', '1'),
      cacheKeyMaterial(request([1, 3]), 'm', '1'),
      cacheKeyMaterial(request([1, 2], { inputs: [{ name: 'x', datatype: 'FP32', shape: [2n, 1n] }] }), 'm', '1'),
      cacheKeyMaterial(request([1, 2], { inputs: [{ name: 'x', datatype: 'INT32', shape: [1n, 2n] }] }), 'm', '1'),
      cacheKeyMaterial(request([1, 2], { outputs: [{ name: 'y' }] }), 'm', '1'),
      cacheKeyMaterial(request([1, 2], { parameters: { k: { parameterChoice: { case: 'int64Param', value: 3n } } } }), 'm', '1'),
    ];
    for (const variant of variants) expect(Buffer.from(variant).equals(base)).toBe(false);
  });
});

describe('ResponseCache', () => {
  const computed = (value: string, size = 10) => async () => ({ value, bytes: size });

  it('answers a hit with the stored value', async () => {
    const cache = new ResponseCache<string>({ sizeBytes: 1000 });
    expect(await cache.get(bytes(1), 't', computed('one'))).toMatchObject({ value: 'one', kind: 'miss' });
    let ran = false;
    const hit = await cache.get(bytes(1), 't', async () => ((ran = true), { value: 'other', bytes: 1 }));
    expect(hit).toMatchObject({ value: 'one', kind: 'hit' });
    expect(ran).toBe(false);
  });

  it('never answers a different key on a hash collision', async () => {
    const cache = new ResponseCache<string>({ sizeBytes: 1000, hash: () => 'same' });
    await cache.get(bytes(1), 't', computed('one'));
    const other = await cache.get(bytes(2), 't', computed('two'));
    expect(other).toMatchObject({ value: 'two', kind: 'miss' });
    expect(await cache.get(bytes(1), 't', computed('x'))).toMatchObject({ value: 'one', kind: 'hit' });
    expect(await cache.get(bytes(2), 't', computed('x'))).toMatchObject({ value: 'two', kind: 'hit' });
  });

  it('evicts the least recently used entries to stay within its bytes', async () => {
    // Each entry: 39 bytes of value + 1 byte of key material = 40.
    const cache = new ResponseCache<string>({ sizeBytes: 100 });
    await cache.get(bytes(1), 't', computed('a', 39));
    await cache.get(bytes(2), 't', computed('b', 39));
    await cache.get(bytes(1), 't', computed('x')); // 1 is now the most recent
    await cache.get(bytes(3), 't', computed('c', 39)); // evicts 2
    expect(cache.usedBytes).toBe(80);
    expect(cache.entryCount).toBe(2);
    expect((await cache.get(bytes(1), 't', computed('x', 39))).kind).toBe('hit');
    expect((await cache.get(bytes(2), 't', computed('b2', 39))).kind).toBe('miss');
    expect(cache.usedBytes).toBeLessThanOrEqual(100);
    // Bigger than the whole cache: answered, never stored.
    expect((await cache.get(bytes(9), 't', computed('big', 200))).kind).toBe('miss');
    expect((await cache.get(bytes(9), 't', computed('big', 200))).kind).toBe('miss');
  });

  it('charges each entry to its tenant, releases it on eviction, and skips what the tenant cannot hold', async () => {
    const held = new Map<number, { tenant: string; bytes: number; onEvict: () => boolean }>();
    let next = 0;
    const quota = 50;
    const cache = new ResponseCache<string>({
      sizeBytes: 1000,
      charge: (tenant, size, onEvict): CacheCharge => {
        const used = [...held.values()].filter((h) => h.tenant === tenant).reduce((n, h) => n + h.bytes, 0);
        if (used + size > quota) throw new Error('over quota');
        const id = next++;
        held.set(id, { tenant, bytes: size, onEvict });
        return { release: () => void held.delete(id) };
      },
    });
    await cache.get(bytes(1), 'a', computed('one', 29)); // 30 bytes
    await cache.get(bytes(2), 'a', computed('two', 29)); // would be 60 > 50: not stored
    expect(cache.entryCount).toBe(1);
    expect((await cache.get(bytes(2), 'a', computed('two', 29))).kind).toBe('miss');
    await cache.get(bytes(3), 'b', computed('three', 29)); // another tenant
    expect(cache.entryCount).toBe(2);
    // The ledger evicts the first entry: it goes from the cache.
    const [firstId, first] = [...held.entries()][0]!;
    expect(first.onEvict()).toBe(true);
    held.delete(firstId);
    expect(cache.entryCount).toBe(1);
    expect((await cache.get(bytes(1), 'a', computed('one', 29))).kind).toBe('miss');
    cache.clear();
    expect(held.size).toBe(0);
    expect(cache.usedBytes).toBe(0);
  });

  it('runs 64 concurrent identical misses once', async () => {
    const cache = new ResponseCache<string>({ sizeBytes: 1000 });
    let runs = 0;
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const run = async () => {
      runs += 1;
      await gate;
      return { value: 'answer', bytes: 10 };
    };
    const all = Array.from({ length: 64 }, () => cache.get(bytes(7, 7), 't', run));
    open();
    const outcomes = await Promise.all(all);
    expect(runs).toBe(1);
    expect(outcomes.every((o) => o.value === 'answer')).toBe(true);
    expect(outcomes.filter((o) => o.kind === 'miss')).toHaveLength(1);
    expect(outcomes.filter((o) => o.kind === 'shared')).toHaveLength(63);
  });

  it('gives a failed run to every waiter and stores nothing', async () => {
    const cache = new ResponseCache<string>({ sizeBytes: 1000 });
    let runs = 0;
    const run = async () => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 5));
      throw new Error('model failed');
    };
    const all = await Promise.allSettled(Array.from({ length: 8 }, () => cache.get(bytes(5), 't', run)));
    expect(runs).toBe(1);
    for (const outcome of all) {
      expect(outcome.status).toBe('rejected');
      expect(String((outcome as PromiseRejectedResult).reason)).toMatch(/model failed/);
    }
    expect(cache.entryCount).toBe(0);
    expect((await cache.get(bytes(5), 't', computed('ok'))).kind).toBe('miss');
  });
});
