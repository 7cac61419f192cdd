// The addon is worker-safe: piscina loads it in every worker thread. Each
// build is loaded concurrently in 4 workers that call it and exit cleanly;
// the per-environment cleanup hook must have run for every worker (the
// process-wide live count returns to what it was), also for a worker that is
// terminated mid-loop.

import { Worker } from 'node:worker_threads';

import { describe, expect, it } from 'vitest';

import { addonEnvInfo } from '../../src/native/build-info.js';
import { loadAddon } from '../../src/native/loader.js';
import { addonBuilds, runWorkerCode } from './addon-builds.js';

// CommonJS eval code: workers cannot run the TypeScript loader, so they load
// the .node file by path, the way a piscina worker's require would.
const workerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(workerData);
parentPort.postMessage({ version: addon.version(), device: addon.deviceInfo(), env: addon.envInfo() });
`;

const spinningWorkerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(workerData);
parentPort.postMessage(addon.envInfo());
for (;;) {}
`;

interface WorkerReport {
  version: string;
  device: { ok: boolean; value?: { backend: string; totalBytes: number; freeBytes: number } };
  env: { id: number };
}

async function runWorker(addonPath: string): Promise<{ exitCode: number; report: WorkerReport | undefined }> {
  const { exitCode, message } = await runWorkerCode<WorkerReport>(workerCode, addonPath);
  return { exitCode, report: message };
}

describe.each(addonBuilds)('$kind build in worker threads', (build) => {
  it.skipIf(!build.present)('loads and runs in 4 concurrent workers, which exit cleanly', async () => {
    const main = loadAddon({ path: build.path });
    const before = addonEnvInfo(main);

    const results = await Promise.all(Array.from({ length: 4 }, () => runWorker(build.path)));

    for (const { exitCode, report } of results) {
      expect(exitCode).toBe(0);
      expect(report?.version).toBe(main.binding.version());
      expect(report?.device.ok).toBe(true);
      expect(report?.device.value?.totalBytes).toBeGreaterThan(0);
      expect(report?.device.value?.freeBytes).toBeLessThanOrEqual(report?.device.value?.totalBytes ?? 0);
    }
    const ids = results.map((r) => r.report?.env.id);
    expect(new Set([before.id, ...ids]).size).toBe(5);

    const after = addonEnvInfo(main);
    expect(after.id).toBe(before.id);
    expect(after.created).toBe(before.created + 4);
    expect(after.live).toBe(before.live);
  });

  it.skipIf(!build.present)('runs the cleanup hook for a terminated worker', async () => {
    const main = loadAddon({ path: build.path });
    const before = addonEnvInfo(main);
    const worker = new Worker(spinningWorkerCode, { eval: true, workerData: build.path });
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    expect(addonEnvInfo(main).live).toBe(before.live + 1);
    expect(await worker.terminate()).toBe(1);
    expect(addonEnvInfo(main).live).toBe(before.live);
  });
});
