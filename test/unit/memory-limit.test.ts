import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import {
  availableMemory,
  cgroupMemoryLimit,
  defaultMemoryCapacity,
  type MemoryLimitSources,
} from '../../src/tenancy/memory-limit.js';

const FIXTURES = path.join(import.meta.dirname, '..', 'fixtures', 'cgroup');
const GiB = 2 ** 30;
const MISSING = path.join(FIXTURES, 'no-such-dir', 'memory.max');

/** Sources reading fixture files: `v2`/`v1` name a fixture folder, or leave the file missing. */
function sources(v2: string | undefined, v1: string | undefined, totalBytes = 64 * GiB): MemoryLimitSources {
  return {
    cgroupV2File: v2 === undefined ? MISSING : path.join(FIXTURES, v2, 'memory.max'),
    cgroupV1File: v1 === undefined ? MISSING : path.join(FIXTURES, v1, 'memory.limit_in_bytes'),
    totalBytes,
  };
}

describe('cgroupMemoryLimit', () => {
  it('reads a cgroup v2 limit, and "max" as none', () => {
    expect(cgroupMemoryLimit(sources('v2-limited', undefined))).toBe(2 * GiB);
    expect(cgroupMemoryLimit(sources('v2-unlimited', undefined))).toBeUndefined();
  });

  it('reads a cgroup v1 limit, and its huge "unlimited" value as none', () => {
    expect(cgroupMemoryLimit(sources(undefined, 'v1-limited'))).toBe(1 * GiB);
    expect(cgroupMemoryLimit(sources(undefined, 'v1-unlimited'))).toBeUndefined();
  });

  it('takes the smaller when both are there', () => {
    expect(cgroupMemoryLimit(sources('v2-limited', 'v1-limited'))).toBe(1 * GiB);
    expect(cgroupMemoryLimit(sources('v2-unlimited', 'v1-limited'))).toBe(1 * GiB);
    expect(cgroupMemoryLimit(sources('v2-limited', 'v1-unlimited'))).toBe(2 * GiB);
  });

  it('is none without cgroup files or with unreadable ones', () => {
    expect(cgroupMemoryLimit(sources(undefined, undefined))).toBeUndefined();
    expect(cgroupMemoryLimit(sources('garbled', undefined))).toBeUndefined();
    // A directory where the file should be cannot be read as one.
    expect(cgroupMemoryLimit({ cgroupV2File: FIXTURES, cgroupV1File: MISSING })).toBeUndefined();
  });
});

describe('defaultMemoryCapacity', () => {
  it('is half the machine memory without a container limit', () => {
    expect(defaultMemoryCapacity(sources(undefined, undefined, 64 * GiB))).toBe(32 * GiB);
    expect(defaultMemoryCapacity(sources('v2-unlimited', 'v1-unlimited', 64 * GiB + 1))).toBe(32 * GiB);
  });

  it('is half the container limit when that is smaller than the machine', () => {
    expect(defaultMemoryCapacity(sources('v2-limited', undefined, 64 * GiB))).toBe(1 * GiB);
    expect(defaultMemoryCapacity(sources(undefined, 'v1-limited', 64 * GiB))).toBe(GiB / 2);
  });

  it('is half the machine when the limit is larger than the machine', () => {
    expect(availableMemory(sources('v2-limited', undefined, 1 * GiB))).toBe(1 * GiB);
    expect(defaultMemoryCapacity(sources('v2-limited', undefined, 1 * GiB))).toBe(GiB / 2);
  });

  it('reads the real files by default, and is at most half of os.totalmem()', () => {
    const capacity = defaultMemoryCapacity();
    expect(capacity).toBeGreaterThan(0);
    expect(capacity).toBeLessThanOrEqual(Math.floor(os.totalmem() / 2));
  });

  it('is what `hotpath serve` uses without --memory-capacity', () => {
    expect(parseServeOptions(['--model-repository', 'models']).memoryCapacityBytes).toBe(defaultMemoryCapacity());
  });
});
