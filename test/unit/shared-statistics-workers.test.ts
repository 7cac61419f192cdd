// A version's statistics and histograms recorded by real worker_threads (as
// front-door threads will) while the main thread records its own: once the
// workers are done, the main thread's snapshot(), toProto() and the
// Registry's scrape show exactly the totals, with nothing flushed. The
// workers attach through the plain data share()/shareVersion() give (sent by
// postMessage's structured clone, as a door thread receives it) and load the
// compiled modules, with no Registry of their own.
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { InferenceStatistics } from '../../src/repository/inference-statistics.js';
import { ServerMetrics, type MetricsVersion } from '../../src/observability/metrics.js';
import { BATCH_SIZE_BUCKETS, LATENCY_BUCKETS_MS, METRIC } from '../../src/observability/metric-names.js';

// Workers cannot run TypeScript: they load the compiled twins, as piscina's do.
const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'src');
const compiled = (file: string) => pathToFileURL(path.join(dist, file)).href;

/**
 * Request `i` of shard `shard`: its figures, the same on every thread. All
 * durations in ms are multiples of 1/8, so sums are exact in float64 whatever
 * the order the shards add them in.
 */
const REQUEST_SOURCE = `(shard, i) => {
  const k = shard * 1000 + i;
  return {
    rows: 1 + (k % 4),
    totalNs: 250000 * (1 + (k % 8)),
    timing: { queueNs: 125000 * (k % 3), computeInputNs: 1000, computeInferNs: 500000 * (1 + (k % 5)), computeOutputNs: 2000 },
    fails: k % 5 === 0,
  };
}`;
type Request = { rows: number; totalNs: number; timing: { queueNs: number; computeInputNs: number; computeInferNs: number; computeOutputNs: number }; fails: boolean };
// The test's own copy of the workers' function (eval: the same text).
const request = (0, eval)(REQUEST_SOURCE) as (shard: number, i: number) => Request;

const doorCode = `
const { parentPort, workerData: data } = require('node:worker_threads');
const request = ${REQUEST_SOURCE};
Promise.all([import(data.statisticsModule), import(data.metricsModule)]).then(([{ InferenceStatistics }, { attachVersionMetrics }]) => {
  const statistics = InferenceStatistics.attach(data.statistics, data.shard);
  const metrics = attachVersionMetrics(data.metrics, data.shard);
  for (let i = 0; i < data.count; i += 1) {
    const r = request(data.shard, i);
    statistics.recordExecution(r.rows, r.timing);
    metrics.observeExecution(r.rows);
    statistics.recordSuccess(r.rows, r.totalNs, r.timing);
    metrics.observeSuccess(r.totalNs / 1e6, r.timing);
    if (r.fails) statistics.recordFailure(r.totalNs, 'BACKEND');
  }
  parentPort.postMessage('done');
});
`;

/** One request recorded as the request path records it. */
function record(statistics: InferenceStatistics, metrics: ReturnType<ServerMetrics['forVersion']>, r: Request): void {
  statistics.recordExecution(r.rows, r.timing);
  metrics.observeExecution(r.rows);
  statistics.recordSuccess(r.rows, r.totalNs, r.timing);
  metrics.observeSuccess(r.totalNs / 1e6, r.timing);
  if (r.fails) statistics.recordFailure(r.totalNs, 'BACKEND');
}

function runDoor(workerData: object): Promise<void> {
  const worker = new Worker(doorCode, { eval: true, workerData });
  return new Promise((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`door worker exited with ${code} before it was done`)));
  });
}

/** A counter's value for the version in the exposition text. */
function counterValue(text: string, name: string, extraLabels = ''): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{model="m",version="1"${extraLabels}} `));
  if (line === undefined) throw new Error(`no ${name} line in the scrape`);
  return Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('statistics and histograms shared with worker threads', () => {
  it('show, in one scrape, exactly what two door workers and the main thread recorded', async () => {
    const DOORS = 2;
    const COUNT = 20_000;
    const statistics = new InferenceStatistics({ shards: 1 + DOORS, maxBatchSize: 4 });
    const version: MetricsVersion = {
      modelName: 'm', versionLabel: '1', tenant: 't', state: 'READY', degraded: false, loadSeconds: 1,
      pendingRequests: 0, poolThreads: undefined, poolInstances: undefined, poolQueueSize: undefined, statistics,
    };
    const metrics = new ServerMetrics({ versions: () => [version], inflightRequests: () => 0, statisticsShards: 1 + DOORS });
    const mainMetrics = metrics.forVersion(version);
    const shared = { statistics: statistics.share(), metrics: metrics.shareVersion(version) };

    const doors = Array.from({ length: DOORS }, (_, d) =>
      runDoor({ ...shared, shard: d + 1, count: COUNT, statisticsModule: compiled('repository/inference-statistics.js'), metricsModule: compiled('observability/version-metrics.js') }),
    );
    // The main thread records its own requests, and scrapes, until the doors are done writing theirs.
    let done = false;
    const doorsDone = Promise.all(doors).finally(() => (done = true));
    let mainCount = 0;
    let seen = 0;
    while (!done) {
      for (let i = 0; i < 200; i += 1) record(statistics, mainMetrics, request(0, mainCount++));
      const now = counterValue(await metrics.render(), METRIC.requestSuccess);
      expect(now).toBeGreaterThanOrEqual(seen);
      seen = now;
      await new Promise((resolve) => setImmediate(resolve));
    }
    await doorsDone;

    // What one thread would have counted for all of it.
    const all = [
      ...Array.from({ length: mainCount }, (_, i) => request(0, i)),
      ...Array.from({ length: DOORS }, (_, d) => Array.from({ length: COUNT }, (_, i) => request(d + 1, i))).flat(),
    ];
    const sum = (f: (r: Request) => number) => all.reduce((total, r) => total + f(r), 0);
    const requests = all.length;
    const failures = all.filter((r) => r.fails).length;
    const snapshot = statistics.snapshot();
    expect(snapshot).toEqual({
      successCount: requests,
      failureCounts: { REJECTED: 0, CANCELED: 0, BACKEND: failures, OTHER: 0 },
      inferenceCount: sum((r) => r.rows),
      executionCount: requests,
      requestNs: sum((r) => r.totalNs),
      queueNs: sum((r) => r.timing.queueNs),
      computeInputNs: sum((r) => r.timing.computeInputNs),
      computeInferNs: sum((r) => r.timing.computeInferNs),
      computeOutputNs: sum((r) => r.timing.computeOutputNs),
      cacheHitCount: 0,
      cacheHitNs: 0,
      cacheMissCount: 0,
      cacheMissNs: 0,
    });

    const proto = statistics.toProto('m', '1');
    expect(proto.inferenceCount).toBe(BigInt(snapshot.inferenceCount));
    expect(proto.executionCount).toBe(BigInt(requests));
    expect(proto.inferenceStats?.success).toMatchObject({ count: BigInt(requests), ns: BigInt(snapshot.requestNs) });
    expect(proto.inferenceStats?.fail).toMatchObject({ count: BigInt(failures), ns: BigInt(sum((r) => (r.fails ? r.totalNs : 0))) });
    expect(proto.batchStats.map((b) => [b.batchSize, b.computeInfer?.count, b.computeInfer?.ns])).toEqual(
      [1, 2, 3, 4].map((rows) => {
        const runs = all.filter((r) => r.rows === rows);
        return [BigInt(rows), BigInt(runs.length), BigInt(runs.reduce((t, r) => t + r.timing.computeInferNs, 0))];
      }),
    );

    // The scrape: Triton's counters read the same statistics...
    const text = await metrics.render();
    expect(counterValue(text, METRIC.requestSuccess)).toBe(requests);
    expect(counterValue(text, METRIC.requestFailure, ',reason="BACKEND"')).toBe(failures);
    expect(counterValue(text, METRIC.inferenceCount)).toBe(snapshot.inferenceCount);
    expect(counterValue(text, METRIC.executionCount)).toBe(requests);
    expect(counterValue(text, METRIC.requestDurationUs)).toBe(Math.round(snapshot.requestNs / 1000));
    // ...and the histograms print what prom-client's own prints when one thread is fed everything.
    const theirs = new Registry();
    const histogram = (name: string, buckets: number[]) =>
      new Histogram({ name, help: (metrics.registry.getSingleMetric(name) as unknown as { help: string }).help, labelNames: ['model', 'version', 'tenant'], buckets, registers: [theirs] });
    const labels = { model: 'm', version: '1', tenant: 't' };
    const reference = {
      request: histogram(METRIC.requestDurationMs, LATENCY_BUCKETS_MS),
      queue: histogram(METRIC.queueDurationMs, LATENCY_BUCKETS_MS),
      infer: histogram(METRIC.computeInferDurationMs, LATENCY_BUCKETS_MS),
      rows: histogram(METRIC.batchSize, BATCH_SIZE_BUCKETS),
    };
    for (const r of all) {
      reference.rows.observe(labels, r.rows);
      reference.request.observe(labels, r.totalNs / 1e6);
      reference.queue.observe(labels, r.timing.queueNs / 1e6);
      reference.infer.observe(labels, r.timing.computeInferNs / 1e6);
    }
    for (const name of [METRIC.requestDurationMs, METRIC.queueDurationMs, METRIC.computeInferDurationMs, METRIC.batchSize]) {
      expect(await metrics.registry.getSingleMetricAsString(name)).toBe(await theirs.getSingleMetricAsString(name));
    }
  });

  it('shows a version only door workers served in the histograms of the next scrape', async () => {
    const statistics = new InferenceStatistics({ shards: 2, maxBatchSize: 4 });
    const version: MetricsVersion = {
      modelName: 'm', versionLabel: '1', tenant: 't', state: 'READY', degraded: false, loadSeconds: 1,
      pendingRequests: 0, poolThreads: undefined, poolInstances: undefined, poolQueueSize: undefined, statistics,
    };
    const metrics = new ServerMetrics({ versions: () => [version], inflightRequests: () => 0, statisticsShards: 2 });
    const shared = { statistics: statistics.share(), metrics: metrics.shareVersion(version) };
    expect(await metrics.registry.getSingleMetricAsString(METRIC.batchSize)).not.toMatch(/hotpath_batch_size_count/);
    await runDoor({ ...shared, shard: 1, count: 10, statisticsModule: compiled('repository/inference-statistics.js'), metricsModule: compiled('observability/version-metrics.js') });
    expect(await metrics.registry.getSingleMetricAsString(METRIC.batchSize)).toMatch(/^hotpath_batch_size_count\{model="m",version="1",tenant="t"\} 10$/m);
    expect(statistics.snapshot().successCount).toBe(10);
  });

  it('refuses to share a version when the server has no door threads', () => {
    const metrics = new ServerMetrics({ versions: () => [], inflightRequests: () => 0 });
    expect(() => metrics.shareVersion({ modelName: 'm', versionLabel: '1', tenant: 't' })).toThrow(/made with shards 1/);
  });
});
