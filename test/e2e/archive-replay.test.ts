/**
 * The payload archive and replay, end to end: real server processes, the
 * typed client, node:http and the compiled CLI.
 *
 *   - N requests (gRPC and REST, answered or refused) give N records, and the
 *     archive's metrics count them; `hotpath archive ls|cat` show them;
 *   - `hotpath replay` against the same model reports no difference, and ends
 *     although that server archives to the very directory it reads;
 *   - against a changed model (other weights under the same name, in another
 *     server) it reports every answer as differing, with the largest difference.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initMlp, mlpGraph } from '../../models/lib/mlp.js';
import { serializeModel } from '../../models/lib/onnx-builder.js';
import { SeededRandom } from '../../models/lib/seeded-random.js';
import { createClient, InferenceError, status } from '../../src/client/index.js';
import { ArchiveReader } from '../../src/datachecks/archive/archive-reader.js';
import { scrape } from './helpers/probes.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { PACKAGE_ROOT, startServer, type RunningServer } from './helpers/server-process.js';

const run = promisify(execFile);
const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
/** Requests sent over gRPC; one more over REST and one refused. */
const N = 24;

const features = (seed: number, rows: number) =>
  Float32Array.from({ length: rows * 32 }, (_, i) => Math.sin(seed * 31 + i) * 0.8);

/** ctr_mlp's model under the name 'ctr' (and nothing else). */
async function ctrOnly(dir: string): Promise<void> {
  await writeSampleRepository(dir, { only: ['ctr_mlp'] });
  await ctrVariant(dir, 'ctr', '');
  await rm(path.join(dir, 'ctr_mlp'), { recursive: true, force: true });
}
const sameModel = () => tempRepository(ctrOnly);
/** A ctr-shaped model with other weights under the same name: its scores differ. */
const changedModel = () =>
  tempRepository(async (dir) => {
    await ctrOnly(dir);
    const layers = initMlp(new SeededRandom(0x5eed), { sizes: [32, 64, 32, 1], finalActivation: 'sigmoid', finalBiasOffset: -1 });
    await writeFile(
      path.join(dir, 'ctr', '1', 'model.onnx'),
      serializeModel(mlpGraph(layers, { name: 'ctr', doc: 'ctr, other weights', inputName: 'features', outputName: 'score' })),
    );
  });

function restInfer(port: number, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port, path: '/v2/models/ctr/infer', method: 'POST', agent: false, headers: { 'content-type': 'application/json' } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(JSON.stringify(body));
  });
}

async function replay(args: string[]): Promise<{ report: any; stdout: string }> {
  const file = path.join(workDir, `report-${Math.random().toString(36).slice(2)}.json`);
  const { stdout } = await run(process.execPath, [CLI, 'replay', '--archive', archiveDir, '--json', file, ...args]);
  return { report: JSON.parse(await readFile(file, 'utf8')), stdout };
}

let workDir: string;
let archiveDir: string;
let same: { dir: string; remove: () => Promise<void> };
let changed: { dir: string; remove: () => Promise<void> };
let servers: RunningServer[] = [];

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-archive-e2e-'));
  archiveDir = path.join(workDir, 'archive');
  [same, changed] = await Promise.all([sameModel(), changedModel()]);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await Promise.all([same?.remove(), changed?.remove(), rm(workDir, { recursive: true, force: true })]);
});

async function serve(dir: string, args: string[] = []): Promise<RunningServer> {
  const server = await startServer(dir, args);
  servers.push(server);
  return server;
}

describe('payload archive and replay', () => {
  it('archives N requests as N records, counted in the metrics and shown by archive ls and cat', async () => {
    const server = await serve(same.dir, ['--archive', archiveDir, '--archive-segment-size', '4KiB']);
    const client = createClient(server.grpcAddress);
    try {
      for (let i = 0; i < N; i++) {
        const rows = 1 + (i % 3);
        await client.infer('ctr', { features: { shape: [rows, 32], data: features(i, rows) } }, { id: `client-${i}` });
      }
      const refused = await client.infer('ctr', { features: { shape: [1, 16], data: new Float32Array(16) } }).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(InferenceError);
      expect((refused as InferenceError).code).toBe(status.INVALID_ARGUMENT);
    } finally {
      client.close();
    }
    expect(await restInfer(server.httpPort, { inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: Array.from(features(99, 1)) }] })).toBe(200);
    const total = N + 2;
    let metrics = await scrape(server.metricsPort);
    for (let tries = 0; tries < 100 && metrics.get('hotpath_archive_records_total') !== total; tries++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      metrics = await scrape(server.metricsPort);
    }
    expect(metrics.get('hotpath_archive_records_total')).toBe(total);
    expect(metrics.get('hotpath_archive_written_bytes_total')).toBeGreaterThan(total * 100);
    expect(metrics.get('hotpath_archive_dropped_total{reason="queue_full"}')).toBe(0);
    expect(await server.stop()).toBe(0);

    const records = [];
    for await (const record of new ArchiveReader(archiveDir).records()) records.push(record);
    expect(records).toHaveLength(total);
    expect(new Set(records.map((r) => r.requestId)).size).toBe(total);
    expect(records.filter((r) => r.statusCode === 0)).toHaveLength(N + 1);
    const failed = records.find((r) => r.statusCode !== 0)!;
    expect(failed).toMatchObject({ statusCode: status.INVALID_ARGUMENT, model: 'ctr', version: '1', response: undefined });
    expect(failed.statusMessage).toMatch(/input 'features': expected shape \[-1,32\], got \[1,16\]/);
    expect(records.every((r) => r.model === 'ctr' && r.version === '1' && r.latencyNs > 0)).toBe(true);

    const ls = JSON.parse((await run(process.execPath, [CLI, 'archive', 'ls', archiveDir, '--json'])).stdout);
    expect(ls.total).toMatchObject({ records: total, skipped_bytes: 0 });
    expect(ls.segments.length).toBeGreaterThan(1);
    const table = (await run(process.execPath, [CLI, 'archive', 'ls', archiveDir])).stdout;
    expect(table).toMatch(new RegExp(`^total\\s+${total}\\s+\\d+\\s+\\d{4}-`, 'm'));
    const lines = (await run(process.execPath, [CLI, 'archive', 'cat', archiveDir, '--limit', '2'])).stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    const first = JSON.parse(lines[0]!);
    expect(first).toMatchObject({ model: 'ctr', version: '1', status: { code: 'OK' }, request: { id: 'client-0', inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32] }] } });
    expect(first.request.inputs[0].data).toHaveLength(32);
    expect(first.response.outputs[0]).toMatchObject({ name: 'score', datatype: 'FP32', shape: [1, 1] });
  });

  it('replays into the same model with no difference, and ends though that server archives to the same directory', async () => {
    const server = await serve(same.dir, ['--archive', archiveDir]);
    const { report, stdout } = await replay(['--url', server.grpcAddress]);
    expect(report).toMatchObject({
      records: N + 2,
      replayed: N + 2,
      answered: N + 1,
      failed: 1,
      failures: { INVALID_ARGUMENT: 1 },
      archived_failures: 1,
      outcome_changed: 0,
      differing_answers: 0,
      tolerance: 1e-6,
    });
    expect(report.outputs.score).toEqual({ compared: N + 1, differing: 0, max_abs_diff: 0, mismatched: 0 });
    expect(report.latency.replay.count).toBe(N + 1);
    expect(report.latency.replay.p50_ms).toBeGreaterThan(0);
    expect(report.latency.replay.p99_ms).toBeGreaterThanOrEqual(report.latency.replay.p50_ms);
    expect(report.latency.archived.count).toBe(N + 2);
    expect(stdout).toMatch(/^replayed 26 of 26 archived requests/m);
    expect(stdout).toMatch(/^score\s+25\s+0\s+0\s+0$/m);
    expect(await server.stop()).toBe(0);
    // The replayed requests were archived too: the next reader sees both.
    let count = 0;
    for await (const _ of new ArchiveReader(archiveDir).records()) count += 1;
    expect(count).toBe(2 * (N + 2));
  });

  it('reports the answers of a changed model as differing, with the largest difference', async () => {
    const server = await serve(changed.dir);
    const { report } = await replay(['--url', server.grpcAddress, '--model', 'ctr', '--version', '1', '--rate', '200']);
    const answered = 2 * (N + 1);
    expect(report).toMatchObject({ records: 2 * (N + 2), replayed: 2 * (N + 2), answered, failed: 2, outcome_changed: 0, differing_answers: answered });
    expect(report.outputs.score).toMatchObject({ compared: answered, differing: answered, mismatched: 0 });
    expect(report.outputs.score.max_abs_diff).toBeGreaterThan(1e-3);
    // Another model name replays nothing.
    const none = await replay(['--url', server.grpcAddress, '--model', 'ranker']);
    expect(none.report).toMatchObject({ records: 2 * (N + 2), replayed: 0, outputs: {} });
  });

  it('refuses a replay without its required flags, and an archive that is not there', async () => {
    const missing = await run(process.execPath, [CLI, 'replay', '--url', '127.0.0.1:1']).catch((err: { code: number; stderr: string }) => err);
    expect(missing).toMatchObject({ code: 2, stderr: expect.stringMatching(/--archive: expected the archive directory, got none/) });
    const nowhere = await run(process.execPath, [CLI, 'archive', 'ls', path.join(workDir, 'nope')]).catch((err: { code: number; stderr: string }) => err);
    expect(nowhere).toMatchObject({ code: 2, stderr: expect.stringMatching(/does not exist/) });
  });

  it('says it could not connect, naming the address and the error, and exits 1, when nothing listens at --url', async () => {
    // A port that was just free: nothing listens there.
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    const file = path.join(workDir, 'unreachable.json');
    const failed = await run(process.execPath, [CLI, 'replay', '--archive', archiveDir, '--url', `127.0.0.1:${port}`, '--json', file])
      .catch((err: { code: number; stdout: string; stderr: string }) => err);
    expect(failed).toMatchObject({ code: 1, stdout: '' });
    expect((failed as { stderr: string }).stderr).toMatch(
      new RegExp(`^hotpath replay: could not connect to 127\\.0\\.0\\.1:${port}: UNAVAILABLE: .*ECONNREFUSED`),
    );
    // No report: nothing was replayed.
    await expect(readFile(file, 'utf8')).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('says --url is not a V2 gRPC server, and exits 1, when an HTTP/2 server that is not one answers', async () => {
    const web = http2.createServer((_request, response) => response.writeHead(404).end());
    await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = web.address() as net.AddressInfo;
      const failed = await run(process.execPath, [CLI, 'replay', '--archive', archiveDir, '--url', `127.0.0.1:${port}`])
        .catch((err: { code: number; stdout: string; stderr: string }) => err);
      expect(failed).toMatchObject({ code: 1, stdout: '' });
      expect((failed as { stderr: string }).stderr).toMatch(
        new RegExp(`^hotpath replay: 127\\.0\\.0\\.1:${port} is not a KServe V2 / Triton gRPC server \\(ServerLive: UNIMPLEMENTED: .*404`),
      );
    } finally {
      await new Promise((resolve) => web.close(resolve));
    }
  });
});
