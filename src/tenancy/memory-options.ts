/**
 * The memory ledger's flags (options table, common/option-table.ts): the
 * host arena's capacity, the tenants and their quotas (flags and tenants
 * file), and the device ledger. The quotas are checked against the capacity
 * for the command line and createServer alike.
 */
import { defaultMemoryCapacity } from './memory-limit.js';
import { integerFlag, numberFlag, UsageError } from '../common/flag-values.js';
import type { FlagValues, OptionEntry } from '../common/option-table.js';
import type { DeviceLedgerOptions } from './server-memory.js';
import {
  DEFAULT_TENANT,
  mergeTenants,
  parseByteSize,
  parseTenantFlag,
  readTenantsFile,
  TenantConfigError,
  type TenantKey,
  type TenantLimitsConfig,
  type TenantQuota,
} from './tenant-config.js';

export interface MemoryOptions {
  /** `--memory-capacity`: the arena's capacity, all tenants together. */
  memoryCapacityBytes: number;
  tenants: TenantQuota[];
  /** `rate`, `burst` and `max_inflight` of the tenants file, per tenant. */
  tenantLimits: TenantLimitsConfig[];
  /** The tenants file's `keys` (SHA-256 digests), per tenant. */
  apiKeys: TenantKey[];
  device: DeviceLedgerOptions;
  /** `--device-probe-interval` in ms. */
  deviceProbeIntervalMs: number;
}

const FLAGS = [
  { name: 'memory-capacity', arg: 'SIZE', help: "memory arena capacity for request buffers and model footprints, all tenants together (default: half the container's memory limit, or of the machine's memory without one)" },
  { name: 'tenant', arg: 'NAME:QUOTA', repeatable: true,
    help: "a tenant and its hard memory quota, e.g. ads:512MiB (repeatable); models pick theirs with the config parameter 'tenant'" },
  { name: 'tenants-file', arg: 'FILE',
    help: 'tenants as JSON: {"tenants": {"NAME": "QUOTA", ...}} or, with a device quota, {"tenants": {"NAME": {"quota": Q, "device_quota": Q}}}; an entry may also list "keys": ["sha256:<hex>"] and the limits "rate", "burst", "max_inflight" (README, Security)' },
  { name: 'device', arg: 'N', help: 'the CUDA device for the device ledger and the native executor (default 0)' },
  { name: 'device-memory-capacity', arg: 'SIZE', help: "device ledger capacity, all tenants together (default: the device's memory)" },
  { name: 'tenant-device', arg: 'NAME:QUOTA', repeatable: true, help: "a tenant's hard quota on device memory, e.g. ads:4GiB (repeatable)" },
  { name: 'device-probe-interval', arg: 'S', help: 'after a transient device error, how often to try moving a model back from CPU to the device (default 5)' },
  { name: 'device-ledger', arg: 'host',
    help: 'test hook (needs --enable-fault-injection): back the device ledger with host memory, so device quotas can be tested without a GPU' },
] as const;

function parseMemory(values: FlagValues): Partial<MemoryOptions> {
  try {
    const capacity = values['memory-capacity'] as string | undefined;
    const file = values['tenants-file'] as string | undefined;
    const fromFile = file ? readTenantsFile(file) : { host: [], device: [], keys: [], limits: [] };
    const tenants = mergeTenants(fromFile.host, ((values.tenant ?? []) as string[]).map((spec) => parseTenantFlag(spec)));
    const deviceTenants = mergeTenants(
      fromFile.device,
      ((values['tenant-device'] ?? []) as string[]).map((spec) => parseTenantFlag(spec, '--tenant-device')),
    );
    const deviceCapacity = values['device-memory-capacity'] as string | undefined;
    const ledger = values['device-ledger'] as string | undefined;
    if (ledger !== undefined && ledger !== 'host') throw new UsageError(`--device-ledger: expected 'host', got '${ledger}'`);
    const probe = values['device-probe-interval'] as string | undefined;
    return {
      ...(capacity === undefined ? {} : { memoryCapacityBytes: parseByteSize(capacity, '--memory-capacity') }),
      tenants,
      tenantLimits: fromFile.limits,
      apiKeys: fromFile.keys,
      device: {
        ordinal: integerFlag('--device', (values.device as string | undefined) ?? '0', 0, 1024),
        capacityBytes: deviceCapacity === undefined ? undefined : parseByteSize(deviceCapacity, '--device-memory-capacity'),
        tenants: deviceTenants,
        backend: ledger === 'host' ? 'host' : 'cuda',
      },
      ...(probe === undefined ? {} : { deviceProbeIntervalMs: Math.round(numberFlag('--device-probe-interval', probe, 0.01, 3600) * 1000) }),
    };
  } catch (err) {
    if (err instanceof TenantConfigError) throw new UsageError(err.message);
    throw err;
  }
}

export const MEMORY_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: FLAGS,
  defaults: (): MemoryOptions => ({
    // Half the container's cgroup memory limit, or of the machine's memory without one.
    memoryCapacityBytes: defaultMemoryCapacity(),
    tenants: [],
    tenantLimits: [],
    apiKeys: [],
    device: { ordinal: 0, capacityBytes: undefined, tenants: [], backend: 'cuda' },
    deviceProbeIntervalMs: 5000,
  }),
  parse: parseMemory,
  check: (o: MemoryOptions & { faultInjection: boolean }, name) => {
    if (!(Number.isInteger(o.memoryCapacityBytes) && o.memoryCapacityBytes > 0)) {
      throw new UsageError(`${name('memoryCapacityBytes')}: expected a positive size, got ${o.memoryCapacityBytes}`);
    }
    const tooBig = o.tenants.find((t) => t.quotaBytes > o.memoryCapacityBytes);
    if (tooBig !== undefined) {
      throw new UsageError(`${name('tenants')} ${tooBig.name}: quota ${tooBig.quotaBytes} bytes exceeds the memory capacity of ${o.memoryCapacityBytes} bytes`);
    }
    const missingHost = o.device.tenants.find((t) => t.name !== DEFAULT_TENANT && !o.tenants.some((h) => h.name === t.name));
    if (missingHost !== undefined) {
      throw new UsageError(
        `${name('device.tenants')} ${missingHost.name}: tenant '${missingHost.name}' has no host quota; add ${name('tenants')} ${missingHost.name}:QUOTA ` +
          '(its models also use host memory for request buffers)',
      );
    }
    if (!(Number.isInteger(o.device.ordinal) && o.device.ordinal >= 0 && o.device.ordinal <= 1024)) {
      throw new UsageError(`${name('device')}: expected an integer in 0..1024, got ${o.device.ordinal}`);
    }
    if (o.device.backend === 'host' && !o.faultInjection) {
      throw new UsageError(`${name('device.backend')} host is a test hook: it needs ${name('faultInjection')}`);
    }
    if (!(o.deviceProbeIntervalMs >= 10 && o.deviceProbeIntervalMs <= 3_600_000)) {
      throw new UsageError(`${name('deviceProbeIntervalMs')}: expected a number in 10..3600000 (ms), got ${o.deviceProbeIntervalMs}`);
    }
  },
  fields: {
    'memory-capacity': 'memoryCapacityBytes',
    tenant: 'tenants',
    'tenants-file': 'tenants',
    device: 'device',
    'device-memory-capacity': 'device',
    'tenant-device': 'device.tenants',
    'device-probe-interval': 'deviceProbeIntervalMs',
    'device-ledger': 'device.backend',
  },
}];
