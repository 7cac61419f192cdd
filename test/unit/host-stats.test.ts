import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { cpuTimesOf, CpuUtilizationSampler, hostMemory, utilizationBetween, type CpuTimes } from '../../src/observability/host-stats.js';

const core = (user: number, sys: number, idle: number) => ({ times: { user, nice: 0, sys, idle, irq: 0 } });

describe('host stats', () => {
  it('sum busy and total CPU time across cores', () => {
    expect(cpuTimesOf([core(100, 50, 850), core(300, 100, 600)])).toEqual({ busyMs: 550, totalMs: 2000 });
    expect(cpuTimesOf([{ times: { user: 1, nice: 2, sys: 3, idle: 4, irq: 5 } }])).toEqual({ busyMs: 11, totalMs: 15 });
  });

  it('compute utilization between two samples, within [0, 1]', () => {
    expect(utilizationBetween({ busyMs: 100, totalMs: 1000 }, { busyMs: 400, totalMs: 2000 })).toBeCloseTo(0.3);
    expect(utilizationBetween({ busyMs: 100, totalMs: 1000 }, { busyMs: 100, totalMs: 1000 })).toBe(0);
    // Counters that went backwards (a CPU taken offline) never give a value out of range.
    expect(utilizationBetween({ busyMs: 500, totalMs: 1000 }, { busyMs: 100, totalMs: 2000 })).toBe(0);
    expect(utilizationBetween({ busyMs: 0, totalMs: 1000 }, { busyMs: 5000, totalMs: 2000 })).toBe(1);
  });

  it('sample at most once per interval, the first interval from construction', () => {
    const samples: CpuTimes[] = [
      { busyMs: 0, totalMs: 0 },
      { busyMs: 250, totalMs: 1000 },
      { busyMs: 1250, totalMs: 2000 },
    ];
    let now = 0;
    let reads = 0;
    const sampler = new CpuUtilizationSampler(() => samples[reads++]!, 1000, () => now);
    now = 999;
    expect(sampler.read()).toBe(0); // too soon: no sample taken
    expect(reads).toBe(1);
    now = 1000;
    expect(sampler.read()).toBeCloseTo(0.25);
    now = 1500;
    expect(sampler.read()).toBeCloseTo(0.25); // the last value again
    now = 2000;
    expect(sampler.read()).toBeCloseTo(1);
    expect(reads).toBe(3);
  });

  it('read the machine\'s memory: used is total minus available', () => {
    const { totalBytes, usedBytes } = hostMemory();
    expect(totalBytes).toBe(os.totalmem());
    expect(usedBytes).toBeGreaterThan(0);
    expect(usedBytes).toBeLessThanOrEqual(totalBytes);
  });
});
