/**
 * Issue 21 item 9: refusals do not let a client decide the log's volume. A
 * flood of keyless HTTP calls and of 413s each writes a few lines, every one
 * with the running total, and the flood is summed up; and the metrics port
 * can be told to name no tenant (--metrics-tenant-labels=false).
 */
import { appendFile, mkdtemp, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { keyHash } from '../../src/security/api-keys.js';
import { httpGet } from './helpers/probes.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

const KEY = 'secret-tenant-key-0123456789';
let served: ServedRepository;

beforeAll(async () => {
  const secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-refusals-'));
  const tenantsFile = path.join(secrets, 'tenants.json');
  await writeFile(tenantsFile, JSON.stringify({ tenants: { acme_secret_tenant: { quota: '64MiB', keys: [keyHash(KEY)] } } }));
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] });
      await appendFile(path.join(dir, 'identity', 'config.pbtxt'), '\nparameters { key: "tenant" value: { string_value: "acme_secret_tenant" } }\n');
    }),
    ['--tenants-file', tenantsFile, '--require-api-key', '--max-message-size', '1MiB', '--metrics-tenant-labels=false'],
  );
});

afterAll(() => served?.close());

function post(pathname: string, body: Buffer, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port: served.server.httpPort, path: pathname, method: 'POST', agent: false, headers: { 'content-length': String(body.length), ...headers } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

/**
 * A POST that declares a body of `declaredBytes` and sends none of it: the
 * server answers 413 from Content-Length and closes the connection. (Sending
 * the body races that close: the client's write then fails with EPIPE before
 * it reads the answer.)
 */
function postDeclaredOnly(pathname: string, declaredBytes: number, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port: served.server.httpPort, path: pathname, method: 'POST', agent: false, headers: { 'content-length': String(declaredBytes), ...headers } },
      (response) => {
        resolve(response.statusCode ?? 0);
        request.destroy();
      },
    );
    request.on('error', (err) => (request.destroyed ? undefined : reject(err)));
    request.flushHeaders();
  });
}

const summed = (lines: Record<string, unknown>[]) => Math.max(0, ...lines.map((line) => line['total'] as number));

describe('refusal logs and tenant labels', () => {
  it('50 keyless HTTP calls and 50 oversized bodies: a few lines each, with running totals that reach 50', async () => {
    const keyless = await Promise.all(Array.from({ length: 50 }, () => post('/v2/models/identity/infer', Buffer.from('{}'))));
    expect(new Set(keyless)).toEqual(new Set([401]));
    const oversized = await Promise.all(
      Array.from({ length: 50 }, () => postDeclaredOnly('/v2/models/identity/infer', 2 * 1024 * 1024, { authorization: `Bearer ${KEY}` })),
    );
    expect(new Set(oversized)).toEqual(new Set([413]));
    // The summary line comes a refill (1 s) after the flood.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const auth = served.server.logs.filter((line) => line['refusal'] === 'http:unauthenticated');
    const tooLarge = served.server.logs.filter((line) => line['refusal'] === 'http:413');
    console.log(`50 keyless calls: ${auth.length} lines; 50 bodies over the limit: ${tooLarge.length} lines`);
    expect(auth.length).toBeLessThanOrEqual(8);
    expect(tooLarge.length).toBeLessThanOrEqual(8);
    expect(summed(auth)).toBe(50);
    expect(summed(tooLarge)).toBe(50);
    expect(tooLarge[0]).toMatchObject({ component: 'http', msg: 'request refused', status: 413 });
    expect(tooLarge[0]!['reason']).toMatch(/^request body too large: a body of 2097152 bytes exceeds the limit of 1048576 bytes \(--max-message-size\)$/);
    expect(JSON.stringify(auth)).not.toContain(KEY);
  });

  it('--metrics-tenant-labels=false: no metric names the tenant; model series are still there', async () => {
    const ok = await post(
      '/v2/models/identity/infer',
      Buffer.from(JSON.stringify({ inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [2], data: [1, 2] }] })),
      { authorization: `Bearer ${KEY}` },
    );
    expect(ok).toBe(200);
    const { status, body } = await httpGet(served.server.metricsPort, '/metrics');
    expect(status).toBe(200);
    expect(body).not.toContain('acme_secret_tenant');
    expect(body).toMatch(/^nv_inference_request_success\{model="identity",version="1"[^}]*\} 1$/m);
  });
});
