/**
 * The Prometheus endpoint: Triton's counters show exactly the requests sent,
 * hotpath's histograms and gauges agree with them, and the label sets stay the
 * same after 1,000 requests with random ids, request ids, trace ids and model
 * names (labels are model, version, tenant and bounded enums only).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sampleRepository } from './helpers/repositories.js';
import { httpGet, scrape } from './helpers/probes.js';
import { f32Bytes, TritonClient, type Message } from './helpers/triton-client.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

let served: ServedRepository;

beforeAll(async () => {
  served = await serveRepository(sampleRepository(['ctr_mlp']));
});

afterAll(() => served?.close());

const V = 'model="ctr_mlp",version="1"';
const T = `${V},tenant="default"`;

const request = (rows: number, id = ''): Message => ({
  model_name: 'ctr_mlp',
  id,
  inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, 32] }],
  raw_input_contents: [f32Bytes(new Float32Array(rows * 32).fill(0.25))],
});

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
    expect(m.get(`nv_inference_request_failure{${V},reason="REJECTED"}`)).toBe(3);
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
    const stats = (await served.client.call('ModelStatistics', { name: 'ctr_mlp' }))['model_stats'][0];
    expect(stats.inference_stats.success.count).toBe('7');
    expect(stats.inference_count).toBe('16');
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
