/**
 * A tritonserver command line on hotpath, end to end (issue #23, item 1 and
 * the port-in-use message): real server processes, the real gRPC client and
 * plain HTTP.
 *
 *   - KServe's kserve-tritonserver ServingRuntime's arguments (`tritonserver
 *     --model-store=... --grpc-port --http-port --allow-grpc --allow-http`)
 *     plus every Triton flag the issue lists, and a few that have no effect
 *     here: it serves, and each flag does what it says;
 *   - an unambiguous prefix is the flag; an unknown flag exits 2 in one line
 *     naming the nearest flag, without the usage; a port in use exits 2 in
 *     one line naming the flag as written and the port, without a stack;
 *   - --exit-on-error ends the process when a start-up model fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type HotpathClient } from '../../src/client/index.js';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { tempRepository } from './helpers/repositories.js';
import { httpJson, scrape } from './helpers/probes.js';
import { PACKAGE_ROOT, startServer, type RunningServer } from './helpers/server-process.js';

const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

let rootA: { dir: string; remove: () => Promise<void> };
let rootB: { dir: string; remove: () => Promise<void> };
const children: ChildProcess[] = [];
const servers: RunningServer[] = [];

beforeAll(async () => {
  // Root A: the sample ctr_mlp. Root B: ctr_mlp's model twice more, once with no
  // config.pbtxt (auto-completed) and once with a config that caches answers.
  rootA = await tempRepository((dir) => writeSampleRepository(dir, { only: ['ctr_mlp'] }));
  const onnx = path.join(rootA.dir, 'ctr_mlp', '1', 'model.onnx');
  rootB = await tempRepository(async (dir) => {
    for (const name of ['auto_ctr', 'cached']) {
      await mkdir(path.join(dir, name, '1'), { recursive: true });
      await copyFile(onnx, path.join(dir, name, '1', 'model.onnx'));
    }
    await writeFile(
      path.join(dir, 'cached', 'config.pbtxt'),
      'name: "cached"\nmax_batch_size: 64\n' +
        'input [ { name: "features" data_type: TYPE_FP32 dims: [ 32 ] } ]\n' +
        'output [ { name: "score" data_type: TYPE_FP32 dims: [ 1 ] } ]\n' +
        'response_cache { enable: true }\n',
    );
  });
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await Promise.all(servers.map((server) => server.stop()));
  await rootA?.remove();
  await rootB?.remove();
});

/** Waits until `file` has a JSON line that matches; rejects when the process exits first. */
async function logLine(file: string, child: ChildProcess, match: (line: Record<string, unknown>) => boolean, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    const text = await readFile(file, 'utf8').catch(() => '');
    for (const line of text.split('\n')) {
      if (!line.startsWith('{')) continue;
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (match(entry)) return entry;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no matching line in ${file}`);
}

const features = (seed: number) => ({ features: { shape: [1, 32], data: Float32Array.from({ length: 32 }, (_, i) => Math.cos(seed + i)) } });

describe("KServe's Triton runtime arguments plus every Triton flag of the issue", () => {
  let child: ChildProcess;
  let logFile: string;
  let stdout = '';
  let ports: { grpc: number; http: number; metrics: number };
  let client: HotpathClient;

  beforeAll(async () => {
    logFile = path.join(rootB.dir, 'server.log');
    child = spawn(process.execPath, [
      CLI,
      // kserve-tritonserver's args, ports made free ones:
      'tritonserver', `--model-store=${rootA.dir}`, '--grpc-port=0', '--http-port=0', '--allow-grpc=true', '--allow-http=true',
      // every flag #23 lists to implement:
      '--log-verbose=1', '--log-info=true', '--log-warning=true', '--log-error=true', `--log-file=${logFile}`,
      '--id=kserve-triton', '--http-address=127.0.0.1', '--grpc-address=127.0.0.1', '--exit-on-error=true', '--strict-readiness=true',
      '--model-load-thread-count=2', '--response-cache-byte-size=1048576', '--backend-config=onnxruntime,default-max-batch-size=8',
      '--metrics-interval-ms=250.5', '--http-thread-count=4', `--model-repository=${rootB.dir}`,
      // hotpath's own, for the test: the metrics port on a free port, no drain delay.
      '--metrics-port=0', '--metrics-address=127.0.0.1', '--drain-delay=0',
      // some of Triton's flags that have no effect here:
      '--allow-gpu-metrics=false', '--pinned-memory-pool-byte-size=268435456', '--rate-limit=off', '--backend-directory=/opt/tritonserver/backends',
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    const serving = await logLine(logFile, child, (l) => l['msg'] === 'hotpath serving');
    expect(serving['ready']).toBe(true);
    ports = { grpc: serving['grpc_port'] as number, http: serving['http_port'] as number, metrics: serving['metrics_port'] as number };
    client = createClient(`127.0.0.1:${ports.grpc}`);
  }, 180_000);

  afterAll(async () => {
    client?.close();
    if (child?.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });

  it('serves the models of both repositories, and is ready', async () => {
    expect(await client.ready()).toBe(true);
    for (const model of ['ctr_mlp', 'auto_ctr', 'cached']) {
      const result = await client.infer(model, features(1));
      expect(result.output<Float32Array>('score').shape, model).toEqual([1, 1]);
    }
    expect((await httpJson(ports.http, '/v2/health/ready')).status).toBe(200);
    expect((await client.repositoryIndex()).map((m) => m.name).sort()).toEqual(['auto_ctr', 'cached', 'ctr_mlp']);
  });

  it('--id names the server in ServerMetadata and GET /v2', async () => {
    expect((await client.metadata()).name).toBe('kserve-triton');
    const v2 = await httpJson(ports.http, '/v2');
    expect(v2.status).toBe(200);
    expect(v2.json.name).toBe('kserve-triton');
  });

  it('--backend-config default-max-batch-size completes a config without one; --response-cache-byte-size caches', async () => {
    expect((await client.config('auto_ctr')).maxBatchSize).toBe(8);
    // A config that sets max_batch_size keeps it.
    expect((await client.config('ctr_mlp')).maxBatchSize).toBe(64);
    const before = Number((await client.statistics('cached'))[0]!.inferenceStats!.cacheHit!.count);
    await client.infer('cached', features(7));
    await client.infer('cached', features(7));
    expect(Number((await client.statistics('cached'))[0]!.inferenceStats!.cacheHit!.count)).toBe(before + 1);
  });

  it('--http-address, --grpc-address bind 127.0.0.1; the metrics answer', async () => {
    const metrics = await scrape(ports.metrics);
    expect(metrics.has('nv_cpu_utilization')).toBe(true);
    const probe = (port: number, host: string) =>
      new Promise<boolean>((resolve) => {
        const socket = net.connect(port, host, () => {
          socket.destroy();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      });
    expect(await probe(ports.http, '127.0.0.1')).toBe(true);
    expect(await probe(ports.grpc, '127.0.0.1')).toBe(true);
  });

  it('--log-file takes the logs (--log-verbose=1: debug lines too), with one warning line per flag without effect', async () => {
    const lines = (await readFile(logFile, 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.find((l) => l['level'] === 'debug' && l['msg'] === 'serve options')).toMatchObject({
      server_name: 'kserve-triton',
      model_repositories: [rootA.dir, rootB.dir],
      model_load_concurrency: 2,
      default_max_batch_size: 8,
      response_cache_bytes: 1048576,
      metrics_interval_ms: 250.5,
      strict_readiness: true,
      exit_on_error: true,
    });
    const warnings = lines.filter((l) => l['level'] === 'warn' && l['component'] === 'cli').map((l) => l['msg'] as string);
    expect(warnings).toEqual(expect.arrayContaining([
      '--http-thread-count 4: no effect here: one thread (the main thread) serves HTTP and gRPC',
      expect.stringMatching(/^--allow-gpu-metrics: accepted, no effect here: /),
      expect.stringMatching(/^--pinned-memory-pool-byte-size: accepted, no effect here: /),
      expect.stringMatching(/^--rate-limit: accepted, no effect here: /),
      expect.stringMatching(/^--backend-directory: accepted, no effect here: /),
    ]));
    // Nothing but the logs' file: stdout stays empty.
    expect(stdout).toBe('');
  });
});

describe('the prefix rule, an unknown flag and a port in use', () => {
  it('takes an unambiguous prefix of a long flag (--model-repo, --grpc-p...)', async () => {
    const server = await startServer(rootA.dir, ['--model-repo', rootA.dir, '--strict-read=true', '--exit-on-e=true', '--http-p=0']);
    servers.push(server);
    const client = createClient(server.grpcAddress);
    try {
      expect(await client.ready()).toBe(true);
      expect((await client.infer('ctr_mlp', features(3))).output<Float32Array>('score').shape).toEqual([1, 1]);
    } finally {
      client.close();
    }
  }, 120_000);

  it('refuses an unknown flag in one line naming the nearest known flag, exit 2, without the usage', () => {
    const run = spawnSync(process.execPath, [CLI, 'serve', `--model-reposiotry=${rootA.dir}`], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    const lines = run.stderr.trimEnd().split('\n');
    expect(lines.length).toBeLessThanOrEqual(5);
    expect(lines[0]).toBe('hotpath: unknown option --model-reposiotry; did you mean --model-repository?');
    expect(run.stderr).not.toMatch(/usage:/);
    expect(run.stdout).toBe('');
  });

  it('exits 2 in one line naming the flag as written and the port in use, without a stack', async () => {
    const holder = net.createServer();
    holder.listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const port = (holder.address() as net.AddressInfo).port;
    try {
      for (const [written, flag] of [['--http-port', 'http-port'], ['--grpc-p', 'grpc-port']] as const) {
        const args = [CLI, 'serve', '--model-repository', rootA.dir, '--host', '127.0.0.1', '--grpc-port=0', '--http-port=0', '--metrics-port=-1',
          `${written}=${port}`];
        const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
        children.push(child);
        let stderr = '';
        child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
        const [code] = (await once(child, 'exit')) as [number | null];
        expect(code, flag).toBe(2);
        expect(stderr).toBe(`hotpath: ${written} ${port}: the port is in use on 127.0.0.1 (EADDRINUSE); free it or choose another port\n`);
      }
    } finally {
      holder.close();
    }
  }, 60_000);
});

describe('the sample models with --strict-readiness=true --exit-on-error=true', () => {
  it('all load, and the server is ready', async () => {
    const server = await startServer(path.join(PACKAGE_ROOT, 'models'), ['--strict-readiness=true', '--exit-on-error=true']);
    servers.push(server);
    const client = createClient(server.grpcAddress);
    try {
      expect(await client.ready()).toBe(true);
      const index = await client.repositoryIndex();
      expect(index.length).toBeGreaterThanOrEqual(5);
      for (const model of index) expect(`${model.name}: ${model.state}`).toBe(`${model.name}: READY`);
      expect((await client.infer('ctr_mlp', features(5))).output<Float32Array>('score').shape).toEqual([1, 1]);
    } finally {
      client.close();
    }
  }, 180_000);
});

describe('several repositories', () => {
  it('fail a model whose name is in two of them, naming neither path, and serve the others', async () => {
    const other = await tempRepository((dir) => writeSampleRepository(dir, { only: ['ctr_mlp'] }));
    try {
      const server = await startServer(rootB.dir, ['--model-repository', other.dir, '--model-repository', rootA.dir]);
      servers.push(server);
      const client = createClient(server.grpcAddress);
      try {
        const index = await client.repositoryIndex();
        const ctr = index.find((m) => m.name === 'ctr_mlp');
        expect(ctr?.state).toBe('UNAVAILABLE');
        expect(ctr?.reason).toBe("model 'ctr_mlp' is in 2 model repositories (--model-repository number 2 and 3); expected each model name in one repository only");
        expect(await client.ready('auto_ctr')).toBe(true);
        expect(await client.ready()).toBe(false);
      } finally {
        client.close();
      }
    } finally {
      await other.remove();
    }
  }, 120_000);
});

describe('several repositories in poll mode', () => {
  it('load a model that appears in the second root', async () => {
    const first = await tempRepository((dir) => writeSampleRepository(dir, { only: ['ctr_mlp'] }));
    const second = await tempRepository(async () => undefined);
    try {
      const server = await startServer(first.dir, ['--model-repository', second.dir, '--model-control-mode=poll', '--repository-poll-secs=0.3']);
      servers.push(server);
      const client = createClient(server.grpcAddress);
      try {
        expect((await client.repositoryIndex()).map((m) => m.name)).toEqual(['ctr_mlp']);
        await mkdir(path.join(second.dir, 'late_ctr', '1'), { recursive: true });
        await copyFile(path.join(first.dir, 'ctr_mlp', '1', 'model.onnx'), path.join(second.dir, 'late_ctr', '1', 'model.onnx'));
        const deadline = Date.now() + 60_000;
        while (!(await client.ready('late_ctr').catch(() => false)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        expect((await client.infer('late_ctr', features(9))).output<Float32Array>('score').shape).toEqual([1, 1]);
      } finally {
        client.close();
      }
    } finally {
      await first.remove();
      await second.remove();
    }
  }, 120_000);
});

describe('--exit-on-error', () => {
  it('ends the process (exit 1) when a start-up model fails, naming it; without it the others serve, unready', async () => {
    const broken = await tempRepository(async (dir) => {
      await writeSampleRepository(dir, { only: ['ctr_mlp'] });
      await mkdir(path.join(dir, 'broken', '1'), { recursive: true });
      await writeFile(path.join(dir, 'broken', '1', 'model.onnx'), 'not an onnx model');
    });
    try {
      const run = spawn(process.execPath, [CLI, 'serve', '--model-repository', broken.dir, '--host', '127.0.0.1', '--grpc-port=0',
        '--http-port=0', '--metrics-port=-1', '--exit-on-error=true'], { stdio: ['ignore', 'pipe', 'pipe'] });
      children.push(run);
      let out = '';
      run.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
      const [code] = (await once(run, 'exit')) as [number | null];
      expect(code).toBe(1);
      const fatal = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l['level'] === 'fatal');
      expect(fatal).toMatchObject({ msg: '--exit-on-error: a start-up model failed to load; exiting', models: ['broken'] });
      expect(out).not.toContain('hotpath serving');

      const tolerant = await startServer(broken.dir, ['--exit-on-error=false']);
      servers.push(tolerant);
      const client = createClient(tolerant.grpcAddress);
      try {
        expect(await client.ready()).toBe(false);
        expect(await client.ready('ctr_mlp')).toBe(true);
      } finally {
        client.close();
      }
    } finally {
      await broken.remove();
    }
  }, 120_000);
});
