/**
 * Starts a real hotpath server process (the compiled CLI) on free ports and
 * waits until it has loaded its repository (or, with `waitFor: 'listening'`,
 * only until its ports are bound). Tests talk to it over the network exactly
 * as a client would.
 *
 * Defaults for tests: every port 0, and `--drain-delay 0` so `stop()` does not
 * wait for load balancers that are not there; later `extraArgs` override them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

export const PACKAGE_ROOT = path.resolve(import.meta.dirname, '..', '..', '..');
const CLI = path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js');

export interface RunningServer {
  readonly grpcAddress: string;
  readonly grpcPort: number;
  readonly httpPort: number;
  readonly metricsPort: number;
  readonly process: ChildProcess;
  /** Every JSON log line the server printed so far. */
  readonly logs: Record<string, unknown>[];
  /** Everything the server wrote so far, stdout and stderr, JSON or not (for audits of the whole output). */
  output(): string;
  /** Resolves with the exit code once the process exits. */
  readonly exited: Promise<number | null>;
  /** Resolves with the first log line (already printed or future) that matches. */
  waitForLog(match: (line: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

export interface StartOptions {
  /** 'serving' (default): the repository is loaded. 'listening': ports are bound, models may still load. */
  readonly waitFor?: 'serving' | 'listening';
  /** Started with this descriptor limit (RLIMIT_NOFILE, soft and hard), through prlimit(1). */
  readonly descriptorLimit?: number;
}

export async function startServer(
  repository: string,
  extraArgs: string[] = [],
  options: StartOptions = {},
): Promise<RunningServer> {
  const limit = options.descriptorLimit === undefined ? [] : ['prlimit', `--nofile=${options.descriptorLimit}:${options.descriptorLimit}`, '--'];
  const command = [...limit, process.execPath];
  const child = spawn(
    command[0]!,
    [
      ...command.slice(1),
      CLI, 'serve', '--model-repository', repository, '--host', '127.0.0.1',
      '--grpc-port', '0', '--http-port', '0', '--metrics-port', '0', '--drain-delay', '0',
      ...extraArgs,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: Record<string, unknown>[] = [];
  const watchers = new Set<{ match: (line: Record<string, unknown>) => boolean; resolve: (line: Record<string, unknown>) => void }>();
  let stderr = '';
  const output: string[] = [];
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    output.push(chunk.toString());
  });
  child.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const lines = createInterface({ input: child.stdout! });
  lines.on('line', (line) => {
    let entry: Record<string, unknown>;
    try {
      entry = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    logs.push(entry);
    for (const watcher of [...watchers]) {
      if (watcher.match(entry)) {
        watchers.delete(watcher);
        watcher.resolve(entry);
      }
    }
  });
  const waitForLog = (match: (line: Record<string, unknown>) => boolean) => {
    const seen = logs.find(match);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise<Record<string, unknown>>((resolve) => watchers.add({ match, resolve }));
  };
  const wanted = options.waitFor === 'listening'
    ? (l: Record<string, unknown>) => l['msg'] === 'listening'
    : (l: Record<string, unknown>) => l['msg'] === 'hotpath serving';
  const ready = await Promise.race([
    waitForLog(wanted),
    exited.then((code) => {
      throw new Error(`server exited with ${code} before serving:\n${stderr}`);
    }),
  ]);
  const grpcPort = ready['grpc_port'] as number;
  return {
    grpcAddress: `127.0.0.1:${grpcPort}`,
    grpcPort,
    httpPort: ready['http_port'] as number,
    metricsPort: ready['metrics_port'] as number,
    process: child,
    logs,
    output: () => output.join(''),
    exited,
    waitForLog,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
