/**
 * The server's memory ledger: one process-wide arena ("main") holding every
 * request's input buffers and every model version's accounting reservation,
 * with one hard quota per tenant.
 *
 * - Backend: pinned host memory where a CUDA device is usable (ready for
 *   staging), else plain host memory; both can be mapped by the workers
 *   without a copy (`Arena.attach(ARENA_NAME)` + `adopt`).
 * - Tenants come from `--tenant NAME:QUOTA` / `--tenants-file`; `default`
 *   always exists (its quota is the arena capacity unless configured).
 * - Owners: tenant → model version → (request blocks); destroying a version's
 *   owner frees everything it still held.
 *
 * Ownership: created and closed by HotpathServer. Main thread only (the
 * native arena is thread-safe; this wrapper object is not shared).
 */
import type { Logger } from 'pino';
import { Arena, type Owner, type Tenant } from '../native/arena.js';
import type { TenantMemoryStats } from '../observability/metrics.js';
import { DEFAULT_TENANT, type TenantQuota } from './tenant-config.js';

export const ARENA_NAME = 'main';

export interface ServerMemoryOptions {
  readonly capacityBytes: number;
  readonly tenants: readonly TenantQuota[];
  readonly logger: Logger;
}

export class ServerMemory {
  private readonly tenantOwners = new Map<string, Owner>();

  private constructor(
    readonly arena: Arena,
    private readonly log: Logger,
  ) {}

  static create(options: ServerMemoryOptions): ServerMemory {
    const arena = Arena.create(ARENA_NAME, { backend: 'pinned', capacityBytes: options.capacityBytes });
    const memory = new ServerMemory(arena, options.logger.child({ component: 'memory' }));
    for (const tenant of options.tenants) {
      if (tenant.name === DEFAULT_TENANT) arena.setTenantQuota(DEFAULT_TENANT, tenant.quotaBytes);
      else arena.createTenant(tenant.name, tenant.quotaBytes);
    }
    const info = arena.deviceInfo();
    memory.log.info(
      {
        backend: info.backend,
        capacity_bytes: options.capacityBytes,
        tenants: options.tenants.map((t) => `${t.name}:${t.quotaBytes}`),
        ...(info.fallbackReason ? { fallback_reason: info.fallbackReason } : {}),
      },
      'memory arena ready',
    );
    return memory;
  }

  /** The configured tenant called `name`, or a clear error naming the known ones. */
  tenant(name: string): Tenant {
    const known = this.arena.stats().tenants.map((t) => t.name);
    if (!known.includes(name)) {
      throw new Error(`tenant '${name}' is not configured; configured tenants: ${known.join(', ')} (use --tenant NAME:QUOTA)`);
    }
    return this.arena.tenant(name);
  }

  /** A new owner for one model version, under its tenant's owner. */
  createVersionOwner(tenant: string, model: string, version: number): Owner {
    let parent = this.tenantOwners.get(tenant);
    if (parent === undefined) {
      parent = this.arena.createOwner('tenant', tenant);
      this.tenantOwners.set(tenant, parent);
    }
    return this.arena.createOwner('model', `${model}/${version}`, parent);
  }

  /** Per-tenant figures for the metrics endpoint, read at scrape time. */
  tenantStats(): TenantMemoryStats[] {
    const stats = this.arena.stats();
    return stats.tenants.map((t) => ({
      tenant: t.name,
      allocatedBytes: t.allocated,
      reservedBytes: t.reserved,
      quotaBytes: t.quota,
      evictions: t.evictions,
      fragmentation: {
        // Free-space fragmentation and cache overhead belong to the arena as a
        // whole (cached memory has no tenant); rounding waste is the tenant's own.
        largest_free: stats.externalFragmentation,
        reserved_unallocated: stats.cacheOverhead,
        allocated_unrequested: t.allocated > 0 ? (t.allocated - t.requested) / t.allocated : 0,
      },
    }));
  }

  close(): void {
    this.arena.close();
  }
}
