// The arena is process-wide: the main thread creates it, 4 worker threads
// load the addon, attach by name, allocate in their own tenants, map a block
// the main thread wrote (zero copy across threads) and exit. A worker that
// exits without cleaning up leaves nothing behind: its environment's cleanup
// hook destroys the owners it created.

import { describe, expect, it } from 'vitest';

import { Arena } from '../../src/native/arena.js';
import { addonEnvInfo } from '../../src/native/build-info.js';
import { loadAddon } from '../../src/native/loader.js';
import { addonBuilds, runWorkerCode } from './addon-builds.js';

// CommonJS eval code using the raw binding, as a piscina worker's require would.
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(workerData.path);
const unwrap = (r) => { if (!r.ok) throw new Error(r.code + ': ' + r.message); return r.value; };
const arena = unwrap(addon.arenaAttach(workerData.arena));
const tenant = unwrap(addon.arenaCreateTenant(arena, 'worker-' + workerData.index, 8 << 20));
const owner = unwrap(addon.arenaCreateOwner(arena, 'worker-generation', 'gen-' + workerData.index, 0));
const blocks = [];
for (let i = 0; i < 50; i++) {
  const block = unwrap(addon.arenaAlloc(arena, owner, 1000 + i * 977, tenant, undefined));
  new Uint8Array(unwrap(addon.arenaView(arena, block.handle))).fill(workerData.index);
  blocks.push(block.handle);
}
for (const handle of blocks.slice(0, 25)) unwrap(addon.arenaRelease(arena, handle));
// Map the main thread's block: same bytes, no copy.
unwrap(addon.arenaRetain(arena, workerData.shared));
const shared = new Uint32Array(unwrap(addon.arenaView(arena, workerData.shared)));
const seen = shared[0];
unwrap(addon.arenaRelease(arena, workerData.shared));
const overQuota = addon.arenaAlloc(arena, owner, 9 << 20, tenant, undefined);
parentPort.postMessage({ seen, overQuota: overQuota.ok ? null : overQuota.detail });
// No close, no release of the other 25 blocks: the cleanup hook must free them.
`;

function runWorker(workerData: object): Promise<{ exitCode: number; message: unknown }> {
  return runWorkerCode<unknown>(workerCode, workerData);
}

describe.each(addonBuilds)('$kind build: arena in worker threads', (build) => {
  it.skipIf(!build.present)('4 workers attach, allocate, map main-thread memory and exit leaving 0 bytes', async () => {
    const addon = loadAddon({ path: build.path });
    const envBefore = addonEnvInfo(addon);
    const name = `workers-${build.kind}`;
    const arena = Arena.create(name, { backend: 'host', capacityBytes: 256 * 1024 * 1024 }, addon);
    const main = arena.createOwner('model', 'main');
    const shared = arena.alloc(main, 64);
    new Uint32Array(shared.view())[0] = 0xc0ffee;

    const results = await Promise.all(
      [0, 1, 2, 3].map((index) => runWorker({ path: build.path, arena: name, index, shared: shared.id })),
    );
    for (const { exitCode, message } of results) {
      expect(exitCode).toBe(0);
      expect(message).toMatchObject({ seen: 0xc0ffee, overQuota: { kind: 'quota', requested: 9 << 20, quota: 8 << 20 } });
    }
    const stats = arena.stats();
    expect(stats.tenants.map((t) => t.name).sort()).toEqual(['default', 'worker-0', 'worker-1', 'worker-2', 'worker-3']);
    expect(stats.tenants.filter((t) => t.name.startsWith('worker-')).every((t) => t.used === 0 && t.peak > 0)).toBe(true);
    expect(stats.blocks).toBe(1); // only the main thread's
    expect(stats.owners).toBe(1);
    expect(shared.info().refcount).toBe(1);
    expect(addonEnvInfo(addon).live).toBe(envBefore.live);
    shared.release();
    arena.close();
  });
});
