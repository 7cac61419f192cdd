/**
 * The host's CPU utilisation and memory, as Triton reports them
 * (nv_cpu_utilization, nv_cpu_memory_total_bytes, nv_cpu_memory_used_bytes):
 * machine-wide figures, not this process's. Triton reads /proc/stat and
 * /proc/meminfo; Node's `os` reads the same files on Linux (os.freemem() is
 * MemAvailable), so used memory is MemTotal − MemAvailable here as there.
 *
 * Utilisation is busy time over all time, summed across every core, between
 * two samples of the cumulative CPU times. The sampler takes a new sample at
 * most once per `minIntervalMs`: scrapes closer together than that read the
 * last value, so several scrapers cannot shrink the interval to nothing.
 *
 * Main thread only.
 */
import os from 'node:os';

/** Cumulative CPU time of the machine since boot, summed across cores (ms). */
export interface CpuTimes {
  readonly busyMs: number;
  readonly totalMs: number;
}

/** Sums `os.cpus()` times: busy is user + nice + sys + irq, total adds idle. */
export function cpuTimesOf(cpus: readonly Pick<os.CpuInfo, 'times'>[]): CpuTimes {
  let busyMs = 0;
  let totalMs = 0;
  for (const { times } of cpus) {
    const busy = times.user + times.nice + times.sys + times.irq;
    busyMs += busy;
    totalMs += busy + times.idle;
  }
  return { busyMs, totalMs };
}

/** The share of CPU time spent busy between two samples, in [0, 1]; 0 when no time passed. */
export function utilizationBetween(before: CpuTimes, after: CpuTimes): number {
  const total = after.totalMs - before.totalMs;
  if (!(total > 0)) return 0;
  return Math.min(1, Math.max(0, (after.busyMs - before.busyMs) / total));
}

export class CpuUtilizationSampler {
  private previous: CpuTimes;
  private sampledAt: number;
  private last = 0;

  /** The first interval starts now (the server's start), so the first scrape already has a value. */
  constructor(
    private readonly readTimes: () => CpuTimes = () => cpuTimesOf(os.cpus()),
    private readonly minIntervalMs = 1000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.previous = readTimes();
    this.sampledAt = now();
  }

  /** Utilisation over the interval that ended with the latest sample. */
  read(): number {
    const now = this.now();
    if (now - this.sampledAt < this.minIntervalMs) return this.last;
    const current = this.readTimes();
    this.last = utilizationBetween(this.previous, current);
    this.previous = current;
    this.sampledAt = now;
    return this.last;
  }
}

/** The machine's memory (RAM), in bytes: total, and used as MemTotal − MemAvailable. */
export function hostMemory(): { readonly totalBytes: number; readonly usedBytes: number } {
  const totalBytes = os.totalmem();
  return { totalBytes, usedBytes: Math.max(0, totalBytes - os.freemem()) };
}
