import { describe, expect, it } from 'vitest';
import {
  PATROL_DETECTED_MSG,
  PATROL_RESTARTED_MSG,
  logTimeMs,
  patrolEvents,
  patrolFigures,
  patrolVerdicts,
  type PatrolRequests,
} from '../../bench/report/patrol-result.js';

const origin = Date.parse('2026-11-29T12:00:00.000Z');
const iso = (offsetMs: number) => new Date(origin + offsetMs).toISOString();

/** 100 requests every 100 ms (send offsets 0..9900), latency = 10 ms except where overridden. */
function requests(overrides: Record<number, { latency?: number; outcome?: number }> = {}): PatrolRequests {
  const n = 100;
  const sendOffsetsMs = Float64Array.from({ length: n }, (_, i) => i * 100);
  const latenciesMs = new Float64Array(n).fill(10);
  const outcomes = new Uint8Array(n).fill(1);
  for (const [index, o] of Object.entries(overrides)) {
    if (o.latency !== undefined) latenciesMs[Number(index)] = o.latency;
    if (o.outcome !== undefined) outcomes[Number(index)] = o.outcome;
  }
  return { originEpochMs: origin, sendOffsetsMs, latenciesMs, outcomes, errorSamples: [] };
}

describe('patrol benchmark figures', () => {
  it('reads pino times as ISO strings or epoch numbers', () => {
    expect(logTimeMs({ time: iso(1500) })).toBe(origin + 1500);
    expect(logTimeMs({ time: origin })).toBe(origin);
    expect(logTimeMs({ time: 'nonsense' })).toBeUndefined();
    expect(logTimeMs({})).toBeUndefined();
  });

  it('finds the trigger and the first restart completion after it', () => {
    const events = patrolEvents([
      { msg: 'hotpath serving', time: iso(-1000) },
      { msg: PATROL_RESTARTED_MSG, time: iso(-500), total_ms: 1 }, // before the trigger: ignored
      { msg: PATROL_DETECTED_MSG, time: iso(4000), reason: 'leak_threshold' },
      { msg: PATROL_RESTARTED_MSG, time: iso(5000), total_ms: 990, switch_ms: 900, freed_bytes: 123 },
    ]);
    expect(events).toMatchObject({
      triggerEpochMs: origin + 4000, restartedEpochMs: origin + 5000, triggerReason: 'leak_threshold',
      restartTotalMs: 990, restartSwitchMs: 900, freedBytes: 123, restartFailed: false,
    });
  });

  it('splits requests into phases by scheduled send time and counts failures and drops', () => {
    const events = patrolEvents([
      { msg: PATROL_DETECTED_MSG, time: iso(4000) },
      { msg: PATROL_RESTARTED_MSG, time: iso(5000) },
    ]);
    // index 45 (sent at 4500 ms) is slow, 70 failed, 80 dropped.
    const figures = patrolFigures(requests({ 45: { latency: 30 }, 70: { outcome: 0, latency: 5 }, 80: { outcome: 2, latency: Number.NaN } }), events);
    expect(figures.detection_s).toBe(4);
    expect(figures.restart_s).toBe(1);
    expect(figures.failed_requests).toBe(2);
    expect(figures.phases.steady).toMatchObject({ requests: 40, ok: 40, failed: 0, dropped: 0 });
    expect(figures.phases.during_restart).toMatchObject({ requests: 10, p99_ms: 30, max_ms: 30 });
    expect(figures.phases.after_restart).toMatchObject({ requests: 50, ok: 48, failed: 1, dropped: 1 });
    expect(figures.p99_ms_steady).toBe(10);
    expect(figures.p99_ms_during_restart).toBe(30);
    expect(patrolVerdicts(figures).map((v) => v.pass)).toEqual([false, false]);
  });

  it('passes both targets on a clean restart, and reports no figures when the patrol never fired', () => {
    const clean = patrolFigures(requests({ 45: { latency: 20 } }), patrolEvents([
      { msg: PATROL_DETECTED_MSG, time: iso(4000) },
      { msg: PATROL_RESTARTED_MSG, time: iso(5000) },
    ]));
    expect(patrolVerdicts(clean).every((v) => v.pass)).toBe(true);

    const never = patrolFigures(requests(), patrolEvents([]));
    expect(never).toMatchObject({ detection_s: null, restart_s: null, p99_ms_during_restart: null, failed_requests: 0 });
    expect(never.phases.steady.requests).toBe(100);
    expect(patrolVerdicts(never)[1]!.pass).toBe(false);
  });
});
