// The raw shape of the arena* exports of hotpath_native.node, exactly as
// native/napi/arena_binding.cc registers them. Only src/native/arena.ts calls
// these. Kept apart from binding-types.ts so the loader's required exports
// (and its tests) are unchanged; arena.ts checks these exist before use.
import type { NativeResult, NativeStatusCode } from './native-error.js';

export type RawBackendKind = 'auto' | 'cuda' | 'pinned' | 'host' | 'simulated';
export type RawOwnerKind = 'tenant' | 'model' | 'worker-generation' | 'batch' | 'other';

export interface RawArenaConfig {
  readonly backend: RawBackendKind;
  readonly capacityBytes: number;
  readonly segmentBytes: number;
  readonly maxSplitBytes: number;
  readonly smallMaxBytes: number;
  readonly deviceOrdinal: number;
}

export interface RawArenaInfo {
  readonly name: string;
  readonly backend: Exclude<RawBackendKind, 'auto'>;
  readonly description: string;
  readonly fallbackReason: string;
  readonly hostAccessible: boolean;
  readonly totalBytes: number;
  readonly freeBytes: number;
}

export interface RawTenantStats {
  readonly id: number;
  readonly name: string;
  readonly quota: number;
  readonly requested: number;
  readonly allocated: number;
  readonly reserved: number;
  readonly used: number;
  readonly peak: number;
  readonly blocks: number;
  readonly reservations: number;
  readonly evictions: number;
  readonly quotaFailures: number;
}

export interface RawArenaStats {
  readonly capacity: number;
  readonly requested: number;
  readonly allocated: number;
  readonly backendReserved: number;
  readonly reservations: number;
  readonly cached: number;
  readonly peakAllocated: number;
  readonly peakBackendReserved: number;
  readonly totalFree: number;
  readonly largestFree: number;
  readonly externalFragmentation: number;
  readonly cacheOverhead: number;
  readonly internalFragmentation: number;
  readonly segments: number;
  readonly blocks: number;
  readonly reservationCount: number;
  readonly owners: number;
  readonly backendAllocs: number;
  readonly backendFrees: number;
  readonly backendFailures: number;
  readonly evictions: number;
  readonly evictionRefusals: number;
  readonly evictionAgeTotalNs: number;
  readonly evictionAgeMaxNs: number;
  readonly quotaFailures: number;
  readonly oomFailures: number;
  readonly tenants: readonly RawTenantStats[];
}

export interface RawReleaseSummary {
  readonly owners: number;
  readonly blocks: number;
  readonly reservations: number;
  readonly bytes: number;
}

export interface RawEviction {
  readonly handle: number;
  readonly kind: 'block' | 'reservation';
  readonly tenant: number;
  readonly owner: number;
  readonly bytes: number;
  readonly idleMs: number;
}

export interface RawHolder {
  readonly kind: string;
  readonly name: string;
  readonly allocated: number;
  readonly reserved: number;
}

export type RawFailureDetail =
  | { readonly kind: 'quota'; readonly tenant: string; readonly requested: number; readonly used: number; readonly quota: number }
  | { readonly kind: 'oom'; readonly tenant: string; readonly requested: number; readonly holders: readonly RawHolder[] };

/** A failed alloc/reserve may carry a typed detail next to code and message. */
export type ArenaResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly code: NativeStatusCode; readonly message: string; readonly detail?: RawFailureDetail };

export interface RawBlock {
  readonly handle: number;
  readonly size: number;
  readonly requested: number;
}

/** `arena` arguments are this environment's attachment ids. */
export interface ArenaBinding {
  arenaCreate(name: string, config: RawArenaConfig): NativeResult<number>;
  arenaAttach(name: string): NativeResult<number>;
  arenaClose(arena: number): NativeResult<null>;
  arenaInfo(arena: number): NativeResult<RawArenaInfo>;
  arenaCreateTenant(arena: number, name: string, quotaBytes: number): NativeResult<number>;
  arenaFindTenant(arena: number, name: string): NativeResult<number>;
  arenaSetTenantQuota(arena: number, tenant: number, quotaBytes: number): NativeResult<null>;
  arenaCreateOwner(arena: number, kind: RawOwnerKind, label: string, parent: number): NativeResult<number>;
  arenaDestroyOwner(arena: number, owner: number): NativeResult<RawReleaseSummary>;
  arenaOwnerUsage(arena: number, owner: number): NativeResult<RawReleaseSummary>;
  arenaAlloc(
    arena: number,
    owner: number,
    bytes: number,
    tenant: number,
    onEvict: ((eviction: RawEviction) => boolean) | undefined,
  ): ArenaResult<RawBlock>;
  arenaReserve(
    arena: number,
    owner: number,
    bytes: number,
    tenant: number,
    onEvict: ((eviction: RawEviction) => boolean) | undefined,
  ): ArenaResult<number>;
  arenaRetain(arena: number, handle: number): NativeResult<number>;
  arenaRelease(arena: number, handle: number): NativeResult<number>;
  arenaPin(arena: number, handle: number): NativeResult<null>;
  arenaUnpin(arena: number, handle: number): NativeResult<null>;
  arenaTouch(arena: number, handle: number): NativeResult<null>;
  arenaLookup(arena: number, handle: number): NativeResult<RawBlock & { readonly refcount: number }>;
  arenaView(arena: number, handle: number): NativeResult<ArrayBuffer>;
  arenaDetachView(view: ArrayBuffer): boolean;
  arenaStats(arena: number): NativeResult<RawArenaStats>;
  arenaReleaseCached(arena: number): NativeResult<number>;
}

export const arenaExports: readonly (keyof ArenaBinding)[] = [
  'arenaCreate',
  'arenaAttach',
  'arenaClose',
  'arenaInfo',
  'arenaCreateTenant',
  'arenaFindTenant',
  'arenaSetTenantQuota',
  'arenaCreateOwner',
  'arenaDestroyOwner',
  'arenaOwnerUsage',
  'arenaAlloc',
  'arenaReserve',
  'arenaRetain',
  'arenaRelease',
  'arenaPin',
  'arenaUnpin',
  'arenaTouch',
  'arenaLookup',
  'arenaView',
  'arenaDetachView',
  'arenaStats',
  'arenaReleaseCached',
];
