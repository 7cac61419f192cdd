/**
 * `hotpath tune` as a user runs it (the built CLI, its own process) against
 * a real server, with a tiny grid and short windows: it measures the current
 * config and each candidate (loaded through the config override: the server
 * reports the candidate's max_batch_size while it is measured), writes the
 * best as a config.pbtxt our parser reads back, reports every candidate
 * (table, JSON, plot), and loads the model's own config again at the end;
 * the same over HTTP. SIGINT in the middle of the sweep still restores the
 * config and exits 130. A grid over --max-candidates, and a model that does
 * not batch, are usage errors (exit 2).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { parseModelConfigText } from '../../src/repository/model-config.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { PACKAGE_ROOT } from './helpers/server-process.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function start(args: string[]): { child: ChildProcess; done: Promise<Run>; stdout: () => string } {
  const child = spawn(process.execPath, [CLI, 'tune', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Run>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done, stdout: () => stdout };
}

const tune = (args: string[]) => start(args).done;

let served: ServedRepository;
let out: string;

beforeAll(async () => {
  out = await mkdtemp(path.join(os.tmpdir(), 'hotpath-tune-'));
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeIdentityModel(dir, { name: 'ident', dtype: 'FP32', maxBatchSize: 8, withConfig: true, dims: [4] });
      await writeIdentityModel(dir, { name: 'flat', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [4] });
    }),
  );
});

afterAll(async () => {
  await served?.close();
  await rm(out, { recursive: true, force: true });
});

async function servedMaxBatchSize(): Promise<number> {
  const answer = await served.client.call('ModelConfig', { name: 'ident' });
  return answer['config']['max_batch_size'] as number;
}

// A budget every level meets on a loaded machine: the test checks the sweep, not the machine's speed.
const TINY = ['--p99-ms', '2000', '--max-batch-sizes', '4', '--preferred-batch-sizes', 'none', '--max-queue-delays-us', '100',
  '--max-concurrency', '2', '--measurement-interval', '150'];

describe('hotpath tune', () => {
  it('measures the current config and each candidate, writes the best as config.pbtxt, reports, and restores the config', async () => {
    const config = path.join(out, 'config.pbtxt');
    const json = path.join(out, 'tune.json');
    const plot = path.join(out, 'tune.svg');
    const run = await tune(['-m', 'ident', '-u', served.server.grpcAddress, ...TINY, '--instance-counts', '1,2', '-o', config, '--json', json, '--plot', plot]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/\[0\/2\] current config: mbs 8,/);
    expect(run.stdout).toMatch(/\[2\/2\] candidate: mbs 4, pref \[\], delay 100us, x2/);
    expect(run.stdout).toMatch(/restored: model 'ident' loaded again with its own config/);
    expect(run.stdout).toMatch(/^\s+#\s+max_batch\s+preferred\s+delay us\s+inst\s+best c\s+infer\/s/m);
    expect(run.stdout).toMatch(/<- BEST/);
    expect(await servedMaxBatchSize()).toBe(8);

    const report = JSON.parse(await readFile(json, 'utf8')) as {
      chosen: number; candidates: { index: number; settings: { maxBatchSize: number; instanceCount: number }; levels: { concurrency: number; errors: number; clientRequests: number; serverRequests: number }[] }[];
    };
    expect(report.candidates.map((c) => [c.settings.maxBatchSize, c.settings.instanceCount])).toEqual([[8, 1], [4, 1], [4, 2]]);
    for (const candidate of report.candidates) {
      expect(candidate.levels.map((l) => l.concurrency)).toEqual(candidate.levels.length === 2 ? [1, 2] : [1]);
      for (const level of candidate.levels) {
        expect(level.errors).toBe(0);
        // Measured against the candidate actually loaded: the server counted the same requests.
        expect(Math.abs(level.clientRequests - level.serverRequests)).toBeLessThanOrEqual(4 + 0.02 * level.serverRequests);
      }
    }
    const written = parseModelConfigText(await readFile(config, 'utf8'), config);
    const chosen = report.candidates[report.chosen]!;
    expect(written.config.maxBatchSize).toBe(chosen.settings.maxBatchSize);
    expect(written.config.instanceGroup.map((g) => g.count)).toEqual([chosen.settings.instanceCount]);
    expect(written.config.name).toBe('ident');
    expect((await readFile(plot, 'utf8')).match(/<polyline /g)).toHaveLength(3);
  });

  it('loads and measures over HTTP/REST too', async () => {
    const json = path.join(out, 'tune-http.json');
    const run = await tune(['-m', 'ident', '-i', 'http', '-u', `127.0.0.1:${served.server.httpPort}`, ...TINY, '--instance-counts', '1', '-o', path.join(out, 'http.pbtxt'), '--json', json]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const report = JSON.parse(await readFile(json, 'utf8')) as { candidates: { settings: { maxBatchSize: number }; levels: { errors: number; serverRequests: number }[] }[] };
    expect(report.candidates.map((c) => c.settings.maxBatchSize)).toEqual([8, 4]);
    for (const candidate of report.candidates) expect(candidate.levels[0]).toMatchObject({ errors: 0, serverRequests: expect.any(Number) });
    expect(report.candidates[1]!.levels[0]!.serverRequests).toBeGreaterThan(0);
    expect(await servedMaxBatchSize()).toBe(8);
  });

  it('puts the original config back and exits 130 on SIGINT mid-sweep', async () => {
    const running = start(['-m', 'ident', '-u', served.server.grpcAddress, '--p99-ms', '2000', '--max-batch-sizes', '2,4', '--instance-counts', '1,2',
      '--preferred-batch-sizes', 'none', '--max-queue-delays-us', '100', '--max-concurrency', '1',
      // Never stable: each level runs all its 20 windows (6 s), long enough to be interrupted in.
      '--measurement-interval', '300', '--max-trials', '20', '--stability-percentage', '0',
      '-o', path.join(out, 'never.pbtxt')]);
    const deadline = Date.now() + 40_000;
    while (!/\[1\/4\] candidate/.test(running.stdout()) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    // The candidate (max_batch_size 2) is loaded and being measured: the override is in force.
    while (Date.now() < deadline && (await servedMaxBatchSize()) !== 2) await new Promise((r) => setTimeout(r, 50));
    expect(await servedMaxBatchSize()).toBe(2);
    running.child.kill('SIGINT');
    const run = await running.done;
    expect(run.code).toBe(130);
    expect(run.stderr).toMatch(/SIGINT: stopping; the model's own config is being loaded back/);
    expect(run.stdout).toMatch(/restored: model 'ident' loaded again with its own config/);
    expect(await servedMaxBatchSize()).toBe(8);
    await expect(readFile(path.join(out, 'never.pbtxt'))).rejects.toThrow(/ENOENT/);
  });

  it('refuses a grid over --max-candidates and a model that does not batch (exit 2), touching nothing', async () => {
    const big = await tune(['-m', 'ident', '-u', served.server.grpcAddress, '--p99-ms', '5', '--max-candidates', '3']);
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(/^hotpath tune: --max-candidates 3: the grid has 16 candidates; narrow the lists or raise the bound/);
    const flat = await tune(['-m', 'flat', '-u', served.server.grpcAddress, '--p99-ms', '5']);
    expect(flat.code).toBe(2);
    expect(flat.stderr).toMatch(/model 'flat' does not batch \(max_batch_size 0\)/);
    const missing = await tune(['-m', 'ident', '-u', served.server.grpcAddress]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/^hotpath tune: --p99-ms: expected the latency budget in ms/);
  });
});
