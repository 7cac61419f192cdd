// A load-generator process of the serve benchmark: one grpc-js channel, a
// closed loop of N virtual clients or an open-loop Poisson schedule. It warms
// up, says `ready`, waits for `go`, measures, sends its latencies back and
// exits. Every request is bounded (count, deadline) and the process exits on
// its own, also when the suite goes away.
import { performance } from 'node:perf_hooks';
import type * as grpc from '@grpc/grpc-js';

import { percentile } from '../report/latency.js';
import { parentChannel } from './child-process.js';
import { checkInferResponse, connect, encodeInferRequests, inferRaw, waitForReady } from './infer-client.js';
import type { LoaderConfig, LoaderResult, ToChild } from './messages.js';
import { poissonSchedule } from './poisson.js';

const channel = parentChannel();
let config: LoaderConfig | undefined;
let go: (() => void) | undefined;
const started = new Promise<void>((resolve) => {
  go = resolve;
});

channel.onMessage((message: ToChild) => {
  if (message.type === 'start') {
    config = message.config as LoaderConfig;
    main(config).catch((err: unknown) => fail(err));
  } else go?.();
});

function fail(err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  process.send!({ type: 'error', message: `load generator: ${message}` }, () => process.exit(1));
}

class Recorder {
  readonly latencies: number[] = [];
  errors = 0;
  readonly errorSamples = new Set<string>();
  lastDone = 0;

  record(err: grpc.ServiceError | null, startedAt: number): void {
    const now = performance.now();
    this.lastDone = now;
    if (err) {
      this.errors += 1;
      if (this.errorSamples.size < 5) this.errorSamples.add(`${err.code}: ${err.details}`);
    } else this.latencies.push(now - startedAt);
  }
}

async function main(cfg: LoaderConfig): Promise<void> {
  const client = connect(cfg.address);
  await waitForReady(client, 10_000);
  const requests = encodeInferRequests(cfg.infer, 16, cfg.seed);
  // One checked response: the server answers this shape with the right rows.
  const first = await new Promise<Buffer>((resolve, reject) =>
    inferRaw(client, requests[0]!, Date.now() + cfg.deadlineMs, (err, res) => (err ? reject(err) : resolve(res!))),
  );
  checkInferResponse(first, cfg.infer);

  const warmup = new Recorder();
  const warmupConcurrency = cfg.load.kind === 'closed' ? cfg.load.concurrency : 4;
  await closedLoop(client, requests, cfg, warmupConcurrency, cfg.warmupMs, Number.POSITIVE_INFINITY, warmup);
  if (warmup.latencies.length === 0) throw new Error(`every warm-up request failed: ${[...warmup.errorSamples].join('; ')}`);

  process.send!({ type: 'ready' });
  await started;
  const recorder = new Recorder();
  const t0 = performance.now();
  let dropped = 0;
  let sendLagP99Ms: number | null = null;
  if (cfg.load.kind === 'closed') {
    await closedLoop(client, requests, cfg, cfg.load.concurrency, cfg.durationMs, cfg.maxRequests, recorder);
  } else {
    const schedule = poissonSchedule(cfg.load.ratePerSecond, cfg.durationMs, cfg.load.seed, cfg.maxRequests);
    const outcome = await openLoop(client, requests, cfg, schedule, recorder);
    dropped = outcome.dropped;
    sendLagP99Ms = outcome.sendLagP99Ms;
  }
  const result: LoaderResult = {
    latenciesMs: Float64Array.from(recorder.latencies),
    errors: recorder.errors,
    errorSamples: [...recorder.errorSamples],
    dropped,
    elapsedMs: Math.max(0, recorder.lastDone - t0),
    sendLagP99Ms,
  };
  client.close();
  process.send!({ type: 'done', result }, () => process.exit(0));
}

/** `concurrency` clients, each sending its next request as soon as the last one is answered. */
function closedLoop(
  client: grpc.Client,
  requests: readonly Buffer[],
  cfg: LoaderConfig,
  concurrency: number,
  durationMs: number,
  maxRequests: number,
  recorder: Recorder,
): Promise<void> {
  const stopAt = performance.now() + durationMs;
  let sent = 0;
  let inFlight = 0;
  return new Promise((resolve) => {
    const sendOne = () => {
      const request = requests[sent % requests.length]!;
      sent += 1;
      inFlight += 1;
      const startedAt = performance.now();
      inferRaw(client, request, Date.now() + cfg.deadlineMs, (err) => {
        recorder.record(err, startedAt);
        inFlight -= 1;
        if (performance.now() < stopAt && sent < maxRequests) sendOne();
        else if (inFlight === 0) resolve();
      });
    };
    for (let i = 0; i < Math.min(concurrency, maxRequests); i += 1) sendOne();
  });
}

/** Sends each request at its scheduled offset; latency counts from the schedule, not the actual send. */
function openLoop(
  client: grpc.Client,
  requests: readonly Buffer[],
  cfg: LoaderConfig,
  schedule: Float64Array,
  recorder: Recorder,
): Promise<{ dropped: number; sendLagP99Ms: number }> {
  const t0 = performance.now();
  const lags: number[] = [];
  let next = 0;
  let inFlight = 0;
  let dropped = 0;
  return new Promise((resolve) => {
    const finish = () => {
      lags.sort((a, b) => a - b);
      resolve({ dropped, sendLagP99Ms: lags.length === 0 ? 0 : percentile(lags, 0.99) });
    };
    const pump = () => {
      const now = performance.now();
      while (next < schedule.length && t0 + schedule[next]! <= now) {
        const scheduledAt = t0 + schedule[next]!;
        next += 1;
        lags.push(now - scheduledAt);
        if (inFlight >= cfg.maxInFlight) {
          dropped += 1;
          continue;
        }
        inFlight += 1;
        inferRaw(client, requests[next % requests.length]!, Date.now() + cfg.deadlineMs, (err) => {
          recorder.record(err, scheduledAt);
          inFlight -= 1;
          if (inFlight === 0 && next >= schedule.length) finish();
        });
      }
      if (next >= schedule.length) {
        if (inFlight === 0) finish();
        return;
      }
      // Timers are ~1 ms coarse: sleep until just before the next send, then
      // poll with setImmediate (which still lets responses in between).
      const wait = t0 + schedule[next]! - performance.now();
      if (wait > 1.5) setTimeout(pump, wait - 1);
      else setImmediate(pump);
    };
    pump();
  });
}
