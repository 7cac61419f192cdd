// Starts the compiled hotpath server (dist/src/cli.js serve) as its own
// process on 127.0.0.1, on free ports (gRPC and metrics), and waits for its one
// machine-readable `hotpath serving` log line, which carries the ports it
// bound. Every JSON log line is kept (bounded) for suites that read them.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';

import { track } from './child-process.js';

export interface ServerProcess {
  readonly address: string;
  readonly pid: number;
  readonly metricsPort: number;
  /** The server's JSON log lines so far (the first 100,000). */
  readonly lines: readonly Record<string, unknown>[];
  /** SIGTERM (the server drains at once with --drain-delay 0), SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

export async function startServer(root: string, repository: string, extraArgs: readonly string[], timeoutMs: number): Promise<ServerProcess> {
  const cli = path.join(root, 'dist', 'src', 'cli.js');
  const child = spawn(process.execPath, [
    cli, 'serve', '--model-repository', repository, '--host', '127.0.0.1',
    '--grpc-port', '0', '--http-port=-1', '--metrics-port', '0',
    '--drain-delay', '0', '--access-log-sample-rate', '0', ...extraArgs,
  ], { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const reader = createInterface({ input: child.stdout });
  const lines: Record<string, unknown>[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`server not serving after ${timeoutMs} ms\n${stderr}`)), timeoutMs);
      child.once('exit', (code, signal) => reject(new Error(`server exited (${signal ?? code}) before serving\n${stderr}`)));
      // Keeps reading after start-up too, so the server never blocks on a full pipe.
      reader.on('line', (line) => {
        let entry: Record<string, unknown>;
        try {
          entry = JSON.parse(line) as Record<string, unknown>;
        } catch {
          return;
        }
        if (lines.length < 100_000) lines.push(entry);
        if (entry['msg'] === 'hotpath serving') {
          if (entry['ready'] !== true) reject(new Error(`server started but is not ready: ${line}`));
          else resolve(entry);
        }
      });
    });
    return {
      address: `127.0.0.1:${ready['grpc_port'] as number}`,
      pid: child.pid!,
      metricsPort: ready['metrics_port'] as number,
      lines,
      async stop(graceMs = 10_000) {
        if (child.exitCode !== null || child.signalCode !== null) return;
        child.kill('SIGTERM');
        const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(kill);
      },
    };
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
