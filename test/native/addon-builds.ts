// Which addon builds exist in this checkout, for the native test files.
// `npm install` builds the cmake-js addon and `npm run test:full` also the
// node-gyp one (native/run-native-tests.mjs); a build that is missing is
// reported as a skipped test, never as a pass.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface AddonBuild {
  readonly kind: 'cmake' | 'gyp';
  readonly path: string;
  readonly present: boolean;
}

export const addonBuilds: readonly AddonBuild[] = (
  [
    ['cmake', 'build-cmake/Release/hotpath_native.node'],
    ['gyp', 'build/Release/hotpath_native.node'],
  ] as const
).map(([kind, relative]) => {
  const file = path.join(repoRoot, relative);
  return { kind, path: file, present: existsSync(file) };
});

/** No NVIDIA device node: the CUDA runtime cannot see a GPU here. */
export const noGpu = !existsSync('/dev/nvidia0');

/**
 * Runs `code` (CommonJS source) in a fresh worker thread with `workerData`;
 * resolves with its exit code and the last message it posted.
 */
export function runWorkerCode<M>(code: string, workerData: unknown): Promise<{ exitCode: number; message: M | undefined }> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData });
    let message: M | undefined;
    worker.on('message', (m: M) => (message = m));
    worker.on('error', reject);
    worker.on('exit', (exitCode) => resolve({ exitCode, message }));
  });
}
