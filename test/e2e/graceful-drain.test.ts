/**
 * Graceful drain on SIGTERM under a steady load of concurrent requests (each
 * held ~150 ms in its worker by the test-only delay fault, so requests are
 * always in flight): readiness turns off at once while requests still succeed
 * for the drain delay; then new calls get UNAVAILABLE, every admitted request
 * completes, an open stream gets its answer and ends with OK, and the process
 * exits 0.
 */
import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { healthCheck, httpGet, NOT_SERVING, SERVING } from './helpers/probes.js';
import { startServer, type RunningServer } from './helpers/server-process.js';
import { f32Bytes, TritonClient, type Message } from './helpers/triton-client.js';

const DRAIN_DELAY_MS = 600;
const WORK_MS = 150;
let server: RunningServer;
let repo: { dir: string; remove: () => Promise<void> };

beforeAll(async () => {
  repo = await tempRepository(async (dir) => {
    await writeIdentityModel(dir, { name: 'echo', dtype: 'FP32', maxBatchSize: 4, withConfig: true });
    await appendFile(path.join(dir, 'echo', 'config.pbtxt'), 'instance_group [ { count: 1 kind: KIND_CPU } ]\n');
  });
  server = await startServer(repo.dir, [
    '--enable-fault-injection', '--drain-delay', String(DRAIN_DELAY_MS / 1000), '--drain-timeout', '10',
  ]);
});

afterAll(async () => {
  await server?.stop();
  await repo?.remove();
});

const slow = (id: string): Message => ({
  model_name: 'echo',
  id,
  parameters: { hotpath_fault: { string_param: `delay:${WORK_MS}` } },
  inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [1, 2] }],
  raw_input_contents: [f32Bytes([1, 2])],
});

interface Outcome {
  readonly startedMs: number;
  readonly endedMs: number;
  readonly code: number;
  readonly details: string;
}

describe('graceful drain', () => {
  it('finishes in-flight requests, refuses new ones with UNAVAILABLE, and exits 0', async () => {
    const client = new TritonClient(server.grpcAddress);
    const outcomes: Outcome[] = [];
    const t0 = performance.now();
    const now = () => performance.now() - t0;
    let stop = false;
    const loop = async (k: number) => {
      for (let n = 0; !stop; n++) {
        const startedMs = now();
        try {
          await client.call('ModelInfer', slow(`${k}-${n}`));
          outcomes.push({ startedMs, endedMs: now(), code: grpc.status.OK, details: '' });
        } catch (err) {
          const { code, details } = err as grpc.ServiceError;
          outcomes.push({ startedMs, endedMs: now(), code, details });
          if (code === grpc.status.UNAVAILABLE) return;
        }
      }
    };
    const loops = Array.from({ length: 6 }, (_, k) => loop(k));

    // A stream with a request in flight when the drain stops accepting.
    const stream = client.stream();
    const streamStatus = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    const streamAnswers: Message[] = [];
    stream.on('data', (response: Message) => streamAnswers.push(response));

    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await healthCheck(server.grpcAddress)).toBe(SERVING);
    const signalledMs = now();
    server.process.kill('SIGTERM');
    await server.waitForLog((l) => l['msg'] === 'draining: readiness is off');
    // Unready at once, while requests keep succeeding through the delay.
    expect((await httpGet(server.httpPort, '/v2/health/ready')).status).toBe(503);
    expect((await httpGet(server.httpPort, '/v2/health/live')).status).toBe(200);
    expect(await healthCheck(server.grpcAddress)).toBe(NOT_SERVING);
    expect((await httpGet(server.httpPort, '/healthz')).body).toMatch(/"status":"draining"/);
    await new Promise((resolve) => setTimeout(resolve, DRAIN_DELAY_MS - 300));
    stream.write(slow('streamed'));

    const exitCode = await server.exited;
    await Promise.all(loops);
    stop = true;
    const lateCall = await client.callError('ModelInfer', slow('late'));
    client.close();

    expect(exitCode).toBe(0);
    expect(lateCall.code).toBe(grpc.status.UNAVAILABLE);
    for (const outcome of outcomes) {
      expect([grpc.status.OK, grpc.status.UNAVAILABLE]).toContain(outcome.code);
    }
    const ok = outcomes.filter((o) => o.code === grpc.status.OK);
    const refused = outcomes.filter((o) => o.code === grpc.status.UNAVAILABLE);
    // Every loop ended on a refusal, and only requests started after the delay were refused.
    expect(refused).toHaveLength(6);
    for (const outcome of refused) {
      expect(outcome.startedMs).toBeGreaterThan(signalledMs + DRAIN_DELAY_MS - 100);
      expect(outcome.details).toMatch(/server is shutting down|No connection established|Connection dropped|ECONNREFUSED|GOAWAY/i);
    }
    // Requests were served during the delay, and some admitted before the cut finished after it.
    expect(ok.filter((o) => o.startedMs > signalledMs).length).toBeGreaterThan(6);
    expect(ok.some((o) => o.endedMs > signalledMs + DRAIN_DELAY_MS)).toBe(true);

    const ended = await streamStatus;
    expect(ended.code).toBe(grpc.status.OK);
    expect(streamAnswers.map((a) => [a['error_message'], a['infer_response'].id])).toEqual([['', 'streamed']]);
    expect(server.logs.find((l) => l['msg'] === 'stopped')).toMatchObject({ graceful: true });
  });
});
