/**
 * The memory figures the metrics endpoint reads at scrape time, as plain
 * types: the ledgers (src/tenancy) produce them and the metrics registry
 * (metrics.ts) consumes them, so neither imports the other.
 */
import type { FRAGMENTATION_KINDS } from './metric-names.js';

/** Which memory ledger: also the `memory` label of the per-tenant arena gauges. */
export type Ledger = 'host' | 'device';

/** One tenant's figures in one ledger, as the native arena reports them. */
export interface TenantMemoryStats {
  readonly tenant: string;
  readonly memory: Ledger;
  readonly allocatedBytes: number;
  readonly reservedBytes: number;
  readonly quotaBytes: number;
  readonly evictions: number;
  /** Keys are FRAGMENTATION_KINDS; ratios in 0..1. */
  readonly fragmentation: Readonly<Record<(typeof FRAGMENTATION_KINDS)[number], number>>;
}

/** The GPU's figures for Triton's nv_gpu_* gauges. */
export interface GpuMemoryStats {
  readonly uuid: string;
  readonly totalBytes: number;
  readonly usedBytes: number;
  /** 0..1 from NVML; undefined without NVML. */
  readonly utilization: number | undefined;
}
