/**
 * Issue 21 item 1: on gRPC, the key, restricted groups and tenant limits are
 * decided from the metadata before the message is read (server/admission.ts,
 * a grpc-js server interceptor). A refused call costs no body: eight keyless
 * ModelInfer calls of 60 MiB each are refused UNAUTHENTICATED while the
 * server's resident memory stays flat, and a tenant over its rate is refused
 * the same way. Refusals are logged rate-limited, with counts.
 *
 * Real server process (RSS read from /proc), real grpc-js clients.
 */
import { mkdtemp, writeFile, appendFile } from 'node:fs/promises';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { keyHash } from '../../src/security/api-keys.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';
import { MiB, RssSampler } from './helpers/process-memory.js';
import { inferRequestBytes, MODEL_INFER, rawUnary } from './helpers/raw-grpc.js';

const KEYS = { ads: 'ads-key-0123456789abcdef', slow: 'slow-key-0123456789abcdef' };
let served: ServedRepository;
let client: grpc.Client;

const bearer = (key: string | undefined) => {
  const metadata = new grpc.Metadata();
  if (key !== undefined) metadata.set('authorization', `Bearer ${key}`);
  return metadata;
};

async function model(dir: string, name: string, tenant: string): Promise<void> {
  await writeIdentityModel(dir, { name, dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] });
  await appendFile(path.join(dir, name, 'config.pbtxt'), `\nparameters { key: "tenant" value: { string_value: "${tenant}" } }\n`);
}

/** A valid ModelInfer message for `name` of about `bytes` bytes (one FP32 input). */
function validMessage(name: string, bytes: number): Buffer {
  const floats = Math.floor(bytes / 4);
  return inferRequestBytes(name, { name: 'INPUT0', datatype: 'FP32', shape: [floats], raw: Buffer.alloc(floats * 4, 1) });
}

beforeAll(async () => {
  const secrets = await mkdtemp(path.join(os.tmpdir(), 'hotpath-admission-'));
  const tenantsFile = path.join(secrets, 'tenants.json');
  await writeFile(
    tenantsFile,
    JSON.stringify({
      tenants: {
        ads: { quota: '256MiB', keys: [keyHash(KEYS.ads)] },
        // One request, then the bucket refills only every 1000 s.
        slow: { quota: '256MiB', keys: [keyHash(KEYS.slow)], rate: 0.001, burst: 1 },
      },
    }),
  );
  served = await serveRepository(
    tempRepository(async (dir) => {
      await model(dir, 'ads_model', 'ads');
      await model(dir, 'slow_model', 'slow');
    }),
    ['--tenants-file', tenantsFile, '--require-api-key'],
  );
  client = new grpc.Client(served.server.grpcAddress, grpc.credentials.createInsecure());
});

afterAll(async () => {
  client?.close();
  await served?.close();
});

describe('gRPC admission before the message', () => {
  it('8 concurrent keyless 60 MiB ModelInfer calls: UNAUTHENTICATED before the body, RSS rise < 32 MB', async () => {
    const message = validMessage('ads_model', 60 * MiB);
    // The same message, keyed, is valid: what is refused is the missing key, not the message.
    const keyed = await rawUnary(client, MODEL_INFER, validMessage('ads_model', 1024), bearer(KEYS.ads));
    expect(grpc.status[keyed.code]).toBe('OK');

    const rss = new RssSampler(served.server.process.pid!);
    const outcomes = await Promise.all(Array.from({ length: 8 }, () => rawUnary(client, MODEL_INFER, message)));
    const rise = rss.stop();
    for (const outcome of outcomes) {
      expect(grpc.status[outcome.code]).toBe('UNAUTHENTICATED');
      expect(outcome.details).toMatch(/^missing API key: send the header 'authorization: Bearer <key>'$/);
    }
    const slowest = Math.max(...outcomes.map((o) => o.ms));
    console.log(`8 x 60 MiB keyless: RSS rise ${(rise / MiB).toFixed(1)} MiB, slowest refusal ${slowest.toFixed(0)} ms`);
    expect(rise).toBeLessThan(32 * MiB);
  }, 60_000);

  it('the refusal comes before the body: headers alone, no DATA frame, are answered UNAUTHENTICATED', async () => {
    const session = http2.connect(`http://${served.server.grpcAddress}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': MODEL_INFER,
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      // Nothing is written: a server that waited for the message would never answer.
      const headers = await new Promise<http2.IncomingHttpHeaders>((resolve) => stream.once('response', resolve));
      expect(headers['grpc-status']).toBe(String(grpc.status.UNAUTHENTICATED));
      expect(decodeURIComponent(String(headers['grpc-message']))).toMatch(/^missing API key/);
      stream.close();
    } finally {
      session.close();
    }
  });

  it('a tenant over its rate is refused RESOURCE_EXHAUSTED from the metadata, before a 60 MiB body', async () => {
    const first = await rawUnary(client, MODEL_INFER, validMessage('slow_model', 1024), bearer(KEYS.slow));
    expect(grpc.status[first.code]).toBe('OK');
    const rss = new RssSampler(served.server.process.pid!);
    const refused = await rawUnary(client, MODEL_INFER, validMessage('slow_model', 60 * MiB), bearer(KEYS.slow));
    const rise = rss.stop();
    expect(grpc.status[refused.code]).toBe('RESOURCE_EXHAUSTED');
    expect(refused.details).toMatch(
      /^tenant 'slow' is over its request rate limit \(rate 0\.001 requests\/s, burst 1 in the tenants file\): no request left in the bucket; the next is allowed in \d+ ms$/,
    );
    console.log(`60 MiB over-rate: RSS rise ${(rise / MiB).toFixed(1)} MiB, refused in ${refused.ms.toFixed(0)} ms`);
    expect(rise).toBeLessThan(32 * MiB);
  }, 60_000);

  it('refusals are logged rate-limited, each line with the running total and what it left out', async () => {
    const refusals = Array.from({ length: 40 }, () => rawUnary(client, MODEL_INFER, validMessage('ads_model', 16)));
    for (const outcome of await Promise.all(refusals)) expect(grpc.status[outcome.code]).toBe('UNAUTHENTICATED');
    const lines = served.server.logs.filter((l) => l['msg'] === 'call refused' && l['refusal'] === 'grpc:unauthenticated');
    // 48 refusals so far; a burst of 5 lines, then about one a second.
    expect(lines.length).toBeGreaterThanOrEqual(5);
    expect(lines.length).toBeLessThan(20);
    expect(lines[0]).toMatchObject({ component: 'auth', door: 'grpc', rpc: 'ModelInfer', kind: 'unauthenticated' });
    expect(Math.max(...lines.map((l) => l['total'] as number))).toBeLessThanOrEqual(48);
    expect(JSON.stringify(lines)).not.toContain(KEYS.ads);
  });
});
