/**
 * Golden checks: a model whose golden file expects scores of a feature order
 * different from the one it was exported with stays UNAVAILABLE, and the reason
 * says which output, row and values differed — in RepositoryIndex, /healthz
 * and the error a request gets. The same model with a correct golden file
 * serves. A configured warm-up that cannot run also keeps its model unready.
 */
import { appendFile, cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { directRun, tempRepository } from './helpers/repositories.js';
import { httpJson } from './helpers/probes.js';
import { f32Bytes, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

const ROWS = 4;
const FEATURES = 32;
const GOLDEN_REASON =
  /^golden check failed: output 'score' row \d+ expected -?\d[\d.e-]* got -?\d[\d.e-]* \(tol 1e-4\) in golden\/reordered\.json$/;

/** Copies the sample ctr_mlp under another name (directory and config name). */
async function copyCtr(dir: string, name: string): Promise<void> {
  await cp(path.join(dir, 'ctr_mlp'), path.join(dir, name), { recursive: true });
  const config = path.join(dir, name, 'config.pbtxt');
  await writeFile(config, (await readFile(config, 'utf8')).replace('name: "ctr_mlp"', `name: "${name}"`));
}

async function writeGolden(dir: string, name: string, file: string, inputs: number[][], scores: number[][]): Promise<void> {
  await mkdir(path.join(dir, name, 'golden'), { recursive: true });
  await writeFile(
    path.join(dir, name, 'golden', file),
    JSON.stringify({ inputs: { features: inputs }, outputs: { score: scores }, tolerance: 1e-4 }),
  );
}

beforeAll(async () => {
  served = await serveRepository(tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    await copyCtr(dir, 'ctr_good');
    await copyCtr(dir, 'ctr_reordered');
    const rows = Array.from({ length: ROWS }, (_, r) => Array.from({ length: FEATURES }, (_, i) => Math.sin(r * 7 + i * 0.3) * 2));
    const score = async (features: number[][]) => {
      const input = new ort.Tensor('float32', Float32Array.from(features.flat()), [features.length, FEATURES]);
      const out = await directRun(path.join(dir, 'ctr_mlp', '1', 'model.onnx'), { features: input });
      return Array.from(out['score']!.data as Float32Array, (v) => [v]);
    };
    await writeGolden(dir, 'ctr_good', 'reference.json', rows, await score(rows));
    // The scores of the same rows with the features in reverse order: what a
    // model exported with its features reordered would have been checked against.
    await writeGolden(dir, 'ctr_reordered', 'reordered.json', rows, await score(rows.map((row) => [...row].reverse())));

    await writeIdentityModel(dir, { name: 'bad_warmup', dtype: 'FP32', maxBatchSize: 4, withConfig: true, dims: [4] });
    await mkdir(path.join(dir, 'bad_warmup', 'warmup'));
    await writeFile(path.join(dir, 'bad_warmup', 'warmup', 'short.bin'), f32Bytes([1, 2, 3]));
    await appendFile(path.join(dir, 'bad_warmup', 'config.pbtxt'),
      'model_warmup [ { name: "from_file" batch_size: 1 inputs { key: "INPUT0" value: { data_type: TYPE_FP32 dims: [ 4 ] input_data_file: "short.bin" } } } ]\n');
  }));
});

afterAll(() => served?.close());

const request = (model: string): Message => ({
  model_name: model,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [1, FEATURES] }],
  raw_input_contents: [f32Bytes(new Float32Array(FEATURES).fill(0.5))],
});

describe('golden checks', () => {
  it('serves a model whose golden outputs match', async () => {
    expect(await served.client.call('ModelReady', { name: 'ctr_good' })).toEqual({ ready: true });
    await served.client.call('ModelInfer', request('ctr_good'));
    const ready = served.server.logs.find((l) => l['msg'] === 'model version ready' && l['model'] === 'ctr_good');
    expect(ready).toMatchObject({ golden_cases: 1 });
  });

  it('keeps a mismatching model UNAVAILABLE, with the difference as its reason everywhere', async () => {
    expect(await served.client.call('ModelReady', { name: 'ctr_reordered' })).toEqual({ ready: false });
    const { models } = await served.client.call('RepositoryIndex', {});
    const entry = models.find((m: Message) => m['name'] === 'ctr_reordered');
    expect(entry).toMatchObject({ version: '1', state: 'UNAVAILABLE' });
    expect(entry.reason).toMatch(GOLDEN_REASON);

    const healthz = await httpJson(served.server.httpPort, '/healthz');
    expect(healthz.status).toBe(503);
    expect(healthz.json.status).toBe('not_ready');
    expect(healthz.json.models.find((m: Message) => m['name'] === 'ctr_reordered')).toMatchObject(entry);

    const err = await served.client.callError('ModelInfer', request('ctr_reordered'));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/^model 'ctr_reordered' is not ready \(UNAVAILABLE: golden check failed: output 'score' row \d+ expected/);
    // A start-up model that is not ready keeps the server unready.
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
  });

  it('fails a run-time load on the golden check with FAILED_PRECONDITION', async () => {
    const err = await served.client.callError('RepositoryModelLoad', { model_name: 'ctr_reordered' });
    expect(err.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(err.details).toMatch(/^failed to load model 'ctr_reordered': golden check failed: output 'score' row \d+/);
  });

  it('keeps a model whose configured warm-up cannot be built UNAVAILABLE, naming the sample and file', async () => {
    const { models } = await served.client.call('RepositoryIndex', {});
    const entry = models.find((m: Message) => m['name'] === 'bad_warmup');
    expect(entry).toMatchObject({ version: '1', state: 'UNAVAILABLE' });
    expect(entry.reason).toBe(
      "warm-up sample 'from_file': input 'INPUT0': input_data_file 'short.bin': expected 16 bytes (4 elements of FP32), got 12 bytes",
    );
  });
});
