/**
 * DriftChecks (src/datachecks/drift/drift-checks.ts) without a server:
 * sampled rows fill a bounded window, the compute thread's PSI and KS set
 * the state (logged on change), and a version that no longer serves is
 * forgotten, its series with it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { create } from '@bufbuild/protobuf';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ModelInferRequestSchema, ModelInferResponseSchema } from '../../src/generated/grpc_service_pb.js';
import { DriftChecks, type DriftVersion } from '../../src/datachecks/drift/drift-checks.js';
import { ReferenceBuilder, writeReference } from '../../src/datachecks/drift/drift-reference.js';

const ROWS = 50;
let dir: string;

/** Rows of x in [0, 1) (plus `shift`), as a request [ROWS, 1] and its answer. */
function exchange(seed: number, shift: number) {
  const x = Float32Array.from({ length: ROWS }, (_, i) => ((seed * ROWS + i) * 0.618034) % 1 + shift);
  return {
    request: create(ModelInferRequestSchema, {
      modelName: 'm',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [BigInt(ROWS), 1n] }],
      rawInputContents: [new Uint8Array(x.buffer)],
    }),
    response: create(ModelInferResponseSchema, {
      modelName: 'm',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [BigInt(ROWS)] }],
      rawOutputContents: [new Uint8Array(x.buffer.slice(0))],
    }),
  };
}

const until = async (done: () => boolean) => {
  for (let tries = 0; tries < 200 && !done(); tries++) await new Promise((resolve) => setTimeout(resolve, 20));
};

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-drift-checks-'));
  const builder = new ReferenceBuilder();
  for (let seed = 0; seed < 20; seed++) {
    const { request } = exchange(seed, 0);
    builder.add('input', 'x', [ROWS, 1], new Float32Array(request.rawInputContents[0]!.buffer), true);
  }
  await writeReference(path.join(dir, 'm'), builder.build('test'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('DriftChecks', () => {
  it('fills a bounded window, sets the state from PSI, logs the change, and forgets a version that stopped serving', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    let serving = true;
    const checks = new DriftChecks({ logger, modelDir: (model) => path.join(dir, model), isServing: () => serving });
    const parameter = (value: string) => ({ stringValue: value });
    const version: DriftVersion = {
      modelName: 'm',
      versionLabel: '1',
      config: {
        parameters: {
          hotpath_drift: parameter('on'),
          hotpath_drift_window: parameter('200'),
          hotpath_drift_min_rows: parameter('200'),
          hotpath_drift_interval_ms: parameter('50'),
        },
      },
    };
    try {
      // 10 requests of 50 rows: the window keeps the last 200, all shifted.
      for (let seed = 100; seed < 110; seed++) {
        const { request, response } = exchange(seed, seed < 106 ? 0 : 1);
        checks.tapFor(version)?.(request, response);
      }
      await until(() => checks.gauges().states.length > 0);
      expect(checks.gauges().states).toEqual([{ model: 'm', version: '1', state: 2 }]);
      const [report] = checks.report('m');
      expect(report).toMatchObject({ version: '1', reference: { source: 'test', rows: 1000 }, window_rows: 200, state: 'act', action: 'alert' });
      // x is followed (the reference has it); y is not (the reference has no output).
      expect(report!.features).toEqual([{ tensor: 'x', kind: 'input', feature: 0, psi: expect.any(Number), ks: 1, rows: 200 }]);
      expect(report!.features[0]!.psi).toBeGreaterThan(0.25);
      expect(lines).toContainEqual(expect.objectContaining({ component: 'drift', model: 'm', state: 'act', previous: null, msg: 'drift state: act' }));
      expect(checks.degradedReason()).toBeUndefined();

      serving = false;
      await until(() => checks.report('m').length === 0);
      expect(checks.report('m')).toEqual([]);
      expect(checks.gauges()).toEqual({ states: [], features: [] });
    } finally {
      await checks.close();
    }
  });

  it('with a time window, counts only rows recorded within it', async () => {
    const logger = pino({ level: 'silent' });
    let nowMs = 1_000_000;
    const checks = new DriftChecks({ logger, modelDir: (model) => path.join(dir, model), now: () => nowMs });
    const parameter = (value: string) => ({ stringValue: value });
    const version: DriftVersion = {
      modelName: 'm',
      versionLabel: '2',
      config: {
        parameters: {
          hotpath_drift: parameter('on'),
          hotpath_drift_window: parameter('1000'),
          hotpath_drift_window_s: parameter('60'),
          hotpath_drift_min_rows: parameter('100'),
          hotpath_drift_interval_ms: parameter('50'),
        },
      },
    };
    try {
      // 4 shifted requests (200 rows) recorded, then 2 minutes pass: they fall out of the window.
      for (let seed = 200; seed < 204; seed++) {
        const { request, response } = exchange(seed, 1);
        checks.tapFor(version)?.(request, response);
      }
      await until(() => (checks.report('m')[0]?.window_rows ?? 0) === 200);
      expect(checks.report('m')[0]).toMatchObject({ window_rows: 200 });
      nowMs += 120_000;
      expect(checks.report('m')[0]).toMatchObject({ window_rows: 0 });
      // 4 unshifted requests now: the window holds only them, and the state is ok.
      for (let seed = 300; seed < 304; seed++) {
        const { request, response } = exchange(seed, 0);
        checks.tapFor(version)?.(request, response);
      }
      await until(() => checks.gauges().states.length > 0);
      expect(checks.report('m')[0]).toMatchObject({ window_rows: 200, state: 'ok' });
      expect(checks.report('m')[0]!.features[0]).toMatchObject({ rows: 200 });
      expect(checks.report('m')[0]!.features[0]!.psi).toBeLessThan(0.1);
    } finally {
      await checks.close();
    }
  });

  it('ignores models that do not turn drift on', async () => {
    const checks = new DriftChecks({ logger: pino({ level: 'silent' }), modelDir: (model) => path.join(dir, model) });
    const { request, response } = exchange(0, 0);
    // No tap at all: the version's request path leaves drift out.
    const tap = checks.tapFor({ modelName: 'm', versionLabel: '1', config: { parameters: {} } });
    expect(tap).toBeUndefined();
    tap?.(request, response);
    await new Promise((resolve) => setImmediate(resolve));
    expect(checks.report('m')).toEqual([]);
    await checks.close();
  });
});
