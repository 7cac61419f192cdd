// Writes one model into a Triton-layout repository:
//   <repo>/<name>/config.pbtxt        (optional)
//   <repo>/<name>/<version>/model.onnx
//
// Files are written to a temporary sibling and renamed into place. `npm install`
// runs the generator with --missing-only, which trusts any file that exists; an
// interrupted run must therefore never leave a truncated model.onnx behind.

import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export interface ModelFiles {
  name: string;
  /** Version directory name; defaults to 1. */
  version?: number;
  /** config.pbtxt text; omitted = no config file (Triton auto-complete case). */
  config?: string;
  /** Produces model.onnx bytes; called only when the file is going to be written. */
  model: () => Uint8Array;
}

export interface WrittenFile {
  path: string;
  /** `kept` = already present and left alone because of missingOnly. */
  action: 'written' | 'kept';
  bytes: number;
}

async function fileSize(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function writeAtomically(path: string, data: string | Uint8Array): Promise<void> {
  const tmp = `${path}.tmp-${process.pid}`;
  await writeFile(tmp, data);
  await rename(tmp, path);
}

async function writeOne(path: string, missingOnly: boolean, produce: () => string | Uint8Array): Promise<WrittenFile> {
  const existing = missingOnly ? await fileSize(path) : undefined;
  if (existing !== undefined) return { path, action: 'kept', bytes: existing };
  const data = produce();
  await writeAtomically(path, data);
  return { path, action: 'written', bytes: typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength };
}

/** Write (or, with missingOnly, complete) one model directory. */
export async function writeModelFiles(repoDir: string, files: ModelFiles, missingOnly = false): Promise<WrittenFile[]> {
  const modelDir = join(repoDir, files.name);
  const versionDir = join(modelDir, String(files.version ?? 1));
  await mkdir(versionDir, { recursive: true });
  const written: WrittenFile[] = [];
  const config = files.config;
  if (config !== undefined) {
    written.push(await writeOne(join(modelDir, 'config.pbtxt'), missingOnly, () => config));
  }
  written.push(await writeOne(join(versionDir, 'model.onnx'), missingOnly, files.model));
  return written;
}
