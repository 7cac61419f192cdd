/**
 * `hotpath drift-reference --csv|--npy` (src/datachecks/drift/drift-reference-cli.ts):
 * a CSV file's or a .npy array's columns become one tensor's features; a
 * CSV header line is skipped, a ragged row is refused with its line number,
 * and the reference lands in the model directory.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { driftReferenceCommand, fromCsv, fromNpy } from '../../src/datachecks/drift/drift-reference-cli.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-drift-csv-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('drift-reference --csv', () => {
  it('builds one tensor from the columns, skipping the header', async () => {
    const file = path.join(dir, 'rows.csv');
    const lines = ['a,b,c', ...Array.from({ length: 100 }, (_, i) => `${i},${i * 2},${i % 2}`)];
    await writeFile(file, `${lines.join('\n')}\n`);
    const reference = await fromCsv(file, 'features', 'input', 2);
    expect(reference).toMatchObject({ rows: 100, source: `csv:${file}` });
    expect(reference.tensors).toHaveLength(1);
    expect(reference.tensors[0]).toMatchObject({ name: 'features', kind: 'input' });
    expect(reference.tensors[0]!.features.map((f) => f.index)).toEqual([0, 1]);
    expect(reference.tensors[0]!.features[0]!.edges).toEqual([9, 19, 29, 39, 49, 59, 69, 79, 89]);
    expect(reference.tensors[0]!.features[0]!.proportions).toEqual(Array(10).fill(0.1));

    const modelDir = path.join(dir, 'model');
    const out = new PassThrough();
    let printed = '';
    out.on('data', (chunk) => (printed += String(chunk)));
    await driftReferenceCommand(['--model-dir', modelDir, '--csv', file, '--tensor', 'features'], out);
    expect(printed).toMatch(/drift\/reference\.json: 100 rows, 1 tensors, 3 features \(from csv:/);
    const written = JSON.parse(await readFile(path.join(modelDir, 'drift', 'reference.json'), 'utf8'));
    expect(written.tensors[0].features).toHaveLength(3);
  });

  it('refuses a ragged row with its line number', async () => {
    const file = path.join(dir, 'ragged.csv');
    await writeFile(file, '1,2\n3,4\n5\n');
    await expect(fromCsv(file, 'x', 'input', 32)).rejects.toThrow(/ragged\.csv: line 3 has 1 columns, the first row 2/);
  });

  it('reads a .npy array ([rows, F], little-endian f4, format 1.0)', async () => {
    const file = path.join(dir, 'rows.npy');
    const header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }";
    const padded = header.padEnd(64 - 10 - 1, ' ') + '\n';
    const head = Buffer.alloc(10);
    Buffer.from('\x93NUMPY', 'latin1').copy(head);
    head[6] = 1;
    head.writeUInt16LE(padded.length, 8);
    const data = Buffer.from(new Float32Array([1, 10, 2, 20, 3, 30, 4, 40]).buffer);
    await writeFile(file, Buffer.concat([head, Buffer.from(padded, 'latin1'), data]));
    const reference = await fromNpy(file, 'x', 'input', 32);
    expect(reference.rows).toBe(4);
    expect(reference.tensors[0]!.features.map((f) => f.sample)).toEqual([
      [1, 2, 3, 4],
      [10, 20, 30, 40],
    ]);
    await writeFile(path.join(dir, 'bad.npy'), 'not numpy');
    await expect(fromNpy(path.join(dir, 'bad.npy'), 'x', 'input', 32)).rejects.toThrow(/bad\.npy: not a \.npy file/);
  });
});
