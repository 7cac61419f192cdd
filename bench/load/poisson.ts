// Open-loop arrival schedules. A Poisson process at rate λ has exponential
// gaps with mean 1/λ; the schedule is a pure function of (rate, duration,
// seed), so every contender is offered exactly the same arrivals. Latency is
// then measured from each request's *scheduled* time, so a sender or server
// that falls behind shows up as latency instead of silently thinning the load
// (no coordinated omission).

/** mulberry32: a small, fast, seeded PRNG returning uniforms in [0, 1). */
export function seededUniform(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Send offsets in ms from the start, ascending, for a Poisson process of
 * `ratePerSecond` over `durationMs`, capped at `maxCount` arrivals.
 */
export function poissonSchedule(ratePerSecond: number, durationMs: number, seed: number, maxCount: number): Float64Array {
  if (!(ratePerSecond > 0)) throw new RangeError(`poissonSchedule: rate must be > 0, got ${ratePerSecond}`);
  const uniform = seededUniform(seed);
  const meanGapMs = 1000 / ratePerSecond;
  const offsets: number[] = [];
  let t = 0;
  while (offsets.length < maxCount) {
    // 1 - u is in (0, 1], so the log is finite.
    t += -Math.log(1 - uniform()) * meanGapMs;
    if (t >= durationMs) break;
    offsets.push(t);
  }
  return Float64Array.from(offsets);
}

/** Splits a total among `parts` as evenly as integers allow (larger shares first). */
export function splitEvenly(total: number, parts: number): number[] {
  const base = Math.floor(total / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < total % parts ? 1 : 0));
}
