// writeIdentityModel (models/lib/fixture-models.ts): an INPUT0 -> Identity -> OUTPUT0
// model for each of the 13 KServe datatypes loads in ONNX Runtime, round-trips its
// data exactly, reports the metadata config auto-complete reads, and can be written
// without a config.pbtxt.

import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useUint16ArrayForFloat16 } from '../../src/workers/ort-float16.js';
import { TRITON_DATATYPES, type TritonDatatype } from '../../models/lib/datatypes.js';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';

// Same float16 representation as the inference workers use (see ort-float16.ts).
useUint16ArrayForFloat16();

let repo: string;

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), 'hotpath-fixture-models-'));
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

/** onnxruntime-node's tensor type and a 2x3 sample (edge values included) per datatype. */
const SAMPLES: Record<TritonDatatype, { ort: ort.Tensor.Type; data: ort.Tensor.DataType }> = {
  BOOL: { ort: 'bool', data: Uint8Array.of(1, 0, 1, 1, 0, 0) },
  UINT8: { ort: 'uint8', data: Uint8Array.of(0, 1, 127, 128, 254, 255) },
  INT8: { ort: 'int8', data: Int8Array.of(-128, -1, 0, 1, 100, 127) },
  UINT16: { ort: 'uint16', data: Uint16Array.of(0, 1, 0x7fff, 0x8000, 0xfffe, 0xffff) },
  INT16: { ort: 'int16', data: Int16Array.of(-32768, -1, 0, 1, 1000, 32767) },
  INT32: { ort: 'int32', data: Int32Array.of(-(2 ** 31), -1, 0, 1, 123456789, 2 ** 31 - 1) },
  INT64: { ort: 'int64', data: BigInt64Array.of(-(2n ** 63n), -1n, 0n, 1n, 2n ** 53n + 1n, 2n ** 63n - 1n) },
  UINT32: { ort: 'uint32', data: Uint32Array.of(0, 1, 2 ** 31, 2 ** 32 - 2, 2 ** 32 - 1, 42) },
  UINT64: { ort: 'uint64', data: BigUint64Array.of(0n, 1n, 2n ** 63n, 2n ** 64n - 2n, 2n ** 64n - 1n, 2n ** 53n + 1n) },
  // Raw bit patterns: 1.0, -0.0, +inf, NaN, smallest subnormal, max finite.
  FP16: { ort: 'float16', data: Uint16Array.of(0x3c00, 0x8000, 0x7c00, 0x7e00, 0x0001, 0x7bff) },
  FP32: { ort: 'float32', data: Float32Array.of(-0, 1.5, -3.25, Infinity, 1e-45, 3.4028234663852886e38) },
  FP64: { ort: 'float64', data: Float64Array.of(-0, Math.PI, -1e308, Infinity, 5e-324, 1 / 3) },
  BYTES: { ort: 'string', data: ['', 'a', 'héllo', '日本語', 'with space', 'x'.repeat(300)] },
};

function modelPath(name: string): string {
  return join(repo, name, '1', 'model.onnx');
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}

describe('writeIdentityModel: every datatype round-trips through ONNX Runtime', () => {
  it.each(TRITON_DATATYPES)('%s', async (dtype) => {
    const name = `identity_${dtype.toLowerCase()}`;
    await writeIdentityModel(repo, { name, dtype, maxBatchSize: 8, withConfig: true });
    const sample = SAMPLES[dtype];
    const s = await ort.InferenceSession.create(modelPath(name));
    try {
      // NaN compares unequal, so compare element lists (toEqual treats NaN as equal).
      const result = await s.run({ INPUT0: new ort.Tensor(sample.ort, sample.data, [2, 3]) });
      const out = result['OUTPUT0']!;
      expect(out.type).toBe(sample.ort);
      expect(out.dims).toEqual([2, 3]);
      expect(Array.from(out.data as ArrayLike<unknown>)).toEqual(Array.from(sample.data as ArrayLike<unknown>));
      if (dtype === 'FP32' || dtype === 'FP64') expect(Object.is((out.data as Float32Array)[0], -0)).toBe(true);
    } finally {
      await s.release();
    }
  });
});

describe('writeIdentityModel: metadata and config', () => {
  // ORT reports a named dynamic dim by its name and an unnamed one as "" (not -1):
  // auto-complete must read any string in `shape` as a variable (-1) dimension.
  it('reports the symbolic batch dim as "batch" and an unnamed dynamic dim as ""', async () => {
    await writeIdentityModel(repo, { name: 'meta_batched', dtype: 'INT32', maxBatchSize: 4, withConfig: false });
    const s = await ort.InferenceSession.create(modelPath('meta_batched'));
    try {
      expect(s.inputMetadata).toEqual([{ name: 'INPUT0', isTensor: true, type: 'int32', shape: ['batch', ''] }]);
      expect(s.outputMetadata).toEqual([{ name: 'OUTPUT0', isTensor: true, type: 'int32', shape: ['batch', ''] }]);
    } finally {
      await s.release();
    }
  });

  it('with maxBatchSize 0, writes the dims as the whole shape', async () => {
    const paths = await writeIdentityModel(repo, {
      name: 'unbatched',
      dtype: 'FP32',
      maxBatchSize: 0,
      withConfig: true,
      dims: [2, -1],
    });
    const s = await ort.InferenceSession.create(paths.modelPath);
    try {
      expect(s.inputMetadata).toEqual([{ name: 'INPUT0', isTensor: true, type: 'float32', shape: [2, ''] }]);
    } finally {
      await s.release();
    }
    const config = await readFile(paths.configPath!, 'utf8');
    expect(config).toMatch(/^max_batch_size: 0$/m);
    expect(config).toMatch(/name: "INPUT0"\s*data_type: TYPE_FP32\s*dims: \[ 2, -1 \]/);
    expect(config).not.toMatch(/dynamic_batching/);
  });

  it('writes a config with the Triton datatype name and dims without the batch dim', async () => {
    const paths = await writeIdentityModel(repo, { name: 'cfg_bytes', dtype: 'BYTES', maxBatchSize: 16, withConfig: true, dims: [3] });
    expect(paths.configPath).toBe(join(repo, 'cfg_bytes', 'config.pbtxt'));
    const config = await readFile(paths.configPath!, 'utf8');
    expect(config).toMatch(/^name: "cfg_bytes"$/m);
    expect(config).toMatch(/^max_batch_size: 16$/m);
    expect(config).toMatch(/input \[\s*\{\s*name: "INPUT0"\s*data_type: TYPE_STRING\s*dims: \[ 3 \]\s*\}\s*\]/);
    expect(config).toMatch(/output \[\s*\{\s*name: "OUTPUT0"\s*data_type: TYPE_STRING\s*dims: \[ 3 \]\s*\}\s*\]/);
  });

  it('with withConfig false, writes only the model (for auto-complete)', async () => {
    const paths = await writeIdentityModel(repo, { name: 'no_config', dtype: 'FP16', maxBatchSize: 8, withConfig: false });
    expect(paths).toEqual({ modelPath: modelPath('no_config') });
    expect(await exists(join(repo, 'no_config', 'config.pbtxt'))).toBe(false);
    expect(await exists(paths.modelPath)).toBe(true);
  });

  it('honours the version directory', async () => {
    const paths = await writeIdentityModel(repo, { name: 'versioned', dtype: 'UINT8', maxBatchSize: 1, withConfig: false, version: 3 });
    expect(paths.modelPath).toBe(join(repo, 'versioned', '3', 'model.onnx'));
  });

  it('rejects a negative maxBatchSize', async () => {
    await expect(writeIdentityModel(repo, { name: 'bad', dtype: 'FP32', maxBatchSize: -1, withConfig: true })).rejects.toThrow(
      /maxBatchSize must be a non-negative integer, got -1/,
    );
  });
});
