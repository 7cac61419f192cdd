// Seeded pseudo-random numbers for the sample-model generator.
//
// Every weight in models/ comes from here, and `npm install` regenerates files that
// are not committed (ranker_mlp), so a given seed must yield the same bits on every
// machine and Node version. That rules out Math.random and also transcendental
// functions (Math.log/Math.cos for Box-Muller), whose last-bit results are not
// guaranteed by ECMAScript. The generator below uses only 32-bit integer arithmetic
// (Math.imul, shifts) and exact IEEE operations (+, *, /), which are fully specified.

/** A deterministic stream of numbers; create one per model with a fixed seed. */
export class SeededRandom {
  private state: number;

  constructor(seed: number) {
    // Force to uint32 so callers may pass any integer-valued number.
    this.state = seed >>> 0;
  }

  /** Next raw 32-bit value (mulberry32: one add, two multiply-xorshift rounds). */
  nextUint32(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }

  /** Uniform in [0, 1), 32 bits of resolution. */
  next(): number {
    return this.nextUint32() / 4294967296;
  }

  /** Uniform in [low, high). */
  uniform(low: number, high: number): number {
    return low + (high - low) * this.next();
  }

  /** Integer in [0, n). The modulo bias is irrelevant at the small n used here. */
  int(n: number): number {
    return this.nextUint32() % n;
  }

  /**
   * Approximately standard-normal value: the Irwin-Hall sum of 12 uniforms minus 6
   * (mean 0, variance 1, tails cut at +/-6). Good enough for thresholds and test
   * inputs, and built from additions only, so it is bit-reproducible.
   */
  normal(): number {
    let sum = 0;
    for (let i = 0; i < 12; i++) sum += this.next();
    return sum - 6;
  }

  /** A Float32Array of `n` values drawn uniformly from [low, high). */
  uniformArray(n: number, low: number, high: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.uniform(low, high);
    return out;
  }

  /** A Float32Array of `n` approximately standard-normal values. */
  normalArray(n: number): Float32Array {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) out[i] = this.normal();
    return out;
  }
}
