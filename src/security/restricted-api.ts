/**
 * Triton's restricted protocols and APIs: `--grpc-restricted-protocol` and
 * `--http-restricted-api`, each `<group>[,<group>...]:<key>=<value>` and
 * repeatable, put protocol groups behind a header that must carry a value.
 * As in Triton:
 *
 * - gRPC checks the metadata key `triton-grpc-protocol-<key>` and refuses a
 *   call without it UNAVAILABLE, "This protocol is restricted, expecting
 *   header 'triton-grpc-protocol-<key>'";
 * - HTTP checks the header `<key>` and refuses 403, "This API is restricted,
 *   expecting header '<key>'";
 * - a group may be named in one restriction only; groups not named are open.
 *
 * The groups, and the calls in each (Triton's): `health` (ServerLive,
 * ServerReady, ModelReady; on gRPC also grpc.health.v1), `metadata`,
 * `inference`, `shared-memory`, `model-config`, `model-repository`,
 * `statistics`, `trace`, `logging`.
 *
 * The expected value is a shared secret: it is compared in constant time and
 * never shown in a message or a log (a bad flag names the group or the part
 * that is wrong, not the value).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ServingError } from '../common/serving-error.js';

export const API_GROUPS = [
  'health',
  'metadata',
  'inference',
  'shared-memory',
  'model-config',
  'model-repository',
  'statistics',
  'trace',
  'logging',
] as const;

export type ApiGroup = (typeof API_GROUPS)[number];

/** Every call either door serves, by its gRPC method name (the REST endpoints run the same ones). */
const RPC_GROUPS = {
  ServerLive: 'health',
  ServerReady: 'health',
  ModelReady: 'health',
  ServerMetadata: 'metadata',
  ModelMetadata: 'metadata',
  ModelInfer: 'inference',
  ModelStreamInfer: 'inference',
  ModelConfig: 'model-config',
  ModelStatistics: 'statistics',
  RepositoryIndex: 'model-repository',
  RepositoryModelLoad: 'model-repository',
  RepositoryModelUnload: 'model-repository',
  SystemSharedMemoryStatus: 'shared-memory',
  SystemSharedMemoryRegister: 'shared-memory',
  SystemSharedMemoryUnregister: 'shared-memory',
  CudaSharedMemoryStatus: 'shared-memory',
  CudaSharedMemoryRegister: 'shared-memory',
  CudaSharedMemoryUnregister: 'shared-memory',
  TraceSetting: 'trace',
  LogSettings: 'logging',
  // grpc.health.v1.Health, Triton's "health" on gRPC; and hotpath's /healthz.
  HealthCheck: 'health',
  HealthWatch: 'health',
  HealthList: 'health',
  Healthz: 'health',
} as const satisfies Record<string, ApiGroup>;

/** A call name: a GRPCInferenceService method, a grpc.health.v1 method (Health*), or Healthz. */
export type RpcName = keyof typeof RPC_GROUPS;

export function isRpcName(name: string): name is RpcName {
  return Object.hasOwn(RPC_GROUPS, name);
}

export function groupOf(rpc: RpcName): ApiGroup {
  return RPC_GROUPS[rpc];
}

/** One parsed restriction: its groups, the header checked, and the digest of the value it must carry. */
export interface Restriction {
  readonly groups: readonly ApiGroup[];
  /** The header as the door checks it (gRPC: with the `triton-grpc-protocol-` prefix), lower-case. */
  readonly header: string;
  readonly valueSha256: Buffer;
}

export type Door = 'grpc' | 'http';

/** Triton's prefix of a gRPC restriction's metadata key. */
export const GRPC_RESTRICTED_PREFIX = 'triton-grpc-protocol-';

/** Thrown for a malformed flag value; the message names the flag and the part that is wrong, never the secret. */
export class RestrictedApiSpecError extends Error {}

/** The flag a door's restrictions come from. */
export function restrictedFlagOf(door: Door): string {
  return door === 'grpc' ? '--grpc-restricted-protocol' : '--http-restricted-api';
}

/** Parses one `<group>[,<group>...]:<key>=<value>` of a door's flag. */
export function parseRestriction(spec: string, door: Door): Restriction {
  const flag = restrictedFlagOf(door);
  const shape = `expected <group>[,<group>...]:<header-key>=<value> with groups among ${API_GROUPS.join(', ')}`;
  const colon = spec.indexOf(':');
  if (colon <= 0) throw new RestrictedApiSpecError(`${flag}: ${shape}; got no '<group>:' before the header`);
  const groupNames = spec.slice(0, colon).split(',').map((name) => name.trim());
  const groups: ApiGroup[] = [];
  for (const name of groupNames) {
    if (!(API_GROUPS as readonly string[]).includes(name)) {
      throw new RestrictedApiSpecError(`${flag}: unknown group '${name.slice(0, 64)}'; ${shape}`);
    }
    if (groups.includes(name as ApiGroup)) throw new RestrictedApiSpecError(`${flag}: group '${name}' is listed twice`);
    groups.push(name as ApiGroup);
  }
  const rest = spec.slice(colon + 1);
  const equals = rest.indexOf('=');
  const key = equals < 0 ? '' : rest.slice(0, equals).trim().toLowerCase();
  const value = equals < 0 ? '' : rest.slice(equals + 1);
  // An HTTP/2 and HTTP/1 header name: a token.
  if (!/^[a-z0-9!#$%&'*+.^_`|~-]+$/.test(key)) {
    throw new RestrictedApiSpecError(`${flag} ${groups.join(',')}: ${shape}; the header key is missing or not a header name`);
  }
  if (value === '') throw new RestrictedApiSpecError(`${flag} ${groups.join(',')}: ${shape}; the value after '${key}=' is empty`);
  return {
    groups,
    header: door === 'grpc' ? `${GRPC_RESTRICTED_PREFIX}${key}` : key,
    valueSha256: digest(value),
  };
}

/** A door's restrictions, with the check every call goes through. */
export class RestrictedApis {
  private readonly byGroup = new Map<ApiGroup, Restriction>();

  constructor(
    private readonly door: Door,
    restrictions: readonly Restriction[],
  ) {
    for (const restriction of restrictions) {
      for (const group of restriction.groups) {
        if (this.byGroup.has(group)) {
          // Triton: "a given protocol / API is not allowed to be included in multiple groups".
          throw new RestrictedApiSpecError(`${restrictedFlagOf(door)}: group '${group}' is restricted more than once; a group belongs to one restriction`);
        }
        this.byGroup.set(group, restriction);
      }
    }
  }

  /** Parses every value of the door's flag. */
  static parse(door: Door, specs: readonly string[]): RestrictedApis {
    return new RestrictedApis(door, specs.map((spec) => parseRestriction(spec, door)));
  }

  get restrictedGroups(): ApiGroup[] {
    return [...this.byGroup.keys()];
  }

  /** Throws the door's refusal (Triton's words) unless the group is open or the call carries its header's value. */
  check(group: ApiGroup, header: (name: string) => string | undefined): void {
    const restriction = this.byGroup.get(group);
    if (restriction === undefined) return;
    const given = header(restriction.header);
    if (given !== undefined && timingSafeEqual(digest(given), restriction.valueSha256)) return;
    throw this.door === 'grpc'
      ? new ServingError('restricted', `This protocol is restricted, expecting header '${restriction.header}'`)
      : new ServingError('restricted', `This API is restricted, expecting header '${restriction.header}'`);
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
