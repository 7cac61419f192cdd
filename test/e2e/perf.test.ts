/**
 * `hotpath perf` as a user runs it (the built CLI, its own process) against a
 * real server, with short windows: the CSV has perf_analyzer's exact header
 * and one row per level, the throughput it reports agrees with the server's
 * ModelStatistics success count over the same windows, failing requests are
 * counted (and agree with the server's fail count) and exit 1, the load
 * spread over child processes (--load-processes) still agrees, --api-key
 * reaches a server that requires keys (on the raw connections too), TLS
 * works with --root-cert (in one process and in two), an unknown
 * model is named, --request-rate-range offers its rate (open loop) with
 * `Request Rate` first in the CSV, -i http measures over the REST door (statistics
 * over HTTP too) and counts its failures, --input-data FILE is sent (and a bad
 * field is named), and a bad -i and a variable dim without --shape are usage
 * errors (exit 2).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { CSV_HEADER, RATE_CSV_HEADER, type LevelResult } from '../../src/perf/perf-report.js';
import { keyHash } from '../../src/security/api-keys.js';
import { createCertificateAuthority } from '../helpers/certificates.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { PACKAGE_ROOT } from './helpers/server-process.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
// The header perf_analyzer writes; spelled out here so the test does not only compare the constant with itself.
const PERF_ANALYZER_HEADER =
  'Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function perf(args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'perf', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

let served: ServedRepository;
let out: string;

beforeAll(async () => {
  out = await mkdtemp(path.join(os.tmpdir(), 'hotpath-perf-'));
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeIdentityModel(dir, { name: 'ident', dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [4] });
      await writeIdentityModel(dir, { name: 'flaky', dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [4] });
      await appendFile(path.join(dir, 'flaky', 'config.pbtxt'), 'parameters { key: "hotpath_fault_error_rate" value: { string_value: "0.3" } }\n');
      await writeIdentityModel(dir, { name: 'ragged', dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [-1] });
    }),
    ['--enable-fault-injection'],
  );
});

afterAll(async () => {
  await served?.close();
  await rm(out, { recursive: true, force: true });
});

const SHORT = ['--measurement-interval', '300', '--max-trials', '4'];

describe('hotpath perf', () => {
  it("writes perf_analyzer's CSV, JSON and a plot; its throughput agrees with the server's ModelStatistics count", async () => {
    const csv = path.join(out, 'ident.csv');
    const json = path.join(out, 'ident.json');
    const run = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '-i', 'grpc', '-b', '2', '--concurrency-range', '2:6:4', ...SHORT, '-f', csv, '--json', json, '--plot', path.join(out, 'ident.svg')]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^\s*concurrency\s+infer\/s\s+avg ms\s+p50 ms/m);

    const lines = (await readFile(csv, 'utf8')).trimEnd().split('\n');
    expect(lines[0]).toBe(PERF_ANALYZER_HEADER);
    expect(CSV_HEADER).toBe(PERF_ANALYZER_HEADER);
    expect(lines.map((line) => line.split(',')[0])).toEqual(['Concurrency', '2', '6']);
    for (const line of lines.slice(1)) expect(line.split(',')).toHaveLength(13);

    expect((await readFile(path.join(out, 'ident.svg'), 'utf8')).match(/<polyline /g)).toHaveLength(4);
    const { levels } = JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] };
    for (const level of levels) {
      expect(level.errors).toBe(0);
      expect(level.clientRequests).toBeGreaterThan(0);
      // The windows are bracketed by ModelStatistics calls: at most the requests in flight at either edge differ.
      expect(Math.abs(level.clientRequests - level.serverRequests)).toBeLessThanOrEqual(2 * level.concurrency! + 0.02 * level.serverRequests);
      expect(level.inferencesPerSecond).toBeCloseTo(level.requestsPerSecond * 2, 6);
      expect(level.p50Us).toBeLessThanOrEqual(level.p99Us);
      expect(level.computeInferUs).toBeGreaterThan(0);
    }
  });

  it('--request-rate-range: the open loop offers the rate, with Request Rate first in the CSV', async () => {
    const csv = path.join(out, 'rate.csv');
    const json = path.join(out, 'rate.json');
    const run = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '--request-rate-range', '200', ...SHORT, '-f', csv, '--json', json]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = (await readFile(csv, 'utf8')).trimEnd().split('\n');
    expect(lines[0]).toBe(PERF_ANALYZER_HEADER.replace(/^Concurrency,/, 'Request Rate,'));
    expect(RATE_CSV_HEADER).toBe(lines[0]);
    expect(lines[1]!.split(',')[0]).toBe('200');
    const [level] = (JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] }).levels;
    expect([level!.requestRate, level!.concurrency, level!.errors]).toEqual([200, null, 0]);
    // Constant gaps: the windows see the offered rate, give or take a request at each edge.
    expect(level!.requestsPerSecond).toBeGreaterThan(160);
    expect(level!.requestsPerSecond).toBeLessThan(240);
    expect(Math.abs(level!.clientRequests - level!.serverRequests)).toBeLessThanOrEqual(10 + 0.05 * level!.serverRequests);
  });

  it('--load-processes 2: the same loop in two child processes, merged, agreeing with the server', async () => {
    const json = path.join(out, 'processes.json');
    const run = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '--concurrency-range', '4', '--load-processes', '2', ...SHORT, '--json', json]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/4 connection\(s\) from 2 processes/);
    const [level] = (JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] }).levels;
    expect(level!.clientRequests).toBeGreaterThan(0);
    // The processes take the parent's window edges (shared monotonic clock), whenever its messages arrive.
    expect(Math.abs(level!.clientRequests - level!.serverRequests)).toBeLessThanOrEqual(2 * 4 + 0.05 * level!.serverRequests);
    const refused = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '--connections', '2', '--load-processes', '3']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--load-processes 3: expected at most --connections \(2\); each process needs a connection/);
  });

  it('counts and shows failing requests, agreeing with the server, and exits 1', async () => {
    const json = path.join(out, 'flaky.json');
    const run = await perf(['-m', 'flaky', '-u', served.server.grpcAddress, '--concurrency-range', '4', ...SHORT, '--json', json]);
    expect(run.code).toBe(1);
    const [level] = (JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] }).levels;
    expect(level!.errors).toBeGreaterThan(0);
    expect(level!.clientRequests).toBeGreaterThan(0);
    expect(Math.abs(level!.errors - level!.serverErrors)).toBeLessThanOrEqual(2 * 4 + 0.05 * level!.serverErrors);
    // INTERNAL (13): the injected execution failure.
    expect(run.stdout).toMatch(/concurrency 4: \d+ error\(s\): HTTP 200, grpc-status 13/);
    expect(run.stdout).toMatch(new RegExp(`\\b${level!.errors}\\b`));
  });

  it('names a model the server does not have, and exits 1', async () => {
    const run = await perf(['-m', 'nope', '-u', served.server.grpcAddress, ...SHORT]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^hotpath perf: cannot measure model 'nope' at 127\.0\.0\.1:\d+: .*model 'nope' is not found/);
  });

  it('-i http: measures over the REST door (binary tensors), agreeing with the server; failures are counted with their HTTP status', async () => {
    const json = path.join(out, 'http.json');
    const run = await perf(['-m', 'ident', '-i', 'http', '-u', `127.0.0.1:${served.server.httpPort}`, '-b', '2', '--concurrency-range', '3', ...SHORT, '--json', json, '-f', path.join(out, 'http.csv')]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/over http, batch 2, inputs INPUT0\[2,4\], 4\+ HTTP\/1\.1 connection\(s\)/);
    expect((await readFile(path.join(out, 'http.csv'), 'utf8')).split('\n')[0]).toBe(PERF_ANALYZER_HEADER);
    const [level] = (JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] }).levels;
    expect(level!.errors).toBe(0);
    expect(level!.clientRequests).toBeGreaterThan(0);
    // Statistics over HTTP too: the server's count over the same windows.
    expect(Math.abs(level!.clientRequests - level!.serverRequests)).toBeLessThanOrEqual(2 * 3 + 0.02 * level!.serverRequests);
    expect(level!.computeInferUs).toBeGreaterThan(0);

    const flaky = await perf(['-m', 'flaky', '-i', 'http', '-u', `127.0.0.1:${served.server.httpPort}`, '--concurrency-range', '2', ...SHORT]);
    expect(flaky.code).toBe(1);
    expect(flaky.stdout).toMatch(/concurrency 2: \d+ error\(s\): HTTP 500: \{"error":/);
  });

  it('--input-data FILE: sends the file\'s values; a field it cannot use is a usage error naming it (exit 2)', async () => {
    const good = path.join(out, 'data.json');
    await writeFile(good, JSON.stringify({ data: [{ INPUT0: { content: [1, 2, 3, 4], shape: [4] } }] }));
    const run = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '-b', '3', '--input-data', good, ...SHORT]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(new RegExp(`inputs INPUT0\\[3,4\\] from ${good.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
    const bad = path.join(out, 'bad.json');
    await writeFile(bad, JSON.stringify({ data: [{ INPUT0: [1, 2, 3] }] }));
    const refused = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '--input-data', bad, ...SHORT]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(`hotpath perf: --input-data ${bad}: field 'data[0].INPUT0': expected 4 values (the shape's), got 3\n`);
  });

  it('refuses a bad -i, and a variable dim without --shape, as usage errors (exit 2); --shape fills it', async () => {
    const quic = await perf(['-m', 'ident', '-u', served.server.grpcAddress, '-i', 'quic']);
    expect(quic.code).toBe(2);
    expect(quic.stderr).toMatch(/^hotpath perf: -i: expected grpc or http, got 'quic'/);
    const ragged = await perf(['-m', 'ragged', '-u', served.server.grpcAddress, ...SHORT]);
    expect(ragged.code).toBe(2);
    expect(ragged.stderr).toMatch(/input 'INPUT0' has a variable dim \(shape \[-1\]\): give it with --shape INPUT0:DIMS/);
    const shaped = await perf(['-m', 'ragged', '-u', served.server.grpcAddress, '--shape', 'INPUT0:16', '--input-data', 'zero', ...SHORT]);
    expect(shaped.code).toBe(0);
    expect(shaped.stdout).toMatch(/inputs INPUT0\[1,16\]/);
  });
});

describe('hotpath perf against a server that requires API keys', () => {
  const KEY = `ads-${randomBytes(18).toString('base64url')}`;
  let keyed: ServedRepository;
  let secrets: string;
  beforeAll(async () => {
    secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-perf-keys-'));
    const tenantsFile = path.join(secrets, 'tenants.json');
    await writeFile(tenantsFile, JSON.stringify({ tenants: { default: { keys: [keyHash(KEY)] } } }));
    keyed = await serveRepository(
      tempRepository((dir) => writeIdentityModel(dir, { name: 'ident', dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [4] })),
      ['--tenants-file', tenantsFile, '--require-api-key'],
    );
  });
  afterAll(async () => {
    await keyed?.close();
    await rm(secrets, { recursive: true, force: true });
  });

  it('sends --api-key on the metadata calls and on every load request; without it, says the server refused', async () => {
    const json = path.join(out, 'keyed.json');
    const run = await perf(['-m', 'ident', '-u', keyed.server.grpcAddress, '--api-key', KEY, ...SHORT, '--json', json]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const [level] = (JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] }).levels;
    expect([level!.errors, level!.clientRequests > 0]).toEqual([0, true]);
    expect(await readFile(json, 'utf8')).not.toContain(KEY);

    const refused = await perf(['-m', 'ident', '-u', keyed.server.grpcAddress, ...SHORT]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^hotpath perf: cannot measure model 'ident' at .*missing API key/);
  });
});

describe('hotpath perf over TLS', () => {
  let secure: ServedRepository;
  let certs: string;
  beforeAll(async () => {
    certs = await mkdtemp(path.join(os.tmpdir(), 'hotpath-perf-tls-'));
    const ca = createCertificateAuthority('perf test CA');
    const server = ca.server('perf-server');
    await writeFile(path.join(certs, 'server.crt'), server.cert);
    await writeFile(path.join(certs, 'server.key'), server.key);
    await writeFile(path.join(certs, 'ca.crt'), ca.cert);
    secure = await serveRepository(
      tempRepository((dir) => writeIdentityModel(dir, { name: 'ident', dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [4] })),
      ['--grpc-use-ssl', '--grpc-server-cert', path.join(certs, 'server.crt'), '--grpc-server-key', path.join(certs, 'server.key')],
    );
  });
  afterAll(async () => {
    await secure?.close();
    await rm(certs, { recursive: true, force: true });
  });

  // -u is an IP address: --server-name gives the certificate's name (and the SNI, which may not be an IP).
  it('measures over TLS with --root-cert, from one process and from two; a plaintext run is refused by the server', async () => {
    for (const processes of ['1', '2']) {
      const json = path.join(out, `tls-${processes}.json`);
      const run = await perf(['-m', 'ident', '-u', secure.server.grpcAddress, '--root-cert', path.join(certs, 'ca.crt'), '--server-name', 'localhost', '--load-processes', processes, ...SHORT, '--json', json]);
      expect(run.stderr).toBe('');
      expect(run.code).toBe(0);
      const [level] = (JSON.parse(await readFile(json, 'utf8')) as { levels: LevelResult[] }).levels;
      expect([level!.errors, level!.clientRequests > 0]).toEqual([0, true]);
    }
    const plain = await perf(['-m', 'ident', '-u', secure.server.grpcAddress, ...SHORT]);
    expect(plain.code).toBe(1);
    expect(plain.stderr).toMatch(/^hotpath perf: cannot measure model 'ident'/);
    const missing = await perf(['-m', 'ident', '-u', secure.server.grpcAddress, '--root-cert', path.join(certs, 'nope.crt')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^hotpath perf: --root-cert .*nope\.crt: cannot read it/);
  });
});
