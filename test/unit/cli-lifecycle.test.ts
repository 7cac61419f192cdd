// The life-cycle flags (src/cli/lifecycle-options.ts) as `hotpath serve` parses them:
// defaults, Triton's boolean forms of --strict-readiness, and one message
// format for a bad value.
import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';

const base = ['--model-repository', '.'];

describe('life-cycle flags', () => {
  it('defaults: a 300 s load limit, strict readiness, the trimmer every 5 s', () => {
    const options = parseServeOptions(base);
    expect(options.modelLoadTimeoutMs).toBe(300_000);
    expect(options.strictReadiness).toBe(true);
    expect(options.memoryTrimIntervalMs).toBe(5000);
  });

  it('takes every boolean form of --strict-readiness, and seconds for the others', () => {
    expect(parseServeOptions([...base, '--strict-readiness=false']).strictReadiness).toBe(false);
    expect(parseServeOptions([...base, '--strict-readiness', 'false']).strictReadiness).toBe(false);
    expect(parseServeOptions([...base, '--strict-readiness']).strictReadiness).toBe(true);
    const options = parseServeOptions([...base, '--model-load-timeout', '1.5', '--memory-trim-interval', '0']);
    expect(options.modelLoadTimeoutMs).toBe(1500);
    expect(options.memoryTrimIntervalMs).toBe(0);
  });

  it('refuses a bad value naming the flag, the expected range and the value', () => {
    expect(() => parseServeOptions([...base, '--model-load-timeout=-1'])).toThrow("--model-load-timeout: expected a number in 0..86400, got '-1'");
    expect(() => parseServeOptions([...base, '--strict-readiness=maybe'])).toThrow(/^--strict-readiness: expected true or false .*got 'maybe'$/);
    expect(() => parseServeOptions([...base, '--memory-trim-interval', 'soon'])).toThrow("--memory-trim-interval: expected a number in 0..3600, got 'soon'");
  });
});
