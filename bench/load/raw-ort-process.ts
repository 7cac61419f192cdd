// The serve benchmark's limit: onnxruntime-node called directly, in one
// process, with the session options of the server's inference workers
// (src/workers/inference-worker.ts) and no network. For each batch size it
// warms up, then times every run (tensor creation, session.run, reading the
// output). With `sessions` > 1 (a model with several instances) each session
// runs on its own worker thread, all at once, as the server's pool would.
import { performance } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import * as ort from 'onnxruntime-node';

import { parentChannel } from './child-process.js';
import type { RawOrtConfig, RawOrtPoint, ToChild } from './messages.js';
import { seededUniform } from './poisson.js';

async function openSession(cfg: RawOrtConfig): Promise<ort.InferenceSession> {
  return ort.InferenceSession.create(cfg.modelPath, {
    intraOpNumThreads: cfg.intraOpThreads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  });
}

function inputFor(cfg: RawOrtConfig, batch: number): Float32Array {
  const uniform = seededUniform(cfg.seed + batch);
  const values = new Float32Array(batch * cfg.width);
  for (let i = 0; i < values.length; i += 1) values[i] = uniform() * 2 - 1;
  return values;
}

async function runOnce(session: ort.InferenceSession, cfg: RawOrtConfig, batch: number, values: Float32Array): Promise<void> {
  const feeds = { [cfg.input]: new ort.Tensor('float32', values, [batch, cfg.width]) };
  const results = await session.run(feeds);
  for (const name of session.outputNames) void results[name]!.data;
}

async function warm(session: ort.InferenceSession, cfg: RawOrtConfig, batch: number): Promise<Float32Array> {
  const values = inputFor(cfg, batch);
  for (let i = 0; i < cfg.warmupRuns; i += 1) await runOnce(session, cfg, batch, values);
  return values;
}

/** Timed runs for `durationMs` (at most maxRuns); returns per-run ms. */
async function timed(session: ort.InferenceSession, cfg: RawOrtConfig, batch: number, values: Float32Array): Promise<Float64Array> {
  const latencies: number[] = [];
  const stopAt = performance.now() + cfg.durationMs;
  while (latencies.length < cfg.maxRuns) {
    const t = performance.now();
    await runOnce(session, cfg, batch, values);
    const done = performance.now();
    latencies.push(done - t);
    if (done >= stopAt) break;
  }
  return Float64Array.from(latencies);
}

type ThreadMessage = { type: 'warm'; batch: number } | { type: 'go' };

/** A session thread (sessions > 1): warms on request, runs on `go`, posts its latencies. */
async function sessionThread(cfg: RawOrtConfig): Promise<void> {
  const session = await openSession(cfg);
  let values: Float32Array = new Float32Array(0);
  let batch = 0;
  parentPort!.on('message', (message: ThreadMessage) => {
    void (async () => {
      if (message.type === 'warm') {
        batch = message.batch;
        values = await warm(session, cfg, batch);
        parentPort!.postMessage({ type: 'warm' });
      } else {
        parentPort!.postMessage({ type: 'done', latencies: await timed(session, cfg, batch, values) });
      }
    })();
  });
  parentPort!.postMessage({ type: 'open' });
}

async function measureThreads(cfg: RawOrtConfig): Promise<RawOrtPoint[]> {
  const workers = Array.from({ length: cfg.sessions }, () => new Worker(new URL(import.meta.url), { workerData: cfg }));
  const all = <T>(type: string, field?: string) =>
    Promise.all(workers.map((w) => new Promise<T>((resolve, reject) => {
      const onMessage = (m: Record<string, unknown>) => {
        if (m['type'] !== type) return;
        w.off('message', onMessage);
        resolve((field ? m[field] : m) as T);
      };
      w.on('message', onMessage);
      w.once('error', reject);
    })));
  try {
    await all('open');
    const points: RawOrtPoint[] = [];
    for (const batch of cfg.batchSizes) {
      const warmed = all('warm');
      for (const w of workers) w.postMessage({ type: 'warm', batch });
      await warmed;
      const t0 = performance.now();
      const done = all<Float64Array>('done', 'latencies');
      for (const w of workers) w.postMessage({ type: 'go' });
      const parts = await done;
      const latencies = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
      let offset = 0;
      for (const part of parts) {
        latencies.set(part, offset);
        offset += part.length;
      }
      points.push({ batch, latenciesMs: latencies, elapsedMs: performance.now() - t0 });
    }
    return points;
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

async function measure(cfg: RawOrtConfig): Promise<RawOrtPoint[]> {
  if (cfg.sessions > 1) return measureThreads(cfg);
  const session = await openSession(cfg);
  const points: RawOrtPoint[] = [];
  for (const batch of cfg.batchSizes) {
    const values = await warm(session, cfg, batch);
    const t0 = performance.now();
    const latenciesMs = await timed(session, cfg, batch, values);
    points.push({ batch, latenciesMs, elapsedMs: performance.now() - t0 });
  }
  await session.release();
  return points;
}

if (!isMainThread) {
  void sessionThread(workerData as RawOrtConfig);
} else {
  const channel = parentChannel();
  channel.onMessage((message: ToChild) => {
    if (message.type !== 'start') return;
    measure(message.config as RawOrtConfig).then(
      (points) => process.send!({ type: 'done', result: points }, () => process.exit(0)),
      (err: unknown) =>
        process.send!({ type: 'error', message: `raw onnxruntime: ${err instanceof Error ? err.message : err}` }, () => process.exit(1)),
    );
  });
}
