// One native batcher, several JS threads (doors): a batcher created on the
// main thread, with the native executor as its target, is enqueued into
// from worker_threads through their own handles (batcherAttach). Each
// answer must arrive on the thread that sent the request, natively (the
// main thread's handler sees nothing), with that request's rows; one batch
// must hold both threads' requests; a worker that exits with a request
// pending must not crash the process, and the batch still answers the
// other thread; stopping the batcher on the main thread fails a worker's
// pending request with SHUTDOWN. Workers use the raw binding (CommonJS), as
// a door thread's bundle would.
import { Worker } from 'node:worker_threads';

import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';

import { SAMPLE_MODELS } from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { planFromOnnx } from '../../src/executor/onnx-plan.js';
import { Arena } from '../../src/native/arena.js';
import { Batcher, type ExecutedResult, type SealedBatch } from '../../src/native/batcher.js';
import { Executor } from '../../src/native/executor.js';
import { loadAddon } from '../../src/native/loader.js';
import { NativeError } from '../../src/native/native-error.js';
import { addonBuilds } from './addon-builds.js';

const MiB = 1024 * 1024;
const FEATURES = 32; // ctr_mlp: [B, 32] -> [B, 1]
let counter = 0;

const ctrMlpBytes = (() => {
  const model = SAMPLE_MODELS.find((m) => m.name === 'ctr_mlp');
  if (model === undefined) throw new Error('no ctr_mlp sample model');
  return model.model();
})();

function features(rows: number, seed: number): Float32Array {
  const rng = new SeededRandom(seed);
  return Float32Array.from({ length: rows * FEATURES }, () => rng.uniform(-2, 2));
}

let session: ort.InferenceSession | undefined;
async function reference(input: Float32Array): Promise<Float32Array> {
  session ??= await ort.InferenceSession.create(ctrMlpBytes);
  const result = await session.run({ features: new ort.Tensor('float32', input, [input.length / FEATURES, FEATURES]) });
  return result.score!.data as Float32Array;
}

function expectClose(actual: readonly number[], expected: Float32Array): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((a, i) => {
    const e = expected[i]!;
    if (Math.abs(a - e) > 1e-6 + 1e-5 * Math.abs(e)) throw new Error(`element ${i}: ${a} vs onnxruntime ${e}`);
  });
}

/** What a worker reports for one answered request. */
interface Answer {
  readonly id: number;
  readonly rows: number;
  readonly batchRows: number;
  readonly threadId: number;
  readonly scores: number[];
}

interface WorkerReport {
  readonly threadId: number;
  readonly answers: Answer[];
  readonly rejected: { id: number; reason: string; code: string }[];
  readonly later?: { ok: boolean; code?: string; message?: string };
}

// A door thread: attaches, enqueues data.requests (each {id, rows, values}),
// answers each from its executed batch's output, releases the batch, and
// reports. mode 'exit': exits right after enqueueing, answers pending.
// mode 'until-rejected': waits for its requests to be rejected, then tries
// one more enqueue.
const doorCode = `
const { parentPort, workerData: data, threadId } = require('node:worker_threads');
const addon = require(data.path);
const unwrap = (r) => { if (!r.ok) throw new Error(r.code + ': ' + r.message); return r.value; };
const answers = [];
const rejected = [];
let settled = 0;
let done;
const finished = new Promise((resolve) => (done = resolve));
const settle = () => { settled += 1; if (settled === data.requests.length) done(); };
unwrap(addon.batcherAttach(data.batcher, (event) => {
  if (event.type === 'executed') {
    const view = new Float32Array(unwrap(addon.batcherView(data.batcher, event.batchId, event.inputs.length)).slice(0));
    for (const r of event.requests) {
      if (!event.ok) throw new Error('batch failed: ' + event.message);
      answers.push({ id: r.id, rows: r.rows, batchRows: event.rows, threadId, scores: Array.from(view.subarray(r.rowOffset, r.rowOffset + r.rows)) });
      settle();
    }
    unwrap(addon.batcherReleaseBatch(data.batcher, event.batchId));
  } else if (event.type === 'rejected') {
    for (const r of event.requests) { rejected.push({ id: r.id, reason: r.reason, code: r.code }); settle(); }
  }
}));
for (const r of data.requests) {
  unwrap(addon.batcherEnqueue(data.batcher, r.id, r.rows, 0, 0, null, [new Uint8Array(new Float32Array(r.values).buffer)], null));
}
parentPort.postMessage({ enqueued: true });
if (data.mode === 'exit') {
  process.exit(0);
} else {
  finished.then(() => {
    const report = { threadId, answers, rejected };
    if (data.mode === 'until-rejected') {
      const again = addon.batcherEnqueue(data.batcher, 99, 1, 0, 0, null, [new Uint8Array(FEATURES_BYTES)], null);
      report.later = { ok: again.ok, code: again.code, message: again.message };
    }
    unwrap(addon.batcherDetach(data.batcher));
    parentPort.postMessage(report);
  });
}
`.replace('FEATURES_BYTES', String(FEATURES * 4));

interface Door {
  readonly enqueued: Promise<void>;
  readonly report: Promise<WorkerReport | undefined>;
  readonly exitCode: Promise<number>;
}

function startDoor(workerData: object): Door {
  const worker = new Worker(doorCode, { eval: true, workerData });
  let onEnqueued: () => void = () => {};
  let onReport: (report: WorkerReport | undefined) => void = () => {};
  const enqueued = new Promise<void>((resolve) => (onEnqueued = resolve));
  const report = new Promise<WorkerReport | undefined>((resolve) => (onReport = resolve));
  const exitCode = new Promise<number>((resolve, reject) => {
    worker.on('message', (message: { enqueued?: boolean } & WorkerReport) => (message.enqueued ? onEnqueued() : onReport(message)));
    worker.on('error', reject);
    worker.on('exit', (code) => {
      onReport(undefined);
      resolve(code);
    });
  });
  return { enqueued, report, exitCode };
}

describe.each(addonBuilds)('$kind build: one batcher, several threads', (build) => {
  const setup = (maxBatchSize: number) => {
    counter += 1;
    const addon = loadAddon({ path: build.path });
    const name = `doors-${build.kind}-${process.pid}-${counter}`;
    const arena = Arena.create(name, { backend: 'host', capacityBytes: 256 * MiB }, addon);
    const owner = arena.createOwner('model', 'ctr_mlp/1');
    const executor = Executor.create(planFromOnnx(ctrMlpBytes, { modelName: 'ctr_mlp:1', maxBatchSize: 64 }), { arena: name, owner: owner.id, instances: 1 }, addon);
    const mainEvents: { batch: SealedBatch; result: ExecutedResult }[] = [];
    const batcher = Batcher.create(
      {
        arena: name,
        owner: owner.id,
        modelName: 'ctr_mlp:1',
        inputs: [{ name: 'features', elementBytes: 4, dims: [FEATURES] }],
        maxBatchSize,
        // Long: a batch is sealed when full, so it must wait for both threads.
        maxQueueDelayUs: 20_000_000,
        onBatch: () => {
          throw new Error('no plain batch expected');
        },
        onExecuted: (batch, result) => mainEvents.push({ batch, result }),
      },
      addon,
    );
    batcher.setTarget(executor);
    const close = async () => {
      await batcher.stop();
      await executor.close();
      arena.close();
    };
    return { addon, arena, owner, executor, batcher, mainEvents, close };
  };

  const requestsOf = (base: number, count: number, rows: number) =>
    Array.from({ length: count }, (_, i) => ({ id: i + 1, rows, values: Array.from(features(rows, base + i)) }));

  it.skipIf(!build.present)('answers each thread on that thread, with its rows, from one batch holding both', async () => {
    const { addon, batcher, mainEvents, close } = setup(16);
    const shared = structuredClone(batcher.share());
    expect(shared).toMatchObject({ id: batcher.id, options: { modelName: 'ctr_mlp:1', maxBatchSize: 16 }, outputNames: ['score'] });
    // The creating thread has its handle already.
    expect(() => Batcher.attach(shared, {}, addon)).toThrow(NativeError);

    const sent = [requestsOf(100, 4, 2), requestsOf(200, 4, 2)]; // 8 rows per thread: one batch of 16
    const doors = sent.map((requests) => startDoor({ path: build.path, batcher: batcher.id, requests, mode: 'answer' }));
    const reports = await Promise.all(doors.map((door) => door.report));
    expect(await Promise.all(doors.map((door) => door.exitCode))).toEqual([0, 0]);

    const threadIds = new Set<number>();
    for (const [t, report] of reports.entries()) {
      if (report === undefined) throw new Error(`thread ${t} reported nothing`);
      threadIds.add(report.threadId);
      expect(report.rejected).toEqual([]);
      expect(report.answers.map((a) => a.id).sort()).toEqual([1, 2, 3, 4]);
      for (const answer of report.answers) {
        expect(answer.threadId).toBe(report.threadId);
        expect(answer.rows).toBe(2);
        expect(answer.batchRows).toBe(16); // both threads' rows in the one batch
        expectClose(answer.scores, await reference(Float32Array.from(sent[t]![answer.id - 1]!.values)));
      }
    }
    expect(threadIds.size).toBe(2);
    expect(mainEvents).toHaveLength(0); // nothing went through the main thread
    expect(batcher.stats()).toMatchObject({ executionCount: 1, inferenceCount: 16, dispatchedRequests: 8, pendingRequests: 0 });
    await close();
  });

  it.skipIf(!build.present)('a thread that exits with a request pending leaves the other thread answered and no memory held', async () => {
    const { arena, owner, batcher, close } = setup(4);
    const baseline = arena.ownerUsage(owner);
    const leaving = startDoor({ path: build.path, batcher: batcher.id, requests: requestsOf(300, 1, 2), mode: 'exit' });
    expect(await leaving.exitCode).toBe(0);
    expect(batcher.stats().pendingRequests).toBe(1); // its request is still queued

    const staying = requestsOf(400, 1, 2); // fills the batch with the gone thread's request
    const door = startDoor({ path: build.path, batcher: batcher.id, requests: staying, mode: 'answer' });
    const report = await door.report;
    expect(await door.exitCode).toBe(0);
    if (report === undefined) throw new Error('the staying thread reported nothing');
    expect(report.answers).toHaveLength(1);
    expect(report.answers[0]).toMatchObject({ id: 1, rows: 2, batchRows: 4 });
    expectClose(report.answers[0]!.scores, await reference(Float32Array.from(staying[0]!.values)));
    expect(batcher.stats()).toMatchObject({ executionCount: 1, inferenceCount: 4 });
    // The gone thread's share was dropped natively, the other released: the batch memory is back.
    expect(arena.ownerUsage(owner)).toEqual(baseline);
    await close();
  });

  it.skipIf(!build.present)('stopping the batcher on the main thread fails a worker thread\'s pending requests with SHUTDOWN', async () => {
    const { batcher, executor, arena } = setup(16);
    const door = startDoor({ path: build.path, batcher: batcher.id, requests: requestsOf(500, 2, 1), mode: 'until-rejected' });
    await door.enqueued;
    await batcher.stop();
    const report = await door.report;
    expect(await door.exitCode).toBe(0);
    if (report === undefined) throw new Error('the thread reported nothing');
    expect(report.answers).toEqual([]);
    expect(report.rejected.map((r) => [r.id, r.reason, r.code]).sort()).toEqual([
      [1, 'SHUTDOWN', 'UNAVAILABLE'],
      [2, 'SHUTDOWN', 'UNAVAILABLE'],
    ]);
    expect(report.later).toMatchObject({ ok: false, code: 'FAILED_PRECONDITION', message: 'batcher is closed' });
    await executor.close();
    arena.close();
  });
});
