/**
 * Tenant quotas from the command line and from a tenants file. Host and device
 * memory are separate ledgers with separate quotas:
 *
 * - host: `--tenant NAME:QUOTA` (repeatable), or `"NAME": "QUOTA"` /
 *   `"NAME": {"quota": "QUOTA"}` in the file;
 * - device: `--tenant-device NAME:QUOTA` (repeatable), or
 *   `"NAME": {"device_quota": "QUOTA"}` in the file.
 *
 * The file is JSON: `{"tenants": {"ads": "512MiB", "fraud": {"quota": "1GiB",
 * "device_quota": "4GiB"}}}`. A tenant entry may also list its API keys
 * (`"keys": ["sha256:<64 hex>"]`, hashes only) and admission limits
 * (`"rate"`, `"burst"`, `"max_inflight"`). Quotas are byte sizes with optional binary or
 * decimal suffixes: `512MiB`, `2Gi`, `100MB`, `4096`. Every model belongs to
 * a tenant (config parameter `tenant`, default `default`); a tenant not
 * configured has no quota of its own.
 */
import { readFileSync } from 'node:fs';
import { ByteSizeError, parseByteSize as parseByteSizeText } from '../common/byte-size.js';

export const DEFAULT_TENANT = 'default';

export interface TenantQuota {
  readonly name: string;
  readonly quotaBytes: number;
}

/** Thrown for malformed tenant specs; the message names the spec and what was expected. */
export class TenantConfigError extends Error {}

/** Parses `512MiB`, `512Mi`, `1.5GiB`, `100MB`, `4096` into bytes (common/byte-size.ts), as a TenantConfigError when it is not one. */
export function parseByteSize(text: string, what: string): number {
  try {
    return parseByteSizeText(text, what);
  } catch (err) {
    if (err instanceof ByteSizeError) throw new TenantConfigError(err.message);
    throw err;
  }
}

/** Parses one `--tenant NAME:QUOTA` (or, with `flag`, `--tenant-device NAME:QUOTA`) value. */
export function parseTenantFlag(spec: string, flag = '--tenant'): TenantQuota {
  const colon = spec.lastIndexOf(':');
  const name = colon > 0 ? spec.slice(0, colon) : '';
  if (!/^[A-Za-z0-9_.-]+$/.test(name)) {
    throw new TenantConfigError(`${flag}: expected NAME:QUOTA with NAME of letters, digits, '_', '.' or '-', got '${spec}'`);
  }
  return { name, quotaBytes: parseByteSize(spec.slice(colon + 1), `${flag} ${name}`) };
}

/** One accepted API key of a tenant: the SHA-256 digest of the raw key (only hashes are stored). */
export interface TenantKey {
  readonly tenant: string;
  readonly sha256: Buffer;
}

/** A tenant's admission limits from the tenants file; absent fields are unlimited. */
export interface TenantLimitsConfig {
  readonly tenant: string;
  /** Requests per second (token refill rate), > 0. */
  readonly rate?: number;
  /** Token bucket size, an integer >= 1; defaults to max(1, ceil(rate)) when rate is set. */
  readonly burst?: number;
  /** Requests of the tenant admitted at once, an integer >= 1. */
  readonly maxInflight?: number;
}

/** Everything one tenants file configures. */
export interface TenantsFile {
  readonly host: TenantQuota[];
  readonly device: TenantQuota[];
  /** Accepted API keys, as digests, in file order. */
  readonly keys: TenantKey[];
  /** Tenants with at least one of rate, burst, max_inflight. */
  readonly limits: TenantLimitsConfig[];
}

const ENTRY_FIELDS = ['quota', 'device_quota', 'keys', 'rate', 'burst', 'max_inflight'] as const;
const ENTRY_SHAPE = '{"quota": SIZE, "device_quota": SIZE, "keys": ["sha256:HEX", ...], "rate": N, "burst": N, "max_inflight": N}';

/** Parses a `sha256:<64 hex>` key hash into its 32-byte digest. */
export function parseKeyHash(value: unknown, what: string): Buffer {
  if (typeof value !== 'string' || !/^sha256:[0-9a-fA-F]{64}$/.test(value)) {
    // A raw key put here by mistake must not be echoed back in full.
    const shown = typeof value === 'string'
      ? `a string of ${value.length} characters${value.startsWith('sha256:') ? " starting 'sha256:'" : ''}`
      : JSON.stringify(value);
    throw new TenantConfigError(`${what}: expected 'sha256:' followed by 64 hex digits (printf %s "$KEY" | sha256sum), got ${shown}`);
  }
  return Buffer.from(value.slice('sha256:'.length), 'hex');
}

/**
 * Reads a tenants file: `{"tenants": {"ads": "512MiB", "fraud": {"quota":
 * 1073741824, "device_quota": "2GiB", "keys": ["sha256:<64 hex>"],
 * "rate": 200, "burst": 400, "max_inflight": 32}}}`. Every field is optional;
 * unknown fields are refused, and a key hash may belong to one tenant only.
 */
export function readTenantsFile(file: string): TenantsFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new TenantConfigError(`--tenants-file ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const tenants = (parsed as { tenants?: unknown } | null)?.tenants;
  if (typeof tenants !== 'object' || tenants === null || Array.isArray(tenants)) {
    throw new TenantConfigError(`--tenants-file ${file}: expected {"tenants": {"NAME": "QUOTA", ...}}`);
  }
  const result: TenantsFile = { host: [], device: [], keys: [], limits: [] };
  const isSize = (value: unknown): value is string | number => typeof value === 'string' || typeof value === 'number';
  const keyOwners = new Map<string, string>();
  for (const [name, entry] of Object.entries(tenants as Record<string, unknown>)) {
    const where = `--tenants-file ${file}: tenant '${name}'`;
    if (isSize(entry)) {
      result.host.push(parseTenantFlag(`${name}:${String(entry)}`));
      continue;
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new TenantConfigError(`${where}: expected a size or ${ENTRY_SHAPE}, got ${JSON.stringify(entry)}`);
    }
    const fields = entry as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((key) => !(ENTRY_FIELDS as readonly string[]).includes(key));
    if (unknown.length > 0) {
      throw new TenantConfigError(`${where}: unknown field '${unknown[0]}'; expected any of ${ENTRY_FIELDS.map((f) => `'${f}'`).join(', ')}`);
    }
    for (const [key, list] of [['quota', result.host], ['device_quota', result.device]] as const) {
      const value = fields[key];
      if (value === undefined) continue;
      if (!isSize(value)) throw new TenantConfigError(`${where}: '${key}': expected a size string or number, got ${JSON.stringify(value)}`);
      list.push(parseTenantFlag(`${name}:${String(value)}`));
    }
    if (fields.keys !== undefined) {
      if (!Array.isArray(fields.keys)) {
        throw new TenantConfigError(`${where}: 'keys': expected an array of "sha256:HEX" strings, got ${typeof fields.keys}`);
      }
      fields.keys.forEach((value: unknown, index) => {
        const sha256 = parseKeyHash(value, `${where}: 'keys'[${index}]`);
        const hex = sha256.toString('hex');
        const owner = keyOwners.get(hex);
        if (owner !== undefined) {
          throw new TenantConfigError(`${where}: 'keys'[${index}]: the same key hash is already listed for tenant '${owner}'; a key belongs to one tenant`);
        }
        keyOwners.set(hex, name);
        result.keys.push({ tenant: name, sha256 });
      });
    }
    const limits = parseLimits(fields, where);
    if (limits) result.limits.push({ tenant: name, ...limits });
  }
  return result;
}

function parseLimits(fields: Record<string, unknown>, where: string): Omit<TenantLimitsConfig, 'tenant'> | undefined {
  const { rate, burst, max_inflight: maxInflight } = fields;
  if (rate === undefined && burst === undefined && maxInflight === undefined) return undefined;
  if (rate !== undefined && (typeof rate !== 'number' || !Number.isFinite(rate) || rate <= 0)) {
    throw new TenantConfigError(`${where}: 'rate': expected requests per second, a number > 0, got ${JSON.stringify(rate)}`);
  }
  for (const [key, value] of [['burst', burst], ['max_inflight', maxInflight]] as const) {
    if (value !== undefined && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)) {
      throw new TenantConfigError(`${where}: '${key}': expected an integer >= 1, got ${JSON.stringify(value)}`);
    }
  }
  if (burst !== undefined && rate === undefined) {
    throw new TenantConfigError(`${where}: 'burst': expected together with 'rate' (the bucket refills at 'rate' per second), got 'burst' alone`);
  }
  const out: { rate?: number; burst?: number; maxInflight?: number } = {};
  if (rate !== undefined) {
    out.rate = rate as number;
    out.burst = burst !== undefined ? (burst as number) : Math.max(1, Math.ceil(rate as number));
  }
  if (maxInflight !== undefined) out.maxInflight = maxInflight as number;
  return out;
}

/** Merges file and flag tenants; a name given twice is an error rather than a silent override. */
export function mergeTenants(...sources: TenantQuota[][]): TenantQuota[] {
  const byName = new Map<string, TenantQuota>();
  for (const tenant of sources.flat()) {
    if (byName.has(tenant.name)) throw new TenantConfigError(`tenant '${tenant.name}' is configured more than once`);
    byName.set(tenant.name, tenant);
  }
  return [...byName.values()];
}
