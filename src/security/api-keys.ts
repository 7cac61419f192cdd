/**
 * Tenant API keys: which tenant an `authorization: Bearer <key>` header
 * belongs to. The tenants file stores only SHA-256 digests of the keys
 * (`"keys": ["sha256:<hex>"]`, tenancy/tenant-config.ts); a presented key is
 * hashed and compared with every stored digest in constant time
 * (crypto.timingSafeEqual over equal-length digests, no early exit), so
 * neither the answer's content nor its timing tells how much of a key was
 * right, or which tenant's key came closest.
 *
 * A key never appears in an error message or a log line: refusals say what
 * was wrong with the header (missing, not a Bearer token, unknown key) and
 * at most how long it was.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ServingError } from '../common/serving-error.js';
import type { TenantKey } from '../tenancy/tenant-config.js';

export const AUTHORIZATION_HEADER = 'authorization';

/** The longest header value looked at; anything longer is refused without hashing it. */
const MAX_AUTHORIZATION_CHARS = 4096;

export class ApiKeyRing {
  private readonly keys: readonly TenantKey[];

  constructor(keys: readonly TenantKey[]) {
    for (const key of keys) {
      if (key.sha256.length !== 32) throw new Error(`API key of tenant '${key.tenant}': expected a 32-byte SHA-256 digest`);
    }
    this.keys = [...keys];
  }

  get size(): number {
    return this.keys.length;
  }

  /** Tenants that have at least one key. */
  tenants(): Set<string> {
    return new Set(this.keys.map((key) => key.tenant));
  }

  /**
   * The tenant of the key in an `authorization` header value; throws
   * UNAUTHENTICATED for a missing header, one that is not `Bearer <key>`, or
   * a key no tenant has.
   */
  tenantOf(authorization: string | undefined): string {
    if (authorization === undefined || authorization === '') {
      throw unauthenticated(`missing API key: send the header '${AUTHORIZATION_HEADER}: Bearer <key>'`);
    }
    const key = bearerToken(authorization);
    const tenant = this.match(key);
    if (tenant === undefined) throw unauthenticated(`unknown API key (${describeLength(key)}): no tenant has this key`);
    return tenant;
  }

  /** The tenant whose digest equals the key's, checking every stored digest whatever matched. */
  private match(key: string): string | undefined {
    const digest = createHash('sha256').update(key, 'utf8').digest();
    let found: string | undefined;
    for (const stored of this.keys) {
      // No break: the time taken does not depend on where (or whether) the key matched.
      if (timingSafeEqual(digest, stored.sha256) && found === undefined) found = stored.tenant;
    }
    return found;
  }
}

/** The `<key>` of `Bearer <key>` (scheme case-insensitive, as RFC 6750 allows). */
function bearerToken(authorization: string): string {
  if (authorization.length > MAX_AUTHORIZATION_CHARS) {
    throw unauthenticated(`${AUTHORIZATION_HEADER} header: expected 'Bearer <key>', got ${describeLength(authorization)} (at most ${MAX_AUTHORIZATION_CHARS})`);
  }
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (match === null) {
    const scheme = /^\s*([A-Za-z][A-Za-z0-9_-]{0,31})\s/.exec(authorization)?.[1];
    const what = scheme === undefined || scheme.toLowerCase() === 'bearer'
      ? `${describeLength(authorization)} (a key is one token, without spaces)`
      : `the '${scheme}' scheme`;
    throw unauthenticated(`${AUTHORIZATION_HEADER} header: expected 'Bearer <key>', got ${what}`);
  }
  return match[1]!;
}

/** Says how long a secret was without showing any of it. */
function describeLength(value: string): string {
  return `a value of ${value.length} character${value.length === 1 ? '' : 's'}`;
}

function unauthenticated(message: string): ServingError {
  return new ServingError('unauthenticated', message);
}

/** `sha256:<hex>` of a raw key, the form the tenants file stores (`printf %s "$KEY" | sha256sum`). */
export function keyHash(key: string): string {
  return `sha256:${createHash('sha256').update(key, 'utf8').digest('hex')}`;
}
