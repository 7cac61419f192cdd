/**
 * The usual e2e fixture: a temporary model repository, a real server process
 * serving it, and a client connected to it — set up in `beforeAll` and torn
 * down in `afterAll` by every suite that uses it.
 */
import { startServer, type RunningServer, type StartOptions } from './server-process.js';
import { TritonClient } from './triton-client.js';

export interface TempRepository {
  readonly dir: string;
  remove(): Promise<void>;
}

export interface ServedRepository {
  readonly dir: string;
  readonly server: RunningServer;
  readonly client: TritonClient;
  /** Closes the client, stops the server and removes the repository; resolves with the exit code. */
  close(): Promise<number | null>;
}

export async function serveRepository(
  repository: Promise<TempRepository>,
  args: string[] = [],
  options: StartOptions = {},
): Promise<ServedRepository> {
  const repo = await repository;
  const server = await startServer(repo.dir, args, options);
  const client = new TritonClient(server.grpcAddress);
  return {
    dir: repo.dir,
    server,
    client,
    async close() {
      client.close();
      const code = await server.stop();
      await repo.remove();
      return code;
    },
  };
}
