/**
 * A model that cannot load as written fails with where the problem is (issue 23):
 *
 * - a config.pbtxt with a syntax error, with the file, line and column, even
 *   when the error is inside a field hotpath does not know; a well-formed
 *   unknown field is skipped with a warning and everything after it applies;
 * - an empty (0-byte) model file, with its path and its size, not
 *   onnxruntime's "ModelProto does not have a graph";
 * - and a KIND_GPU model on a machine without a GPU loads on onnxruntime
 *   (CPU), saying there is no CUDA device, not that the driver is too old.
 */
import { existsSync } from 'node:fs';
import { truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { httpJson } from './helpers/probes.js';
import { tempRepository } from './helpers/repositories.js';
import type { Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

/** A config that sets more than auto-complete would: max_batch_size 64 and dynamic batching. */
const config = (name: string, insertAfterName = '', append = ''): string =>
  [
    `name: "${name}"`,
    insertAfterName,
    'max_batch_size: 64',
    'input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
    'output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]',
    'dynamic_batching { max_queue_delay_microseconds: 100 }',
    append,
  ].join('\n');

beforeAll(async () => {
  served = await serveRepository(tempRepository(async (dir) => {
    const models: Record<string, string> = {
      // The typo opens a block that is never closed: the rest of the file is inside it.
      typo_block: config('typo_block', 'platfrom_typo {'),
      trailing_garbage: config('trailing_garbage', '', 'garbage {{{'),
      bad_inside_unknown: config('bad_inside_unknown', 'future_option { depth: }'),
      unknown_closed: config('unknown_closed', 'platfrom_typo { level: 2 }'),
    };
    for (const [name, text] of Object.entries(models)) {
      await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 4, withConfig: false });
      await writeFile(path.join(dir, name, 'config.pbtxt'), text);
    }
    await writeIdentityModel(dir, { name: 'wants_gpu', dtype: 'FP32', maxBatchSize: 4, withConfig: false });
    await writeFile(
      path.join(dir, 'wants_gpu', 'config.pbtxt'),
      config('wants_gpu', '', 'instance_group [ { count: 1 kind: KIND_GPU } ]'),
    );
    // Empty model files, with a config and without one (auto-complete would read the file).
    for (const [name, withConfig] of [['empty_file', true], ['empty_file_no_config', false]] as const) {
      const { modelPath } = await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 4, withConfig });
      await truncate(modelPath, 0);
    }
  }));
});

afterAll(() => served?.close());

async function indexEntry(name: string): Promise<Message> {
  const { models } = await served.client.call('RepositoryIndex', {});
  return models.find((m: Message) => m['name'] === name);
}

describe('config.pbtxt syntax errors', () => {
  it('fail a model whose typo opens a block that swallows the rest, at the end of input, naming the open brace', async () => {
    const entry = await indexEntry('typo_block');
    expect(entry).toMatchObject({ state: 'UNAVAILABLE' });
    expect(entry['reason']).toMatch(
      /typo_block[/\\]config\.pbtxt:6:55: unexpected end of input, expected "}" to close the "\{" at line 2, column 15/,
    );
    const err = await served.client.callError('ModelInfer', { model_name: 'typo_block' });
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/model 'typo_block' is not ready \(UNAVAILABLE: .*config\.pbtxt:6:55: unexpected end of input/);
    const failed = served.server.logs.find((l) => l['msg'] === 'model failed to load' && l['model'] === 'typo_block');
    expect(failed?.['error']).toMatch(/config\.pbtxt:6:55: /);
  });

  it('fail a model with garbage after a valid config, at its line and column', async () => {
    const entry = await indexEntry('trailing_garbage');
    expect(entry).toMatchObject({ state: 'UNAVAILABLE' });
    expect(entry['reason']).toMatch(/trailing_garbage[/\\]config\.pbtxt:7:10: expected a field name, got "\{"/);
  });

  it('fail a model when the error is inside an unknown field', async () => {
    const entry = await indexEntry('bad_inside_unknown');
    expect(entry).toMatchObject({ state: 'UNAVAILABLE' });
    expect(entry['reason']).toMatch(/bad_inside_unknown[/\\]config\.pbtxt:2:24: expected a value for field "depth", got "\}"/);
  });
});

describe('a well-formed unknown field', () => {
  it('is skipped with a warning, and the fields after it still apply', async () => {
    expect(await served.client.call('ModelReady', { name: 'unknown_closed' })).toEqual({ ready: true });
    const { config: loaded } = await served.client.call('ModelConfig', { name: 'unknown_closed' });
    expect(loaded).toMatchObject({ max_batch_size: 64, dynamic_batching: { max_queue_delay_microseconds: '100' } });
    const warning = served.server.logs.find((l) => l['level'] === 'warn' && String(l['msg']).includes('platfrom_typo'));
    expect(warning?.['msg']).toMatch(/unknown_closed[/\\]config\.pbtxt:2: unknown field 'platfrom_typo' in ModelConfig ignored/);
  });
});

describe('an empty model file', () => {
  it('fails its model naming the file and that it is 0 bytes, with a config and without one', async () => {
    for (const name of ['empty_file', 'empty_file_no_config']) {
      const entry = await indexEntry(name);
      expect(entry).toMatchObject({ state: 'UNAVAILABLE' });
      expect(entry['reason']).toBe(`${name}/1/model.onnx: the model file is empty (0 bytes); expected an ONNX model`);
      const failed = served.server.logs.find((l) => l['msg'] === 'model failed to load' && l['model'] === name);
      expect(failed?.['error']).toBe(`${path.join(served.dir, name, '1', 'model.onnx')}: the model file is empty (0 bytes); expected an ONNX model`);
    }
    const load = await served.client.callError('RepositoryModelLoad', { model_name: 'empty_file' });
    expect(load.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(load.details).toBe("failed to load model 'empty_file': empty_file/1/model.onnx: the model file is empty (0 bytes); expected an ONNX model");
    expect(served.server.output()).not.toMatch(/ModelProto does not have a graph/);
  });
});

describe('a KIND_GPU model without a GPU', () => {
  // Where the machine has a GPU, or an NVIDIA driver without a usable device, this says something else.
  const noDriver = !existsSync('/proc/driver/nvidia/version');

  it.skipIf(!noDriver)('runs on onnxruntime (CPU), saying there is no CUDA device because no NVIDIA driver is loaded', async () => {
    const { json } = await httpJson(served.server.httpPort, '/healthz');
    const entry = json.models.find((m: Message) => m['name'] === 'wants_gpu');
    expect(entry).toMatchObject({ state: 'READY', executor: 'onnxruntime' });
    expect(entry['executorReason']).toMatch(
      /^KIND_GPU requested, running on onnxruntime \(CPU\): no CUDA device 0: no NVIDIA driver is loaded on this machine \(cudaGetDeviceCount: cuda\w+/,
    );
    expect(entry['executorReason']).not.toMatch(/driver version is insufficient/);
  });
});
