import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelConfigText, validateModelConfig } from '../../src/repository/model-config.js';
import { buildWarmupSamples, warmupDelayMs, WarmupConfigError } from '../../src/repository/warmup-samples.js';
import { signatureFromConfig } from '../../src/tensor/model-signature.js';
import { decodeBytesTensor, encodeBytesTensor } from '../../src/tensor/bytes-codec.js';

let modelDir: string;

beforeAll(async () => {
  modelDir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-warmup-'));
  await mkdir(path.join(modelDir, 'warmup'));
  await writeFile(path.join(modelDir, 'warmup', 'row.bin'), Buffer.from(Float32Array.from([1, 2, 3]).buffer));
  await writeFile(path.join(modelDir, 'warmup', 'words.bin'), encodeBytesTensor(['a', 'bc']));
});

afterAll(() => rm(modelDir, { recursive: true, force: true }));

function model(text: string) {
  const { config } = parseModelConfigText(text, 'config.pbtxt');
  validateModelConfig(config, { file: 'config.pbtxt', modelName: 'm' });
  return { config, signature: signatureFromConfig(config) };
}

const batched = `name: "m" max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 3 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]`;

describe('default warm-up', () => {
  it('runs zero data once at batch 1 and once at max_batch_size', async () => {
    const { config, signature } = model(batched);
    const samples = await buildWarmupSamples(config, signature, { modelDir, defaultWarmup: true });
    expect(samples.map((s) => [s.name, s.runs, s.required, s.inputs[0]!.dims])).toEqual([
      ['default batch 1', 1, false, [1, 3]],
      ['default batch 8', 1, false, [8, 3]],
    ]);
    expect([...(samples[1]!.inputs[0]!.data as Float32Array)]).toEqual(new Array(24).fill(0));
  });

  it('uses the unbatched shape with variable dims set to 1, and applies reshape', async () => {
    const { config, signature } = model(`name: "m" max_batch_size: 0
input [ { name: "x" data_type: TYPE_INT64 dims: [ -1, 2 ] }, { name: "s" data_type: TYPE_STRING dims: [ 2, 2 ] reshape: { shape: [ 4 ] } } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]`);
    const [sample, ...rest] = await buildWarmupSamples(config, signature, { modelDir, defaultWarmup: true });
    expect(rest).toEqual([]);
    expect(sample!.inputs.map((i) => [i.name, i.type, i.dims])).toEqual([['x', 'int64', [1, 2]], ['s', 'string', [4]]]);
    expect(decodeBytesTensor(sample!.inputs[1]!.data as Uint8Array, 4)).toEqual(['', '', '', '']);
  });

  it('is switched off by the flag or by the config parameter', async () => {
    const { config, signature } = model(batched);
    expect(await buildWarmupSamples(config, signature, { modelDir, defaultWarmup: false })).toEqual([]);
    const off = model(`${batched}\nparameters { key: "hotpath_default_warmup" value { string_value: "false" } }`);
    expect(await buildWarmupSamples(off.config, off.signature, { modelDir, defaultWarmup: true })).toEqual([]);
  });
});

describe('model_warmup', () => {
  const warm = (inputs: string, extra = '') => model(`${batched}
model_warmup [ { name: "s" batch_size: 2 count: 3 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 3 ] ${inputs} } } ${extra} } ]`);

  it('repeats a file sample to the batch size, runs it `count` times, and requires it', async () => {
    const { config, signature } = warm('input_data_file: "row.bin"');
    const [sample] = await buildWarmupSamples(config, signature, { modelDir, defaultWarmup: false });
    expect(sample).toMatchObject({ name: 's', runs: 3, required: true });
    expect(sample!.inputs[0]!.dims).toEqual([2, 3]);
    expect([...(sample!.inputs[0]!.data as Float32Array)]).toEqual([1, 2, 3, 1, 2, 3]);
  });

  it('fills zero_data and random_data', async () => {
    const zero = warm('zero_data: true');
    expect([...((await buildWarmupSamples(zero.config, zero.signature, { modelDir, defaultWarmup: true }))[0]!.inputs[0]!.data as Float32Array)])
      .toEqual([0, 0, 0, 0, 0, 0]);
    const random = warm('random_data: true');
    const [sample] = await buildWarmupSamples(random.config, random.signature, { modelDir, defaultWarmup: true, random: () => 0.5 });
    expect([...(sample!.inputs[0]!.data as Float32Array)]).toEqual([0.5, 0.5, 0.5, 0.5, 0.5, 0.5]);
  });

  it('names the sample, input, file, expected and actual size when a file does not fit', async () => {
    const { config, signature } = model(`${batched}
model_warmup [ { name: "wide" batch_size: 1 inputs { key: "x" value: { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "row.bin" } } } ]`);
    const built = buildWarmupSamples(config, signature, { modelDir, defaultWarmup: true });
    await expect(built).rejects.toBeInstanceOf(WarmupConfigError);
    await expect(built).rejects.toThrow(
      "warm-up sample 'wide': input 'x': input_data_file 'row.bin': expected 16 bytes (4 elements of FP32), got 12 bytes",
    );
  });

  it('refuses a missing file and a path outside warmup/', async () => {
    const missing = warm('input_data_file: "nope.bin"');
    await expect(buildWarmupSamples(missing.config, missing.signature, { modelDir, defaultWarmup: true })).rejects.toThrow(
      /input_data_file 'nope\.bin': cannot read .*nope\.bin: ENOENT/,
    );
    const escape = warm('input_data_file: "../config.pbtxt"');
    await expect(buildWarmupSamples(escape.config, escape.signature, { modelDir, defaultWarmup: true })).rejects.toThrow(
      /must name a file inside warmup\//,
    );
  });

  it('reads BYTES samples in the length-prefixed wire format', async () => {
    const { config, signature } = model(`name: "m" max_batch_size: 4
input [ { name: "w" data_type: TYPE_STRING dims: [ 2 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]
model_warmup [ { name: "words" batch_size: 2 inputs { key: "w" value: { data_type: TYPE_STRING dims: [ 2 ] input_data_file: "words.bin" } } } ]`);
    const [sample] = await buildWarmupSamples(config, signature, { modelDir, defaultWarmup: true });
    expect(decodeBytesTensor(sample!.inputs[0]!.data as Uint8Array, 4)).toEqual(['a', 'bc', 'a', 'bc']);
  });
});

describe('warm-up delay (test-only)', () => {
  it('is honoured only with fault injection', () => {
    const { config } = model(`${batched}\nparameters { key: "hotpath_fault_warmup_delay_ms" value { string_value: "250" } }`);
    expect(warmupDelayMs(config, true)).toBe(250);
    expect(warmupDelayMs(config, false)).toBe(0);
  });
});
