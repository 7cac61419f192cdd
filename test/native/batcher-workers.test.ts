// Batchers in worker threads and at process exit. piscina loads the addon in
// every worker, so each environment's batchers must stop with it: two workers
// create batchers over the main thread's arena; one stops cleanly, the other
// exits with a request pending and a batch still held, which its environment
// cleanup hook must stop and free. Child processes check that a live batcher
// neither crashes nor hangs the process at exit.
import { spawnSync } from 'node:child_process';

import { describe, expect, it } from 'vitest';

import { Arena } from '../../src/native/arena.js';
import { addonEnvInfo } from '../../src/native/build-info.js';
import { loadAddon } from '../../src/native/loader.js';
import { addonBuilds, runWorkerCode } from './addon-builds.js';

// CommonJS using the raw binding, as a piscina worker's require would.
const setupCode = `
const addon = require(data.path);
const unwrap = (r) => { if (!r.ok) throw new Error(r.code + ': ' + r.message); return r.value; };
const waiters = new Map();
const events = [];
const next = (type) => new Promise((resolve) => waiters.set(type, resolve));
const batcher = unwrap(addon.batcherCreate({
  arena: data.arena, tenant: 'default', owner: data.owner, modelName: 'w' + data.index, clock: data.clock,
  inputCount: 1, inputDims: [[4]], instanceCount: 1, maxBatchSize: 4, preferredBatchSizes: [2], maxQueueDelayUs: 10000000,
  preserveOrdering: false, priorityLevels: 0, defaultPriorityLevel: 0,
  defaultQueuePolicy: { maxQueueSize: 0, defaultTimeoutUs: 0, timeoutAction: 'REJECT', allowTimeoutOverride: false },
  priorityQueuePolicy: [],
}, (event) => { events.push(event); waiters.get(event.type)?.(event); }));
const enqueue = (id, value) => unwrap(addon.batcherEnqueue(batcher, id, 1, 0, 0, null, [new Uint8Array(16).fill(value)], null));
`;

const workerCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
${setupCode}
(async () => {
  const sealed = next('batch');
  enqueue(1, data.index + 1);
  enqueue(2, data.index + 11);
  const batch = await sealed;
  const bytes = new Uint8Array(unwrap(addon.batcherView(batcher, batch.batchId, 0)));
  const seen = [bytes[0], bytes[16]];
  if (data.mode === 'stop') {
    unwrap(addon.batcherReleaseBatch(batcher, batch.batchId));
    const stopped = next('marker');
    enqueue(3, 99); // pending: SHUTDOWN
    unwrap(addon.batcherStop(batcher, 1));
    await stopped;
    parentPort.postMessage({ seen, rejected: events.filter((e) => e.type === 'rejected').flatMap((e) => e.requests.map((r) => r.reason)) });
    // Nothing holds the loop open any more: the worker ends by itself.
  } else {
    enqueue(3, 99); // left pending; the batch stays held; no stop
    parentPort.postMessage({ seen, rejected: [] });
    process.exit(0);
  }
})();
`;

function runWorker(workerData: object): Promise<{ exitCode: number; message: unknown }> {
  return runWorkerCode<unknown>(workerCode, workerData);
}

// A process that creates the arena itself and ends with a live batcher.
function runChild(path: string, ending: string): { status: number | null; signal: string | null; stdout: string; stderr: string } {
  const code = `
const data = { path: ${JSON.stringify(path)}, arena: 'exit-test', owner: 0, index: 0, clock: 'steady' };
const bootstrap = require(data.path);
const id = bootstrap.arenaCreate('exit-test', { backend: 'host', capacityBytes: 64 << 20 }).value;
data.owner = bootstrap.arenaCreateOwner(id, 'model', 'm', 0).value;
${setupCode}
(async () => {
  const sealed = next('batch');
  enqueue(1, 1);
  enqueue(2, 2);
  await sealed; // held, never released
  ${ending}
})();
`;
  const result = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', timeout: 20_000 });
  return { status: result.status, signal: result.signal, stdout: result.stdout, stderr: result.stderr };
}

describe.each(addonBuilds)('$kind build: batcher in worker threads', (build) => {
  it.skipIf(!build.present)('2 workers create batchers; one stops, one exits with work pending; nothing leaks', async () => {
    const addon = loadAddon({ path: build.path });
    const envBefore = addonEnvInfo(addon);
    const name = `batcher-workers-${build.kind}`;
    const arena = Arena.create(name, { backend: 'host', capacityBytes: 64 * 1024 * 1024 }, addon);
    const owner = arena.createOwner('model', 'shared'); // the main thread's: worker exit does not destroy it
    const results = await Promise.all(
      (['stop', 'exit'] as const).map((mode, index) => runWorker({ path: build.path, arena: name, owner: owner.id, index, mode, clock: 'manual' })),
    );
    expect(results.map((r) => r.exitCode)).toEqual([0, 0]);
    expect(results.map((r) => r.message)).toEqual([
      { seen: [1, 11], rejected: ['SHUTDOWN'] },
      { seen: [2, 12], rejected: [] },
    ]);
    const stats = arena.stats();
    expect([stats.allocated, stats.blocks]).toEqual([0, 0]);
    expect(addonEnvInfo(addon).live).toBe(envBefore.live);
    arena.close();
  });

  it.skipIf(!build.present)('a process exits cleanly with a live batcher, with or without process.exit', () => {
    const natural = runChild(build.path, "console.log('done');");
    expect(natural).toMatchObject({ status: 0, signal: null, stdout: 'done\n', stderr: '' });
    const forced = runChild(build.path, 'enqueue(3, 3); process.exit(0);');
    expect(forced).toMatchObject({ status: 0, signal: null });
    expect(forced.stderr).toBe('');
  });
});
