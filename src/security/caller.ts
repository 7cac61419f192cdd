/**
 * Who is calling, and what the call may see: the admission every call of
 * either door goes through before its handler runs (`CallGate.admit`).
 *
 * 1. Restricted groups (restricted-api.ts): a call of a restricted group
 *    without its header's value is refused as Triton refuses it.
 * 2. API keys (api-keys.ts), with `--require-api-key`: every call but the
 *    probes (ServerLive, ServerReady, grpc.health.v1, /v2/health/*) must
 *    carry `authorization: Bearer <key>`; the key decides the caller's
 *    tenant. The tenant named by `--admin-tenant` is the admin: it sees and
 *    manages every tenant's models, and only it may load and unload.
 *
 * A caller sees the models of its own tenant; a model of another tenant is
 * answered exactly as a model that does not exist (the registry's
 * `visible` filter). Without `--require-api-key` every caller is OPEN: it
 * sees everything and may load and unload, as before keys existed.
 */
import type { Logger } from 'pino';
import { classifyError, ServingError } from '../common/serving-error.js';
import { AUTHORIZATION_HEADER, ApiKeyRing } from './api-keys.js';
import { groupOf, RestrictedApis, type RpcName } from './restricted-api.js';
import type { TenantKey } from '../tenancy/tenant-config.js';

export interface Caller {
  /** The tenant of the caller's key; undefined without keys (OPEN) or on a probe that needs none. */
  readonly tenant: string | undefined;
  /** Sees and manages every tenant's models: keys not required, or the admin tenant's key. */
  readonly admin: boolean;
}

/** Keys not required: everything visible, load and unload allowed (hotpath without --require-api-key). */
export const OPEN_CALLER: Caller = Object.freeze({ tenant: undefined, admin: true });

/** A probe without a key, under --require-api-key: sees no model. */
export const ANONYMOUS_CALLER: Caller = Object.freeze({ tenant: undefined, admin: false });

/** Reads one request header (lower-case name) from either door; undefined when absent. */
export type HeaderLookup = (name: string) => string | undefined;

/** Calls that stay open without a key, for probes and load balancers. */
const KEY_EXEMPT: ReadonlySet<RpcName> = new Set<RpcName>([
  'ServerLive',
  'ServerReady',
  'HealthCheck',
  'HealthWatch',
  'HealthList',
  'Healthz',
]);

export interface CallGateOptions {
  /** The door's restricted groups (its own flag: --grpc-restricted-protocol or --http-restricted-api). */
  readonly restricted: RestrictedApis;
  /** With --require-api-key: the tenants' keys; undefined: keys are not required. */
  readonly keys?: ApiKeyRing | undefined;
  /** --admin-tenant: the tenant whose keys see everything and may load and unload. */
  readonly adminTenant?: string | undefined;
}

/** One door's admission: restricted groups, then API keys. */
export class CallGate {
  constructor(private readonly options: CallGateOptions) {}

  /** A gate that admits everyone as OPEN (embedding, tests of other things). */
  static open(door: 'grpc' | 'http'): CallGate {
    return new CallGate({ restricted: new RestrictedApis(door, []) });
  }

  get requiresKeys(): boolean {
    return this.options.keys !== undefined;
  }

  /** The groups this door restricts (for the start-up log). */
  get restrictedGroups(): string[] {
    return this.options.restricted.restrictedGroups;
  }

  /**
   * Admits a call or throws: 'restricted' (the group's header is missing or
   * wrong), then 'unauthenticated' (no key, or an unknown one, where keys
   * are required). Returns who is calling.
   */
  admit(rpc: RpcName, header: HeaderLookup): Caller {
    this.options.restricted.check(groupOf(rpc), header);
    const keys = this.options.keys;
    if (keys === undefined) return OPEN_CALLER;
    if (KEY_EXEMPT.has(rpc)) return this.optionalCaller(keys, header);
    return this.callerOf(keys.tenantOf(header(AUTHORIZATION_HEADER)));
  }

  /** For a probe: the key's caller when it carries a valid one, ANONYMOUS otherwise (never refused for the key). */
  private optionalCaller(keys: ApiKeyRing, header: HeaderLookup): Caller {
    const authorization = header(AUTHORIZATION_HEADER);
    if (authorization === undefined) return ANONYMOUS_CALLER;
    try {
      return this.callerOf(keys.tenantOf(authorization));
    } catch {
      return ANONYMOUS_CALLER;
    }
  }

  private callerOf(tenant: string): Caller {
    return { tenant, admin: this.options.adminTenant !== undefined && tenant === this.options.adminTenant };
  }
}

/** An admin's filter: one function for every call (no closure per request). */
const SEES_EVERY_TENANT = (): boolean => true;

/** Which tenants' models a caller sees: the registry's filter (a model whose tenant is unknown: the admin only). */
export function visibleTo(caller: Caller): (tenant: string | undefined) => boolean {
  if (caller.admin) return SEES_EVERY_TENANT;
  const own = caller.tenant;
  return (tenant) => own !== undefined && tenant === own;
}

/** Load and unload: only an admin caller (OPEN without keys); PERMISSION_DENIED otherwise. */
export function requireAdmin(caller: Caller, operation: string): void {
  if (caller.admin) return;
  throw new ServingError(
    'permission_denied',
    `${operation} needs an API key of the admin tenant (--admin-tenant)` +
      (caller.tenant !== undefined ? `; this key belongs to tenant '${caller.tenant}'` : ''),
  );
}

/**
 * A failure as a caller scoped to one tenant may read it. A memory refusal
 * (RESOURCE_EXHAUSTED) names the caller's own tenant and usage; when the
 * server's memory is full, the ledger's message also lists who holds it
 * ("held by ..."), other tenants and their models included: that list is
 * the operator's (the log keeps it), not the caller's.
 */
export function scopeFailure(err: unknown, caller: Caller): unknown {
  if (caller.admin) return err;
  const { kind, message } = classifyError(err);
  if (kind !== 'over_quota') return err;
  const heldBy = message.search(/[;,]?\s*held by /);
  if (heldBy < 0) return err;
  return new ServingError(kind, `${message.slice(0, heldBy)}; other tenants' holdings are not shown`);
}

/** The flags that configure admission (`hotpath serve`'s, camelCased); all optional, all off by default. */
export interface AccessSettings {
  /** `--require-api-key`: every call but the probes carries a tenant's key. */
  readonly requireApiKey?: boolean;
  /** The tenants' key digests (the tenants file's `keys`). */
  readonly apiKeys?: readonly TenantKey[];
  /** `--admin-tenant`: the tenant whose keys see every model and may load and unload. */
  readonly adminTenant?: string | undefined;
  /** `--grpc-restricted-protocol` values, Triton's `<group>[,<group>...]:<key>=<value>`. */
  readonly grpcRestrictedProtocol?: readonly string[];
  /** `--http-restricted-api` values, the same syntax. */
  readonly httpRestrictedApi?: readonly string[];
}

/** Thrown for settings that cannot work together; the message names the flags. */
export class AccessSettingsError extends Error {}

/**
 * Each door's gate from the settings. Throws AccessSettingsError for keys
 * required with no key configured, or an admin tenant that has no key (or
 * without keys required), and RestrictedApiSpecError for a malformed
 * restriction.
 */
export function doorGates(settings: AccessSettings): { grpc: CallGate; http: CallGate } {
  const apiKeys = settings.apiKeys ?? [];
  const admin = settings.adminTenant;
  let keys: ApiKeyRing | undefined;
  if (settings.requireApiKey === true) {
    if (apiKeys.length === 0) {
      throw new AccessSettingsError(
        `--require-api-key: expected tenants with "keys" in --tenants-file (e.g. {"tenants": {"ads": {"keys": ["sha256:<hex>"]}}}), got no key`,
      );
    }
    keys = new ApiKeyRing(apiKeys);
    if (admin !== undefined && !keys.tenants().has(admin)) {
      throw new AccessSettingsError(
        `--admin-tenant ${admin}: expected a tenant with "keys" in --tenants-file, got one without; tenants with keys: ${[...keys.tenants()].join(', ')}`,
      );
    }
  } else if (admin !== undefined) {
    throw new AccessSettingsError(`--admin-tenant ${admin}: expected together with --require-api-key (without keys every caller may load and unload)`);
  }
  return {
    grpc: new CallGate({ restricted: RestrictedApis.parse('grpc', settings.grpcRestrictedProtocol ?? []), keys, adminTenant: admin }),
    http: new CallGate({ restricted: RestrictedApis.parse('http', settings.httpRestrictedApi ?? []), keys, adminTenant: admin }),
  };
}

/**
 * Logs, once at start-up, how calls are admitted: whether keys are required,
 * the admin tenant, the tenants with keys, and each door's restricted groups
 * (names only, never a value or a key). Warns when the tenants file lists
 * keys that nothing checks.
 */
export function logAccess(log: Logger, settings: AccessSettings, gates: { grpc: CallGate; http: CallGate }): void {
  const tenantsWithKeys = [...new Set((settings.apiKeys ?? []).map((key) => key.tenant))];
  log.info(
    {
      require_api_key: settings.requireApiKey === true,
      admin_tenant: settings.adminTenant,
      tenants_with_keys: tenantsWithKeys,
      grpc_restricted: gates.grpc.restrictedGroups,
      http_restricted: gates.http.restrictedGroups,
    },
    'access control',
  );
  if (settings.requireApiKey !== true && tenantsWithKeys.length > 0) {
    log.warn(
      { tenants_with_keys: tenantsWithKeys },
      'the tenants file lists API keys but --require-api-key is off: keys are not checked and every caller sees every model',
    );
  }
}
