// The patrol benchmark's figures (issue 6), computed from what the load
// generator recorded per request and from the server's JSON log lines. Pure
// functions, so the phase split and the verdicts are unit-tested.
import { percentile, roundMs } from './latency.js';

export const PATROL_DETECTED_MSG = 'leak detected: restarting the worker pool';
export const PATROL_RESTARTED_MSG = 'worker pool restarted';
export const PATROL_RESTART_FAILED_MSG = 'worker pool restart failed; the old generation keeps serving';

/** What the load generator hands back: one entry per scheduled request. */
export interface PatrolRequests {
  /** Wall-clock ms (epoch) of the schedule's origin (the start of the load). */
  readonly originEpochMs: number;
  /** Send offsets from the origin, ms, ascending. */
  readonly sendOffsetsMs: ArrayLike<number>;
  /** ms from the scheduled send to the answer; NaN when never sent. */
  readonly latenciesMs: ArrayLike<number>;
  /** 1 OK, 0 failed, 2 dropped by the client (too many in flight). */
  readonly outcomes: ArrayLike<number>;
  readonly errorSamples: readonly string[];
}

export interface PatrolEvents {
  /** Epoch ms of the first `leak detected` line, if any. */
  readonly triggerEpochMs: number | undefined;
  /** Epoch ms of the first `worker pool restarted` line after the trigger, if any. */
  readonly restartedEpochMs: number | undefined;
  readonly triggerReason: string | undefined;
  /** `total_ms` and `switch_ms` of the restart line, as the server measured them. */
  readonly restartTotalMs: number | undefined;
  readonly restartSwitchMs: number | undefined;
  readonly freedBytes: number | undefined;
  readonly restartFailed: boolean;
}

/** Epoch ms of a pino line's `time` (ISO 8601 string or epoch number); undefined if absent or bad. */
export function logTimeMs(line: Record<string, unknown>): number | undefined {
  const time = line['time'];
  const ms = typeof time === 'number' ? time : typeof time === 'string' ? Date.parse(time) : Number.NaN;
  return Number.isFinite(ms) ? ms : undefined;
}

/** The patrol's trigger and restart completion, from the server's parsed log lines. */
export function patrolEvents(lines: readonly Record<string, unknown>[]): PatrolEvents {
  const detected = lines.find((l) => l['msg'] === PATROL_DETECTED_MSG);
  const triggerEpochMs = detected === undefined ? undefined : logTimeMs(detected);
  const restarted = triggerEpochMs === undefined
    ? undefined
    : lines.find((l) => l['msg'] === PATROL_RESTARTED_MSG && (logTimeMs(l) ?? -Infinity) >= triggerEpochMs);
  const num = (value: unknown) => (typeof value === 'number' ? value : undefined);
  return {
    triggerEpochMs,
    restartedEpochMs: restarted === undefined ? undefined : logTimeMs(restarted),
    triggerReason: typeof detected?.['reason'] === 'string' ? detected['reason'] : undefined,
    restartTotalMs: num(restarted?.['total_ms']),
    restartSwitchMs: num(restarted?.['switch_ms']),
    freedBytes: num(restarted?.['freed_bytes']),
    restartFailed: lines.some((l) => l['msg'] === PATROL_RESTART_FAILED_MSG),
  };
}

export interface PhaseSummary {
  readonly requests: number;
  readonly ok: number;
  readonly failed: number;
  readonly dropped: number;
  /** Nearest-rank p50/p99/max over answered requests (OK or failed), ms; null when none. */
  readonly p50_ms: number | null;
  readonly p99_ms: number | null;
  readonly max_ms: number | null;
}

/** Summary of the requests whose scheduled send offset lies in [fromMs, toMs). */
export function summarizePhase(requests: PatrolRequests, fromMs: number, toMs: number): PhaseSummary {
  const latencies: number[] = [];
  let n = 0;
  let ok = 0;
  let failed = 0;
  let dropped = 0;
  for (let i = 0; i < requests.sendOffsetsMs.length; i += 1) {
    const t = requests.sendOffsetsMs[i] as number;
    if (t < fromMs || t >= toMs) continue;
    n += 1;
    const outcome = requests.outcomes[i];
    if (outcome === 2) {
      dropped += 1;
      continue;
    }
    if (outcome === 1) ok += 1;
    else failed += 1;
    latencies.push(requests.latenciesMs[i] as number);
  }
  latencies.sort((a, b) => a - b);
  const figure = (p: number) => (latencies.length === 0 ? null : roundMs(percentile(latencies, p)));
  return { requests: n, ok, failed, dropped, p50_ms: figure(0.5), p99_ms: figure(0.99), max_ms: figure(1) };
}

export interface PatrolFigures {
  readonly detection_s: number | null;
  readonly restart_s: number | null;
  readonly failed_requests: number;
  readonly p99_ms_steady: number | null;
  readonly p99_ms_during_restart: number | null;
  readonly phases: { readonly steady: PhaseSummary; readonly during_restart: PhaseSummary; readonly after_restart: PhaseSummary };
}

/**
 * Splits requests by scheduled send time: steady (before the trigger), during
 * the restart (trigger to restart complete), after. Without a trigger every
 * request is steady; without a completed restart, everything after the trigger
 * is "during". Failed requests count errors and client-side drops.
 */
export function patrolFigures(requests: PatrolRequests, events: PatrolEvents): PatrolFigures {
  const s = (ms: number) => Math.round(ms) / 1000;
  const trigger = events.triggerEpochMs === undefined ? Infinity : events.triggerEpochMs - requests.originEpochMs;
  const restarted = events.restartedEpochMs === undefined ? Infinity : events.restartedEpochMs - requests.originEpochMs;
  const steady = summarizePhase(requests, -Infinity, trigger);
  const during = summarizePhase(requests, trigger, restarted);
  const after = summarizePhase(requests, restarted, Infinity);
  const all = summarizePhase(requests, -Infinity, Infinity);
  return {
    detection_s: Number.isFinite(trigger) ? s(trigger) : null,
    restart_s: Number.isFinite(trigger) && Number.isFinite(restarted) ? s(restarted - trigger) : null,
    failed_requests: all.failed + all.dropped,
    p99_ms_steady: steady.p99_ms,
    p99_ms_during_restart: during.p99_ms,
    phases: { steady, during_restart: during, after_restart: after },
  };
}

export const PATROL_TARGETS = {
  failed_requests: { op: '=', value: 0, text: 'failed_requests = 0' },
  p99_ms_during_restart: { op: '<=', value: 2, text: 'p99_ms_during_restart <= 2 x p99_ms_steady' },
} as const;

export interface PatrolVerdict {
  readonly target: string;
  readonly measured: string;
  readonly pass: boolean;
}

export function patrolVerdicts(figures: Pick<PatrolFigures, 'failed_requests' | 'p99_ms_steady' | 'p99_ms_during_restart'>): PatrolVerdict[] {
  const { failed_requests: failed, p99_ms_steady: steady, p99_ms_during_restart: during } = figures;
  const ratio = steady !== null && during !== null && steady > 0 ? during / steady : null;
  return [
    { target: PATROL_TARGETS.failed_requests.text, measured: String(failed), pass: failed === 0 },
    {
      target: PATROL_TARGETS.p99_ms_during_restart.text,
      measured: ratio === null
        ? `during ${during ?? '–'} ms, steady ${steady ?? '–'} ms (no ratio: a phase had no requests)`
        : `${during} ms vs 2 x ${steady} = ${roundMs(2 * steady!)} ms (ratio ${ratio.toFixed(2)})`,
      pass: ratio !== null && ratio <= PATROL_TARGETS.p99_ms_during_restart.value,
    },
  ];
}
