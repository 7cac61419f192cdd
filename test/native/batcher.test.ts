// The dynamic batcher through its TS wrapper (src/native/batcher.ts), against
// each addon build, with the manual clock wherever timing decides: batch
// formation, per-request slices, the queue policy, quotas, shutdown and the
// arena memory a batch holds. No test sleeps to check a rule.
import { describe, expect, it } from 'vitest';

import { Arena, type Owner } from '../../src/native/arena.js';
import { Batcher, BatcherRejection, type BatcherOptions, type SealedBatch, type SealedSlice } from '../../src/native/batcher.js';
import { fillBatcherOptions } from '../../src/native/batcher-options.js';
import type { BatcherBinding } from '../../src/native/batcher-binding-types.js';
import { loadAddon, type LoadedAddon } from '../../src/native/loader.js';
import { NativeError } from '../../src/native/native-error.js';
import { addonBuilds } from './addon-builds.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const rowBytes = 16; // one row: 4 float32
let counter = 0;

/** Distinct bytes for request `i` with `rows` rows. */
function rowsOf(i: number, rows = 1): Uint8Array {
  const values = new Float32Array(rows * 4).map((_, k) => i * 100 + k);
  return new Uint8Array(values.buffer);
}

async function rejection(promise: Promise<unknown>): Promise<BatcherRejection> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof BatcherRejection) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

interface Setup {
  readonly addon: LoadedAddon;
  readonly arena: Arena;
  readonly name: string;
  readonly owner: Owner;
  readonly batches: SealedBatch[];
  make(options?: Partial<BatcherOptions>): Batcher;
}

describe.each(addonBuilds)('$kind build: batcher', (build) => {
  const setup = (): Setup => {
    counter += 1;
    const addon = loadAddon({ path: build.path });
    const name = `batcher-${build.kind}-${counter}`;
    const arena = Arena.create(name, { backend: 'host', capacityBytes: 64 * MiB, segmentBytes: 4 * MiB, maxSplitBytes: 2 * MiB, smallMaxBytes: 64 * KiB }, addon);
    const owner = arena.createOwner('model', 'm/1');
    const batches: SealedBatch[] = [];
    const make = (options: Partial<BatcherOptions> = {}) =>
      Batcher.create(
        {
          arena: name,
          owner: owner.id,
          modelName: 'm:1',
          inputs: [{ name: 'x', elementBytes: 4, dims: [4] }],
          maxBatchSize: 8,
          maxQueueDelayUs: 1000,
          instances: 2,
          clock: 'manual',
          onBatch: (batch) => batches.push(batch),
          ...options,
        },
        addon,
      );
    return { addon, arena, name, owner, batches, make };
  };

  it.skipIf(!build.present)('8 concurrent requests form fewer batches, and each slice holds exactly its own bytes', async () => {
    const { arena, batches, make } = setup();
    const batcher = make();
    const sizes = [1, 2, 1, 2, 1, 2, 1, 2]; // 12 rows; rows are never split: 7 close a batch, 5 wait for the delay
    const inputs = sizes.map((rows, i) => rowsOf(i + 1, rows));
    const pending = sizes.map((rows, i) => batcher.enqueue({ rows, inputs: [inputs[i]!], dims: [[4]] }));
    for (const input of inputs) input.fill(0); // copied during enqueue: reusable at once
    await batcher.flush();
    expect(batches.map((b) => b.rows)).toEqual([7]);
    await batcher.advanceClock(1000);
    const slices: SealedSlice[] = await Promise.all(pending);
    expect(batches.map((b) => b.rows)).toEqual([7, 5]);
    expect(batches.length).toBeLessThan(sizes.length);

    const adopter = Arena.attach(arena.name, loadAddon({ path: build.path }));
    slices.forEach((slice, i) => {
      expect(slice.rows).toBe(sizes[i]);
      const range = [slice.rowOffset * rowBytes, (slice.rowOffset + slice.rows) * rowBytes] as const;
      expect(slice.batch.view(0).subarray(...range)).toEqual(rowsOf(i + 1, sizes[i]));
      // The same bytes through the arena, as a worker maps them (its own reference).
      const block = adopter.adopt(slice.batch.inputs[0]!.blockId);
      expect(new Uint8Array(block.view()).subarray(...range)).toEqual(rowsOf(i + 1, sizes[i]));
      block.release();
    });
    expect(batches[0]!.inputs[0]).toMatchObject({ name: 'x', bytes: 7 * rowBytes, shape: [7, 4] });
    expect(batches[0]!.requests.map((r) => r.sequence)).toEqual([0, 1, 2, 3, 4]);
    expect(slices[7]!.queueNs).toBe(1000 * 1000);
    const stats = batcher.stats();
    expect(stats).toMatchObject({ executionCount: 2, inferenceCount: 12, dispatchedRequests: 8, heldBatches: 2, pendingRequests: 0 });

    for (const batch of batches) batch.release();
    batches[0]!.release(); // idempotent
    expect(() => batches[0]!.view(0)).toThrowError(/batch \d+ was released/);
    expect(arena.stats()).toMatchObject({ allocated: 0, blocks: 0 });
    expect(batcher.stats().heldBatches).toBe(0);
    adopter.close();
    await batcher.stop();
    arena.close();
  });

  it.skipIf(!build.present)('seals a preferred batch size at once, and a partial batch when the delay expires', async () => {
    const { arena, batches, make } = setup();
    const preferred = make({ preferredBatchSizes: [4], maxQueueDelayUs: 1_000_000 });
    const four = [0, 1, 2, 3].map((i) => preferred.enqueue({ inputs: [rowsOf(i)], dims: [[4]] }));
    await preferred.flush(); // no clock advance
    expect((await Promise.all(four)).map((s) => s.rowOffset)).toEqual([0, 1, 2, 3]);
    expect(batches.map((b) => b.rows)).toEqual([4]);

    const delayed = make({ maxQueueDelayUs: 500 });
    const two = [0, 1].map((i) => delayed.enqueue({ inputs: [rowsOf(i)], dims: [[4]] }));
    await delayed.advanceClock(499);
    expect(batches).toHaveLength(1);
    await delayed.advanceClock(1);
    expect(batches.map((b) => b.rows)).toEqual([4, 2]);
    expect((await Promise.all(two)).map((s) => s.queueNs)).toEqual([500_000, 500_000]);
    for (const batch of batches) batch.release();
    await Promise.all([preferred.stop(), delayed.stop()]);
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)('holds ready batches while every instance is busy', async () => {
    const { arena, batches, make } = setup();
    const batcher = make({ instances: 1, preferredBatchSizes: [2] });
    batcher.instanceBusy(); // e.g. warm-up
    const pair = [0, 1].map((i) => batcher.enqueue({ inputs: [rowsOf(i)], dims: [[4]] }));
    await batcher.advanceClock(5000);
    expect(batches).toHaveLength(0);
    batcher.instanceIdle();
    await batcher.flush();
    await Promise.all(pair);
    expect(batches).toHaveLength(1);
    expect(() => batcher.instanceBusy()).toThrowError(/instanceBusy: FAILED_PRECONDITION: .*no idle instance/);
    batcher.instanceIdle();
    expect(() => batcher.instanceIdle()).toThrowError(/instanceIdle: FAILED_PRECONDITION: .*already idle/);
    batches[0]!.release();
    await batcher.stop();
    arena.close();
  });

  it.skipIf(!build.present)('rejects a full queue with QUEUE_FULL naming the model and the size', async () => {
    const { arena, make } = setup();
    const batcher = make({ defaultQueuePolicy: { maxQueueSize: 2 } });
    const queued = [0, 1].map((i) => rejection(batcher.enqueue({ inputs: [rowsOf(i)], dims: [[4]] })));
    const full = await rejection(batcher.enqueue({ inputs: [rowsOf(2)], dims: [[4]] }));
    expect(full).toMatchObject({ name: 'BatcherRejection', reason: 'QUEUE_FULL', kind: 'queue_full', code: 'UNAVAILABLE', model: 'm:1', queueNs: 0 });
    expect(full).toBeInstanceOf(NativeError);
    expect(full.message).toMatch(/^enqueue: UNAVAILABLE: model 'm:1': queue full \(max_queue_size 2 at priority level 1\)$/);
    expect((full.stack ?? '').split('\n')[1]).toMatch(/batcher\.test\.ts/);
    expect(batcher.stats().rejectedQueueFull).toBe(1);
    await batcher.stop();
    for (const request of queued) expect((await request).reason).toBe('SHUTDOWN');
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)('refuses a tenant over its quota with RESOURCE_EXHAUSTED while another tenant is served', async () => {
    const { arena, batches, make } = setup();
    arena.createTenant('small', 0);
    arena.createTenant('big', 1 * MiB);
    const starved = make({ tenant: 'small', maxQueueDelayUs: 0 });
    const served = make({ tenant: 'big', maxQueueDelayUs: 0 });
    const refused = await rejection(starved.enqueue({ inputs: [rowsOf(1)], dims: [[4]] }));
    expect(refused).toMatchObject({ reason: 'OVER_QUOTA', kind: 'over_quota', code: 'RESOURCE_EXHAUSTED', tenant: 'small' });
    expect(refused.message).toMatch(/^enqueue: RESOURCE_EXHAUSTED: model 'm:1': tenant 'small' over quota: requested \d+(\.\d+)? \w+, using 0(\.0)? B of its 0(\.0)? B quota$/);
    expect(starved.stats().memoryFailures).toBe(1);
    const slice = await served.enqueue({ inputs: [rowsOf(2)], dims: [[4]] }); // delay 0: a lone request goes at once
    expect(slice.batch.view(0)).toEqual(rowsOf(2));
    expect(arena.stats().tenants.find((t) => t.name === 'big')?.used).toBeGreaterThan(0);
    batches[0]!.release();
    expect(arena.stats().tenants.find((t) => t.name === 'big')?.used).toBe(0);
    await Promise.all([starved.stop(), served.stop()]);
    arena.close();
  });

  it.skipIf(!build.present)('rejects queue timeouts (REJECT) and passed deadlines, and never dispatches them', async () => {
    const { arena, batches, make } = setup();
    const batcher = make({ defaultQueuePolicy: { defaultTimeoutUs: 100, timeoutAction: 'REJECT' } });
    const timedOut = rejection(batcher.enqueue({ inputs: [rowsOf(1)], dims: [[4]] }));
    const deadline = rejection(batcher.enqueue({ inputs: [rowsOf(2)], dims: [[4]], deadlineMs: 0.05 }));
    const late = await rejection(batcher.enqueue({ inputs: [rowsOf(3)], dims: [[4]], deadlineMs: 0 }));
    expect(late).toMatchObject({ reason: 'DEADLINE_EXCEEDED', code: 'DEADLINE_EXCEEDED' });
    await batcher.advanceClock(50);
    const expired = await deadline;
    expect(expired).toMatchObject({ reason: 'DEADLINE_EXCEEDED', code: 'DEADLINE_EXCEEDED', queueNs: 50_000 });
    expect(expired.message).toMatch(/model 'm:1': deadline exceeded while queued; the request was not executed/);
    await batcher.advanceClock(50);
    const timeout = await timedOut;
    expect(timeout).toMatchObject({ reason: 'TIMEOUT', code: 'DEADLINE_EXCEEDED', queueNs: 100_000 });
    expect(timeout.message).toMatch(/request timed out after 100 us in the queue \(timeout_action REJECT\); it was not executed/);
    await batcher.advanceClock(10_000);
    expect(batches).toHaveLength(0);
    expect(batcher.stats()).toMatchObject({ executionCount: 0, rejectedTimeout: 1, rejectedDeadline: 2, openBatches: 0 });
    expect(arena.stats().allocated).toBe(0); // the emptied batch was discarded
    await batcher.stop();
    arena.close();
  });

  it.skipIf(!build.present)('stop rejects pending requests with SHUTDOWN, is idempotent, and frees their memory', async () => {
    const { arena, make } = setup();
    const batcher = make();
    const pending = [0, 1, 2].map((i) => rejection(batcher.enqueue({ inputs: [rowsOf(i)], dims: [[4]] })));
    expect(arena.stats().allocated).toBeGreaterThan(0);
    const stopping = batcher.stop();
    expect(batcher.stop()).toBe(stopping);
    await stopping;
    for (const request of pending) {
      expect(await request).toMatchObject({ reason: 'SHUTDOWN', code: 'UNAVAILABLE', model: 'm:1' });
    }
    expect((await rejection(batcher.enqueue({ inputs: [rowsOf(9)], dims: [[4]] }))).reason).toBe('SHUTDOWN');
    expect(batcher.stats()).toMatchObject({ rejectedShutdown: 3, pendingRequests: 0 });
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)('a throwing onBatch rejects its requests and gives back the instance and memory', async () => {
    const { arena, make } = setup();
    const batcher = make({ instances: 1, maxQueueDelayUs: 0, onBatch: () => { throw new Error('pool is gone'); } });
    await expect(batcher.enqueue({ inputs: [rowsOf(1)], dims: [[4]] })).rejects.toThrowError('pool is gone');
    expect(batcher.stats()).toMatchObject({ idleInstances: 1, heldBatches: 0 });
    expect(arena.stats().allocated).toBe(0);
    await batcher.stop();
    arena.close();
  });

  it.skipIf(!build.present)('validates options and requests with clear messages', async () => {
    const { arena, name, owner, make } = setup();
    const base = { arena: name, owner: owner.id, modelName: 'm:1', inputs: [{ name: 'x', elementBytes: 4, dims: [4] }], onBatch: () => {} };
    const addon = loadAddon({ path: build.path });
    expect(() => Batcher.create({ ...base, maxBatchSize: 1.5 }, addon)).toThrowError('Batcher.create: maxBatchSize must be an integer in [0, 4294967295], got 1.5');
    expect(() => Batcher.create({ ...base, maxBatchSize: 8, preferredBatchSizes: [16] }, addon)).toThrowError('Batcher.create: preferredBatchSizes[] must be an integer in [1, 8], got 16');
    expect(() => Batcher.create({ ...base, priorityLevels: 2 }, addon)).toThrowError('Batcher.create: defaultPriorityLevel must be an integer in [1, 2], got 0');
    expect(() => Batcher.create({ ...base, defaultQueuePolicy: { timeoutAction: 'DROP' as never } }, addon)).toThrowError(
      `Batcher.create: defaultQueuePolicy.timeoutAction must be 'REJECT' or 'DELAY', got "DROP"`,
    );
    expect(() => Batcher.create({ ...base, owner: 0 }, addon)).toThrowError(/owner must be an integer in \[1, /);
    expect(() => Batcher.create({ ...base, arena: 'no-such-arena' }, addon)).toThrowError(/Batcher\.create: NOT_FOUND: no arena 'no-such-arena'/);
    expect(() => Batcher.create({ ...base, tenant: 'nobody' }, addon)).toThrowError(/Batcher\.create: NOT_FOUND: tenant 'nobody' does not exist/);

    const batcher = make({ clock: 'steady' });
    await expect(batcher.enqueue({ inputs: [new Uint8Array(12)], dims: [[4]] })).rejects.toThrowError(
      "enqueue: INVALID_ARGUMENT: model 'm:1': input 'x': expected 16 bytes (4 elements of 4 bytes), got 12",
    );
    await expect(batcher.enqueue({ inputs: [rowsOf(1)], dims: [[5]] })).rejects.toThrowError("input 'x': expected dims [4], got [5]");
    await expect(batcher.enqueue({ rows: 9, inputs: [rowsOf(1, 9)], dims: [[4]] })).rejects.toThrowError('rows: expected in [1, 8] (max_batch_size), got 9');
    await expect(batcher.enqueue({ inputs: [], dims: [] })).rejects.toThrowError('expected 1 inputs (x), got 0');
    await expect(batcher.advanceClock(10)).rejects.toThrowError(/advanceClock: FAILED_PRECONDITION: advanceClock needs a batcher created with clock 'manual'/);
    await batcher.stop();
    arena.close();
  });

  it.skipIf(!build.present)('a model with maxBatchSize 0 runs every request alone with its full shape', async () => {
    const { arena, batches, make } = setup();
    const batcher = make({ maxBatchSize: 0, inputs: [{ name: 'x', elementBytes: 4, dims: [2, 2] }] });
    const slices = await Promise.all([1, 2].map((i) => batcher.enqueue({ inputs: [rowsOf(i)], dims: [[2, 2]] })));
    expect(batches.map((b) => [b.rows, b.inputs[0]!.shape])).toEqual([[1, [2, 2]], [1, [2, 2]]]);
    expect(slices.map((s) => s.batch.view(0))).toEqual([rowsOf(1), rowsOf(2)]);
    for (const batch of batches) batch.release();
    await batcher.stop();
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)('fixed dims cross once, at create; a request carries only its variable dims', async () => {
    const { arena, batches, make } = setup();
    // Unbatched, full shape [-1, 2, -1]: two dims a request.
    const unbatched = make({ maxBatchSize: 0, maxQueueDelayUs: 0, inputs: [{ name: 'x', elementBytes: 4, dims: [-1, 2, -1] }] });
    const first = await unbatched.enqueueValidated({ rows: 1, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [rowsOf(1)], shapes: [[1, 2, 2]] });
    const second = await unbatched.enqueue({ inputs: [rowsOf(2, 2)], dims: [[2, 2, 2]] });
    // Batched, per-row dims [-1]: the validated shapes lead with the rows, which are not a variable dim.
    const batched = make({ maxQueueDelayUs: 0, inputs: [{ name: 'x', elementBytes: 4, dims: [-1] }] });
    const third = await batched.enqueueValidated({ rows: 2, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [rowsOf(3, 2)], shapes: [[2, 4]] });
    expect(batches.map((b) => [b.rows, b.inputs[0]!.shape])).toEqual([
      [1, [1, 2, 2]],
      [1, [2, 2, 2]],
      [2, [2, 4]],
    ]);
    expect([first, second, third].map((s) => s.batch.view(0))).toEqual([rowsOf(1), rowsOf(2, 2), rowsOf(3, 2)]);
    for (const batch of batches) batch.release();
    await Promise.all([unbatched.stop(), batched.stop()]);
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)("the binding bounds a request's variable dims: a bad list is INVALID_ARGUMENT, never a crash", async () => {
    const { addon, arena, name, owner } = setup();
    const binding = addon.binding as unknown as BatcherBinding;
    const base = { arena: name, owner: owner.id, modelName: 'raw:1', maxBatchSize: 4, onBatch: () => undefined };
    const stopped: Promise<void>[] = [];
    const create = (dims: number[]) => {
      const { raw } = fillBatcherOptions({ ...base, inputs: [{ name: 'x', elementBytes: 4, dims }] });
      let markerSeen = () => {};
      stopped.push(new Promise<void>((resolve) => (markerSeen = resolve)));
      const created = binding.batcherCreate(raw, (event) => event.type === 'marker' && markerSeen());
      if (!created.ok) throw new Error(created.message);
      return created.value;
    };
    const open = create([-1, 2]);
    const fixed = create([4]);
    const bytes = [new Uint8Array(16)];
    for (const [id, variable] of [
      [open, null],
      [open, []],
      [open, [2, 2]],
      [open, [-3]],
      [open, [1.5]],
      [open, ['2']],
      [fixed, [4]],
    ] as const) {
      const result = binding.batcherEnqueue(id, 1, 1, 0, 0, null, bytes, variable as never);
      expect([variable, result.ok ? 'OK' : result.code]).toEqual([variable, 'INVALID_ARGUMENT']);
    }
    // A dims template whose count does not match the inputs is refused at create.
    const { raw } = fillBatcherOptions({ ...base, inputs: [{ name: 'x', elementBytes: 4, dims: [4] }] });
    const mismatched = binding.batcherCreate({ ...raw, inputDims: [] }, () => undefined);
    expect(mismatched.ok ? 'OK' : mismatched.code).toBe('INVALID_ARGUMENT');
    for (const id of [open, fixed]) expect(binding.batcherStop(id, 1)).toEqual({ ok: true, value: true });
    await Promise.all(stopped);
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });

  it.skipIf(!build.present)('steady clock: 2000 requests in waves, each slice holds its own bytes, memory back to 0', async () => {
    const { arena, make } = setup();
    const batcher = make({
      clock: 'steady',
      maxQueueDelayUs: 200,
      preferredBatchSizes: [4, 8],
      instances: 2,
      // A fake worker pool: each batch's instance comes back on a later turn of the loop.
      onBatch: () => void setImmediate(() => batcher.instanceIdle()),
    });
    for (let wave = 0; wave < 20; wave += 1) {
      const ids = Array.from({ length: 100 }, (_, k) => wave * 100 + k);
      const slices = await Promise.all(ids.map((id) => batcher.enqueue({ rows: 1 + (id % 3), inputs: [rowsOf(id, 1 + (id % 3))], dims: [[4]] })));
      slices.forEach((slice, k) => {
        const id = ids[k]!;
        const range = [slice.rowOffset * rowBytes, (slice.rowOffset + slice.rows) * rowBytes] as const;
        expect(slice.batch.view(0).subarray(...range)).toEqual(rowsOf(id, 1 + (id % 3)));
      });
      for (const slice of slices) slice.batch.release();
    }
    expect(batcher.stats()).toMatchObject({ dispatchedRequests: 2000, pendingRequests: 0, heldBatches: 0 });
    await batcher.stop();
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });
  it.skipIf(!build.present)('the binding reads an input of any TypedArray type as its bytes at its offset, refuses anything else, and answers every accepted enqueue with one frozen result', async () => {
    const { addon, arena, batches, make } = setup();
    const batcher = make({ maxQueueDelayUs: 0 });
    const floats = new Float32Array(12).map((_, k) => k + 0.5); // 3 rows of 4
    const row1 = floats.subarray(4, 8); // 16 bytes at byte offset 16
    const slice = await batcher.enqueueValidated({ rows: 1, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [row1 as unknown as Uint8Array], shapes: [[1, 4]] });
    expect(slice.batch.inputs[0]!.bytes).toBe(16);
    expect(new Float32Array(slice.batch.view(0).slice(0, 16).buffer)).toEqual(new Float32Array([4.5, 5.5, 6.5, 7.5]));
    slice.batch.release();
    const binding = addon.binding as unknown as BatcherBinding;
    const notTyped = binding.batcherEnqueue(batcher.id, 1_000_001, 1, 0, 0, null, [[1, 2, 3, 4]] as never, null);
    expect(notTyped).toMatchObject({ ok: false, code: 'INVALID_ARGUMENT' });
    expect(notTyped.ok ? '' : notTyped.message).toMatch(/inputs\[0\] must be a TypedArray/);
    const first = binding.batcherEnqueue(batcher.id, 1_000_002, 1, 0, 0, null, [rowsOf(1)], null);
    const second = binding.batcherEnqueue(batcher.id, 1_000_003, 1, 0, 0, null, [rowsOf(2)], null);
    expect(first).toEqual({ ok: true, value: null });
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    await batcher.flush();
    for (const batch of batches) batch.release();
    await batcher.stop();
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });
  it.skipIf(!build.present)('enqueueValidated: queues as enqueue does; what only the native guards see is refused INVALID, not written', async () => {
    const { arena, batches, make } = setup();
    const batcher = make({ maxQueueDelayUs: 0 });
    const slice = await batcher.enqueueValidated({ rows: 2, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [rowsOf(5, 2)], shapes: [[2, 4]] });
    expect(slice.batch.view(0).subarray(0, 2 * rowBytes)).toEqual(rowsOf(5, 2));
    slice.batch.release();
    // No TS argument check here: the native guard checks (input count, rows) still refuse.
    const wrongCount = await rejection(batcher.enqueueValidated({ rows: 1, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [rowsOf(1), rowsOf(2)], shapes: [[1, 4], [1, 4]] }));
    expect(wrongCount.reason).toBe('INVALID');
    expect(wrongCount.message).toMatch(/expected 1 inputs, got 2/);
    const tooManyRows = await rejection(batcher.enqueueValidated({ rows: 9, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [rowsOf(1, 9)], shapes: [[9, 4]] }));
    expect(tooManyRows.message).toMatch(/rows: expected <= max_batch_size 8, got 9/);
    // A deadline already passed is DEADLINE_EXCEEDED, as through enqueue.
    expect((await rejection(batcher.enqueueValidated({ rows: 1, priority: 0, timeoutUs: 0, deadlineMs: -5, inputs: [rowsOf(1)], shapes: [[1, 4]] }))).reason).toBe('DEADLINE_EXCEEDED');
    expect(batches).toHaveLength(1);
    await batcher.stop();
    expect((await rejection(batcher.enqueueValidated({ rows: 1, priority: 0, timeoutUs: 0, deadlineMs: undefined, inputs: [rowsOf(1)], shapes: [[1, 4]] }))).reason).toBe('SHUTDOWN');
    expect(arena.stats().allocated).toBe(0);
    arena.close();
  });
});
