/**
 * Replay's comparison (src/datachecks/archive/replay.ts): per output, answers
 * compared, differing beyond the tolerance, the largest absolute difference;
 * NaN, shape changes, missing outputs and BYTES; latency percentiles. Also
 * the archive's serve flags (archive-options.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compareAnswers, latencyReport, type OutputReport } from '../../src/datachecks/archive/replay.js';
import { archiveSettings } from '../../src/datachecks/archive/archive-options.js';
import { jsonData } from '../../src/datachecks/archive/tensor-values.js';
import { halfToFloat } from '../../src/tensor/float16.js';
import { parseSampleRate } from '../../src/datachecks/archive/sample-rate.js';
import type { OutputTensor } from '../../src/client/tensors.js';
import { UsageError } from '../../src/common/flag-values.js';

const fp32 = (name: string, values: number[], shape = [values.length, 1]): OutputTensor => ({
  name,
  datatype: 'FP32',
  shape,
  data: Float32Array.from(values),
  parameters: {},
});
const bytes = (name: string, values: string[]): OutputTensor => ({
  name,
  datatype: 'BYTES',
  shape: [values.length],
  data: values.map((v) => new TextEncoder().encode(v)),
  parameters: {},
});

describe('comparing answers', () => {
  it('counts differences beyond the tolerance and keeps the largest', () => {
    const outputs: Record<string, OutputReport> = {};
    expect(compareAnswers({ score: fp32('score', [0.5, 0.25]) }, { score: fp32('score', [0.5, 0.25]) }, 1e-6, outputs)).toBe(false);
    expect(compareAnswers({ score: fp32('score', [0.5, 0.25]) }, { score: fp32('score', [0.5000001, 0.25]) }, 1e-6, outputs)).toBe(false);
    expect(compareAnswers({ score: fp32('score', [0.5, 0.25]) }, { score: fp32('score', [0.5, 0.375]) }, 1e-6, outputs)).toBe(true);
    expect(outputs.score).toEqual({ compared: 3, differing: 1, max_abs_diff: 0.125, mismatched: 0 });
  });

  it('treats a NaN on one side, a shape change or a missing output as a difference', () => {
    const outputs: Record<string, OutputReport> = {};
    expect(compareAnswers({ a: fp32('a', [Number.NaN]) }, { a: fp32('a', [Number.NaN]) }, 0, outputs)).toBe(false);
    expect(compareAnswers({ a: fp32('a', [Number.NaN]) }, { a: fp32('a', [1]) }, 0, outputs)).toBe(true);
    expect(outputs.a).toMatchObject({ compared: 2, differing: 1, max_abs_diff: Infinity });
    expect(compareAnswers({ b: fp32('b', [1, 2]) }, { b: fp32('b', [1, 2], [1, 2]) }, 0, outputs)).toBe(true);
    expect(compareAnswers({ c: fp32('c', [1]) }, {}, 0, outputs)).toBe(true);
    expect(outputs.b).toMatchObject({ differing: 1, mismatched: 1 });
    expect(outputs.c).toMatchObject({ differing: 1, mismatched: 1 });
  });

  it('compares BYTES outputs element by element, without a numeric difference', () => {
    const outputs: Record<string, OutputReport> = {};
    expect(compareAnswers({ t: bytes('t', ['a', 'bb']) }, { t: bytes('t', ['a', 'bb']) }, 0, outputs)).toBe(false);
    expect(compareAnswers({ t: bytes('t', ['a', 'bb']) }, { t: bytes('t', ['a', 'bc']) }, 0, outputs)).toBe(true);
    expect(outputs.t).toEqual({ compared: 2, differing: 1, max_abs_diff: null, mismatched: 0 });
  });

  it('reports nearest-rank p50 and p99', () => {
    const samples = Array.from({ length: 200 }, (_, i) => 200 - i);
    expect(latencyReport(samples)).toMatchObject({ count: 200, p50_ms: 100, p99_ms: 198, max_ms: 200, mean_ms: 100.5 });
    expect(latencyReport([])).toEqual({ count: 0, p50_ms: null, p99_ms: null, mean_ms: null, max_ms: null });
  });

  it('decodes FP16 and 64-bit integers for JSON', () => {
    expect([0x3c00, 0xc000, 0x3555, 0x7c00].map(halfToFloat)).toEqual([1, -2, 0.333251953125, Infinity]);
    expect(jsonData({ name: 'x', datatype: 'INT64', shape: [2], data: BigInt64Array.of(5n, 2n ** 60n), parameters: {} })).toEqual([5, '1152921504606846976']);
    expect(jsonData({ name: 'x', datatype: 'BOOL', shape: [2], data: Uint8Array.of(1, 0), parameters: {} })).toEqual([true, false]);
  });
});

describe('archive flags and parameters', () => {
  it('are off without --archive, and refuse their options alone', () => {
    expect(archiveSettings({})).toBeUndefined();
    expect(() => archiveSettings({ 'archive-sample-rate': '0.5' })).toThrow(UsageError);
    expect(() => archiveSettings({ 'archive-sample-rate': '0.5' })).toThrow(/--archive-sample-rate: given without --archive/);
  });

  it('take defaults, sizes and a checked rate', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-archive-flags-'));
    try {
      const archive = path.join(dir, 'new', 'archive');
      expect(archiveSettings({ archive })).toEqual({ dir: archive, sampleRate: 1, maxBytes: 2 ** 30, segmentBytes: 64 * 2 ** 20, queueBytes: 64 * 2 ** 20 });
      expect(archiveSettings({ archive, 'archive-max-bytes': '1MiB' })?.segmentBytes).toBe(2 ** 18);
      expect(archiveSettings({ archive, 'archive-sample-rate': '0.25', 'archive-segment-size': '128KiB' })).toMatchObject({ sampleRate: 0.25, segmentBytes: 2 ** 17 });
      expect(() => archiveSettings({ archive, 'archive-sample-rate': '2' })).toThrow(/--archive-sample-rate: expected a number in 0\.\.1, got '2'/);
      expect(() => archiveSettings({ archive, 'archive-max-bytes': '1MiB', 'archive-segment-size': '2MiB' })).toThrow(/--archive-segment-size/);
      expect(() => archiveSettings({ archive: path.join(archive, 'x'), 'archive-max-bytes': '1KiB' })).toThrow(/--archive-max-bytes: expected at least/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('read a model\'s hotpath_archive_sample_rate', () => {
    expect(parseSampleRate(undefined)).toBeUndefined();
    expect(parseSampleRate('0.1')).toBe(0.1);
    expect(parseSampleRate('0')).toBe(0);
    expect(parseSampleRate('1.5')).toMatch(/expected a number in 0\.\.1, got '1\.5'/);
    expect(parseSampleRate('')).toMatch(/got ''/);
  });
});
