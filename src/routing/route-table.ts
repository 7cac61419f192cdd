/**
 * The routes as the request path uses them: built once from a validated
 * RoutesConfig, holding each route's arms, breakers and rollback watch.
 *
 *   const decision = table.get(name)?.choose(request);   // which arm, or a fallback
 *   ... score decision.model / decision.version ...
 *   route.record(decision, 'ok' | 'error' | 'abandoned', latencyMs);   // always, in a finally
 *
 * A reload builds a new table and swaps the reference (routes-reloader.ts); a
 * request in flight records into the table that chose for it, so a swap drops
 * nothing. Breaker and rollback state belong to a table, so a changed routes
 * file starts them afresh (the issue: rolled back until the file changes).
 *
 * Single-threaded (the main thread). Clock and RNG are injected.
 */
import { performance } from 'node:perf_hooks';
import { chooseArm, weightedArm, type ChoiceReason, type ChoicePolicy, type RequestView, type WeightedArm } from './arm-choice.js';
import { BREAKER_STATE_VALUE, CircuitBreaker, type BreakerPermit, type BreakerStateName, type BreakerTransition, type Outcome } from './breaker.js';
import { checkRouteCompatibility, type ModelSignature, type SignatureLookup } from './route-compatibility.js';
import { RollbackWatch, type RollbackTrigger } from './rollback.js';
import { stableArmName, type FallbackConfig, type RouteConfig, type RoutesConfig, type ShadowConfig } from './routes-config.js';
import { parseRoutesText, RoutesFileError } from './routes-file.js';

/** A state change worth a log line and a metric. */
export type RoutingEvent =
  | ({ readonly type: 'breaker'; readonly route: string; readonly arm: string } & BreakerTransition)
  | ({ readonly type: 'rollback'; readonly route: string; readonly stableArm: string } & RollbackTrigger);

export interface RouteTableOptions {
  /** Milliseconds, monotonic; performance.now by default. */
  readonly now?: () => number;
  /** [0, 1); Math.random by default. */
  readonly random?: () => number;
  /** Breaker transitions and rollbacks, synchronously; it must not throw. */
  readonly onEvent?: (event: RoutingEvent) => void;
  /** Route signatures from the compatibility check (ModelMetadata for a route answers with them). */
  readonly signatures?: ReadonlyMap<string, ModelSignature>;
}

interface DecisionBase {
  readonly route: string;
  /** The chosen arm: the `hotpath_arm` response parameter and the metric label. */
  readonly arm: string;
  readonly reason: ChoiceReason;
}

/** Score with this arm's model. */
export interface PrimaryDecision extends DecisionBase {
  readonly kind: 'primary';
  readonly model: string;
  readonly version: number | undefined;
  /** Set when this request is also to be sent to the shadow. */
  readonly shadow: ShadowConfig | undefined;
  /** The breaker's permit (record() returns it); undefined without a breaker. */
  readonly permit: BreakerPermit | undefined;
}

/** The arm's breaker is open: answer from the fallback, with `hotpath_degraded: true`. */
export interface FallbackDecision extends DecisionBase {
  readonly kind: 'fallback';
  readonly fallback: FallbackConfig;
  readonly degraded: true;
}

/** The arm's breaker is open and there is no fallback: answer UNAVAILABLE with `message`. */
export interface UnavailableDecision extends DecisionBase {
  readonly kind: 'unavailable';
  readonly message: string;
}

export type Decision = PrimaryDecision | FallbackDecision | UnavailableDecision;

/** One route in /healthz (snake_case, JSON-ready). */
export interface RouteSnapshot {
  readonly arms: Record<
    string,
    {
      readonly model: string;
      readonly version?: number;
      readonly weight: number;
      readonly configured_weight: number;
      readonly rolled_back: boolean;
      readonly breaker?: { readonly state: BreakerStateName; readonly value: 0 | 1 | 2; readonly retry_in_ms?: number };
    }
  >;
  readonly stable_arm: string;
  readonly rolled_back: readonly string[];
}

export interface BreakerStateRow {
  readonly route: string;
  readonly arm: string;
  readonly value: 0 | 1 | 2;
}

export class Route {
  readonly name: string;
  private arms: readonly WeightedArm[];
  private policy: ChoicePolicy;
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly rollback: RollbackWatch | undefined;

  constructor(
    readonly config: RouteConfig,
    now: () => number,
    private readonly random: () => number,
    onEvent: ((event: RoutingEvent) => void) | undefined,
    /** The route's signature, when the compatibility check ran. */
    readonly signature: ModelSignature | undefined,
  ) {
    this.name = config.name;
    this.arms = Object.freeze(config.arms.map((arm) => weightedArm(arm.name, arm.weight)));
    this.policy = this.makePolicy();
    if (config.breaker !== undefined) {
      for (const arm of config.arms) {
        this.breakers.set(
          arm.name,
          new CircuitBreaker(config.breaker, {
            now,
            onTransition: (t) => onEvent?.({ type: 'breaker', route: this.name, arm: arm.name, ...t }),
          }),
        );
      }
    }
    if (config.rollback !== undefined) {
      this.rollback = new RollbackWatch(config.rollback, {
        now,
        onRollback: (trigger) => {
          this.applyRollback(trigger.arm);
          onEvent?.({ type: 'rollback', route: this.name, stableArm: this.policy.stableArm, ...trigger });
        },
      });
    }
  }

  /** Chooses the arm for a request, or the fallback when its breaker refuses. */
  choose(request: RequestView): Decision {
    const choice = chooseArm(this.policy, this.arms, request, this.random);
    // Validation keeps a positive weight, so -1 cannot happen; the stable arm is the safe answer if it did.
    const armName = choice.index >= 0 ? this.arms[choice.index]!.name : this.policy.stableArm;
    const arm = this.config.arms.find((a) => a.name === armName)!;
    const breaker = this.breakers.get(armName);
    const permit = breaker?.tryAcquire();
    if (breaker !== undefined && permit === undefined) {
      const base = { route: this.name, arm: armName, reason: choice.reason };
      if (this.config.fallback !== undefined) return { ...base, kind: 'fallback', fallback: this.config.fallback, degraded: true };
      const retry = breaker.snapshot().retryInMs;
      return {
        ...base,
        kind: 'unavailable',
        message:
          `route '${this.name}' arm '${armName}': circuit breaker ${breaker.state().replace('_', '-')}` +
          `${retry === undefined ? '' : ` (probes in ${Math.ceil(retry / 1000)}s)`}, and the route has no fallback`,
      };
    }
    const shadow = this.config.shadow;
    return {
      kind: 'primary',
      route: this.name,
      arm: armName,
      reason: choice.reason,
      model: arm.model,
      version: arm.version,
      shadow: shadow !== undefined && shadow.percent > 0 && this.random() * 100 < shadow.percent ? shadow : undefined,
      permit,
    };
  }

  /**
   * Records how a decided request ended: feeds the arm's breaker and, for the
   * rollback arm, the rollback watch. Call it once per decision; fallback and
   * unavailable decisions are ignored.
   */
  record(decision: Decision, outcome: Outcome, latencyMs: number): void {
    if (decision.kind !== 'primary') return;
    if (decision.permit !== undefined) this.breakers.get(decision.arm)?.record(decision.permit, outcome, latencyMs);
    if (this.rollback !== undefined && decision.arm === this.rollback.config.arm) this.rollback.record(outcome, latencyMs);
  }

  /** Current weights (0 for a rolled-back arm). */
  currentArms(): readonly WeightedArm[] {
    return this.arms;
  }

  get stableArm(): string {
    return this.policy.stableArm;
  }

  rolledBackArms(): string[] {
    return this.arms.filter((arm) => arm.rolledBack).map((arm) => arm.name);
  }

  breakerStates(): BreakerStateRow[] {
    return [...this.breakers].map(([arm, breaker]) => ({ route: this.name, arm, value: BREAKER_STATE_VALUE[breaker.state()] }));
  }

  snapshot(): RouteSnapshot {
    const arms: Record<string, RouteSnapshot['arms'][string]> = {};
    for (const [i, config] of this.config.arms.entries()) {
      const current = this.arms[i]!;
      const breaker = this.breakers.get(config.name)?.snapshot();
      arms[config.name] = {
        model: config.model,
        ...(config.version !== undefined ? { version: config.version } : {}),
        weight: current.weight,
        configured_weight: config.weight,
        rolled_back: current.rolledBack,
        ...(breaker !== undefined
          ? { breaker: { state: breaker.state, value: breaker.value, ...(breaker.retryInMs !== undefined ? { retry_in_ms: Math.ceil(breaker.retryInMs) } : {}) } }
          : {}),
      };
    }
    return { arms, stable_arm: this.policy.stableArm, rolled_back: this.rolledBackArms() };
  }

  private applyRollback(armName: string): void {
    this.arms = Object.freeze(this.arms.map((arm) => (arm.name === armName ? weightedArm(arm.name, arm.weight, true) : arm)));
    this.policy = this.makePolicy();
  }

  private makePolicy(): ChoicePolicy {
    const rolledBack = new Set(this.arms.filter((arm) => arm.rolledBack).map((arm) => arm.name));
    return Object.freeze({
      header: this.config.header,
      stickyKey: this.config.stickyKey,
      stickyFallback: this.config.stickyFallback,
      stableArm: stableArmName(this.config.arms, (name) => rolledBack.has(name)) ?? this.config.stableArm,
    });
  }
}

export class RouteTable {
  private readonly routes = new Map<string, Route>();

  constructor(
    readonly config: RoutesConfig,
    options: RouteTableOptions = {},
  ) {
    const now = options.now ?? (() => performance.now());
    const random = options.random ?? Math.random;
    for (const route of config.routes.values()) {
      this.routes.set(route.name, new Route(route, now, random, options.onEvent, options.signatures?.get(route.name)));
    }
  }

  /** The route clients call by `name`; undefined when `name` is not a route. */
  get(name: string): Route | undefined {
    return this.routes.get(name);
  }

  names(): string[] {
    return [...this.routes.keys()];
  }

  /** Every breaker's state, for the `hotpath_breaker_state{route,arm}` gauge at scrape time. */
  breakerStates(): BreakerStateRow[] {
    return [...this.routes.values()].flatMap((route) => route.breakerStates());
  }

  /** JSON-ready, for /healthz. */
  snapshot(): Record<string, RouteSnapshot> {
    return Object.fromEntries([...this.routes].map(([name, route]) => [name, route.snapshot()]));
  }
}

/**
 * Text → RouteTable, all checks included: parse, validate, and (with a
 * lookup) check every route's models against the registry. Throws
 * RoutesFileError naming every problem; the routes reloader keeps the
 * previous table when it does.
 */
export function buildRouteTable(
  text: string,
  source: string,
  signatureOf: SignatureLookup | undefined,
  options: Omit<RouteTableOptions, 'signatures'> = {},
): RouteTable {
  const config = parseRoutesText(text, source);
  if (signatureOf === undefined) return new RouteTable(config, options);
  const { signatures, problems } = checkRouteCompatibility(config, signatureOf);
  if (problems.length > 0) throw new RoutesFileError(source, problems);
  return new RouteTable(config, { ...options, signatures });
}
