/**
 * The image's HEALTHCHECK script (deploy/docker/healthcheck.mjs) against real
 * servers: it finds the HTTP port the server was given, whatever it is, and
 * asks that port's /v2/health/ready. `--pid` points it at the test's server;
 * in the image it finds the server by its command line.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRepository } from './helpers/repositories.js';
import { PACKAGE_ROOT, startServer, type RunningServer } from './helpers/server-process.js';

const run = promisify(execFile);
const SCRIPT = path.join(PACKAGE_ROOT, 'deploy', 'docker', 'healthcheck.mjs');

async function healthcheck(pid: number): Promise<{ code: number; line: string }> {
  try {
    const { stdout } = await run(process.execPath, [SCRIPT, '--pid', String(pid)]);
    return { code: 0, line: stdout.trim() };
  } catch (err) {
    const failed = err as { code?: number; stdout?: string };
    return { code: failed.code ?? -1, line: (failed.stdout ?? '').trim() };
  }
}

let repository: { dir: string; remove: () => Promise<void> };
const servers: RunningServer[] = [];

beforeAll(async () => {
  repository = await sampleRepository(['ctr_mlp']);
});

afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await repository?.remove();
});

async function serve(args: string[]): Promise<RunningServer> {
  const server = await startServer(repository.dir, args);
  servers.push(server);
  return server;
}

describe('deploy/docker/healthcheck.mjs', () => {
  it("is healthy on the server's own HTTP port, not a fixed one", { timeout: 60_000 }, async () => {
    const server = await serve([]);
    expect(server.httpPort).not.toBe(8000);
    const { code, line } = await healthcheck(server.process.pid!);
    expect(line).toBe(`ready: http://127.0.0.1:${server.httpPort}/v2/health/ready`);
    expect(code).toBe(0);
  });

  it('asks over loopback when the server listens on every address (--host 0.0.0.0)', { timeout: 60_000 }, async () => {
    const server = await serve(['--host', '0.0.0.0']);
    const { code, line } = await healthcheck(server.process.pid!);
    expect(line).toBe(`ready: http://127.0.0.1:${server.httpPort}/v2/health/ready`);
    expect(code).toBe(0);
  });

  it('is unhealthy, naming every port it asked, when no port answers ready (HTTP off)', { timeout: 60_000 }, async () => {
    const server = await serve(['--http-port=-1']);
    const { code, line } = await healthcheck(server.process.pid!);
    expect(code).toBe(1);
    expect(line).toMatch(/^unhealthy: /);
    expect(line).toContain(`http://127.0.0.1:${server.grpcPort}/v2/health/ready`);
    expect(line).toContain(`http://127.0.0.1:${server.metricsPort}/v2/health/ready 404`);
  });

  it('is unhealthy when the process is not there or listens on nothing', async () => {
    const stopped = await healthcheck(2 ** 22 + 1);
    expect(stopped).toEqual({ code: 1, line: `unhealthy: cannot read process ${2 ** 22 + 1}'s sockets (ENOENT)` });
    const self = await healthcheck(process.pid);
    expect(self.code).toBe(1);
    expect(self.line).toMatch(/^unhealthy: /);
  });
});
