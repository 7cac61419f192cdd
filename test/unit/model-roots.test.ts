/**
 * Several repository roots served as one (repository/model-roots.ts), as
 * Triton serves several --model-repository flags: names are the union of the
 * roots; a name in two roots is an error for that model; paths stay out of
 * what clients see.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuplicateModelError, ModelRoots } from '../../src/repository/model-roots.js';

let base: string;
let a: string;
let b: string;

async function model(root: string, name: string): Promise<void> {
  await mkdir(path.join(root, name, '1'), { recursive: true });
  await writeFile(path.join(root, name, 'config.pbtxt'), `name: "${name}"\n`);
}

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), 'hotpath-roots-'));
  a = path.join(base, 'a');
  b = path.join(base, 'b');
  await model(a, 'ctr');
  await model(a, 'shared');
  await model(b, 'ranker');
  await model(b, 'shared');
  // Not a model: no config.pbtxt and no version directory.
  await mkdir(path.join(b, 'lib'), { recursive: true });
});

afterAll(() => rm(base, { recursive: true, force: true }));

describe('ModelRoots', () => {
  it('scans every root into one sorted list of names, each once', async () => {
    expect(await new ModelRoots([a, b]).scan()).toEqual(['ctr', 'ranker', 'shared']);
    expect(await new ModelRoots(a).scan()).toEqual(['ctr', 'shared']);
  });

  it("finds a model's one directory, in whichever root has it", () => {
    const roots = new ModelRoots([a, b]);
    expect(roots.modelDir('ctr')).toBe(path.join(a, 'ctr'));
    expect(roots.modelDir('ranker')).toBe(path.join(b, 'ranker'));
    expect(roots.modelDir('missing')).toBeUndefined();
    expect(roots.has('ranker')).toBe(true);
    expect(roots.has('missing')).toBe(false);
  });

  it('refuses a name found in two roots, naming both', () => {
    const roots = new ModelRoots([a, b]);
    expect(roots.dirsOf('shared')).toEqual([path.join(a, 'shared'), path.join(b, 'shared')]);
    expect(() => roots.modelDir('shared')).toThrow(DuplicateModelError);
    // Named by their place on the command line, not their paths: clients see the message.
    expect(() => roots.modelDir('shared')).toThrow(
      "model 'shared' is in 2 model repositories (--model-repository number 1 and 2); expected each model name in one repository only",
    );
    expect(() => new ModelRoots([b, path.join(base, 'none'), a]).modelDir('shared')).toThrow(/\(--model-repository number 1 and 3\)/);
  });

  it("keeps every root's path out of a message for clients", () => {
    const roots = new ModelRoots([a, b]);
    expect(roots.withoutPaths(`${a}/ctr/config.pbtxt:3: bad; also ${b}/ranker/1/model.onnx`)).toBe('ctr/config.pbtxt:3: bad; also ranker/1/model.onnx');
  });

  it('needs at least one root', () => {
    expect(() => new ModelRoots([])).toThrow(/at least one repository directory/);
  });
});
