/**
 * `--cache-config` (src/datachecks/cache/cache-options.ts): Triton's
 * `local,size=BYTES`, byte sizes, off at 0, and one message per mistake.
 */
import { describe, expect, it } from 'vitest';
import { cacheSizeBytes } from '../../src/datachecks/cache/cache-options.js';
import { UsageError } from '../../src/common/flag-values.js';
import { readServeCommandLine } from '../../src/cli/serve-options.js';

describe('--cache-config', () => {
  it('takes the local cache size, in bytes or a size', () => {
    expect(cacheSizeBytes({ 'cache-config': ['local,size=1048576'] })).toBe(1048576);
    expect(cacheSizeBytes({ 'cache-config': ['local,size=2MiB'] })).toBe(2 * 1024 * 1024);
    expect(cacheSizeBytes({ 'cache-config': ['local,size=1', 'local,size=10'] })).toBe(10);
  });

  it('is off without the flag or at size 0', () => {
    expect(cacheSizeBytes({ 'cache-config': [] })).toBeUndefined();
    expect(cacheSizeBytes({})).toBeUndefined();
    expect(cacheSizeBytes({ 'cache-config': ['local,size=0'] })).toBeUndefined();
  });

  it("takes Triton's redis cache with a warning and no cache (a Triton command line must not end the process)", () => {
    expect(cacheSizeBytes({ 'cache-config': ['redis,host=x'] })).toBeUndefined();
    expect(cacheSizeBytes({ 'cache-config': ['redis,host=x', 'local,size=4096'] })).toBe(4096);
    const { warnings } = readServeCommandLine(['--model-repository', 'models', '--cache-config=redis,host=x']);
    expect(warnings).toEqual(['--cache-config redis,host=x: no effect here: hotpath has only the local cache (--cache-config local,size=SIZE)']);
  });

  it('refuses other caches, keys and sizes', () => {
    expect(() => cacheSizeBytes({ 'cache-config': ['memcached,host=x'] })).toThrow(UsageError);
    expect(() => cacheSizeBytes({ 'cache-config': ['memcached,host=x'] })).toThrow(/--cache-config: expected 'local,<key>=<value>'.*got 'memcached,host=x'/);
    expect(() => cacheSizeBytes({ 'cache-config': ['local,bytes=10'] })).toThrow(/expected 'local,size=<bytes>'/);
    expect(() => cacheSizeBytes({ 'cache-config': ['local'] })).toThrow(/expected 'local,size=<bytes>'/);
    expect(() => cacheSizeBytes({ 'cache-config': ['local,size=lots'] })).toThrow(/--cache-config local,size/);
  });
});
