// The memory ledger through its TS wrapper (src/native/arena.ts), against
// each addon build: typed quota and out-of-memory errors, LRU eviction of
// reservations through onEvict, zero-copy views, destroyOwner, argument
// validation and the CPU fallback.
import { describe, expect, it } from 'vitest';

import {
  Arena,
  ArenaOutOfMemoryError,
  ArenaQuotaError,
  type EvictionEvent,
  type Owner,
} from '../../src/native/arena.js';
import { loadAddon } from '../../src/native/loader.js';
import { NativeError } from '../../src/native/native-error.js';
import { addonBuilds, noGpu } from './addon-builds.js';

const KiB = 1024;
const MiB = 1024 * KiB;
let counter = 0;

describe.each(addonBuilds)('$kind build: arena', (build) => {
  const make = (options: Parameters<typeof Arena.create>[1] = {}) => {
    counter += 1;
    return Arena.create(`test-${build.kind}-${counter}`, { backend: 'host', capacityBytes: 64 * MiB, segmentBytes: 4 * MiB, maxSplitBytes: 2 * MiB, smallMaxBytes: 64 * KiB, ...options }, loadAddon({ path: build.path }));
  };

  it.skipIf(!build.present)('rejects a tenant over its quota with a typed error; other tenants are unaffected', () => {
    const arena = make();
    const a = arena.createTenant('a', 1 * MiB);
    const b = arena.createTenant('b', 8 * MiB);
    const batch = arena.createOwner('batch', 'batch-1');
    arena.alloc(batch, 600 * KiB, { tenant: a });
    let caught: unknown;
    try {
      arena.alloc(batch, 600 * KiB, { tenant: 'a' });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ArenaQuotaError);
    expect(caught).toBeInstanceOf(NativeError);
    const error = caught as ArenaQuotaError;
    expect(error).toMatchObject({ name: 'ArenaQuotaError', code: 'RESOURCE_EXHAUSTED', tenant: 'a', requested: 600 * KiB, used: 600 * KiB, quota: 1 * MiB });
    expect(error.message).toMatch(/^alloc: RESOURCE_EXHAUSTED: tenant 'a' over quota: requested 600\.0 KiB, using 600\.0 KiB of its 1\.0 MiB quota$/);
    expect((error.stack ?? '').split('\n')[1]).toMatch(/arena\.test\.ts/);
    expect(arena.alloc(batch, 600 * KiB, { tenant: b }).size).toBe(600 * KiB);
    const stats = arena.stats();
    expect(stats.tenants.find((t) => t.name === 'a')).toMatchObject({ used: 600 * KiB, quotaFailures: 1 });
    arena.setTenantQuota(a, 2 * MiB);
    expect(() => arena.alloc(batch, 600 * KiB, { tenant: a })).not.toThrow();
    arena.close();
  });

  it.skipIf(!build.present)('says who holds what when the capacity is exhausted', () => {
    const arena = make({ capacityBytes: 8 * MiB });
    arena.setTenantQuota('default', 1024 * MiB);
    const model = arena.createOwner('model', 'resnet/1');
    arena.reserve(model, 5 * MiB);
    const batch = arena.createOwner('batch', 'batch-9');
    const error = (() => {
      try {
        arena.alloc(batch, 4 * MiB);
      } catch (e) {
        return e;
      }
      return undefined;
    })() as ArenaOutOfMemoryError;
    expect(error).toBeInstanceOf(ArenaOutOfMemoryError);
    expect(error.code).toBe('RESOURCE_EXHAUSTED');
    expect(error.holders).toEqual([
      { kind: 'tenant', name: 'default', allocatedBytes: 0, reservedBytes: 5 * MiB },
      { kind: 'model', name: 'resnet/1', allocatedBytes: 0, reservedBytes: 5 * MiB },
    ]);
    expect(error.message).toMatch(/out of memory: 4\.0 MiB for tenant 'default'.*held by tenant 'default' 5\.0 MiB/);
    arena.close();
  });

  it.skipIf(!build.present)('evicts idle evictable reservations in LRU order through onEvict, which may refuse', () => {
    const arena = make();
    const team = arena.createTenant('team', 10 * MiB);
    const events: EvictionEvent[] = [];
    const load = (label: string, refuse = false) => {
      const owner = arena.createOwner('model', label);
      return arena.reserve(owner, 3 * MiB, {
        tenant: team,
        evictable: true,
        onEvict: (event) => {
          events.push(event);
          if (refuse) return false;
          arena.destroyOwner(owner); // what an unload does; the arena tolerates it
          return true;
        },
      });
    };
    const a = load('a');
    const b = load('b', true);
    const c = load('c');
    a.touch(); // LRU order: b, c, a
    c.pin(); // in use
    const d = load('d'); // 12 MiB > 10: b refuses, c is pinned, a goes
    expect(events.map((e) => [e.kind, e.id, e.tenant])).toEqual([
      ['reservation', b.id, 'team'],
      ['reservation', a.id, 'team'],
    ]);
    expect(events[1]?.bytes).toBe(3 * MiB);
    expect(events[1]?.idleMs).toBeGreaterThanOrEqual(0);
    expect(a.released).toBe(true);
    expect(() => a.release()).toThrowError(/release: FAILED_PRECONDITION: Reservation \d+ was released/);
    expect(b.released).toBe(false);
    c.unpin();
    const stats = arena.stats();
    expect(stats.evictions).toBe(1);
    expect(stats.evictionRefusals).toBe(1);
    expect(stats.tenants.find((t) => t.name === 'team')?.reserved).toBe(9 * MiB);
    d.release();
    arena.close();
  });

  it.skipIf(!build.present)('views blocks as external ArrayBuffers without copying', () => {
    const arena = make();
    const owner = arena.createOwner('batch', 'b');
    const block = arena.alloc(owner, 1000);
    const first = new Uint8Array(block.view());
    const second = new Uint8Array(block.view());
    expect(first.byteLength).toBe(1000);
    first.set([1, 2, 3], 10);
    expect([...second.subarray(10, 13)]).toEqual([1, 2, 3]);
    const adopted = arena.adopt(block.id);
    expect(adopted.info().refcount).toBe(2);
    const third = new Float32Array(adopted.view(), 0, 4);
    third[0] = 1.5;
    expect(new Float32Array(block.view(), 0, 1)[0]).toBe(1.5);
    expect(adopted.release()).toBe(1);
    expect(third.length).toBe(0); // the adopter's views are detached
    expect(block.release()).toBe(0);
    expect(first.byteLength).toBe(0);
    expect(() => block.view()).toThrowError(NativeError);
    arena.close();
  });

  it.skipIf(!build.present)('destroyOwner frees everything the owner and its children hold', () => {
    const arena = make();
    const team = arena.createTenant('team', 32 * MiB);
    const model: Owner = arena.createOwner('model', 'bert/2');
    const batch = arena.createOwner('batch', 'batch-3', model);
    const weights = arena.alloc(model, 3 * MiB, { tenant: team });
    const input = arena.alloc(batch, 70 * KiB, { tenant: team }).retain();
    const view = new Uint8Array(input.view());
    arena.reserve(model, 5 * MiB, { tenant: team });
    expect(arena.stats().tenants.find((t) => t.name === 'team')?.used).toBe(8 * MiB + input.size);
    // ownerUsage reports, without freeing, exactly what destroyOwner then frees.
    expect(arena.ownerUsage(batch)).toEqual({ owners: 1, blocks: 1, reservations: 0, bytes: input.size });
    expect(arena.ownerUsage(model.id)).toEqual({ owners: 2, blocks: 2, reservations: 1, bytes: 8 * MiB + input.size });
    expect(arena.destroyOwner(model)).toEqual({ owners: 2, blocks: 2, reservations: 1, bytes: 8 * MiB + input.size });
    expect(() => arena.ownerUsage(model)).toThrow(/NOT_FOUND/);
    expect(weights.released && input.released).toBe(true);
    expect(view.byteLength).toBe(0);
    const stats = arena.stats();
    expect([stats.allocated, stats.requested, stats.reservations, stats.blocks, stats.owners]).toEqual([0, 0, 0, 0, 0]);
    expect(stats.tenants.every((t) => t.used === 0)).toBe(true);
    expect(stats.backendReserved).toBeGreaterThan(0); // cached, owned by no tenant
    arena.releaseCached();
    expect(arena.stats().backendReserved).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)('validates arguments with clear messages', () => {
    const arena = make();
    const owner = arena.createOwner('batch', 'b');
    expect(() => arena.alloc(owner, 0)).toThrowError('alloc: bytes must be an integer number of bytes >= 1, got 0');
    expect(() => arena.alloc(owner, 1.5)).toThrowError(TypeError);
    expect(() => arena.createOwner('session' as never, 'x')).toThrowError(
      'createOwner: kind must be one of tenant, model, worker-generation, batch, other, got "session"',
    );
    expect(() => arena.reserve(owner, 10, { evictable: true })).toThrowError('reserve: onEvict must be a function when evictable is true, got undefined');
    expect(() => arena.alloc(owner, 10, { tenant: 'nobody' })).toThrowError(/tenant: NOT_FOUND: tenant 'nobody' does not exist/);
    expect(() => make({ backend: 'tpu' as never })).toThrowError(/Arena\.create: backend must be one of auto, cuda, pinned, host, simulated, got "tpu"/);
    expect(() => make({ maxSplitBytes: 8 * MiB })).toThrowError(/maxSplitBytes must be at most segmentBytes/);
    expect(() => Arena.attach('no-such-arena', loadAddon({ path: build.path }))).toThrowError(/NOT_FOUND: no arena 'no-such-arena'/);
    arena.close();
    expect(() => arena.stats()).toThrowError(/arena '.*' is closed/);
  });

  it.skipIf(!build.present)('falls back to host memory without a GPU, and refuses to view simulated memory', () => {
    const auto = make({ backend: 'auto' });
    const info = auto.deviceInfo();
    if (noGpu) {
      expect(info.backend).toBe('host');
      expect(info.fallbackReason).toMatch(/built without CUDA|no CUDA device/);
    }
    expect(info.totalBytes).toBe(64 * MiB);
    auto.close();
    const simulated = make({ backend: 'simulated' });
    const block = simulated.alloc(simulated.createOwner('batch', 'b'), 100);
    expect(() => block.view()).toThrowError(/view: FAILED_PRECONDITION: simulated memory cannot be viewed/);
    simulated.close();
  });
});
