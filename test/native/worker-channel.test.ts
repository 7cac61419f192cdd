// The native hand-off from a batcher to onnxruntime workers
// (src/native/worker-channel.ts): a sealed batch goes from the batcher
// thread to a worker thread's channel, runs there on the batch's arena memory,
// and comes back to this thread once as an executed batch. Checked against
// onnxruntime run directly; plus a worker that exits mid-batch (the batch
// fails WORKER_CRASHED with its inputs intact, for a re-run) and a pool closed
// with batches queued (SHUTDOWN).
import path from 'node:path';
import { Worker } from 'node:worker_threads';

import * as ort from 'onnxruntime-node';
import { afterEach, describe, expect, it } from 'vitest';

import { Arena } from '../../src/native/arena.js';
import { Batcher, type ExecutedResult, type SealedBatch, type SealedSlice } from '../../src/native/batcher.js';
import { addonPathEnv, loadAddon } from '../../src/native/loader.js';
import { WorkerPoolTarget, workerChannelsSupported } from '../../src/native/worker-channel.js';
import { addonBuilds, repoRoot } from './addon-builds.js';

const MiB = 1024 * 1024;
const modelPath = path.join(repoRoot, 'models', 'ctr_mlp', '1', 'model.onnx');
const features = 32;
const addonPath = process.env[addonPathEnv] ?? addonBuilds[0]!.path;
const addon = (() => {
  try {
    return loadAddon({ path: addonPath });
  } catch {
    return undefined;
  }
})();
const supported = addon !== undefined && workerChannelsSupported(addon);

// CommonJS, as a worker's own module would run: opens a channel once its
// session exists, runs each batch, and (mode 'exit') dies on the first one.
const workerCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
const ort = require('onnxruntime-node');
const addon = require(data.addonPath);
const unwrap = (r) => { if (!r.ok) throw new Error(r.code + ': ' + r.message); return r.value; };
(async () => {
  const session = await ort.InferenceSession.create(data.modelPath, { intraOpNumThreads: 1 });
  let handled = 0;
  unwrap(addon.workerChannelOpen(data.pool, (batch) => {
    handled += 1;
    if (data.mode === 'exit') process.exit(70);
    const input = batch.inputs[0];
    const feeds = { features: new ort.Tensor('float32', new Float32Array(input.buffer), input.shape) };
    const pre = batch.outputs[0];
    const fetches = pre ? { score: new ort.Tensor('float32', new Float32Array(pre.buffer), pre.shape) } : ['score'];
    session.run(feeds, fetches).then((out) => {
      const score = out.score;
      const outputs = [pre ? { shape: pre.shape } : { shape: score.dims, data: score.data }];
      unwrap(addon.workerBatchDone(batch.token, { ok: true, outputs, timing: { inputNs: 1, computeNs: 2, outputNs: 3 } }));
      parentPort.postMessage({ handled });
    }, (err) => {
      unwrap(addon.workerBatchDone(batch.token, { ok: false, failure: 'INVALID', message: String(err) }));
    });
  }));
  parentPort.on('message', () => {}); // stays alive, as a piscina worker does
  parentPort.postMessage({ ready: true });
})();
`;

function startWorker(pool: number, mode: 'run' | 'exit'): { worker: Worker; ready: Promise<void>; exited: Promise<number> } {
  const worker = new Worker(workerCode, { eval: true, workerData: { pool, mode, addonPath, modelPath } });
  const ready = new Promise<void>((resolve, reject) => {
    worker.on('message', (m: { ready?: boolean }) => m.ready === true && resolve());
    worker.on('error', reject);
  });
  const exited = new Promise<number>((resolve) => worker.on('exit', resolve));
  return { worker, ready, exited };
}

function rowOf(i: number): Float32Array {
  return new Float32Array(features).map((_, k) => Math.sin(i * 7 + k));
}

let counter = 0;
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup(maxBatchSize: number) {
  counter += 1;
  const name = `worker-channel-${counter}`;
  const arena = Arena.create(name, { backend: 'host', capacityBytes: 64 * MiB, segmentBytes: 4 * MiB, maxSplitBytes: 2 * MiB, smallMaxBytes: 64 * 1024 }, addon!);
  const owner = arena.createOwner('model', 'ctr/1');
  const executed: { batch: SealedBatch; result: ExecutedResult }[] = [];
  const batcher = Batcher.create(
    {
      arena: name,
      owner: owner.id,
      modelName: 'ctr:1',
      inputs: [{ name: 'features', elementBytes: 4, dims: maxBatchSize > 0 ? [features] : [-1, features] }],
      maxBatchSize,
      maxQueueDelayUs: 20_000,
      instances: 2,
      onBatch: () => {
        throw new Error('a batch reached JS instead of the worker target');
      },
      onExecuted: (batch, result) => executed.push({ batch, result }),
    },
    addon,
  );
  const target = WorkerPoolTarget.create(addon);
  batcher.setWorkerTarget(target, [{ name: 'score', elementBytes: 4, dims: [1] }]);
  cleanups.push(async () => {
    await batcher.stop();
    for (const { batch } of executed) batch.release();
    target.close();
    arena.destroyOwner(owner);
    arena.close();
  });
  return { arena, batcher, target, executed };
}

async function direct(rows: Float32Array[]): Promise<number[]> {
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  const data = new Float32Array(rows.length * features);
  rows.forEach((row, i) => data.set(row, i * features));
  const out = await session.run({ features: new ort.Tensor('float32', data, [rows.length, features]) });
  return [...(out.score!.data as Float32Array)];
}

function scores(slice: SealedSlice): number[] {
  if (slice.executed === undefined || !slice.executed.ok) throw new Error(`not executed: ${JSON.stringify(slice.executed)}`);
  const view = slice.executed.outputs[0]!.view();
  const all = new Float32Array(view.buffer, view.byteOffset, view.byteLength / 4);
  return [...all.subarray(slice.rowOffset, slice.rowOffset + slice.rows)];
}

describe.skipIf(!supported)('worker channel: batcher -> onnxruntime worker, natively', () => {
  it('a batch reaches a worker through its channel and comes back with the rows onnxruntime computes', async () => {
    const { batcher, target, executed } = setup(8);
    const { worker, ready } = startWorker(target.id, 'run');
    cleanups.push(() => worker.terminate().then(() => undefined));
    await ready;
    expect(target.stats()).toMatchObject({ channels: 1, idleChannels: 1 });
    const rows = [0, 1, 2, 3, 4].map(rowOf);
    const slices = await Promise.all(
      rows.map((row) => batcher.enqueue({ rows: 1, inputs: [new Uint8Array(row.buffer)], dims: [[features]] })),
    );
    const expected = await direct(rows);
    const got = slices.flatMap(scores);
    got.forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
    expect(executed.length).toBeGreaterThanOrEqual(1);
    expect(executed[0]!.result).toMatchObject({ ok: true, timing: { inputNs: 1, computeNs: 2, outputNs: 3 } });
    expect(target.stats()).toMatchObject({ running: 0, queued: 0, executed: executed.length });
  });

  it('max_batch_size 0: one request per batch, shapes as sent, outputs allocated by the run', async () => {
    const { batcher, target } = setup(0);
    const { worker, ready } = startWorker(target.id, 'run');
    cleanups.push(() => worker.terminate().then(() => undefined));
    await ready;
    const rows = [5, 6, 7].map(rowOf);
    const data = new Float32Array(rows.length * features);
    rows.forEach((row, i) => data.set(row, i * features));
    const slice = await batcher.enqueue({ rows: 1, inputs: [new Uint8Array(data.buffer)], dims: [[3, features]] });
    if (slice.executed === undefined || !slice.executed.ok) throw new Error('not executed');
    expect(slice.executed.outputs[0]!.shape).toEqual([3, 1]);
    const view = slice.executed.outputs[0]!.view();
    const got = [...new Float32Array(view.buffer, view.byteOffset, 3)];
    const expected = await direct(rows);
    got.forEach((value, i) => expect(value).toBeCloseTo(expected[i]!, 5));
  });

  it('a worker that exits with a batch running fails it WORKER_CRASHED, inputs intact, and leaves the pool', async () => {
    const { batcher, target, executed } = setup(8);
    const { ready, exited } = startWorker(target.id, 'exit');
    await ready;
    const row = rowOf(9);
    const slice = await batcher.enqueue({ rows: 1, inputs: [new Uint8Array(row.buffer)], dims: [[features]] });
    expect(await exited).toBe(70);
    expect(slice.executed).toMatchObject({ ok: false, failure: 'WORKER_CRASHED' });
    const input = slice.batch.view(0);
    expect([...new Float32Array(input.buffer, input.byteOffset, features)]).toEqual([...row]);
    expect(target.stats()).toMatchObject({ channels: 0, crashed: 1 });
    expect(executed).toHaveLength(1);
    // A replacement worker takes the next batch.
    const next = startWorker(target.id, 'run');
    cleanups.push(() => next.worker.terminate().then(() => undefined));
    await next.ready;
    const again = await batcher.enqueue({ rows: 1, inputs: [new Uint8Array(row.buffer)], dims: [[features]] });
    expect(scores(again)[0]).toBeCloseTo((await direct([row]))[0]!, 5);
  });

  it('batches wait for a channel; closing the pool fails them SHUTDOWN', async () => {
    const { batcher, target } = setup(8);
    const pending = batcher.enqueue({ rows: 1, inputs: [new Uint8Array(rowOf(1).buffer)], dims: [[features]] });
    await batcher.flush();
    await new Promise((resolve) => setTimeout(resolve, 50)); // past the queue delay: sealed, queued in the pool
    expect(target.stats()).toMatchObject({ channels: 0, queued: 1 });
    target.close();
    const slice = await pending;
    expect(slice.executed).toMatchObject({ ok: false, failure: 'SHUTDOWN', code: 'UNAVAILABLE' });
  });
});
