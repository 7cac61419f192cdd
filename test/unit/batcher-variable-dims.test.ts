// Fixed dims cross to native once per version (the raw config's inputDims);
// a request carries only its variable dims (src/native/batcher-options.ts
// variableDimsOf). No addon needed: this is the TS half of the split.
import { describe, expect, it } from 'vitest';
import { checkEnqueue, fillBatcherOptions, variableDimsOf } from '../../src/native/batcher-options.js';

const options = (inputs: { name: string; dims: number[] }[], maxBatchSize: number) =>
  fillBatcherOptions({
    arena: 'unused',
    owner: 1,
    modelName: 'm:1',
    inputs: inputs.map((input) => ({ ...input, elementBytes: 4 })),
    maxBatchSize,
    onBatch: () => undefined,
  });

describe('variable dims', () => {
  it('puts every input template, -1s included, in the raw config once', () => {
    const filled = options([{ name: 'a', dims: [-1, 3] }, { name: 'b', dims: [2] }], 8);
    expect(filled.raw.inputDims).toEqual([[-1, 3], [2]]);
    expect(filled.variableDims).toEqual([[0], []]);
    expect(filled.variableDimCount).toBe(1);
  });

  it('carries nothing for a model whose dims are all fixed', () => {
    const filled = options([{ name: 'a', dims: [4] }], 8);
    expect(variableDimsOf(filled, [[3, 4]], 1)).toBeNull();
    expect(checkEnqueue(filled, { rows: 3, inputs: [new Uint8Array(48)], dims: [[4]] }).variableDims).toBeNull();
  });

  it('reads the -1 positions in input order, past the rows when the shapes lead with them', () => {
    const filled = options([{ name: 'a', dims: [-1, 3, -1] }, { name: 'b', dims: [2] }, { name: 'c', dims: [-1] }], 8);
    // Validated shapes, rows first (offset 1).
    expect(variableDimsOf(filled, [[2, 5, 3, 7], [2, 2], [2, 9]], 1)).toEqual([5, 7, 9]);
    // Per-row dims, as enqueue() takes them (offset 0).
    const checked = checkEnqueue(filled, {
      rows: 1,
      inputs: [new Uint8Array(5 * 3 * 7 * 4), new Uint8Array(8), new Uint8Array(36)],
      dims: [[5, 3, 7], [2], [9]],
    });
    expect(checked.variableDims).toEqual([5, 7, 9]);
  });

  it('reads a missing dim as -1, which the native side refuses', () => {
    const filled = options([{ name: 'a', dims: [-1] }, { name: 'b', dims: [-1] }], 0);
    expect(variableDimsOf(filled, [[4]], 0)).toEqual([4, -1]);
  });
});
