/**
 * Temporary model repositories for e2e tests, written with the same generator
 * that produces `models/`, so every test starts from known files.
 */
import { mkdtemp, rm } from 'node:fs/promises';
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
