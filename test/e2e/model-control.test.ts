/**
 * Triton's command line against real servers: the model control modes
 * (explicit with --load-model, none refusing load and unload, poll picking up
 * a model copied into the repository and dropping a removed one), strict
 * model configs, --max-message-size on gRPC, --model-store without a subcommand (as a KServe runtime
 * passes it), the pretty log format, --allow-metrics=false, --version and
 * --help, and exit 2 for a bad value.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cp, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { httpGet } from './helpers/probes.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository, type TempRepository } from './helpers/served-repository.js';
import { PACKAGE_ROOT } from './helpers/server-process.js';
import { TritonClient } from './helpers/triton-client.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');
const TRITON_REFUSAL = /^explicit model load \/ unload is not allowed if polling is enabled/;

/** Identity models `names`, each with a full config. */
const identityRepository = (names: string[]) =>
  tempRepository(async (dir) => {
    for (const name of names) await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 4, withConfig: true });
  });

async function modelReady(client: TritonClient, name: string): Promise<boolean> {
  return (await client.call('ModelReady', { name }))['ready'] as boolean;
}

async function indexEntry(client: TritonClient, name: string): Promise<Record<string, unknown> | undefined> {
  const { models } = await client.call('RepositoryIndex', {});
  return (models as Record<string, unknown>[]).find((m) => m['name'] === name);
}

async function eventually(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`not true within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe('--model-control-mode=explicit', () => {
  let served: ServedRepository;
  beforeAll(async () => {
    served = await serveRepository(identityRepository(['wanted', 'later']), [
      '--model-control-mode=explicit', '--load-model', 'wanted',
    ]);
  });
  afterAll(() => served?.close());

  it('loads only the --load-model models; the others are known, not ready, and do not hold readiness back', async () => {
    expect(await modelReady(served.client, 'wanted')).toBe(true);
    expect(await modelReady(served.client, 'later')).toBe(false);
    expect(await indexEntry(served.client, 'later')).toMatchObject({ state: 'UNAVAILABLE', reason: expect.stringMatching(/^not loaded/) });
    expect((await served.client.call('ServerReady', {}))['ready']).toBe(true);
    expect((await httpGet(served.server.httpPort, '/v2/health/ready')).status).toBe(200);
    const err = await served.client.callError('ModelInfer', {
      model_name: 'later', inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 1] }], raw_input_contents: [Buffer.alloc(4)],
    });
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/model 'later' is not ready \(UNAVAILABLE: not loaded/);
  });

  it('loads and unloads on request', async () => {
    await served.client.call('RepositoryModelLoad', { model_name: 'later' });
    expect(await modelReady(served.client, 'later')).toBe(true);
    await served.client.call('RepositoryModelUnload', { model_name: 'later' });
    expect(await modelReady(served.client, 'later')).toBe(false);
    expect((await served.client.call('ServerReady', {}))['ready']).toBe(true);
  });

  it('refuses a load whose name would leave the repository', async () => {
    const err = await served.client.callError('RepositoryModelLoad', { model_name: '../wanted' });
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/^model_name '\.\.\/wanted': expected a model directory name/);
  });
});

describe('--model-control-mode=none', () => {
  let served: ServedRepository;
  beforeAll(async () => {
    served = await serveRepository(identityRepository(['fixed']), ['--model-control-mode=none', '--max-message-size=64Ki']);
  });
  afterAll(() => served?.close());

  it('takes requests up to --max-message-size and refuses larger ones with RESOURCE_EXHAUSTED', async () => {
    const infer = (elements: number) => ({
      model_name: 'fixed',
      inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, elements] }],
      raw_input_contents: [Buffer.alloc(elements * 4)],
    });
    const small = await served.client.call('ModelInfer', infer(1024));
    expect((small['raw_output_contents'] as Buffer[])[0]!.length).toBe(4096);
    const err = await served.client.callError('ModelInfer', infer(32 * 1024));
    expect(err.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(err.details).toMatch(/larger than max \(\d+ vs 65536\)/);
  });

  it('loads every model and refuses load and unload with UNAVAILABLE, as Triton does', async () => {
    expect(await modelReady(served.client, 'fixed')).toBe(true);
    const load = await served.client.callError('RepositoryModelLoad', { model_name: 'fixed' });
    expect(load.code).toBe(grpc.status.UNAVAILABLE);
    expect(load.details).toMatch(TRITON_REFUSAL);
    expect(load.details).toMatch(/cannot load model 'fixed': the server runs with --model-control-mode=none/);
    const unload = await served.client.callError('RepositoryModelUnload', { model_name: 'fixed' });
    expect(unload.code).toBe(grpc.status.UNAVAILABLE);
    expect(unload.details).toMatch(TRITON_REFUSAL);
    expect(await modelReady(served.client, 'fixed')).toBe(true);
  });
});

describe('--model-control-mode=poll', () => {
  let served: ServedRepository;
  let source: TempRepository;
  beforeAll(async () => {
    source = await identityRepository(['arrival']);
    served = await serveRepository(identityRepository(['resident']), ['--model-control-mode=poll', '--repository-poll-secs', '1']);
  });
  afterAll(async () => {
    await served?.close();
    await source?.remove();
  });

  it('loads a model copied into the repository, unloads a removed one, and refuses explicit load', async () => {
    expect(await modelReady(served.client, 'resident')).toBe(true);
    const refused = await served.client.callError('RepositoryModelLoad', { model_name: 'resident' });
    expect(refused.code).toBe(grpc.status.UNAVAILABLE);
    expect(refused.details).toMatch(TRITON_REFUSAL);

    await cp(path.join(source.dir, 'arrival'), path.join(served.dir, 'arrival'), { recursive: true });
    // Two poll periods, plus the load and warm-up.
    await eventually(async () => (await indexEntry(served.client, 'arrival'))?.['state'] === 'READY', 10_000);
    expect(await modelReady(served.client, 'arrival')).toBe(true);

    await rm(path.join(served.dir, 'arrival'), { recursive: true });
    await eventually(async () => !(await modelReady(served.client, 'arrival')), 10_000);
    expect(await modelReady(served.client, 'resident')).toBe(true);
  });
});

describe('--strict-model-config=true', () => {
  let served: ServedRepository;
  beforeAll(async () => {
    served = await serveRepository(
      tempRepository(async (dir) => {
        await writeIdentityModel(dir, { name: 'complete', dtype: 'FP32', maxBatchSize: 4, withConfig: true });
        await writeIdentityModel(dir, { name: 'configless', dtype: 'FP32', maxBatchSize: 4, withConfig: false });
      }),
      ['--strict-model-config=true'],
    );
  });
  afterAll(() => served?.close());

  it('serves a complete config and fails a model that needs auto-complete, saying why', async () => {
    expect(await modelReady(served.client, 'complete')).toBe(true);
    expect(await indexEntry(served.client, 'configless')).toMatchObject({
      state: 'UNAVAILABLE',
      reason: expect.stringMatching(/no config\.pbtxt, and auto-complete is off \(--disable-auto-complete-config \/ --strict-model-config=true\)/),
    });
  });
});

/** Starts the CLI with exactly `args` and resolves with the first stdout line matching `wanted`. */
function spawnCli(args: string[], wanted: RegExp) {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines: string[] = [];
  const line = new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout }).on('line', (text) => {
      lines.push(text);
      if (wanted.test(text)) resolve(text);
    });
    child.once('exit', (code) => reject(new Error(`exited with ${code} first:\n${stderr}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, line, lines, exited };
}

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('a tritonserver-style command line', () => {
  let repository: TempRepository;
  beforeAll(async () => {
    repository = await identityRepository(['kserve_model']);
  });
  afterAll(() => repository?.remove());

  it('serves --model-store without a subcommand, logs pretty lines, and leaves the metrics port closed with --allow-metrics=false', async () => {
    const metricsPort = await freePort();
    const run = spawnCli(
      [
        `--model-store=${repository.dir}`, '--host', '127.0.0.1', '--grpc-port=0', '--http-port=0',
        `--metrics-port=${metricsPort}`, '--allow-metrics=false', '--allow-http', 'true', '--drain-delay=0',
        '--log-format=pretty',
      ],
      /hotpath serving/,
    );
    try {
      const line = await run.line;
      // TIME LEVEL [component] message key=value ...
      expect(line).toMatch(/^\d{4}-\d\d-\d\dT\S+Z INFO  \[cli\] hotpath serving grpc_port=\d+ http_port=\d+ ready=true$/);
      expect(run.lines.every((l) => !l.startsWith('{'))).toBe(true);
      const grpcPort = Number(/grpc_port=(\d+)/.exec(line)![1]);
      const client = new TritonClient(`127.0.0.1:${grpcPort}`);
      try {
        expect(await modelReady(client, 'kserve_model')).toBe(true);
      } finally {
        client.close();
      }
      expect(await listening(metricsPort)).toBe(false);
    } finally {
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
    }
  });

  it('prints the version and the usage, exiting 0', () => {
    const version = spawnSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' });
    expect(version.status).toBe(0);
    expect(version.stdout).toMatch(/^hotpath \d+\.\d+\.\d+\n$/);
    const help = spawnSync(process.execPath, [CLI, 'serve', '--help'], { encoding: 'utf8' });
    expect(help.status).toBe(0);
    for (const flag of ['--model-store', '--model-control-mode', '--load-model', '--repository-poll-secs', '--strict-model-config',
      '--exit-timeout-secs', '--allow-metrics', '--max-message-size', '--log-format', '--version']) {
      expect(help.stdout).toContain(flag);
    }
  });

  it('exits 2 naming the flag for a bad value, and for no command at all', () => {
    const bad = spawnSync(process.execPath, [CLI, 'serve', `--model-store=${repository.dir}`, '--allow-http=maybe'], { encoding: 'utf8' });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/^hotpath: --allow-http: expected true or false .*got 'maybe'/);
    const none = spawnSync(process.execPath, [CLI], { encoding: 'utf8' });
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/^hotpath: missing command\n\nusage: hotpath serve/);
  });
});
