/**
 * ctr_mlp-shaped requests and checks shared by the native-executor e2e files
 * (native-executor.test.ts, front-door-native.test.ts): seeded feature rows,
 * the ModelInfer message carrying them, onnxruntime's own answer for the
 * same rows (the reference), and the tolerance the executor's host kernels
 * are held to.
 */
import * as ort from 'onnxruntime-node';
import { expect } from 'vitest';
import { SeededRandom } from '../../../models/lib/seeded-random.js';
import { directRun } from './repositories.js';
import { f32Bytes, type Message } from './triton-client.js';

/** `rows` rows of 32 features in [-1, 1), the same for the same seed. */
export function ctrFeatures(rows: number, seed: number): Float32Array {
  const rng = new SeededRandom(seed);
  return Float32Array.from({ length: rows * 32 }, () => rng.uniform(-1, 1));
}

/** A ModelInfer of `values` (rows of 32 features) on `model`, with request `parameters` when given. */
export function ctrRequest(model: string, values: Float32Array, parameters?: Message): Message {
  return {
    model_name: model,
    inputs: [{ name: 'features', datatype: 'FP32', shape: [values.length / 32, 32] }],
    raw_input_contents: [f32Bytes(values)],
    ...(parameters ? { parameters } : {}),
  };
}

/** onnxruntime's scores for `values` on the ctr_mlp file at `modelPath`. */
export async function ctrReference(modelPath: string, values: Float32Array): Promise<Float32Array> {
  const out = await directRun(modelPath, { features: new ort.Tensor('float32', values, [values.length / 32, 32]) });
  return out['score']!.data as Float32Array;
}

/** Element-wise within the executor's tolerance (1e-6 absolute + 1e-5 relative). */
export function expectClose(actual: Float32Array, expected: Float32Array): void {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    expect(Math.abs(actual[i]! - expected[i]!)).toBeLessThanOrEqual(1e-6 + 1e-5 * Math.abs(expected[i]!));
  }
}

/** Polls `check` every 50 ms until it holds; throws naming `what` after `timeoutMs`. */
export async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A ctr_deep-shaped request on `model`: `rows` rows of 13 dense features and 8 embedding ids (the same for the same seed), and `ids` to send in place of the seeded ones. */
export function ctrDeepRows(rows: number, seed: number): { readonly dense: Float32Array; readonly ids: BigInt64Array; request(model: string, ids: BigInt64Array): Message } {
  const rng = new SeededRandom(seed);
  const dense = Float32Array.from({ length: rows * 13 }, () => rng.uniform(-1, 1));
  const ids = BigInt64Array.from({ length: rows * 8 }, () => BigInt(rng.int(1000)));
  return {
    dense,
    ids,
    request: (model, sent) => ({
      model_name: model,
      inputs: [
        { name: 'dense', datatype: 'FP32', shape: [rows, 13] },
        { name: 'categorical', datatype: 'INT64', shape: [rows, 8] },
      ],
      raw_input_contents: [f32Bytes(dense), Buffer.from(sent.buffer)],
    }),
  };
}
