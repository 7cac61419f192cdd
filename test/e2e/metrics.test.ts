/**
 * The Prometheus endpoint: Triton's counters show exactly the requests sent,
 * with Triton's meanings (request duration sums successes only; a request is
 * pending until it starts executing; failures are counted by Triton's
 * reasons), hotpath's histograms and gauges agree with them, and the label
 * sets stay the same after 1,000 requests with random ids, request ids, trace
 * ids and model names (labels are model, version, tenant and bounded enums only).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import os from 'node:os';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeSampleRepository } from '../../models/lib/sample-models.js';
import { ctrVariant, tempRepository } from './helpers/repositories.js';
import { httpGet, scrape } from './helpers/probes.js';
import { f32Bytes, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(
    tempRepository(async (dir) => {
      await writeSampleRepository(dir, { only: ['ctr_mlp'] });
      // One instance, no batcher queue: a request waits for the worker (the delay fault keeps it busy).
      await ctrVariant(dir, 'ctr_alone', '');
      // Holds a batch open for 1 s unless 64 rows arrive; at most 1 request queued.
      await ctrVariant(dir, 'ctr_small_queue', 'dynamic_batching { max_queue_delay_microseconds: 1000000 default_queue_policy { max_queue_size: 1 } }\n');
      // Holds a batch open for 3 s, but a request may wait at most 200 ms.
      await ctrVariant(dir, 'ctr_short_timeout', 'dynamic_batching { max_queue_delay_microseconds: 3000000 default_queue_policy { default_timeout_microseconds: 200000 timeout_action: REJECT } }\n');
    }),
    ['--enable-fault-injection', '--no-default-warmup'],
  );
});

afterAll(() => served?.close());

const V = 'model="ctr_mlp",version="1"';
const T = `${V},tenant="default"`;

const request = (rows: number, id = '', model = 'ctr_mlp'): Message => ({
  model_name: model,
  id,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, 32] }],
  raw_input_contents: [f32Bytes(new Float32Array(rows * 32).fill(0.25))],
});

/** A request the worker holds for `ms` before running it (test-only fault hook): the instance stays busy. */
const slow = (model: string, ms: number, id = ''): Message => ({
  ...request(1, id, model),
  parameters: { hotpath_fault: { string_param: `delay:${ms}` } },
});

const labels = (model: string) => `model="${model}",version="1"`;

/** Scrapes until `ready` holds for the samples (at most ~4 s), and returns them. */
async function scrapeUntil(port: number, ready: (m: Map<string, number>) => boolean): Promise<Map<string, number>> {
  for (let i = 0; ; i++) {
    const m = await scrape(port);
    if (ready(m) || i === 200) return m;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function statisticsOf(model: string): Promise<Message> {
  return (await served.client.call('ModelStatistics', { name: model }))['model_stats'][0];
}

/** The series of hotpath's and Triton's metrics (prom-client's process metrics excluded). */
const seriesOf = (metrics: Map<string, number>) =>
  [...metrics.keys()].filter((key) => key.startsWith('nv_') || key.startsWith('hotpath_')).sort();

describe('metrics', () => {
  it('count exactly the requests sent', async () => {
    const batches = [1, 2, 3, 1, 2, 3, 4];
    for (const rows of batches) await served.client.call('ModelInfer', request(rows));
    for (let i = 0; i < 3; i++) {
      const err = await served.client.callError('ModelInfer', { ...request(1), inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 31] }] });
      expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    }
    const m = await scrape(served.server.metricsPort);
    expect(m.get(`nv_inference_request_success{${V}}`)).toBe(7);
    // A malformed request is none of REJECTED (scheduler), CANCELED or BACKEND.
    expect(m.get(`nv_inference_request_failure{${V},reason="OTHER"}`)).toBe(3);
    expect(m.get(`nv_inference_request_failure{${V},reason="REJECTED"}`)).toBe(0);
    expect(m.get(`nv_inference_request_failure{${V},reason="BACKEND"}`)).toBe(0);
    expect(m.get(`nv_inference_count{${V}}`)).toBe(16);
    expect(m.get(`nv_inference_exec_count{${V}}`)).toBe(7);
    expect(m.get(`nv_inference_pending_request_count{${V}}`)).toBe(0);
    for (const name of ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output']) {
      expect(m.get(`nv_inference_${name}_duration_us{${V}}`)).toBeGreaterThanOrEqual(0);
    }
    expect(m.get(`nv_inference_request_duration_us{${V}}`)).toBeGreaterThan(0);
    expect(m.get(`hotpath_request_duration_ms_count{${T}}`)).toBe(7);
    expect(m.get(`hotpath_request_duration_ms_bucket{le="5000",${T}}`)).toBe(7);
    expect(m.get(`hotpath_batch_size_count{${T}}`)).toBe(7);
    expect(m.get(`hotpath_batch_size_sum{${T}}`)).toBe(16);
    expect(m.get(`hotpath_batch_size_bucket{le="1",${T}}`)).toBe(2);
    expect(m.get(`hotpath_batch_size_bucket{le="2",${T}}`)).toBe(4);
    expect(m.get(`hotpath_model_load_seconds{${T}}`)).toBeGreaterThan(0);
    expect(m.get(`hotpath_model_ready{${T}}`)).toBe(1);
    expect(m.get(`hotpath_worker_pool_threads{${T}}`)).toBe(1);
    expect(m.get(`hotpath_worker_pool_instances{${T}}`)).toBe(1);
    expect(m.get('hotpath_inflight_requests')).toBe(0);
    // The ModelStatistics RPC and the metrics read the same counters.
    const stats = await statisticsOf('ctr_mlp');
    expect(stats.inference_stats.success.count).toBe('7');
    expect(stats.inference_stats.fail.count).toBe('3');
    expect(stats.inference_count).toBe('16');
    // The request duration is the successes' alone (Triton's meaning); failures keep their own.
    expect(m.get(`nv_inference_request_duration_us{${V}}`)).toBe(Math.round(Number(stats.inference_stats.success.ns) / 1000));
    expect(Number(stats.inference_stats.fail.ns)).toBeGreaterThan(0);
  });

  it('count a queue timeout as REJECTED, and not in the request duration', async () => {
    const err = await served.client.callError('ModelInfer', request(1, 't1', 'ctr_short_timeout'));
    expect(err.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    const m = await scrape(served.server.metricsPort);
    const L = labels('ctr_short_timeout');
    expect(m.get(`nv_inference_request_failure{${L},reason="REJECTED"}`)).toBe(1);
    expect(m.get(`nv_inference_request_failure{${L},reason="CANCELED"}`)).toBe(0);
    expect(m.get(`nv_inference_request_success{${L}}`)).toBe(0);
    // It waited 200 ms and failed: none of that is request duration.
    expect(m.get(`nv_inference_request_duration_us{${L}}`)).toBe(0);
    expect(m.get(`nv_inference_exec_count{${L}}`)).toBe(0);
    const stats = await statisticsOf('ctr_short_timeout');
    expect(stats.inference_stats.fail.count).toBe('1');
    expect(Number(stats.inference_stats.fail.ns)).toBeGreaterThanOrEqual(200e6);
  });

  it('count a queue-full refusal as REJECTED', async () => {
    const L = labels('ctr_small_queue');
    const queued = served.client.call('ModelInfer', request(1, 'q1', 'ctr_small_queue'));
    // Queued in the batcher (not executing): pending until its batch is sealed.
    expect((await scrapeUntil(served.server.metricsPort, (m) => m.get(`nv_inference_pending_request_count{${L}}`) === 1))
      .get(`nv_inference_pending_request_count{${L}}`)).toBe(1);
    const err = await served.client.callError('ModelInfer', request(1, 'q2', 'ctr_small_queue'));
    expect(err.code).toBe(grpc.status.UNAVAILABLE);
    expect(err.details).toMatch(/queue full/);
    expect((await queued)['id']).toBe('q1');
    const m = await scrape(served.server.metricsPort);
    expect(m.get(`nv_inference_request_failure{${L},reason="REJECTED"}`)).toBe(1);
    expect(m.get(`nv_inference_request_success{${L}}`)).toBe(1);
    expect(m.get(`nv_inference_pending_request_count{${L}}`)).toBe(0);
  });

  it('count a request as pending until it starts executing, and a client cancellation as CANCELED', async () => {
    const L = labels('ctr_alone');
    const port = served.server.metricsPort;
    // The only request executes (held 1.5 s in the worker): in flight, not pending.
    const running = served.client.call('ModelInfer', slow('ctr_alone', 1500, 'a1'));
    let m = await scrapeUntil(port, (s) => s.get('hotpath_inflight_requests') === 1);
    expect(m.get('hotpath_inflight_requests')).toBe(1);
    expect(m.get(`nv_inference_pending_request_count{${L}}`)).toBe(0);
    // A second one waits for the busy worker: pending. Its client then cancels it.
    let cancelledWith: grpc.status | undefined;
    const call = served.client.raw['ModelInfer']!.call(served.client.raw, slow('ctr_alone', 10, 'a2'), new grpc.Metadata(),
      (err: grpc.ServiceError | null) => { cancelledWith = err?.code; }) as grpc.ClientUnaryCall;
    m = await scrapeUntil(port, (s) => s.get(`nv_inference_pending_request_count{${L}}`) === 1);
    expect(m.get(`nv_inference_pending_request_count{${L}}`)).toBe(1);
    call.cancel();
    expect((await running)['id']).toBe('a1');
    m = await scrapeUntil(port, (s) => s.get('hotpath_inflight_requests') === 0);
    expect(cancelledWith).toBe(grpc.status.CANCELLED);
    expect(m.get('hotpath_inflight_requests')).toBe(0);
    expect(m.get(`nv_inference_pending_request_count{${L}}`)).toBe(0);
    expect(m.get(`nv_inference_request_success{${L}}`)).toBe(1);
    expect(m.get(`nv_inference_request_failure{${L},reason="CANCELED"}`)).toBe(1);
    expect(m.get(`nv_inference_request_failure{${L},reason="REJECTED"}`)).toBe(0);
    const stats = await statisticsOf('ctr_alone');
    // The request duration is the success's alone.
    expect(m.get(`nv_inference_request_duration_us{${L}}`)).toBe(Math.round(Number(stats.inference_stats.success.ns) / 1000));
    expect(m.get(`nv_inference_request_duration_us{${L}}`)).toBeGreaterThanOrEqual(1_500_000);
  });

  it('export the model load time and the host\'s CPU and memory as Triton does', async () => {
    const m = await scrape(served.server.metricsPort);
    for (const model of ['ctr_mlp', 'ctr_alone', 'ctr_small_queue', 'ctr_short_timeout']) {
      const seconds = m.get(`nv_model_load_duration_secs{${labels(model)}}`);
      expect(seconds).toBeGreaterThan(0);
      expect(seconds).toBeLessThan(120);
      expect(seconds).toBe(m.get(`hotpath_model_load_seconds{${labels(model)},tenant="default"}`));
    }
    const utilization = m.get('nv_cpu_utilization');
    expect(utilization).toBeGreaterThanOrEqual(0);
    expect(utilization).toBeLessThanOrEqual(1);
    // Machine-wide figures: the server runs on this host.
    expect(m.get('nv_cpu_memory_total_bytes')).toBe(os.totalmem());
    expect(m.get('nv_cpu_memory_used_bytes')).toBeGreaterThan(0);
    expect(m.get('nv_cpu_memory_used_bytes')).toBeLessThanOrEqual(os.totalmem());
  });

  it('keep their label sets bounded after 1,000 requests with random ids', async () => {
    const before = seriesOf(await scrape(served.server.metricsPort));
    const ids: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < 1000) {
        const n = next++;
        const id = randomUUID();
        ids.push(id);
        const metadata = new grpc.Metadata();
        metadata.set('x-request-id', `rid-${id}`);
        metadata.set('traceparent', `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`);
        if (n % 10 === 0) {
          // Unknown model names must not become label values either.
          await served.client.call('ModelInfer', { ...request(1, id), model_name: `model-${id}` }, metadata).catch(() => undefined);
        } else {
          await served.client.call('ModelInfer', request(1 + (n % 4), id), metadata);
        }
      }
    };
    await Promise.all(Array.from({ length: 32 }, worker));
    const text = (await httpGet(served.server.metricsPort, '/metrics')).body;
    const after = seriesOf(await scrape(served.server.metricsPort));
    expect(after).toEqual(before);
    for (const id of ids.slice(0, 50)) expect(text).not.toContain(id);
    const labelNames = new Set([...text.matchAll(/[{,]([a-z_]+)="/g)].map((match) => match[1]));
    for (const name of labelNames) expect(['model', 'version', 'tenant', 'reason', 'le', // hotpath's and Triton's
      'memory', 'gpu_uuid', 'kind', 'space', 'type', 'major', 'minor', 'patch']).toContain(name);
    expect((await scrape(served.server.metricsPort)).get(`nv_inference_request_success{${V}}`)).toBe(7 + 900);
  });

  it('answer 404 for anything but GET /metrics', async () => {
    expect((await httpGet(served.server.metricsPort, '/nope')).status).toBe(404);
  });
});
