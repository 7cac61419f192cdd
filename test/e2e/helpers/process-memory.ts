/**
 * The resident memory of a real server process, from /proc (Linux): what a
 * container limit sees. `RssSampler` polls VmRSS every few milliseconds while
 * a probe runs, so a short peak is not missed between two reads.
 */
import { readFileSync } from 'node:fs';

/** VmRSS of `pid` in bytes. */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (kb === undefined) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

export class RssSampler {
  readonly baseline: number;
  private peak: number;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pid: number,
    intervalMs = 5,
  ) {
    this.baseline = rssBytes(pid);
    this.peak = this.baseline;
    this.timer = setInterval(() => this.sample(), intervalMs);
  }

  private sample(): void {
    try {
      this.peak = Math.max(this.peak, rssBytes(this.pid));
    } catch {
      // the process exited; keep the peak seen
    }
  }

  /** Stops sampling; the highest VmRSS seen above the baseline, in bytes. */
  stop(): number {
    this.sample();
    clearInterval(this.timer);
    return this.peak - this.baseline;
  }
}

export const MiB = 1024 * 1024;
