/**
 * The model repository at run time: version policies, config auto-complete,
 * a bad config failing only its model, load and unload over gRPC, unload under
 * traffic, and onnxruntime errors surfacing as INTERNAL.
 */
import { appendFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { attrInts, node, serializeModel, tensorValueInfo } from '../../models/lib/onnx-builder.js';
import { writeModelFiles } from '../../models/lib/repository-writer.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { TensorProto_DataType } from '../../src/generated/onnx/onnx_pb.js';
import { tempRepository } from './helpers/repositories.js';
import { f32Bytes, readF32, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

// Reshapes its input to [-1, 3]: fine for 3 or 6 elements, an onnxruntime error for 2.
const reshapeModel = () =>
  serializeModel({
    name: 'reshape_three',
    doc: 'Fails inside onnxruntime when the element count is not a multiple of 3.',
    inputs: [tensorValueInfo('X', TensorProto_DataType.FLOAT, [-1])],
    outputs: [tensorValueInfo('Y', TensorProto_DataType.FLOAT, [-1, 3])],
    nodes: [
      node('Constant', [], ['target_shape'], { attributes: [attrInts('value_ints', [-1, 3])] }),
      node('Reshape', ['X', 'target_shape'], ['Y']),
    ],
  });

beforeAll(async () => {
  served = await serveRepository(tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    // Three versions under the default policy (latest 1) and under `all`.
    for (const version of [1, 2, 3]) {
      await writeIdentityModel(dir, { name: 'versioned', dtype: 'FP32', maxBatchSize: 4, withConfig: true, version });
      await writeIdentityModel(dir, { name: 'versioned_all', dtype: 'INT32', maxBatchSize: 4, withConfig: true, version });
    }
    await appendFile(path.join(dir, 'versioned_all', 'config.pbtxt'), '\nversion_policy: { all: {} }\nfuture_option: { depth: 3 }\n');
    await writeIdentityModel(dir, { name: 'no_config', dtype: 'FP32', maxBatchSize: 4, withConfig: false, dims: [2] });
    await writeIdentityModel(dir, { name: 'broken_config', dtype: 'FP32', maxBatchSize: 4, withConfig: false });
    await writeFile(path.join(dir, 'broken_config', 'config.pbtxt'), 'name: "broken_config"\nmax_batch_size: 4\ninput [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] ]\n');
    await writeModelFiles(dir, {
      name: 'reshape_three',
      model: reshapeModel,
      config: [
        'name: "reshape_three"',
        'max_batch_size: 0',
        'input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]',
        'output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 3 ] } ]',
      ].join('\n'),
    });
  }));
});

afterAll(() => served?.close());

const ctrRequest = (seed: number): Message => ({
  model_name: 'ctr_mlp',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32] }],
  raw_input_contents: [f32Bytes(Float32Array.from({ length: 32 }, (_, i) => Math.sin(seed * 3 + i)))],
});

describe('version policy', () => {
  it('serves only the latest version by default', async () => {
    const metadata = await served.client.call('ModelMetadata', { name: 'versioned' });
    expect(metadata['versions']).toEqual(['3']);
    const err = await served.client.callError('ModelInfer', {
      model_name: 'versioned', model_version: '1',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1] }], raw_input_contents: [f32Bytes([1])],
    });
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toMatch(/model 'versioned' version 1 is not found; loaded versions: 3/);
  });

  it('serves every version under `all`, and warns about an unknown config field without failing', async () => {
    const metadata = await served.client.call('ModelMetadata', { name: 'versioned_all' });
    expect(metadata['versions']).toEqual(['3', '2', '1']);
    for (const version of ['1', '2', '3']) {
      const response = await served.client.call('ModelInfer', {
        model_name: 'versioned_all', model_version: version,
        inputs: [{ name: 'INPUT0', datatype: 'INT32', shape: [1, 2] }], raw_input_contents: [Buffer.from(Int32Array.from([7, -7]).buffer)],
      });
      expect(response['model_version']).toBe(version);
      expect(Buffer.from(response['raw_output_contents'][0])).toEqual(Buffer.from(Int32Array.from([7, -7]).buffer));
    }
    const warning = served.server.logs.find((l) => l['level'] === 'warn' && String(l['msg']).includes('future_option'));
    expect(warning?.['msg']).toMatch(/versioned_all[/\\]config\.pbtxt:\d+: unknown field 'future_option'/);
  });
});

describe('config', () => {
  it('completes a missing config.pbtxt from the ONNX model', async () => {
    const { config } = await served.client.call('ModelConfig', { name: 'no_config' });
    expect(config).toMatchObject({ name: 'no_config', platform: 'onnxruntime_onnx', max_batch_size: 4 });
    expect(config.input).toMatchObject([{ name: 'INPUT0', data_type: 'TYPE_FP32', dims: ['2'] }]);
    expect(config.output).toMatchObject([{ name: 'OUTPUT0', data_type: 'TYPE_FP32', dims: ['2'] }]);
  });

  it('fails only the model with an invalid config, with file, line, column and reason', async () => {
    const { models } = await served.client.call('RepositoryIndex', {});
    const broken = models.find((m: Message) => m['name'] === 'broken_config');
    expect(broken).toMatchObject({ version: '', state: 'UNAVAILABLE' });
    expect(broken.reason).toMatch(/broken_config[/\\]config\.pbtxt:3:60: expected "}" to close the "\{" at line 3, column 9, got "\]"/);
    expect(models.filter((m: Message) => m['state'] === 'READY').map((m: Message) => m['name'])).toEqual(
      expect.arrayContaining(['ctr_mlp', 'no_config', 'reshape_three', 'versioned', 'versioned_all']),
    );
    const err = await served.client.callError('ModelInfer', { model_name: 'broken_config' });
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/model 'broken_config' is not ready \(UNAVAILABLE: .*config\.pbtxt:3:/);
  });
});

describe('onnxruntime errors', () => {
  it('surface as INTERNAL with onnxruntime\'s message, and the model keeps serving', async () => {
    const call = (values: number[]) => ({
      model_name: 'reshape_three',
      inputs: [{ name: 'X', datatype: 'FP32', shape: [values.length] }],
      raw_input_contents: [f32Bytes(values)],
    });
    const err = await served.client.callError('ModelInfer', call([1, 2]));
    expect(err.code).toBe(grpc.status.INTERNAL);
    expect(err.details).toMatch(/^inference failed: .*reshape/i);
    const ok = await served.client.call('ModelInfer', call([1, 2, 3, 4, 5, 6]));
    expect(ok['outputs'][0].shape).toEqual(['2', '3']);
  });
});

describe('load and unload at run time', () => {
  it('unloads under traffic without failing admitted requests, then reloads', async () => {
    const expected = readF32((await served.client.call('ModelInfer', ctrRequest(1)))['raw_output_contents'][0]);
    let successes = 0;
    const failures: { code: number; details: string }[] = [];
    const loop = async () => {
      for (;;) {
        try {
          const response = await served.client.call('ModelInfer', ctrRequest(1));
          expect(readF32(response['raw_output_contents'][0])).toEqual(expected);
          successes += 1;
        } catch (err) {
          failures.push(err as { code: number; details: string });
          return;
        }
      }
    };
    const loops = Array.from({ length: 8 }, loop);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await served.client.call('RepositoryModelUnload', { model_name: 'ctr_mlp' });
    await Promise.all(loops);
    expect(successes).toBeGreaterThan(8);
    expect(failures).toHaveLength(8);
    for (const failure of failures) {
      expect(failure.code).toBe(grpc.status.UNAVAILABLE);
      expect(failure.details).toMatch(/model 'ctr_mlp' is not ready \((UNLOADING|UNAVAILABLE: unloaded)\)/);
    }
    expect(await served.client.call('ModelReady', { name: 'ctr_mlp' })).toEqual({ ready: false });
    const { models } = await served.client.call('RepositoryIndex', {});
    expect(models.find((m: Message) => m['name'] === 'ctr_mlp')).toMatchObject({ state: 'UNAVAILABLE', reason: 'unloaded' });

    await served.client.call('RepositoryModelLoad', { model_name: 'ctr_mlp' });
    expect(await served.client.call('ModelReady', { name: 'ctr_mlp' })).toEqual({ ready: true });
    expect(readF32((await served.client.call('ModelInfer', ctrRequest(1)))['raw_output_contents'][0])).toEqual(expected);
  });

  it('loads a model added after start-up, and refuses one that does not exist', async () => {
    await writeIdentityModel(served.dir, { name: 'late_arrival', dtype: 'INT64', maxBatchSize: 2, withConfig: true });
    await served.client.call('RepositoryModelLoad', { model_name: 'late_arrival' });
    expect(await served.client.call('ModelReady', { name: 'late_arrival' })).toEqual({ ready: true });
    const err = await served.client.callError('RepositoryModelLoad', { model_name: 'never_was' });
    expect(err.code).toBe(grpc.status.NOT_FOUND);
    expect(err.details).toMatch(/model 'never_was' is not found in repository/);
  });

  it('is not ready while a start-up model is broken, and ready once it is unloaded', async () => {
    expect(await served.client.call('ServerReady')).toEqual({ ready: false });
    await served.client.call('RepositoryModelUnload', { model_name: 'broken_config' });
    expect(await served.client.call('ServerReady')).toEqual({ ready: true });
  });
});
