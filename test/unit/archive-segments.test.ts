/**
 * Segments on disk (src/datachecks/archive/segment-store.ts and
 * archive-reader.ts): rotation by size, retention under the byte bound with
 * the oldest deleted first, a new writer never appending to an old segment,
 * and a reader that sees only what existed when it opened.
 */
import { mkdtemp, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SegmentStore } from '../../src/datachecks/archive/segment-store.js';
import { ArchiveReader, snapshotSegments, ArchiveDirectoryError } from '../../src/datachecks/archive/archive-reader.js';
import { encodeRecordPayload } from '../../src/datachecks/archive/record-format.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-archive-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A record payload of about `size` bytes, identified by `id`. */
function record(id: number, size = 200): Uint8Array {
  return encodeRecordPayload(
    { timeUnixMs: 1_700_000_000_000 + id, requestId: `q${id}`, model: 'm', version: '1', latencyNs: 1, statusCode: 0 },
    new Uint8Array(size).fill(id & 0xff),
    undefined,
  );
}

async function onDisk(): Promise<{ names: string[]; bytes: number }> {
  const names = (await readdir(dir)).filter((name) => name.endsWith('.hparc')).sort();
  let bytes = 0;
  for (const name of names) bytes += (await stat(path.join(dir, name))).size;
  return { names, bytes };
}

async function readIds(): Promise<number[]> {
  const ids: number[] = [];
  for await (const r of new ArchiveReader(dir).records()) ids.push(Number(r.requestId.slice(1)));
  return ids;
}

describe('segment store', () => {
  it('writes every record, rotating segments before they pass their size', async () => {
    const store = new SegmentStore({ dir, segmentBytes: 4096, maxBytes: 1 << 20 });
    const result = store.append(Array.from({ length: 100 }, (_, i) => record(i)));
    store.close();
    const { names, bytes } = await onDisk();
    expect(result.records).toBe(100);
    expect(result.bytes).toBe(bytes);
    expect(names.length).toBeGreaterThan(4);
    for (const name of names) expect((await stat(path.join(dir, name))).size).toBeLessThanOrEqual(4096);
    expect(await readIds()).toEqual(Array.from({ length: 100 }, (_, i) => i));
  });

  it('holds the byte bound after every append, deleting the oldest segments first', async () => {
    const maxBytes = 16 * 1024;
    const store = new SegmentStore({ dir, segmentBytes: 4096, maxBytes });
    let next = 0;
    for (let batch = 0; batch < 60; batch++) {
      store.append(Array.from({ length: 1 + (batch % 7) }, () => record(next++, 100 + ((next * 37) % 300))));
      const { bytes } = await onDisk();
      expect(bytes).toBeLessThanOrEqual(maxBytes);
      expect(store.totalBytes).toBe(bytes);
    }
    store.close();
    const ids = await readIds();
    // What is left is the newest records, in order, ending with the last one written.
    expect(ids.at(-1)).toBe(next - 1);
    expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => next - ids.length + i));
    expect((await onDisk()).bytes).toBeGreaterThan(maxBytes - 2 * 4096);
  });

  it('refuses a record larger than the whole bound, and writes one larger than a segment alone', async () => {
    const store = new SegmentStore({ dir, segmentBytes: 4096, maxBytes: 16 * 1024 });
    const result = store.append([record(1), record(2, 20_000), record(3, 8000), record(4)]);
    store.close();
    expect(result).toMatchObject({ records: 3, tooLarge: 1 });
    expect(await readIds()).toEqual([1, 3, 4]);
    expect((await onDisk()).bytes).toBeLessThanOrEqual(16 * 1024);
  });

  it('starts a new segment when reopened, leaving a torn tail alone in its file', async () => {
    const first = new SegmentStore({ dir, segmentBytes: 1 << 20, maxBytes: 4 << 20 });
    first.append([record(0), record(1), record(2)]);
    first.close();
    const [name] = (await onDisk()).names;
    // The writer was killed halfway through record 2.
    const size = (await stat(path.join(dir, name!))).size;
    await truncate(path.join(dir, name!), size - 50);
    const second = new SegmentStore({ dir, segmentBytes: 1 << 20, maxBytes: 4 << 20 });
    second.append([record(3), record(4)]);
    second.close();
    expect((await onDisk()).names).toHaveLength(2);
    const reader = new ArchiveReader(dir);
    const tails: unknown[] = [];
    const ids: number[] = [];
    for await (const r of reader.records((read) => tails.push(read.tail?.reason))) ids.push(Number(r.requestId.slice(1)));
    expect(ids).toEqual([0, 1, 3, 4]);
    expect(tails).toEqual(['torn_record', undefined]);
  });

  it('counts existing segments against the bound when it starts', async () => {
    const old = new SegmentStore({ dir, segmentBytes: 4096, maxBytes: 64 * 1024 });
    old.append(Array.from({ length: 200 }, (_, i) => record(i)));
    old.close();
    expect((await onDisk()).bytes).toBeGreaterThan(16 * 1024);
    const smaller = new SegmentStore({ dir, segmentBytes: 4096, maxBytes: 16 * 1024 });
    smaller.append([record(1000)]);
    smaller.close();
    expect((await onDisk()).bytes).toBeLessThanOrEqual(16 * 1024);
    expect((await readIds()).at(-1)).toBe(1000);
  });
});

describe('archive reader', () => {
  it('reads the segments and sizes of its snapshot, not what is written later', async () => {
    const store = new SegmentStore({ dir, segmentBytes: 2048, maxBytes: 1 << 20 });
    store.append(Array.from({ length: 20 }, (_, i) => record(i)));
    const reader = new ArchiveReader(dir);
    // Written after the reader opened: into the open segment and into new ones.
    store.append(Array.from({ length: 20 }, (_, i) => record(100 + i)));
    store.close();
    const ids: number[] = [];
    for await (const r of reader.records()) ids.push(Number(r.requestId.slice(1)));
    expect(ids).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(await readIds()).toHaveLength(40);
  });

  it('reports a segment deleted after the snapshot as missing', async () => {
    const store = new SegmentStore({ dir, segmentBytes: 1024, maxBytes: 1 << 20 });
    store.append(Array.from({ length: 20 }, (_, i) => record(i)));
    store.close();
    const reader = new ArchiveReader(dir);
    await rm(reader.segments[0]!.file);
    const missing: string[] = [];
    let count = 0;
    for await (const _ of reader.records((read) => read.missing && missing.push(read.segment.name))) count += 1;
    expect(missing).toEqual([reader.segments[0]!.name]);
    expect(count).toBeGreaterThan(0);
  });

  it('ignores other files and refuses a directory that is not there', async () => {
    await writeFile(path.join(dir, 'README.txt'), 'hello');
    expect(snapshotSegments(dir)).toEqual([]);
    expect(() => snapshotSegments(path.join(dir, 'nope'))).toThrow(ArchiveDirectoryError);
    expect(() => snapshotSegments(path.join(dir, 'nope'))).toThrow(/does not exist/);
  });
});
