/**
 * Temporary model repositories for e2e tests, written with the same generator
 * that produces `models/`, so every test starts from known files.
 */
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { writeSampleRepository } from '../../../models/lib/sample-models.js';

export async function tempRepository(
  populate: (dir: string) => Promise<unknown>,
): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-e2e-'));
  await populate(dir);
  return { dir, remove: () => rm(dir, { recursive: true, force: true }) };
}

export function sampleRepository(only: string[]): Promise<{ dir: string; remove: () => Promise<void> }> {
  return tempRepository((dir) => writeSampleRepository(dir, { only }));
}

/** Runs a model directly in onnxruntime-node (no server): the reference for e2e results. */
export async function directRun(
  modelPath: string,
  feeds: Record<string, ort.Tensor>,
): Promise<Record<string, ort.Tensor>> {
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  try {
    return (await session.run(feeds)) as Record<string, ort.Tensor>;
  } finally {
    await session.release();
  }
}

/** A copy of model `source`'s version 1 under another name, with `config` as its config.pbtxt. */
export async function modelVariant(dir: string, source: string, name: string, config: string): Promise<void> {
  await mkdir(path.join(dir, name, '1'), { recursive: true });
  await copyFile(path.join(dir, source, '1', 'model.onnx'), path.join(dir, name, '1', 'model.onnx'));
  await writeFile(path.join(dir, name, 'config.pbtxt'), config);
}

/** ctr_mlp's model under another name and config (its I/O: features FP32 [32] → score FP32 [1]), `extra` appended. */
export function ctrVariant(dir: string, name: string, extra: string): Promise<void> {
  return modelVariant(
    dir,
    'ctr_mlp',
    name,
    `name: "${name}"\nmax_batch_size: 64\n` +
      'input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]\n' +
      'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' +
      extra,
  );
}
