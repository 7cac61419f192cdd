/**
 * The validated routes file as typed, frozen data (routes-file.ts builds it).
 * Field names are the file's, in camelCase; durations are milliseconds here
 * (seconds in the file). Nothing in this module has state or I/O.
 *
 * A route is a virtual model name that clients call. It names arms (each a
 * model and optional version with a weight), and optionally a header rule, a
 * sticky key, a shadow, a circuit breaker, a fallback and a rollback watch.
 */
import type { WireDatatype } from '../tensor/wire-types.js';

export interface ArmConfig {
  /** The arm's name: a metric label and the `hotpath_arm` response parameter. */
  readonly name: string;
  readonly model: string;
  /** Undefined: the model's version policy picks (as for a plain request without a version). */
  readonly version: number | undefined;
  /** Relative weight, >= 0. An arm with weight 0 is reached only through the header. */
  readonly weight: number;
}

export interface HeaderRule {
  /** Header (HTTP) or metadata (gRPC) name, lower-case. */
  readonly name: string;
  /** Lower-cased header value → arm name. Values are matched case-insensitively. */
  readonly arms: ReadonlyMap<string, string>;
}

export type StickyFallback = 'address' | 'random';

export interface ShadowConfig {
  readonly model: string;
  readonly version: number | undefined;
  /** Share of the route's requests (0..100) also sent to the shadow. */
  readonly percent: number;
}

export interface BreakerConfig {
  readonly windowMs: number;
  /** Fewer outcomes than this in the window never open the breaker. */
  readonly minRequests: number;
  /** Opens when errors / requests >= this. */
  readonly errorRate: number;
  /** An answer slower than this counts as slow; undefined disables the slow check. */
  readonly slowMs: number | undefined;
  /** Opens when slow / requests >= this (only with slowMs). */
  readonly slowRate: number;
  /** How long the breaker stays open before admitting probes. */
  readonly openMs: number;
  /** Probe requests admitted while half-open; all must succeed to close. */
  readonly probes: number;
}

export interface FallbackOutput {
  readonly name: string;
  readonly datatype: WireDatatype;
  /** A number for numeric types, a boolean (or 0/1) for BOOL, a string for BYTES. */
  readonly value: number | boolean | string;
}

export type FallbackConfig =
  | { readonly kind: 'model'; readonly model: string; readonly version: number | undefined }
  | { readonly kind: 'outputs'; readonly outputs: readonly FallbackOutput[] };

export interface RollbackConfig {
  readonly arm: string;
  readonly windowMs: number;
  readonly minRequests: number;
  /** Rolls back when errors / requests >= this; undefined disables the error check. */
  readonly errorRate: number | undefined;
  /** Undefined disables the slow check. */
  readonly slowMs: number | undefined;
  readonly slowRate: number;
}

export interface RouteConfig {
  readonly name: string;
  /** In file order. */
  readonly arms: readonly ArmConfig[];
  readonly header: HeaderRule | undefined;
  /** Header / metadata name (lower-case) whose value is the sticky key. */
  readonly stickyKey: string | undefined;
  /** What to hash when the request has no sticky key; 'random' is the default. */
  readonly stickyFallback: StickyFallback;
  readonly shadow: ShadowConfig | undefined;
  readonly breaker: BreakerConfig | undefined;
  readonly fallback: FallbackConfig | undefined;
  readonly rollback: RollbackConfig | undefined;
  /**
   * The arm the route answers for (ModelMetadata, the reference signature) and
   * where a header mapped to a rolled-back arm goes: see `stableArmName`.
   */
  readonly stableArm: string;
}

export interface RoutesConfig {
  /** In file order. */
  readonly routes: ReadonlyMap<string, RouteConfig>;
}

/**
 * Defaults for optional fields, in the file's units. The JSON Schema's
 * `default` annotations are generated from this table (routes-schema.ts), so
 * the documentation cannot drift from what the code applies.
 */
export const ROUTE_DEFAULTS = {
  sticky_fallback: 'random',
  breaker: { window_s: 30, min_requests: 20, error_rate: 0.5, slow_rate: 0.5, open_s: 10, probes: 3 },
  rollback: { window_s: 60, min_requests: 20, slow_rate: 0.2 },
} as const;

/**
 * The stable arm: the arm named `stable` when there is one and it is not
 * excluded (rolled back); otherwise the non-excluded arm with the highest
 * weight, the first in file order on a tie. Undefined only when every arm is
 * excluded (validation prevents that: a rollback must leave another arm).
 */
export function stableArmName(
  arms: readonly Pick<ArmConfig, 'name' | 'weight'>[],
  excluded: (name: string) => boolean = () => false,
): string | undefined {
  const candidates = arms.filter((arm) => !excluded(arm.name));
  if (candidates.some((arm) => arm.name === 'stable')) return 'stable';
  let best: Pick<ArmConfig, 'name' | 'weight'> | undefined;
  for (const arm of candidates) if (best === undefined || arm.weight > best.weight) best = arm;
  return best?.name;
}

/**
 * The shape a default (fallback) output is answered with, for a request of
 * `batchSize` rows: the route output's shape with its leading -1 (the batch
 * dimension) set to `batchSize` and any other -1 set to 1.
 */
export function fallbackOutputShape(routeShape: readonly number[], batchSize: number): number[] {
  return routeShape.map((dim, i) => (dim >= 0 ? dim : i === 0 ? batchSize : 1));
}
