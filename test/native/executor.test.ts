// The native executor through its TS wrapper (src/native/executor.ts) and as
// a batcher's target, against each addon build: host kernels against
// onnxruntime on ctr_mlp, unsupported ops refused by name, injected device
// faults, close and the arena memory it gives back, worker threads, and the
// batcher handing sealed batches to it natively (and back to JS after a
// switch).
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';

import { node, serializeModel, tensorValueInfo } from '../../models/lib/onnx-builder.js';
import { SAMPLE_MODELS } from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { planFromOnnx } from '../../src/executor/onnx-plan.js';
import { Arena, type Owner } from '../../src/native/arena.js';
import { Batcher, type ExecutedResult, type SealedBatch } from '../../src/native/batcher.js';
import { Executor, ExecutorRunError } from '../../src/native/executor.js';
import { loadAddon, type LoadedAddon } from '../../src/native/loader.js';
import { NativeError } from '../../src/native/native-error.js';
import { addonBuilds, runWorkerCode } from './addon-builds.js';

const MiB = 1024 * 1024;
const FEATURES = 32; // ctr_mlp: [B, 32] -> [B, 1]
const TOL = { rtol: 1e-5, atol: 1e-6 };
let counter = 0;

const ctrMlpBytes = (() => {
  const model = SAMPLE_MODELS.find((m) => m.name === 'ctr_mlp');
  if (model === undefined) throw new Error('no ctr_mlp sample model');
  return model.model();
})();
const ctrMlpPlan = () => planFromOnnx(ctrMlpBytes, { modelName: 'ctr_mlp:1', maxBatchSize: 64 });

function features(rows: number, seed: number): Float32Array {
  const rng = new SeededRandom(seed);
  return Float32Array.from({ length: rows * FEATURES }, () => rng.uniform(-2, 2));
}

const bytesOf = (values: Float32Array) => new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
const floatsOf = (bytes: Uint8Array) => new Float32Array(bytes.slice().buffer);

let session: ort.InferenceSession | undefined;
async function reference(input: Float32Array): Promise<Float32Array> {
  session ??= await ort.InferenceSession.create(ctrMlpBytes);
  const result = await session.run({ features: new ort.Tensor('float32', input, [input.length / FEATURES, FEATURES]) });
  return result.score!.data as Float32Array;
}

function expectClose(actual: Float32Array, expected: Float32Array): void {
  expect(actual.length).toBe(expected.length);
  actual.forEach((a, i) => {
    const e = expected[i]!;
    if (Math.abs(a - e) > TOL.atol + TOL.rtol * Math.abs(e)) throw new Error(`element ${i}: ${a} vs onnxruntime ${e}`);
  });
}

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

interface Setup {
  readonly addon: LoadedAddon;
  readonly arena: Arena;
  readonly name: string;
  readonly owner: Owner;
  executor(instances?: number): Executor;
}

describe.each(addonBuilds)('$kind build: executor', (build) => {
  const setup = (): Setup => {
    counter += 1;
    const addon = loadAddon({ path: build.path });
    const name = `executor-${build.kind}-${process.pid}-${counter}`;
    const arena = Arena.create(name, { backend: 'host', capacityBytes: 256 * MiB }, addon);
    const owner = arena.createOwner('model', 'ctr_mlp/1');
    const executor = (instances = 2) => Executor.create(ctrMlpPlan(), { arena: name, owner: owner.id, instances }, addon);
    return { addon, arena, name, owner, executor };
  };

  it.skipIf(!build.present)('runs ctr_mlp on host kernels as onnxruntime does, and gives its memory back on close', async () => {
    const { arena, owner, executor: make } = setup();
    const executor = make();
    expect(executor).toMatchObject({
      modelName: 'ctr_mlp:1',
      deviceKind: 'host',
      kernels: 'host',
      instances: 2,
      maxBatchSize: 64,
      inputs: [{ name: 'features', dtype: 1, dtypeName: 'FLOAT', dims: [-1, FEATURES] }],
      outputs: [{ name: 'score', dtype: 1, dtypeName: 'FLOAT', dims: [-1, 1] }],
    });
    expect(executor.stepCount).toBeGreaterThan(0);
    expect(executor.stepCount).toBeLessThanOrEqual(6); // Gemm+Relu fused at least as often as not
    expect(executor.weightsBytes).toBeGreaterThanOrEqual((32 * 64 + 64 + 64 * 32 + 32 + 32 + 1) * 4);
    expect(executor.workspaceBytes).toBeGreaterThan(0);
    const usage = arena.ownerUsage(owner);
    expect(usage.bytes).toBeGreaterThanOrEqual(executor.weightsBytes + 2 * executor.workspaceBytes);

    for (const rows of [1, 7, 64]) {
      const input = features(rows, rows);
      const result = await executor.run([bytesOf(input)], rows);
      expect(result.outputs.map((o) => [o.name, o.dims])).toEqual([['score', [rows, 1]]]);
      expectClose(floatsOf(result.outputs[0]!.bytes), await reference(input));
      expect(result.timing.computeNs).toBeGreaterThanOrEqual(0);
    }
    // Concurrent runs over both instances.
    const inputs = [3, 5, 8, 13, 21, 34].map((rows, i) => features(rows, 100 + i));
    const results = await Promise.all(inputs.map((input) => executor.run([bytesOf(input)], input.length / FEATURES)));
    for (const [i, result] of results.entries()) expectClose(floatsOf(result.outputs[0]!.bytes), await reference(inputs[i]!));
    expect(executor.stats()).toMatchObject({ executions: 9, rows: 1 + 7 + 64 + 84, failures: 0, deviceFaults: 0, dead: false });

    await executor.close();
    await executor.close(); // idempotent
    expect(arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    expect(executor.stats().executions).toBe(9);
    const closed = await failure(executor.run([bytesOf(features(1, 1))], 1));
    expect(closed).toMatchObject({ code: 'FAILED_PRECONDITION' });
    expect(closed.message).toMatch(/executor is closed/);
    arena.close();
  });

  it.skipIf(!build.present)('checks run arguments in TS, naming the input and the expected size', async () => {
    const { arena, executor: make } = setup();
    const executor = make(1);
    const wrongBytes = await failure(executor.run([new Uint8Array(12)], 1));
    expect(wrongBytes).toBeInstanceOf(NativeError);
    expect(wrongBytes.message).toMatch(/^run: INVALID_ARGUMENT: model 'ctr_mlp:1': input 'features': expected 128 bytes \(FLOAT \[1, 32\]\), got 12$/);
    expect((await failure(executor.run([bytesOf(features(65, 1))], 65))).message).toMatch(/rows: expected in \[1, 64\]/);
    expect((await failure(executor.run([], 1))).message).toMatch(/expected 1 inputs \(features\), got 0/);
    expect(() => Executor.create(ctrMlpPlan(), { arena: 'no-such-arena', owner: 1 }, loadAddon({ path: build.path }))).toThrow(/NOT_FOUND/);
    expect(() => Executor.create(ctrMlpPlan(), { arena: arena.name, owner: 0 })).toThrow(/owner must be an integer in \[1/);
    expect(() => Executor.create(ctrMlpPlan(), { arena: arena.name, owner: 1, device: 'tpu' as never })).toThrow(/device must be 'host' or 'cuda'/);
    await executor.close();
    arena.close();
  });

  it.skipIf(!build.present)('refuses an unsupported op at create with FAILED_PRECONDITION naming op and node, leaving nothing charged', () => {
    const { addon, arena, name, owner } = setup();
    const model = serializeModel({
      name: 'unsupported',
      doc: '',
      inputs: [tensorValueInfo('x', TensorProto_DataType.FLOAT, ['batch', 4])],
      outputs: [tensorValueInfo('y', TensorProto_DataType.FLOAT, ['batch', 4])],
      nodes: [node('Relu', ['x'], ['r'], { name: 'relu0' }), node('HardSwish', ['r'], ['y'], { name: 'swish1' })],
    });
    const create = (bytes: Uint8Array, batch: number) =>
      Executor.create(planFromOnnx(bytes, { modelName: 'unsupported:1', maxBatchSize: batch }), { arena: name, owner: owner.id }, addon);
    let caught: unknown;
    try {
      create(model, 8);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(NativeError);
    expect(caught).toMatchObject({ code: 'FAILED_PRECONDITION', operation: 'Executor.create' });
    expect((caught as Error).message).toMatch(/HardSwish/);
    expect((caught as Error).message).toMatch(/swish1/);
    expect(((caught as Error).stack ?? '').split('\n')[1]).toMatch(/executor\.test\.ts/);

    const gbdt = SAMPLE_MODELS.find((m) => m.name === 'fraud_gbdt')!.model();
    expect(() => create(gbdt, 64)).toThrow(/FAILED_PRECONDITION.*ai\.onnx\.ml\.TreeEnsembleRegressor/);
    expect(arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    arena.close();
  });

  it.skipIf(!build.present)('fails a run with the injected fault: transient recovers, sticky leaves the executor dead', async () => {
    const { arena, executor: make } = setup();
    const executor = make(1);
    const input = features(4, 7);
    const expected = await reference(input);

    executor.injectFault('transient');
    const transient = await failure(executor.run([bytesOf(input)], 4));
    expect(transient).toBeInstanceOf(ExecutorRunError);
    expect(transient).toMatchObject({ fault: 'transient', model: 'ctr_mlp:1' });
    expect((transient as ExecutorRunError).code).not.toBe('INVALID_ARGUMENT');
    expect(((transient as Error).stack ?? '').split('\n')[1]).toMatch(/executor\.test\.ts/);
    expect(executor.dead).toBe(false);
    expectClose(floatsOf((await executor.run([bytesOf(input)], 4)).outputs[0]!.bytes), expected);

    executor.injectFault('transient');
    executor.injectFault('none'); // cleared before any run
    expectClose(floatsOf((await executor.run([bytesOf(input)], 4)).outputs[0]!.bytes), expected);

    executor.injectFault('sticky');
    expect(await failure(executor.run([bytesOf(input)], 4))).toMatchObject({ name: 'ExecutorRunError', fault: 'sticky' });
    expect(executor.dead).toBe(true);
    expect(await failure(executor.run([bytesOf(input)], 4))).toMatchObject({ fault: 'sticky' });
    expect(executor.stats()).toMatchObject({ executions: 2, failures: 3, deviceFaults: 3, dead: true });
    expect(() => executor.injectFault('fatal' as never)).toThrow(TypeError);
    await executor.close();
    expect(executor.dead).toBe(true);
    arena.close();
  });

  it.skipIf(!build.present)('close with runs in flight settles every run', async () => {
    const { arena, owner, executor: make } = setup();
    const executor = make(1);
    const runs = Array.from({ length: 16 }, (_, i) => executor.run([bytesOf(features(64, i))], 64).then(() => 'ok', (e: Error) => e));
    await executor.close();
    const settled = await Promise.all(runs);
    for (const outcome of settled) {
      if (outcome !== 'ok') expect(outcome).toMatchObject({ name: 'ExecutorRunError', code: 'UNAVAILABLE', fault: 'none' });
    }
    expect(arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    arena.close();
  });

  it.skipIf(!build.present)('as a batcher target, runs sealed batches natively; switching back delivers plain batches', async () => {
    const { addon, arena, name, owner, executor: make } = setup();
    const executor = make(2);
    const batches: SealedBatch[] = [];
    const executed: { batch: SealedBatch; result: ExecutedResult }[] = [];
    const batcher = Batcher.create(
      {
        arena: name,
        owner: owner.id,
        modelName: 'ctr_mlp:1',
        inputs: [{ name: 'features', elementBytes: 4, dims: [FEATURES] }],
        maxBatchSize: 64,
        maxQueueDelayUs: 1000,
        instances: 2,
        clock: 'manual',
        onBatch: (batch) => batches.push(batch),
        onExecuted: (batch, result) => executed.push({ batch, result }),
      },
      addon,
    );
    batcher.setTarget(executor);

    const sizes = [1, 3, 2];
    const inputs = sizes.map((rows, i) => features(rows, 200 + i));
    const pending = sizes.map((rows, i) => batcher.enqueue({ rows, inputs: [bytesOf(inputs[i]!)], dims: [[FEATURES]] }));
    await batcher.advanceClock(1000); // seals; resolves once the executed event is delivered
    const slices = await Promise.all(pending);
    expect(batches).toHaveLength(0);
    expect(executed).toHaveLength(1);
    const { batch, result } = executed[0]!;
    expect(batch.rows).toBe(6);
    if (!result.ok) throw new Error(`executed batch failed: ${result.message}`);
    expect(result.outputs.map((o) => [o.name, o.bytes, o.shape])).toEqual([['score', 24, [6, 1]]]);
    const scores = floatsOf(result.outputs[0]!.view());
    const all = new Float32Array(6 * FEATURES);
    inputs.forEach((input, i) => all.set(input, slices[i]!.rowOffset * FEATURES));
    expectClose(scores, await reference(all));
    expect(slices.map((s) => [s.rowOffset, s.rows, s.batch === batch, s.executed === result])).toEqual([
      [0, 1, true, true],
      [1, 3, true, true],
      [4, 2, true, true],
    ]);
    expect(batcher.stats()).toMatchObject({ idleInstances: 2, executionCount: 1, inferenceCount: 6, heldBatches: 1 });
    expect(arena.ownerUsage(owner).blocks).toBeGreaterThanOrEqual(2 + 2); // executor memory + input and output block
    // copy(): one request's rows (the second request's 3 scores), the caller's own bytes.
    const copied = result.outputs[0]!.copy(4, 12);
    expect(floatsOf(copied)).toEqual(scores.subarray(1, 4));
    expect(() => result.outputs[0]!.copy(20, 8)).toThrow(/past the block's 24/);
    batch.release();
    expect(() => result.outputs[0]!.view()).toThrow(/was released/);
    expect(() => result.outputs[0]!.copy(0, 4)).toThrow(/was released/);
    // The copy outlives the batch, and is not a view of its memory.
    expect(floatsOf(copied)).toEqual(scores.subarray(1, 4));

    // A failed batch keeps its inputs, so the caller can run it elsewhere.
    executor.injectFault('transient');
    const failing = batcher.enqueue({ rows: 2, inputs: [bytesOf(inputs[2]!)], dims: [[FEATURES]] });
    await batcher.advanceClock(1000);
    const failed = await failing;
    expect(failed.executed).toMatchObject({ ok: false, failure: 'DEVICE_TRANSIENT' });
    expect(Array.from(floatsOf(failed.batch.view(0)))).toEqual(Array.from(inputs[2]!));
    failed.batch.release();

    // Back to JS: plain batches, with an instance for onBatch to give back.
    batcher.setTarget(undefined);
    const plain = batcher.enqueue({ rows: 2, inputs: [bytesOf(inputs[2]!)], dims: [[FEATURES]] });
    await batcher.advanceClock(1000);
    const slice = await plain;
    expect(batches).toHaveLength(1);
    expect(executed).toHaveLength(2);
    expect(slice.executed).toBeUndefined();
    expect(batcher.stats().idleInstances).toBe(1);
    batcher.instanceIdle();
    slice.batch.release();

    await batcher.stop();
    await executor.close();
    expect(arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    arena.close();
  });

  it.skipIf(!build.present)('serves concurrent requests through the target with the steady clock, each slice as onnxruntime says', async () => {
    const { addon, arena, name, owner, executor: make } = setup();
    const executor = make(2);
    let executedBatches = 0;
    const batcher = Batcher.create(
      {
        arena: name,
        owner: owner.id,
        modelName: 'ctr_mlp:1',
        inputs: [{ name: 'features', elementBytes: 4, dims: [FEATURES] }],
        maxBatchSize: 64,
        maxQueueDelayUs: 200,
        instances: 2,
        onBatch: () => {
          throw new Error('no plain batch expected');
        },
        onExecuted: () => (executedBatches += 1),
      },
      addon,
    );
    batcher.setTarget(executor);
    const rng = new SeededRandom(99);
    const inputs = Array.from({ length: 60 }, (_, i) => features(1 + Math.floor(rng.uniform(0, 4)), 300 + i));
    const slices = await Promise.all(inputs.map((input) => batcher.enqueue({ rows: input.length / FEATURES, inputs: [bytesOf(input)], dims: [[FEATURES]] })));
    const released = new Set<SealedBatch>();
    for (const [i, slice] of slices.entries()) {
      const result = slice.executed;
      if (result === undefined || !result.ok) throw new Error(`request ${i} was not executed`);
      const scores = floatsOf(result.outputs[0]!.view()).subarray(slice.rowOffset, slice.rowOffset + slice.rows);
      expectClose(scores, await reference(inputs[i]!));
      released.add(slice.batch);
    }
    expect(executedBatches).toBe(released.size);
    for (const batch of released) batch.release();
    await batcher.stop();
    expect(batcher.stats().idleInstances).toBe(2);
    await executor.close();
    expect(arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    arena.close();
  });

  it.skipIf(!build.present)('refuses a target that does not match, and targets once stopped', async () => {
    const { addon, arena, name, owner, executor: make } = setup();
    const executor = make(1);
    const options = {
      arena: name,
      owner: owner.id,
      modelName: 'other:1',
      maxBatchSize: 8,
      onBatch: () => {},
    };
    const renamed = Batcher.create({ ...options, inputs: [{ name: 'x', elementBytes: 4, dims: [FEATURES] }] }, addon);
    expect(() => renamed.setTarget(executor)).toThrow(/executor inputs must be \[x\], got "\[features\]"/);
    const tooBig = Batcher.create(
      { ...options, maxBatchSize: executor.maxBatchSize + 1, inputs: [{ name: 'features', elementBytes: 4, dims: [FEATURES] }] },
      addon,
    );
    expect(() => tooBig.setTarget(executor)).toThrow(new RegExp(`executor maxBatchSize must be at least ${executor.maxBatchSize + 1}`));
    // One request per batch (a model without dynamic_batching) may feed a batching executor: rows come from the shapes.
    const unbatched = Batcher.create({ ...options, maxBatchSize: 0, inputs: [{ name: 'features', elementBytes: 4, dims: [-1, FEATURES] }] }, addon);
    expect(() => unbatched.setTarget(executor)).not.toThrow();
    const matching = { ...options, inputs: [{ name: 'features', elementBytes: 4, dims: [FEATURES] }] };
    const stopped = Batcher.create(matching, addon);
    await stopped.stop();
    expect(() => stopped.setTarget(executor)).toThrow(/FAILED_PRECONDITION/);
    await executor.close();
    const fine = Batcher.create(matching, addon);
    expect(() => fine.setTarget(executor)).toThrow(/FAILED_PRECONDITION: executor is closed/);
    await Promise.all([renamed.stop(), tooBig.stop(), unbatched.stop(), fine.stop()]);
    arena.close();
  });

  it.skipIf(!build.present)('runs in worker threads; a worker that exits with a live executor frees its memory', async () => {
    const { arena, name, owner } = setup();
    const input = features(5, 11);
    const expected = Array.from(await reference(input));
    const workerCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
const addon = require(data.path);
const unwrap = (r) => { if (!r.ok) throw new Error(r.code + ': ' + r.message); return r.value; };
const waiters = new Map();
const info = unwrap(addon.executorCreate(data.plan, { arena: data.arena, tenant: 'default', owner: data.owner, instances: 2, device: 'host', deviceOrdinal: 0 },
  (event) => waiters.get(event.type === 'run' ? 'run' + event.requestId : 'marker')?.(event)));
const next = (key) => new Promise((resolve) => waiters.set(key, resolve));
(async () => {
  const done = next('run1');
  unwrap(addon.executorRun(info.id, 1, [data.input], data.rows));
  const event = await done;
  const scores = Array.from(new Float32Array(event.outputs[0].data));
  if (data.mode === 'close') {
    const closed = next('marker');
    unwrap(addon.executorClose(info.id, 1));
    await closed;
    parentPort.postMessage({ ok: event.ok, scores });
  } else {
    unwrap(addon.executorRun(info.id, 2, [data.input], data.rows)); // left running
    parentPort.postMessage({ ok: event.ok, scores });
    process.exit(0);
  }
})();
`;
    const results = await Promise.all(
      (['close', 'exit'] as const).map((mode) =>
        runWorkerCode<{ ok: boolean; scores: number[] }>(workerCode, { path: build.path, arena: name, owner: owner.id, plan: ctrMlpPlan(), input: bytesOf(input), rows: 5, mode }),
      ),
    );
    expect(results.map((r) => r.exitCode)).toEqual([0, 0]);
    for (const { message } of results) {
      expect(message?.ok).toBe(true);
      expectClose(Float32Array.from(message!.scores), Float32Array.from(expected));
    }
    expect(arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    arena.close();
  });
});
