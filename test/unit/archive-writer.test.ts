/**
 * The payload archive's writer (src/datachecks/archive/payload-archive.ts and
 * its writer thread, run from dist/ as the server runs it): N offered
 * requests give N records, sampling and the per-model override, a full queue
 * drops and counts instead of waiting, and an archive whose writer process
 * was killed (and whose last record was then cut short, as a machine going
 * down leaves it) reads up to the torn tail and goes on with the next writer.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat, truncate } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { create, equals } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { ModelInferRequestSchema, ModelInferResponseSchema } from '../../src/generated/grpc_service_pb.js';
import { PayloadArchive, type ArchiveEntry, type ArchiveSettings } from '../../src/datachecks/archive/payload-archive.js';
import { ArchiveReader, archivedRequest, archivedResponse, type SegmentRead } from '../../src/datachecks/archive/archive-reader.js';

const PACKAGE_ROOT = path.resolve(import.meta.dirname, '..', '..');

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-archive-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function entry(i: number, overrides: Partial<ArchiveEntry> = {}): ArchiveEntry {
  return {
    request: create(ModelInferRequestSchema, {
      modelName: 'ctr',
      id: `client-${i}`,
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1n, 4n] }],
      rawInputContents: [new Uint8Array(Float32Array.of(i, 1, 2, 3).buffer)],
    }),
    response: create(ModelInferResponseSchema, {
      modelName: 'ctr',
      modelVersion: '1',
      id: `client-${i}`,
      outputs: [{ name: 'score', datatype: 'FP32', shape: [1n, 1n] }],
      rawOutputContents: [new Uint8Array(Float32Array.of(i / 100).buffer)],
    }),
    statusCode: 0,
    requestId: `req-${i}`,
    model: 'ctr',
    version: '1',
    latencyNs: 2_000_000 + i,
    ...overrides,
  };
}

function capture() {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

function archive(settings: Partial<ArchiveSettings> = {}, logger = capture().logger): PayloadArchive {
  return new PayloadArchive({ dir, sampleRate: 1, maxBytes: 1 << 24, segmentBytes: 1 << 20, ...settings }, logger);
}

async function readAll(onSegment?: (read: SegmentRead) => void) {
  const records = [];
  for await (const record of new ArchiveReader(dir).records(onSegment)) records.push(record);
  return records;
}

describe('payload archive', () => {
  it('writes one record per request offered, in order, with its header, request and answer', async () => {
    const a = archive({ segmentBytes: 4096 });
    const before = Date.now();
    for (let i = 0; i < 250; i++) a.record(entry(i));
    a.record(entry(250, { response: undefined, statusCode: 3, statusMessage: "input 'features': expected shape [-1,4], got [1,3]" }));
    await a.close();
    const records = await readAll();
    expect(records).toHaveLength(251);
    expect(records.map((r) => r.requestId)).toEqual(Array.from({ length: 251 }, (_, i) => `req-${i}`));
    const r7 = records[7]!;
    expect(r7).toMatchObject({ model: 'ctr', version: '1', statusCode: 0, latencyNs: 2_000_007 });
    expect(r7.timeUnixMs).toBeGreaterThanOrEqual(before - 10);
    expect(r7.timeUnixMs).toBeLessThanOrEqual(Date.now());
    expect(equals(ModelInferRequestSchema, archivedRequest(r7), entry(7).request)).toBe(true);
    expect(equals(ModelInferResponseSchema, archivedResponse(r7)!, entry(7).response!)).toBe(true);
    expect(records[250]).toMatchObject({ statusCode: 3, response: undefined, statusMessage: expect.stringMatching(/expected shape/) });
    const counts = a.counts();
    expect(counts.records).toBe(251);
    const files = await readdir(dir);
    expect(files.length).toBeGreaterThan(1);
    let bytes = 0;
    for (const file of files) bytes += (await stat(path.join(dir, file))).size;
    expect(counts.writtenBytes).toBe(bytes);
    expect(Object.values(counts.dropped).every((n) => n === 0)).toBe(true);
  });

  it('samples by the server rate and by a model\'s own hotpath_archive_sample_rate', async () => {
    const { logger, lines } = capture();
    const a = archive({ sampleRate: 0 }, logger);
    const always = { hotpath_archive_sample_rate: { stringValue: '1' } };
    const never = { hotpath_archive_sample_rate: { stringValue: '0' } };
    const invalid = { hotpath_archive_sample_rate: { stringValue: 'lots' } };
    for (let i = 0; i < 20; i++) a.record(entry(i));
    for (let i = 20; i < 30; i++) a.record(entry(i, { modelParameters: always }));
    for (let i = 30; i < 40; i++) a.record(entry(i, { modelParameters: invalid }));
    await a.flush();
    const half = archive({ sampleRate: 1, segmentBytes: 1 << 20 }, logger);
    await a.close();
    for (let i = 40; i < 50; i++) half.record(entry(i, { modelParameters: never }));
    half.record(entry(50));
    await half.close();
    const ids = (await readAll()).map((r) => r.requestId);
    expect(ids).toEqual([...Array.from({ length: 10 }, (_, i) => `req-${20 + i}`), 'req-50']);
    const warnings = lines.filter((line) => line.msg === "ignoring the model's archive sample rate");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.problem).toMatch(/hotpath_archive_sample_rate.*expected a number in 0\.\.1, got 'lots'/);
  });

  it('drops and counts what does not fit its queue, without waiting', async () => {
    const a = archive({ queueRecords: 8 });
    const started = performance.now();
    for (let i = 0; i < 100; i++) a.record(entry(i));
    const offerMs = performance.now() - started;
    expect(a.counts().dropped.queue_full).toBe(92);
    await a.flush();
    expect(a.counts().records).toBe(8);
    await a.close();
    a.record(entry(100));
    expect(a.counts().dropped.closed).toBe(1);
    expect(await readAll()).toHaveLength(8);
    // Offering is a reference and a counter: 100 offers take far less than a millisecond each.
    expect(offerMs).toBeLessThan(100);
  });

  it('bounds the bytes waiting for the writer', async () => {
    const big = (i: number) => entry(i, { request: create(ModelInferRequestSchema, { modelName: 'ctr', rawInputContents: [new Uint8Array(100_000)] }) });
    const a = archive({ queueBytes: 350_000 });
    for (let i = 0; i < 10; i++) a.record(big(i));
    expect(a.counts().dropped.queue_full).toBe(7);
    await a.close();
    expect(await readAll()).toHaveLength(3);
  });

  it('counts records larger than the archive bound as too large', async () => {
    const a = archive({ maxBytes: 64 * 1024, segmentBytes: 16 * 1024 });
    a.record(entry(0));
    a.record(entry(1, { request: create(ModelInferRequestSchema, { modelName: 'ctr', rawInputContents: [new Uint8Array(100_000)] }) }));
    a.record(entry(2));
    await a.close();
    expect(a.counts()).toMatchObject({ records: 2, dropped: { too_large: 1 } });
  });

  it('survives its process being killed mid-write: a torn tail is skipped, and a new writer starts a new segment', async () => {
    // A writer process archiving 64 KiB requests as fast as it can (rotating and
    // deleting segments as it goes), killed without warning.
    const script = `
      import { create } from '@bufbuild/protobuf';
      import { pino } from 'pino';
      import { ModelInferRequestSchema } from ${JSON.stringify(path.join(PACKAGE_ROOT, 'dist/src/generated/grpc_service_pb.js'))};
      import { PayloadArchive } from ${JSON.stringify(path.join(PACKAGE_ROOT, 'dist/src/datachecks/archive/payload-archive.js'))};
      const archive = new PayloadArchive({ dir: ${JSON.stringify(dir)}, sampleRate: 1, maxBytes: 64 << 20, segmentBytes: 8 << 20 }, pino({ level: 'silent' }));
      let i = 0;
      let told = false;
      const raw = new Uint8Array(64 * 1024).fill(7);
      const burst = () => {
        for (let k = 0; k < 16; k++, i++) {
          archive.record({ request: create(ModelInferRequestSchema, { modelName: 'ctr', id: String(i), rawInputContents: [raw] }), statusCode: 0, requestId: 'req-' + i, model: 'ctr', version: '1', latencyNs: 1 });
        }
        if (!told && archive.counts().records > 0) {
          told = true;
          process.stdout.write('writing\\n');
        }
        setImmediate(burst);
      };
      burst();
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { cwd: PACKAGE_ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    const exited = new Promise((resolve) => child.once('exit', resolve));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('writing') && resolve());
        child.once('exit', (code) => reject(new Error(`the writer exited early (${code})`)));
        setTimeout(() => reject(new Error('the writer wrote nothing in 20 s')), 20_000);
      });
      // Let the writer thread get well into its segments, then kill the process mid-stream.
      await new Promise((resolve) => setTimeout(resolve, 200));
    } finally {
      child.kill('SIGKILL');
      await exited;
    }

    const reads: SegmentRead[] = [];
    const killed = await readAll((read) => reads.push(read));
    expect(killed.length).toBeGreaterThan(0);
    const ids = killed.map((r) => Number(r.requestId.slice(4)));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    // Only the segment being written when the process died can have a tail, and it runs to the end of the file.
    for (const read of reads.slice(0, -1)) expect(read.tail).toBeUndefined();
    const last = reads.at(-1)!;
    if (last.tail !== undefined) expect(last.tail.offset + last.tail.bytes).toBe(last.segment.bytes);

    // A kill lands between two writes; what the machine going down with it
    // leaves is a record cut short: the page cache's unsynced end lost.
    const torn = [...reads].reverse().find((read) => read.records.length > 0)!;
    const cut = torn.records.at(-1)!;
    const cutAt = cut.offset + 8 + 1000;
    await truncate(torn.segment.file, cutAt);
    const survivors = killed.filter((r) => r !== cut);

    // Reading skips the torn record, and the next writer's records follow in a segment of their own.
    const next = archive({ maxBytes: 1 << 30 });
    for (let i = 0; i < 3; i++) next.record(entry(1000 + i));
    await next.close();
    const after: SegmentRead[] = [];
    const all = await readAll((read) => after.push(read));
    expect(after).toHaveLength(reads.length + 1);
    expect(after.find((read) => read.segment.name === torn.segment.name)!.tail).toEqual({ offset: cut.offset, bytes: 1008, reason: 'torn_record' });
    expect(all.map((r) => r.requestId)).toEqual([...survivors.map((r) => r.requestId), 'req-1000', 'req-1001', 'req-1002']);
  });
});
