/**
 * Drift, end to end: real server processes, the typed client, node:http and
 * the compiled CLI.
 *
 *   - `hotpath drift-reference` builds a reference from a payload archive of
 *     one model's traffic; before it exists, GET .../drift answers 200 and
 *     {"reference": null}, and an unknown model 404;
 *   - with that reference, a model fed the same distribution stays at state 0
 *     (ok), and one fed shifted inputs goes to 2 (act): in the metrics, in
 *     GET .../drift, in a log line, and, with action 'degrade', in /healthz;
 *   - with `hotpath_drift_capture` and no file, the first rows served become
 *     the reference, and shifted rows after them go to 2 too.
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { httpJson, scrape } from './helpers/probes.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { PACKAGE_ROOT, startServer, type RunningServer } from './helpers/server-process.js';

const run = promisify(execFile);
const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
/** Rows per request, and requests per model: the window (2,000 rows) fills exactly. */
const ROWS = 50;
const REQUESTS = 40;

/** Values spread over [-0.8, 0.8], the same distribution for every seed; `shift` moves all of them. */
const features = (seed: number, shift = 0) => Float32Array.from({ length: ROWS * 32 }, (_, i) => Math.sin(seed * 7919 + i) * 0.8 + shift);

const drift = (extra: string) =>
  'parameters [\n' +
  '  { key: "hotpath_drift" value: { string_value: "on" } },\n' +
  '  { key: "hotpath_drift_window" value: { string_value: "2000" } },\n' +
  '  { key: "hotpath_drift_min_rows" value: { string_value: "2000" } },\n' +
  '  { key: "hotpath_drift_interval_ms" value: { string_value: "200" } }' +
  extra +
  '\n]\n';

let repository: { dir: string; remove: () => Promise<void> };
let workDir: string;
let servers: RunningServer[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-drift-e2e-'));
  repository = await tempRepository(async (dir) => {
    await writeSampleRepository(dir, { only: ['ctr_mlp'] });
    await ctrVariant(dir, 'steady', drift(''));
    await ctrVariant(dir, 'shifted', drift(',\n  { key: "hotpath_drift_action" value: { string_value: "degrade" } }'));
    await ctrVariant(dir, 'plain', '');
    await ctrVariant(dir, 'captured', drift(',\n  { key: "hotpath_drift_capture" value: { string_value: "2000" } }'));
    await rm(path.join(dir, 'ctr_mlp'), { recursive: true, force: true });
  });
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await Promise.all([repository?.remove(), rm(workDir, { recursive: true, force: true })]);
});

async function serve(args: string[] = []): Promise<RunningServer> {
  const server = await startServer(repository.dir, args);
  servers.push(server);
  return server;
}

async function send(server: RunningServer, model: string, seeds: number[], shift = 0): Promise<void> {
  const client = createClient(server.grpcAddress);
  try {
    for (const seed of seeds) await client.infer(model, { features: { shape: [ROWS, 32], data: features(seed, shift) } });
  } finally {
    client.close();
  }
}

const seeds = (from: number) => Array.from({ length: REQUESTS }, (_, i) => from + i);

describe('drift', () => {
  it('builds a reference from an archive; without one the endpoint says so', async () => {
    const archiveDir = path.join(workDir, 'archive');
    const server = await serve(['--archive', archiveDir]);
    expect(await httpJson(server.httpPort, '/v2/models/plain/drift')).toMatchObject({ status: 200, json: { model: 'plain', reference: null, versions: [] } });
    const unknown = await httpJson(server.httpPort, '/v2/models/nope/drift');
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toMatch(/model 'nope' is not found in the repository/);
    await send(server, 'steady', seeds(1));
    expect(await server.stop()).toBe(0);

    const { stdout } = await run(process.execPath, [CLI, 'drift-reference', '--model-dir', path.join(repository.dir, 'steady'), '--archive', archiveDir]);
    expect(stdout).toMatch(/drift\/reference\.json: 2000 rows, 2 tensors, 33 features \(from archive:/);
    const reference = JSON.parse(await readFile(path.join(repository.dir, 'steady', 'drift', 'reference.json'), 'utf8'));
    expect(reference).toMatchObject({ format: 'hotpath-drift-reference/1', rows: REQUESTS * ROWS });
    expect(reference.tensors.map((t: { kind: string; name: string; features: unknown[] }) => [t.kind, t.name, t.features.length])).toEqual([
      ['input', 'features', 32],
      ['output', 'score', 1],
    ]);
    const first = reference.tensors[0].features[0];
    expect(first.proportions).toHaveLength(first.edges.length + 1);
    expect(first.sample).toHaveLength(1000);
    expect(first.count).toBe(REQUESTS * ROWS);
    // The other model gets the same reference (its traffic should look the same).
    await mkdir(path.join(repository.dir, 'shifted', 'drift'), { recursive: true });
    await copyFile(path.join(repository.dir, 'steady', 'drift', 'reference.json'), path.join(repository.dir, 'shifted', 'drift', 'reference.json'));

    // A usage error exits 2 with the usage.
    const bad = await run(process.execPath, [CLI, 'drift-reference', '--model-dir', workDir]).catch((err: { code: number; stderr: string }) => err);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringMatching(/give one of --archive, --csv or --npy/) });
  });

  it('keeps unshifted traffic at 0 and moves shifted traffic to 2 (act)', async () => {
    const server = await serve();
    await send(server, 'steady', seeds(5000));
    await send(server, 'shifted', seeds(9000), 0.5);
    const steadyKey = 'hotpath_drift_state{model="steady",version="1"}';
    const shiftedKey = 'hotpath_drift_state{model="shifted",version="1"}';
    let metrics = await scrape(server.metricsPort);
    for (let tries = 0; tries < 100 && !(metrics.has(steadyKey) && metrics.get(shiftedKey) === 2); tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      metrics = await scrape(server.metricsPort);
    }
    expect(metrics.get(steadyKey)).toBe(0);
    expect(metrics.get(shiftedKey)).toBe(2);
    expect(metrics.get('hotpath_drift_psi{model="shifted",version="1",tensor="features",feature="0"}')).toBeGreaterThan(0.25);
    expect(metrics.get('hotpath_drift_psi{model="steady",version="1",tensor="features",feature="0"}')).toBeLessThan(0.1);
    expect(metrics.get('hotpath_drift_ks{model="shifted",version="1",tensor="features",feature="0"}')).toBeGreaterThan(0.2);
    expect(metrics.has('hotpath_drift_state{model="plain",version="1"}')).toBe(false);

    const steady = await httpJson(server.httpPort, '/v2/models/steady/drift');
    expect(steady.status).toBe(200);
    expect(steady.json).toMatchObject({ model: 'steady', reference: { rows: 2000 }, versions: [{ version: '1', state: 'ok', window_rows: 2000, action: 'alert' }] });
    expect(steady.json.versions[0].features).toHaveLength(33);
    const shifted = await httpJson(server.httpPort, '/v2/models/shifted/versions/1/drift');
    expect(shifted.json).toMatchObject({ versions: [{ version: '1', state: 'act', thresholds: { watch: 0.1, act: 0.25 }, action: 'degrade' }] });

    const line = await server.waitForLog((l) => l['model'] === 'shifted' && l['state'] === 'act');
    expect(line).toMatchObject({ component: 'drift', previous: null, msg: expect.stringMatching(/^drift state: act \(model marked degraded\)/) });
    const health = await httpJson(server.httpPort, '/healthz');
    expect(health.status).toBe(503);
    expect(health.json).toMatchObject({ status: 'degraded', reason: expect.stringMatching(/input drift at 'act': shifted version 1/) });
    expect(health.json.models).toContainEqual(expect.objectContaining({ name: 'shifted', drift: 'act' }));
    expect(health.json.models).toContainEqual(expect.not.objectContaining({ name: 'steady', drift: 'act' }));
    // Readiness is not drift's to take: the model still answers.
    expect((await httpJson(server.httpPort, '/v2/health/ready')).status).toBe(200);
  });

  it('captures the first rows served as the reference when asked to', async () => {
    const server = await serve();
    await send(server, 'captured', seeds(1));
    const captured = await server.waitForLog((l) => l['model'] === 'captured' && l['msg'] === 'drift: reference captured');
    expect(captured).toMatchObject({ rows: 2000 });
    expect((await httpJson(server.httpPort, '/v2/models/captured/drift')).json).toMatchObject({ reference: { source: 'capture', rows: 2000 }, versions: [{ window_rows: 0, state: null }] });
    await send(server, 'captured', seeds(7000), 0.5);
    const key = 'hotpath_drift_state{model="captured",version="1"}';
    let metrics = await scrape(server.metricsPort);
    for (let tries = 0; tries < 100 && metrics.get(key) !== 2; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      metrics = await scrape(server.metricsPort);
    }
    expect(metrics.get(key)).toBe(2);
    // Action 'alert' (the default): no degraded mark.
    expect((await httpJson(server.httpPort, '/healthz')).json.status).toBe('ready');
  });
});
