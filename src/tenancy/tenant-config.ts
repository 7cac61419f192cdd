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
 * "device_quota": "4GiB"}}}`. Quotas are byte sizes with optional binary or
 * decimal suffixes: `512MiB`, `2Gi`, `100MB`, `4096`. Every model belongs to
 * a tenant (config parameter `tenant`, default `default`); a tenant not
 * configured has no quota of its own.
 */
import { readFileSync } from 'node:fs';

export const DEFAULT_TENANT = 'default';

export interface TenantQuota {
  readonly name: string;
  readonly quotaBytes: number;
}

/** Thrown for malformed tenant specs; the message names the spec and what was expected. */
export class TenantConfigError extends Error {}

/**
 * Suffixes, case-insensitive. Kubernetes' binary quantities (`512Mi`, `2Gi`)
 * are the IEC ones without the B. A bare letter (`512m`, `2G`) is binary too,
 * as in `java -Xmx` and `docker -m`, and as it always was here; Kubernetes
 * reads `2G` as 2·10⁹, so decimal sizes are written `2GB`.
 */
const UNITS: Readonly<Record<string, number>> = {
  '': 1, b: 1,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
  ki: 2 ** 10, mi: 2 ** 20, gi: 2 ** 30, ti: 2 ** 40,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40,
};

/** Parses `512MiB`, `512Mi`, `1.5GiB`, `100MB`, `4096` into bytes (an integer). */
export function parseByteSize(text: string, what: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = match?.[2]?.toLowerCase() ?? '';
  const factor = UNITS[unit];
  if (!match || factor === undefined) {
    throw new TenantConfigError(
      `${what}: expected a byte size such as 4096, 512MiB, 2GiB or 100MB, got '${text}'`,
    );
  }
  const bytes = Math.floor(Number(match[1]) * factor);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new TenantConfigError(`${what}: expected a positive size, got '${text}'`);
  }
  return bytes;
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

/** Both ledgers' quotas from one tenants file. */
export interface TenantsFile {
  readonly host: TenantQuota[];
  readonly device: TenantQuota[];
}

/**
 * Reads a tenants file: `{"tenants": {"ads": "512MiB", "fraud": {"quota":
 * 1073741824, "device_quota": "2GiB"}}}`.
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
  const result: TenantsFile = { host: [], device: [] };
  const isSize = (value: unknown): value is string | number => typeof value === 'string' || typeof value === 'number';
  for (const [name, entry] of Object.entries(tenants as Record<string, unknown>)) {
    const where = `--tenants-file ${file}: tenant '${name}'`;
    if (isSize(entry)) {
      result.host.push(parseTenantFlag(`${name}:${String(entry)}`));
      continue;
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) {
      throw new TenantConfigError(`${where}: expected a size or {"quota": SIZE, "device_quota": SIZE}, got ${JSON.stringify(entry)}`);
    }
    const fields = entry as Record<string, unknown>;
    const unknown = Object.keys(fields).filter((key) => key !== 'quota' && key !== 'device_quota');
    if (unknown.length > 0) {
      throw new TenantConfigError(`${where}: unknown field '${unknown[0]}'; expected 'quota' and/or 'device_quota'`);
    }
    for (const [key, list] of [['quota', result.host], ['device_quota', result.device]] as const) {
      const value = fields[key];
      if (value === undefined) continue;
      if (!isSize(value)) throw new TenantConfigError(`${where}: '${key}': expected a size string or number, got ${JSON.stringify(value)}`);
      list.push(parseTenantFlag(`${name}:${String(value)}`));
    }
  }
  return result;
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
