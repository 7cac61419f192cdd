// The load generator of the patrol benchmark: one grpc-js channel, an
// open-loop Poisson schedule at a fixed rate. Unlike the serve suite's it
// keeps every request: its scheduled send time, its latency (from the
// scheduled time, so a stall shows up as latency) and its outcome, because the
// suite splits requests into phases by when they were sent. It answers `ready`
// after a short warm-up, waits for `go`, and reports the wall-clock time of its
// schedule's origin so the suite can line requests up with the server's log
// timestamps (same machine, same clock). Bounded: a capped schedule, a
// deadline on every request, and it exits when the suite goes away.
import { performance } from 'node:perf_hooks';

import { parentChannel } from './child-process.js';
import { checkInferResponse, connect, encodeInferRequests, inferRaw, waitForReady, type InferShape } from './infer-client.js';
import type { ToChild } from './messages.js';
import { poissonSchedule } from './poisson.js';
import type { PatrolRequests } from '../report/patrol-result.js';

export interface PatrolLoaderConfig {
  readonly address: string;
  readonly infer: InferShape;
  readonly ratePerSecond: number;
  readonly durationMs: number;
  readonly seed: number;
  /** Hard cap on scheduled requests. */
  readonly maxRequests: number;
  /** A scheduled request finding this many in flight is dropped (counted as failed, not sent). */
  readonly maxInFlight: number;
  readonly deadlineMs: number;
  /** Sequential requests before `ready` (not measured). */
  readonly warmupRequests: number;
}

/** What the child sends back (see patrol-result.ts). */
export type PatrolLoaderResult = PatrolRequests;

const channel = parentChannel();
let go: (() => void) | undefined;
const started = new Promise<void>((resolve) => {
  go = resolve;
});

channel.onMessage((message: ToChild) => {
  if (message.type === 'start') main(message.config as PatrolLoaderConfig).catch((err: unknown) => fail(err));
  else go?.();
});

function fail(err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  process.send!({ type: 'error', message: `patrol load generator: ${message}` }, () => process.exit(1));
}

async function main(cfg: PatrolLoaderConfig): Promise<void> {
  const client = connect(cfg.address);
  await waitForReady(client, 10_000);
  const requests = encodeInferRequests(cfg.infer, 16, cfg.seed);
  for (let i = 0; i < Math.max(1, cfg.warmupRequests); i += 1) {
    const response = await new Promise<Buffer>((resolve, reject) =>
      inferRaw(client, requests[i % requests.length]!, Date.now() + cfg.deadlineMs, (err, res) => (err ? reject(err) : resolve(res!))),
    );
    if (i === 0) checkInferResponse(response, cfg.infer);
  }
  const schedule = poissonSchedule(cfg.ratePerSecond, cfg.durationMs, cfg.seed, cfg.maxRequests);
  const latencies = new Float64Array(schedule.length).fill(Number.NaN);
  const outcomes = new Uint8Array(schedule.length);
  const errorSamples = new Set<string>();

  process.send!({ type: 'ready' });
  await started;
  const t0 = performance.now();
  const originEpochMs = performance.timeOrigin + t0;
  await new Promise<void>((resolve) => {
    let next = 0;
    let inFlight = 0;
    const pump = () => {
      const now = performance.now();
      while (next < schedule.length && t0 + schedule[next]! <= now) {
        const index = next;
        const scheduledAt = t0 + schedule[index]!;
        next += 1;
        if (inFlight >= cfg.maxInFlight) {
          outcomes[index] = 2;
          continue;
        }
        inFlight += 1;
        inferRaw(client, requests[index % requests.length]!, Date.now() + cfg.deadlineMs, (err) => {
          latencies[index] = performance.now() - scheduledAt;
          if (err) {
            outcomes[index] = 0;
            if (errorSamples.size < 5) errorSamples.add(`${err.code}: ${err.details}`);
          } else outcomes[index] = 1;
          inFlight -= 1;
          if (inFlight === 0 && next >= schedule.length) resolve();
        });
      }
      if (next >= schedule.length) {
        if (inFlight === 0) resolve();
        return;
      }
      const wait = t0 + schedule[next]! - performance.now();
      if (wait > 1.5) setTimeout(pump, wait - 1);
      else setImmediate(pump);
    };
    pump();
  });
  client.close();
  const result: PatrolLoaderResult = { originEpochMs, sendOffsetsMs: schedule, latenciesMs: latencies, outcomes, errorSamples: [...errorSamples] };
  process.send!({ type: 'done', result }, () => process.exit(0));
}
