/**
 * The README's production install, run as a user runs it: `npm pack`, then the
 * README's one install command, verbatim, in an empty project with no `.npmrc`;
 * `npx hotpath serve` serves the package's own models; the README's Node client
 * example (plain JavaScript) runs unchanged against it, once from that project
 * and once from a second one that installed the tarball the README's
 * client-only way (no install script, so no addon build and no download).
 *
 * What it proves besides "it serves": no devDependency is installed; the
 * package's postinstall built the addon and wrote the unshipped sample model;
 * onnxruntime-node fetched nothing (its CUDA provider is absent, and the
 * install passed, where a fetch from api.nuget.org fails on an offline machine).
 *
 * Slow by nature (a native build, with CUDA when nvcc is there; the install took
 * 12.5 minutes on a busy 2-core machine, hence the long timeout): each phase's
 * time is printed. The tarball is packed from the dist/ that `npm test`
 * compiled just before (`--ignore-scripts`: prepack's tsc would rewrite dist/
 * under the other suites' servers).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PACKAGE_ROOT } from './helpers/server-process.js';

const run = promisify(execFile);
const MINUTE = 60_000;
const README = readFileSync(path.join(PACKAGE_ROOT, 'README.md'), 'utf8');
const VERSION = (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const TARBALL = `hotpath-${VERSION}.tgz`;

/** The one line of the README that starts with `prefix` (there must be exactly one). */
function readmeLine(prefix: string): string {
  const lines = README.split('\n').filter((line) => line.startsWith(prefix));
  expect(lines, `README lines starting with ${JSON.stringify(prefix)}`).toHaveLength(1);
  return lines[0]!;
}

/** The README's Node client example: the ```js block whose first line names score.mjs. */
function readmeClientExample(): string {
  const blocks = [...README.matchAll(/^```js\n(\/\/ score\.mjs[^\n]*\n[\s\S]*?)^```$/gm)].map((match) => match[1]!);
  expect(blocks, 'README ```js blocks that start with // score.mjs').toHaveLength(1);
  return blocks[0]!;
}

const INSTALL = readmeLine('ONNXRUNTIME_NODE_INSTALL=skip npm install');
const CLIENT_ONLY_INSTALL = readmeLine('npm install --omit=dev --ignore-scripts');
const EXAMPLE = readmeClientExample();

let work: string;
let app: string;
let clientApp: string;
let server: ChildProcess | undefined;
/** Whether the server's group has exited (npx may exit before the server it started). */
let serverClosed = false;
const serverLogs: Record<string, unknown>[] = [];
const timings: Record<string, string> = {};

/**
 * The environment of a plain shell: no npm_* settings from an enclosing `npm test`, no
 * pinned addon, and no ONNXRUNTIME_NODE_INSTALL unless the README's command sets it.
 */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^npm_/i.test(key) || /^ONNXRUNTIME_NODE_INSTALL/.test(key)) continue;
    if (key === 'HOTPATH_NATIVE_ADDON' || key === 'INIT_CWD') continue;
    env[key] = value;
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

/** An empty project, as `npm init -y` leaves it: a package.json and nothing else. */
async function emptyProject(name: string): Promise<string> {
  const dir = path.join(work, name);
  await mkdir(dir);
  await writeFile(path.join(dir, 'package.json'), `${JSON.stringify({ name, version: '1.0.0', private: true }, null, 2)}\n`);
  return dir;
}

/** Runs a README command line as a shell would, in `cwd`; niced, since the native build shares the machine. */
function shell(command: string, cwd: string, env: NodeJS.ProcessEnv) {
  return run('nice', ['-n', '10', 'sh', '-c', command], { cwd, env, maxBuffer: 64 * 1024 * 1024 });
}

beforeAll(async () => {
  expect(existsSync(path.join(PACKAGE_ROOT, 'dist', 'src', 'index.js')), 'dist/ is built (npm test compiles it first)').toBe(true);
  work = await mkdtemp(path.join(os.tmpdir(), 'hotpath-prod-'));
  app = await emptyProject('app');
  clientApp = await emptyProject('client-app');
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

describe("the README's production install of the packed tarball", () => {
  it('the README names the tarball npm pack writes, in both install commands', () => {
    expect(INSTALL).toBe(`ONNXRUNTIME_NODE_INSTALL=skip npm install --omit=dev ./${TARBALL}`);
    expect(CLIENT_ONLY_INSTALL).toBe(`npm install --omit=dev --ignore-scripts ./${TARBALL}`);
  });

  it('installs with no .npmrc, serves with npx hotpath serve, and the README client example scores from both projects', { timeout: 25 * MINUTE }, async () => {
    const env = cleanEnv();
    await timed('pack', () => run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', app], { cwd: PACKAGE_ROOT, env }));
    expect((await readdir(app)).sort(), 'an empty project: no .npmrc, only package.json and the tarball').toEqual(['package.json', TARBALL].sort());
    await copyFile(path.join(app, TARBALL), path.join(clientApp, TARBALL));

    await timed('install', () => shell(INSTALL, app, env));
    const pkg = path.join(app, 'node_modules', 'hotpath');
    for (const dev of ['typescript', 'vitest', 'madge', '@bufbuild/buf']) {
      expect(existsSync(path.join(app, 'node_modules', dev)), `devDependency ${dev} is not installed`).toBe(false);
    }
    expect(existsSync(path.join(pkg, 'src', 'cli.ts')), 'no TypeScript sources are shipped').toBe(false);
    expect(
      ['build-cmake', 'build'].some((dir) => existsSync(path.join(pkg, dir, 'Release', 'hotpath_native.node'))),
      "hotpath's postinstall built the addon",
    ).toBe(true);
    expect(existsSync(path.join(pkg, 'models', 'ranker_mlp', '1', 'model.onnx')), 'postinstall generated the unshipped model').toBe(true);
    const ortLinux = path.join(app, 'node_modules', 'onnxruntime-node', 'bin', 'napi-v6', 'linux', 'x64');
    expect(existsSync(path.join(ortLinux, 'onnxruntime_binding.node')), "onnxruntime-node's shipped CPU binding").toBe(true);
    expect(existsSync(path.join(ortLinux, 'libonnxruntime_providers_cuda.so')), 'onnxruntime-node downloaded nothing').toBe(false);

    // The exports map, from the installing project: both entries and their declarations.
    const resolved = await run(
      process.execPath,
      ['--input-type=module', '-e', "console.log(JSON.stringify([import.meta.resolve('hotpath'), import.meta.resolve('hotpath/client')]))"],
      { cwd: app, env },
    );
    expect(JSON.parse(resolved.stdout)).toEqual([
      pathToFileURL(path.join(pkg, 'dist', 'src', 'index.js')).href,
      pathToFileURL(path.join(pkg, 'dist', 'src', 'client', 'index.js')).href,
    ]);
    expect(existsSync(path.join(pkg, 'dist', 'src', 'index.d.ts'))).toBe(true);
    expect(existsSync(path.join(pkg, 'dist', 'src', 'client', 'index.d.ts'))).toBe(true);

    // The client-only install: no script runs, so nothing is built or fetched.
    await timed('client-only install', () => shell(CLIENT_ONLY_INSTALL, clientApp, env));
    const clientPkg = path.join(clientApp, 'node_modules', 'hotpath');
    expect(existsSync(path.join(clientPkg, 'dist', 'src', 'client', 'index.js'))).toBe(true);
    expect(existsSync(path.join(clientPkg, 'build-cmake')) || existsSync(path.join(clientPkg, 'build')), 'no addon was built').toBe(false);

    const ports = await timed('serve until ready', () => startServed(env, path.join(pkg, 'models')));

    // The README's example, unchanged, as score.mjs in each project.
    const outputs: string[] = [];
    for (const project of [app, clientApp]) {
      await writeFile(path.join(project, 'score.mjs'), EXAMPLE);
      const { stdout } = await timed(`example (${path.basename(project)})`, () =>
        run(process.execPath, ['score.mjs'], { cwd: project, env: { ...env, HOTPATH_GRPC: `127.0.0.1:${ports.grpc}` } }),
      );
      outputs.push(stdout);
    }
    for (const stdout of outputs) {
      // The outputs the README's comments show.
      expect(stdout).toMatch(/^true true true$/m);
      expect(stdout).toMatch(/^request-1 1 \[ 2, 1 \] Float32Array\(2\) \[ 0\.2584\d*, 0\.2584\d* \]$/m);
      expect(stdout).toContain("BigInt64Array(4) [ 1n, 2n, 3n, 4n ] [ 'a', 'bb', 'ccc', 'dddd' ]");
      expect(stdout).toContain("INVALID_ARGUMENT true input 'features': expected shape [-1,32], got [1,16]");
      expect(stdout).toContain('[ [ 1, 1 ], [ 2, 1 ], [ 3, 1 ] ]');
      expect(stdout).toMatch(/name: 'ctr_mlp', version: '1', state: 'READY', reason: ''/);
    }
    // A fresh server: the first run's rows (2, then 1 + 2 + 3) are the README's count.
    expect(outputs[0]).toMatch(/^8n$/m);

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
