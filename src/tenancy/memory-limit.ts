/**
 * How much memory this process may use: the machine's memory, or the
 * container's cgroup limit when that is smaller. `os.totalmem()` alone sees
 * the node's memory, so in a pod limited to 2 GiB on a 64 GiB node half of it
 * would be a 32 GiB arena, and the kernel would kill the process long before
 * the arena refused anything.
 *
 * Read once at start-up, synchronously; the paths are parameters so tests can
 * point them at fixture files.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';

export interface MemoryLimitSources {
  /** cgroup v2: "max" or a byte count. */
  readonly cgroupV2File?: string;
  /** cgroup v1: a byte count, where "no limit" is a huge one (2^63 rounded down to a page). */
  readonly cgroupV1File?: string;
  /** The machine's memory; os.totalmem() by default. */
  readonly totalBytes?: number;
}

export const CGROUP_V2_MEMORY_MAX = '/sys/fs/cgroup/memory.max';
export const CGROUP_V1_MEMORY_LIMIT = '/sys/fs/cgroup/memory/memory.limit_in_bytes';

// cgroup v1 has no word for "unlimited": it reports PAGE_COUNTER_MAX pages,
// about 2^63 bytes. No real limit comes near 2^62 (4 EiB).
const V1_UNLIMITED_FROM = 2 ** 62;

/**
 * The container's memory limit in bytes, or undefined when there is none or it
 * cannot be read (no cgroup file, not Linux). The smaller of the two when
 * both files are there.
 */
export function cgroupMemoryLimit(sources: MemoryLimitSources = {}): number | undefined {
  const v2 = readLimit(sources.cgroupV2File ?? CGROUP_V2_MEMORY_MAX, (text) => (text === 'max' ? undefined : text));
  const v1 = readLimit(sources.cgroupV1File ?? CGROUP_V1_MEMORY_LIMIT, (text) => text);
  const limitV1 = v1 !== undefined && v1 >= V1_UNLIMITED_FROM ? undefined : v1;
  if (v2 === undefined) return limitV1;
  return limitV1 === undefined ? v2 : Math.min(v2, limitV1);
}

/** The memory available to this process: the smaller of the machine's memory and the cgroup limit. */
export function availableMemory(sources: MemoryLimitSources = {}): number {
  const total = sources.totalBytes ?? os.totalmem();
  const limit = cgroupMemoryLimit(sources);
  return limit === undefined ? total : Math.min(total, limit);
}

/** `--memory-capacity`'s default: half of the memory available to this process. */
export function defaultMemoryCapacity(sources: MemoryLimitSources = {}): number {
  return Math.floor(availableMemory(sources) / 2);
}

/** The number in `file` after `keep` (which may turn the text into "no limit"), or undefined. */
function readLimit(file: string, keep: (text: string) => string | undefined): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
  const kept = keep(text);
  if (kept === undefined || !/^\d+$/.test(kept)) return undefined;
  const bytes = Number(kept);
  // A limit of 0 bytes is not a limit anyone serves under; treat it as unreadable.
  return bytes > 0 ? bytes : undefined;
}
