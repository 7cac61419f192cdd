/**
 * The server's memory ledgers. Host and device memory are separate ledgers,
 * each one native arena with one hard quota per tenant:
 *
 * - **host** ("main"): every request's input buffers, every batch's staging
 *   and output buffers, and every onnxruntime session's accounting
 *   reservation. Pinned host memory where a CUDA device is usable (the
 *   executor copies batches from it asynchronously), else plain host memory;
 *   both can be mapped by the workers without a copy (`Arena.attach`).
 *   Quotas: `--tenant NAME:QUOTA`, capacity `--memory-capacity`.
 * - **device** ("device"): the native executor's weights and per-instance
 *   workspaces, on CUDA device `--device N`. It exists only when that device
 *   is usable; otherwise the log says why and executor models keep their
 *   memory on the host ledger. Quotas: `--tenant-device NAME:QUOTA`, capacity
 *   `--device-memory-capacity` (default: the device's total memory).
 *
 * Tenants exist in both ledgers under the same names; a tenant without a
 * quota in one ledger is bounded there only by that ledger's capacity.
 * Owners: tenant → model version → (blocks); destroying a version's owner in
 * a ledger frees everything it held there.
 *
 * Test hook: `deviceLedger: 'host'` (only with --enable-fault-injection) backs
 * the device ledger with host memory, so CI exercises device quotas, the
 * executor's device accounting and cleanup without a GPU.
 *
 * Ownership: created and closed by HotpathServer. Main thread only (the
 * native arenas are thread-safe; this wrapper object is not shared).
 */
import type { Logger } from 'pino';
import { Arena, type Owner, type Tenant } from '../native/arena.js';
import { deviceInfo, gpuUtilization, type DeviceInfo } from '../native/device.js';
import type { GpuMemoryStats, Ledger, TenantMemoryStats } from '../observability/memory-stats.js';
import { DEFAULT_TENANT, type TenantQuota } from './tenant-config.js';
import { deviceAbsenceReason } from './device-absence.js';

export type { Ledger } from '../observability/memory-stats.js';

export const ARENA_NAME = 'main';
export const DEVICE_ARENA_NAME = 'device';

export interface DeviceLedgerOptions {
  /** The CUDA device (`--device N`). */
  readonly ordinal: number;
  /** Undefined: the device's total memory. */
  readonly capacityBytes: number | undefined;
  readonly tenants: readonly TenantQuota[];
  /** 'cuda' (default): the device if usable. 'host': test hook, see the file comment. */
  readonly backend: 'cuda' | 'host';
}

export interface ServerMemoryOptions {
  readonly capacityBytes: number;
  readonly tenants: readonly TenantQuota[];
  readonly device: DeviceLedgerOptions;
  readonly logger: Logger;
}

/** The device ledger and what it runs on. */
export interface DeviceLedger {
  readonly arena: Arena;
  /** 'cuda': a real device; 'host': the test hook. */
  readonly backend: 'cuda' | 'host';
  readonly ordinal: number;
  readonly info: DeviceInfo;
}

export class ServerMemory {
  private readonly tenantOwners = new Map<string, Owner>();
  private readonly deviceTenantOwners = new Map<string, Owner>();

  private constructor(
    readonly arena: Arena,
    /** Undefined when no usable device (see `deviceUnavailableReason`). */
    readonly device: DeviceLedger | undefined,
    /** Why there is no device ledger ('' when there is one). */
    readonly deviceUnavailableReason: string,
    /** The CUDA device probed at start-up (host backend with the reason when unusable). */
    readonly probedDevice: DeviceInfo,
  ) {}

  static create(options: ServerMemoryOptions): ServerMemory {
    const log = options.logger.child({ component: 'memory' });
    const probed = deviceInfo(options.device.ordinal);
    const arena = Arena.create(ARENA_NAME, {
      backend: 'pinned',
      capacityBytes: options.capacityBytes,
      deviceOrdinal: options.device.ordinal,
    });
    for (const tenant of options.tenants) {
      if (tenant.name === DEFAULT_TENANT) arena.setTenantQuota(DEFAULT_TENANT, tenant.quotaBytes);
      else arena.createTenant(tenant.name, tenant.quotaBytes);
    }
    const info = arena.deviceInfo();
    log.info(
      {
        ledger: 'host',
        backend: info.backend,
        capacity_bytes: options.capacityBytes,
        tenants: options.tenants.map((t) => `${t.name}:${t.quotaBytes}`),
        ...(info.fallbackReason ? { fallback_reason: info.fallbackReason } : {}),
      },
      'memory arena ready',
    );

    let device: DeviceLedger | undefined;
    let reason = '';
    try {
      device = ServerMemory.createDeviceLedger(options, probed);
    } catch (err) {
      arena.close();
      throw err;
    }
    if (device === undefined) {
      reason = deviceAbsenceReason(options.device.ordinal, probed.name);
      log.info({ ledger: 'device', device: options.device.ordinal, reason }, 'no device ledger: executor memory stays on the host ledger');
    } else {
      // Every host tenant exists in the device ledger too; without a device
      // quota it is bounded there by the ledger's capacity.
      for (const { name } of options.tenants) {
        if (name !== DEFAULT_TENANT && !options.device.tenants.some((t) => t.name === name)) {
          device.arena.createTenant(name, device.arena.stats().capacity);
        }
      }
      log.info(
        {
          ledger: 'device',
          backend: device.backend,
          device: device.ordinal,
          name: device.info.name,
          uuid: device.info.uuid || undefined,
          capacity_bytes: device.arena.stats().capacity,
          tenants: options.device.tenants.map((t) => `${t.name}:${t.quotaBytes}`),
        },
        device.backend === 'host' ? 'device ledger ready (host memory: fault-injection test hook)' : 'device ledger ready',
      );
    }
    return new ServerMemory(arena, device, reason, probed);
  }

  private static createDeviceLedger(options: ServerMemoryOptions, probed: DeviceInfo): DeviceLedger | undefined {
    const wanted = options.device;
    const usable = probed.backend === 'cuda';
    if (!usable && wanted.backend !== 'host') {
      const tenant = wanted.tenants[0];
      if (tenant !== undefined) {
        throw new Error(
          `--tenant-device ${tenant.name}: device quotas need a usable CUDA device, but there is ${deviceAbsenceReason(wanted.ordinal, probed.name)}`,
        );
      }
      return undefined;
    }
    const backend = wanted.backend === 'host' ? 'host' : 'cuda';
    const capacity = wanted.capacityBytes ?? (backend === 'cuda' ? probed.totalBytes : options.capacityBytes);
    const tooBig = wanted.tenants.find((t) => t.quotaBytes > capacity);
    if (tooBig !== undefined) {
      throw new Error(
        `--tenant-device ${tooBig.name}: quota ${tooBig.quotaBytes} bytes exceeds the device memory capacity of ${capacity} bytes`,
      );
    }
    const arena = Arena.create(DEVICE_ARENA_NAME, { backend, capacityBytes: capacity, deviceOrdinal: wanted.ordinal });
    const fallback = arena.deviceInfo().fallbackReason;
    if (backend === 'cuda' && fallback) {
      // The probe said usable, the arena could not use it: no device ledger.
      arena.close();
      throw new Error(`CUDA device ${wanted.ordinal} became unusable while creating the device ledger: ${fallback}`);
    }
    for (const tenant of wanted.tenants) {
      if (tenant.name === DEFAULT_TENANT) arena.setTenantQuota(DEFAULT_TENANT, tenant.quotaBytes);
      else arena.createTenant(tenant.name, tenant.quotaBytes);
    }
    return { arena, backend, ordinal: wanted.ordinal, info: probed };
  }

  /** The configured tenant called `name`, or a clear error naming the known ones. */
  tenant(name: string): Tenant {
    const known = this.arena.stats().tenants.map((t) => t.name);
    if (!known.includes(name)) {
      const deviceOnly = this.device?.arena.stats().tenants.some((t) => t.name === name) ?? false;
      const hint = deviceOnly ? ` (it has a device quota only; give it a host quota too with --tenant ${name}:QUOTA)` : ' (use --tenant NAME:QUOTA)';
      throw new Error(`tenant '${name}' is not configured; configured tenants: ${known.join(', ')}${hint}`);
    }
    return this.arena.tenant(name);
  }

  /** A new owner for one model version in the host ledger, under its tenant's owner. */
  createVersionOwner(tenant: string, model: string, version: number): Owner {
    return ServerMemory.ownerUnder(this.arena, this.tenantOwners, tenant, model, version);
  }

  /** The same in the device ledger; undefined when there is none. */
  createDeviceOwner(tenant: string, model: string, version: number): Owner | undefined {
    if (this.device === undefined) return undefined;
    return ServerMemory.ownerUnder(this.device.arena, this.deviceTenantOwners, tenant, model, version);
  }

  private static ownerUnder(arena: Arena, tenants: Map<string, Owner>, tenant: string, model: string, version: number): Owner {
    let parent = tenants.get(tenant);
    if (parent === undefined) {
      parent = arena.createOwner('tenant', tenant);
      tenants.set(tenant, parent);
    }
    return arena.createOwner('model', `${model}/${version}`, parent);
  }

  /** Per-tenant figures of both ledgers for the metrics endpoint, read at scrape time. */
  tenantStats(): TenantMemoryStats[] {
    const host = ledgerStats(this.arena, 'host');
    return this.device === undefined ? host : [...host, ...ledgerStats(this.device.arena, 'device')];
  }

  /** The CUDA device's memory and utilisation (nv_gpu_*); undefined without a real device. */
  gpuStats(): GpuMemoryStats | undefined {
    if (this.device?.backend !== 'cuda') return undefined;
    const now = deviceInfo(this.device.ordinal);
    if (now.backend !== 'cuda') return undefined;
    return {
      uuid: now.uuid,
      totalBytes: now.totalBytes,
      usedBytes: now.totalBytes - now.freeBytes,
      utilization: gpuUtilization(now.uuid),
    };
  }

  close(): void {
    this.device?.arena.close();
    this.arena.close();
  }
}

function ledgerStats(arena: Arena, memory: Ledger): TenantMemoryStats[] {
  const stats = arena.stats();
  return stats.tenants.map((t) => ({
    tenant: t.name,
    memory,
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
