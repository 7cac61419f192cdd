// The native executor's host kernels against onnxruntime-node on whole sample
// models (ctr_mlp, ranker_mlp, ctr_deep) at batch 1, 7 and max_batch_size,
// within rtol 1e-5 / atol 1e-6; and the memory plan: once loaded, 1,000 runs
// make no backend call on the arena (everything lives in the planned weights
// and workspace blocks), and closing gives every byte back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { CTR_DEEP_SHAPE } from '../../models/lib/ctr-deep.js';
import { SAMPLE_MODELS } from '../../models/lib/sample-models.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { makeFeed, Parity, type Feed } from '../helpers/executor-parity.js';

interface ModelCase {
  readonly name: string;
  readonly maxBatchSize: number;
  readonly feeds: (rows: number, rng: SeededRandom) => Record<string, Feed>;
}

const CASES: readonly ModelCase[] = [
  { name: 'ctr_mlp', maxBatchSize: 64, feeds: (rows, rng) => ({ features: makeFeed('float32', [rows, 32], rng) }) },
  { name: 'ranker_mlp', maxBatchSize: 128, feeds: (rows, rng) => ({ features: makeFeed('float32', [rows, 256], rng) }) },
  {
    name: 'ctr_deep',
    maxBatchSize: CTR_DEEP_SHAPE.maxBatchSize,
    feeds: (rows, rng) => ({
      dense: makeFeed('float32', [rows, CTR_DEEP_SHAPE.denseFeatures], rng),
      categorical: makeFeed('int64', [rows, CTR_DEEP_SHAPE.categoricalFields], rng, { kind: 'ints', low: 0, high: CTR_DEEP_SHAPE.vocabulary }),
    }),
  },
];

/** The model's bytes, generated from its seed (what models/generate.ts writes). */
function modelBytes(name: string): Uint8Array {
  const model = SAMPLE_MODELS.find((m) => m.name === name);
  if (model === undefined) throw new Error(`no sample model ${name}`);
  return model.model();
}

function configMaxBatch(name: string): number {
  const match = /^max_batch_size: (\d+)$/m.exec(SAMPLE_MODELS.find((m) => m.name === name)!.config());
  return Number(match?.[1]);
}

let parity: Parity;
beforeAll(() => {
  parity = Parity.open('models');
});
afterAll(() => parity?.close());

describe.each(CASES)('$name on host kernels', (c) => {
  it('uses the max_batch_size of its config.pbtxt', () => {
    expect(configMaxBatch(c.name)).toBe(c.maxBatchSize);
  });

  it(`matches onnxruntime at batch 1, 7 and ${c.maxBatchSize}`, async () => {
    await parity.check({
      name: c.name,
      model: modelBytes(c.name),
      maxBatchSize: c.maxBatchSize,
      batches: [1, 7, c.maxBatchSize],
      feeds: (rows) => c.feeds(rows, new SeededRandom(0xbeef + rows)),
    });
  });
});

describe('memory planning', () => {
  it('makes no backend call over 1,000 runs, and gives every byte back on close', async () => {
    const model = CASES.find((c) => c.name === 'ctr_deep')!;
    const owner = parity.owner('ctr_deep-plan');
    try {
      const executor = await parity.executor(modelBytes(model.name), model.name, model.maxBatchSize, owner);
      const held = parity.arena.ownerUsage(owner);
      expect(held.bytes).toBeGreaterThanOrEqual(executor.weightsBytes + executor.workspaceBytes);
      // Inputs for a few batch sizes, made before the measured window.
      const rng = new SeededRandom(77);
      const batches = [1, 5, 16, 64, model.maxBatchSize].map((rows) => {
        const feeds = model.feeds(rows, rng);
        const inputs = executor.inputs.map((io) => {
          const data = feeds[io.name]!.data;
          return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
        });
        return { rows, inputs };
      });
      await executor.run(batches[0]!.inputs, batches[0]!.rows);
      const before = parity.arena.stats();
      for (let i = 0; i < 1000; i++) {
        const { rows, inputs } = batches[i % batches.length]!;
        const result = await executor.run(inputs, rows);
        if (result.outputs[0]!.dims[0] !== rows) throw new Error(`run ${i}: ${result.outputs[0]!.dims[0]} rows out, ${rows} in`);
      }
      const after = parity.arena.stats();
      expect({ allocs: after.backendAllocs, frees: after.backendFrees, failures: after.backendFailures }).toEqual({
        allocs: before.backendAllocs,
        frees: before.backendFrees,
        failures: before.backendFailures,
      });
      expect(after.allocated).toBe(before.allocated);
      expect(parity.arena.ownerUsage(owner)).toEqual(held);
      await executor.close();
      expect(parity.arena.ownerUsage(owner)).toMatchObject({ blocks: 0, bytes: 0 });
    } finally {
      parity.arena.destroyOwner(owner);
    }
  });
});
