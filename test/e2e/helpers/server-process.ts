/**
 * Starts a real hotpath server process (the compiled CLI) on free ports and
 * waits until it has loaded its repository. Tests talk to it over the network
 * exactly as a client would.
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
  readonly process: ChildProcess;
  /** Every JSON log line the server printed so far. */
  readonly logs: Record<string, unknown>[];
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
}

export async function startServer(repository: string, extraArgs: string[] = []): Promise<RunningServer> {
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--model-repository', repository, '--host', '127.0.0.1', '--grpc-port', '0', '--http-port', '0', ...extraArgs],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const serving = new Promise<Record<string, unknown>>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(entry);
      if (entry['msg'] === 'hotpath serving') resolve(entry);
    });
    void exited.then((code) => reject(new Error(`server exited with ${code} before serving:\n${stderr}`)));
  });
  const ready = await serving;
  const grpcPort = ready['grpc_port'] as number;
  return {
    grpcAddress: `127.0.0.1:${grpcPort}`,
    grpcPort,
    httpPort: ready['http_port'] as number,
    process: child,
    logs,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
