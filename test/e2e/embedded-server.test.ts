/**
 * The embeddable API: `createServer` from the package entry (`hotpath`, as
 * its `exports` map resolves it) running in this process, scored through
 * `hotpath/client`. Both are imported by the package's own name, so the
 * test also proves the `exports` map and the compiled entry points.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { once } from 'node:events';
import net from 'node:net';
import { createServer, PortInUseError, type EmbeddedServer } from 'hotpath';
import { createClient, status, type HotpathClient } from 'hotpath/client';
import { sampleRepository } from './helpers/repositories.js';

let repository: { dir: string; remove: () => Promise<void> };
let server: EmbeddedServer;
let client: HotpathClient | undefined;

beforeAll(async () => {
  repository = await sampleRepository(['ctr_mlp']);
});

afterAll(async () => {
  client?.close();
  await server?.close();
  await repository?.remove();
});

describe('createServer', () => {
  it('rejects start() with a PortInUseError naming the door and the port when the port is taken', async () => {
    const holder = net.createServer();
    holder.listen(0, '127.0.0.1');
    await once(holder, 'listening');
    const port = (holder.address() as net.AddressInfo).port;
    const taken = createServer({ modelRepository: repository.dir, host: '127.0.0.1', grpcPort: 0, httpPort: port, metricsPort: -1, logLevel: 'silent' });
    try {
      const err = await taken.start().then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(PortInUseError);
      expect(err).toMatchObject({ door: 'http', port, address: '127.0.0.1', code: 'EADDRINUSE' });
    } finally {
      await taken.close();
      holder.close();
    }
  });

  it('requires a model repository and checks the options it is given', () => {
    expect(() => createServer({} as never)).toThrow(/modelRepository is required/);
    expect(() => createServer({ modelRepository: repository.dir, grpcPort: 70000 })).toThrow(
      /grpcPort: expected an integer in 0\.\.65535, got 70000/,
    );
    // Every check the command line makes, from the same options table: tenants, TLS files, routes, access.
    expect(() => createServer({ modelRepository: repository.dir, memoryCapacityBytes: 4096, tenants: [{ name: 'ads', quotaBytes: 8192 }] })).toThrow(
      /^createServer: tenants ads: quota 8192 bytes exceeds the memory capacity of 4096 bytes$/,
    );
    expect(() => createServer({ modelRepository: repository.dir, routesFile: '/nonexistent/routes.yaml' })).toThrow(/^createServer: routesFile: /);
    expect(() => createServer({
      modelRepository: repository.dir,
      httpTls: { certFile: '/nonexistent/server.crt', keyFile: '/nonexistent/server.key', rootCertFile: undefined, mutual: false },
    })).toThrow(/^createServer: --http-server-cert: cannot read '\/nonexistent\/server\.crt'/);
    expect(() => createServer({ modelRepository: repository.dir, requireApiKey: true })).toThrow(RangeError);
    expect(() => createServer({ modelRepository: [] })).toThrow(/modelRepository is required/);
  });

  it('starts in-process on port 0, turns ready, scores through hotpath/client and closes', async () => {
    server = createServer({
      modelRepository: repository.dir,
      host: '127.0.0.1',
      grpcPort: 0,
      httpPort: 0,
      metricsPort: -1,
      logLevel: 'warn',
    });
    expect(server.ready()).toBe(false);
    expect(server.ports).toBeUndefined();

    const ports = await server.start();
    expect(ports.grpc).toBeGreaterThan(0);
    expect(ports.http).toBeGreaterThan(0);
    expect(ports.metrics).toBeUndefined();
    expect(server.ports).toEqual(ports);
    expect(server.ready()).toBe(true);

    client = createClient(`127.0.0.1:${ports.grpc}`);
    expect(await client.ready()).toBe(true);
    const result = await client.infer('ctr_mlp', { features: { shape: [2, 32], data: new Float32Array(64).fill(0.25) } });
    const score = result.output<Float32Array>('score');
    expect(score.shape).toEqual([2, 1]);
    expect(score.data[0]).toBeGreaterThan(0);
    expect(score.data[0]).toBeLessThan(1);
    expect(score.data[1]).toBeCloseTo(score.data[0]!, 6);

    const health = await fetch(`http://127.0.0.1:${ports.http}/v2/health/ready`);
    expect(health.status).toBe(200);

    await server.close();
    expect(server.ready()).toBe(false);
    const err = await client.live({ timeoutMs: 2000 }).then(
      () => undefined,
      (e: { code?: number }) => e,
    );
    expect(err?.code).toBe(status.UNAVAILABLE);
  });
});
