/**
 * The production install: the packed package (`npm pack`) installed with
 * `--omit=dev` into an empty project, so no devDependency (no typescript) is
 * there. Its postinstall builds the native addon from the shipped sources
 * (cmake-js is a dependency) and writes the sample models that are not
 * shipped; `npx hotpath serve` then serves the package's own models/ and
 * scores a request through the installed `hotpath/client`.
 *
 * Slow by nature (a native build; about a minute on 2 cores): each phase's
 * time is printed. The tarball is packed from the dist/ that `npm test`
 * compiled just before (`--ignore-scripts`: prepack's tsc would rewrite dist/
 * under the other suites' servers).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from './helpers/server-process.js';

type ClientModule = typeof import('../../src/client/index.js');

const run = promisify(execFile);
const MINUTE = 60_000;

let work: string;
let app: string;
let server: ChildProcess | undefined;
/** Whether the server's group has exited (npx may exit before the server it started). */
let serverClosed = false;
const serverLogs: Record<string, unknown>[] = [];
const timings: Record<string, string> = {};

/** The environment of a plain shell: no npm_* settings from an enclosing `npm test`, no pinned addon. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^npm_/i.test(key) && key !== 'HOTPATH_NATIVE_ADDON' && key !== 'INIT_CWD') env[key] = value;
  }
  return env;
}

async function timed<T>(label: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now();
  try {
    return await work();
  } finally {
    timings[label] = `${((performance.now() - started) / 1000).toFixed(1)}s`;
  }
}

beforeAll(async () => {
  expect(existsSync(path.join(PACKAGE_ROOT, 'dist', 'src', 'index.js')), 'dist/ is built (npm test compiles it first)').toBe(true);
  work = await mkdtemp(path.join(os.tmpdir(), 'hotpath-prod-'));
  app = path.join(work, 'app');
  await mkdir(app);
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'hotpath-prod-install', private: true }));
  // As the project's own .npmrc: onnxruntime-node's CPU binaries ship in the package.
  await writeFile(path.join(app, '.npmrc'), 'onnxruntime-node-install=skip\n');
});

afterAll(async () => {
  if (server?.pid !== undefined && !serverClosed) {
    try {
      process.kill(-server.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  console.log(`production install timings: ${JSON.stringify(timings)}`);
  if (work) await rm(work, { recursive: true, force: true });
});

describe('npm pack, then npm install --omit=dev of the tarball', () => {
  it('installs without devDependencies, serves with npx hotpath serve and scores through hotpath/client', { timeout: 15 * MINUTE }, async () => {
    const env = cleanEnv();
    const packed = await timed('pack', () =>
      run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], { cwd: PACKAGE_ROOT, env }),
    );
    const tarball = path.join(work, packed.stdout.trim().split('\n').pop()!);
    expect(existsSync(tarball)).toBe(true);

    // Niced: the native build shares the machine with the other suites' servers.
    const installed = await timed('install', () =>
      run(
        'nice',
        ['-n', '10', 'npm', 'install', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund', '--foreground-scripts', tarball],
        { cwd: app, env, maxBuffer: 64 * 1024 * 1024 },
      ),
    );
    const installLog = `${installed.stdout}${installed.stderr}`;
    expect(installLog).toMatch(/hotpath: built build-cmake\/Release\/hotpath_native\.node|hotpath: built build\/Release\/hotpath_native\.node/);
    const pkg = path.join(app, 'node_modules', 'hotpath');
    for (const dev of ['typescript', 'vitest', 'madge', '@bufbuild/buf']) {
      expect(existsSync(path.join(app, 'node_modules', dev)), `devDependency ${dev} is not installed`).toBe(false);
    }
    expect(existsSync(path.join(pkg, 'src', 'cli.ts')), 'no TypeScript sources are shipped').toBe(false);
    expect(existsSync(path.join(pkg, 'models', 'ranker_mlp', '1', 'model.onnx')), 'postinstall generated the unshipped model').toBe(true);

    // The exports map, from the installing project: both entries and their declarations.
    const resolved = await run(
      process.execPath,
      ['--input-type=module', '-e', "console.log(JSON.stringify([import.meta.resolve('hotpath'), import.meta.resolve('hotpath/client')]))"],
      { cwd: app, env },
    );
    const [entry, clientEntry] = JSON.parse(resolved.stdout) as [string, string];
    expect(entry).toBe(pathToFileURL(path.join(pkg, 'dist', 'src', 'index.js')).href);
    expect(clientEntry).toBe(pathToFileURL(path.join(pkg, 'dist', 'src', 'client', 'index.js')).href);
    expect(existsSync(path.join(pkg, 'dist', 'src', 'index.d.ts'))).toBe(true);
    expect(existsSync(path.join(pkg, 'dist', 'src', 'client', 'index.d.ts'))).toBe(true);

    const ports = await timed('serve until ready', () => startServed(env, path.join(pkg, 'models')));

    const { createClient } = (await import(clientEntry)) as ClientModule;
    const client = createClient(`127.0.0.1:${ports.grpc}`, { timeoutMs: 30_000 });
    try {
      expect(await client.ready()).toBe(true);
      const result = await timed('first request', () =>
        client.infer('ctr_mlp', { features: { shape: [1, 32], data: new Float32Array(32).fill(0.5) } }),
      );
      const score = result.output<Float32Array>('score');
      expect(score.shape).toEqual([1, 1]);
      expect(score.data[0]).toBeGreaterThan(0);
      expect(score.data[0]).toBeLessThan(1);
    } finally {
      client.close();
    }

    // SIGTERM to the whole group (npx and the server it started), as a terminal's Ctrl-C would:
    // npm exec does not pass signals on when its output is piped. 'close' waits for the server
    // too, which holds the same stdout pipe until it exits.
    const closed = new Promise<void>((resolve) => server!.once('close', () => resolve()));
    process.kill(-server!.pid!, 'SIGTERM');
    await closed;
    expect(serverLogs.find((line) => line['msg'] === 'stopped')).toMatchObject({ graceful: true });
  });
});

/** `npx hotpath serve` in the installing project, on free ports; resolves once its repository is loaded. */
async function startServed(env: NodeJS.ProcessEnv, models: string): Promise<{ grpc: number }> {
  const child = spawn(
    'npx',
    [
      '--no', 'hotpath', 'serve', '--model-repository', models, '--host', '127.0.0.1',
      '--grpc-port', '0', '--http-port', '0', '--metrics-port', '0', '--drain-delay', '0', '--patrol-interval', '0',
    ],
    { cwd: app, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  server = child;
  child.once('close', () => {
    serverClosed = true;
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const serving = new Promise<{ grpc: number }>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        const entry = JSON.parse(line) as Record<string, unknown>;
        serverLogs.push(entry);
        if (entry['msg'] === 'hotpath serving') resolve({ grpc: entry['grpc_port'] as number });
      } catch {
        // not a log line
      }
    });
    child.once('exit', (code) => reject(new Error(`npx hotpath serve exited with ${code} before serving:\n${stderr}`)));
  });
  return serving;
}
