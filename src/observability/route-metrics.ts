/**
 * The metrics of routes (--routes): requests per route and arm, breaker
 * states, rollbacks, reloads and shadow traffic. Part of a server's
 * registry (ServerMetrics.routes); series appear once a routes file is loaded.
 *
 * States (breakers, rolled-back arms, the shadow queue) are read at scrape
 * time from the attached source. Counts are pushed where they happen: once
 * per routed request (a labelled counter's increment), and on the rarer
 * shadow, rollback and reload events. The histogram observes one value per
 * compared shadow answer.
 *
 * This module knows nothing of src/routing: the source hands it plain rows.
 * Main thread only.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { LABEL, METRIC, RELOAD_RESULTS, type ReloadResultName, type RouteResult } from './metric-names.js';

/** One route arm's state value. */
export interface RouteArmValue {
  readonly route: string;
  readonly arm: string;
  readonly value: number;
}

/** What the gauges read at scrape time. */
export interface RouteStateSource {
  /** Every breaker: 0 closed, 1 half-open, 2 open. */
  readonly breakers: () => readonly RouteArmValue[];
  /** Every arm of a route with a rollback watch: 1 rolled back, 0 not. */
  readonly rolledBack: () => readonly RouteArmValue[];
  /** Shadow jobs waiting in the queue. */
  readonly shadowQueued: () => number;
}

const ROUTE_ARM = [LABEL.route, LABEL.arm] as const;

export class RouteMetrics {
  private readonly requests: Counter<string>;
  private readonly rollbacks: Counter<string>;
  private readonly reloads: Counter<string>;
  private readonly shadowRequests: Counter<string>;
  private readonly shadowErrors: Counter<string>;
  private readonly shadowDropped: Counter<string>;
  private readonly shadowDiff: Histogram<string>;
  private source: RouteStateSource | undefined;

  constructor(registry: Registry, diffBuckets: readonly number[]) {
    const registers = [registry];
    this.requests = new Counter({
      name: METRIC.routeRequests,
      help: 'Requests to a route, by the arm chosen and how they ended (ok, error, abandoned, fallback, unavailable).',
      labelNames: [...ROUTE_ARM, LABEL.result],
      registers,
    });
    this.rollbacks = new Counter({
      name: METRIC.routeRollbacks,
      help: 'Automatic rollbacks of a route arm (its weight set to 0 until the routes file changes).',
      labelNames: ROUTE_ARM,
      registers,
    });
    this.reloads = new Counter({
      name: METRIC.routesReloads,
      help: 'Reloads of the routes file, by result (swapped, unchanged, refused: the previous routes stay).',
      labelNames: [LABEL.result],
      registers,
    });
    const perRoute = (name: string, help: string) => new Counter({ name, help, labelNames: [LABEL.route], registers });
    this.shadowRequests = perRoute(METRIC.shadowRequests, 'Requests copied to a route\'s shadow model (queued; they never reach the client).');
    this.shadowErrors = perRoute(METRIC.shadowErrors, 'Shadow requests that failed, or whose answer could not be compared with the primary\'s.');
    this.shadowDropped = perRoute(METRIC.shadowDropped, 'Shadow requests dropped because the shadow queue was full (shadow work is shed first).');
    this.shadowDiff = new Histogram({
      name: METRIC.shadowAbsDiff,
      help: 'The largest absolute difference between the shadow\'s and the primary\'s outputs, per compared request.',
      labelNames: [LABEL.route],
      buckets: [...diffBuckets],
      registers,
    });
    const metrics = this;
    const state = (name: string, help: string, rows: (source: RouteStateSource) => readonly RouteArmValue[]) => {
      new Gauge({
        name,
        help,
        labelNames: ROUTE_ARM,
        registers,
        collect() {
          this.reset();
          if (metrics.source === undefined) return;
          for (const row of rows(metrics.source)) this.set({ route: row.route, arm: row.arm }, row.value);
        },
      });
    };
    state(METRIC.breakerState, 'Circuit breaker of a route arm: 0 closed, 1 half-open, 2 open.', (source) => source.breakers());
    state(METRIC.routeRolledBack, '1 while a route arm is rolled back (until the routes file changes), else 0.', (source) => source.rolledBack());
    new Gauge({
      name: METRIC.shadowQueued,
      help: 'Shadow requests waiting in the shadow queue.',
      registers,
      collect() {
        if (metrics.source !== undefined) this.set(metrics.source.shadowQueued());
      },
    });
  }

  /** Attaches the states read at scrape time (once routes are loaded). */
  setSource(source: RouteStateSource): void {
    this.source = source;
    for (const result of RELOAD_RESULTS) this.reloads.inc({ result }, 0);
  }

  countRequest(route: string, arm: string, result: RouteResult): void {
    this.requests.inc({ route, arm, result });
  }

  countRollback(route: string, arm: string): void {
    this.rollbacks.inc({ route, arm });
  }

  countReload(result: ReloadResultName): void {
    this.reloads.inc({ result });
  }

  /** Starts a route's shadow series at 0, so rate() has a baseline and dashboards show the route. */
  initShadow(route: string): void {
    this.shadowRequests.inc({ route }, 0);
    this.shadowErrors.inc({ route }, 0);
    this.shadowDropped.inc({ route }, 0);
  }

  countShadowRequest(route: string): void {
    this.shadowRequests.inc({ route });
  }

  countShadowError(route: string): void {
    this.shadowErrors.inc({ route });
  }

  countShadowDropped(route: string): void {
    this.shadowDropped.inc({ route });
  }

  observeShadowDiff(route: string, maxAbsDiff: number): void {
    this.shadowDiff.observe({ route }, maxAbsDiff);
  }
}
