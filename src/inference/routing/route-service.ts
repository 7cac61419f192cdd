/**
 * A server's routes (--routes FILE): the current route table, kept by a
 * RoutesReloader (the file's directory is watched; SIGHUP calls `reload`
 * from the command line, beside the certificate reload), the one shadow
 * queue, the route metrics, and the log lines of breaker changes, rollbacks
 * and reloads.
 *
 * The table is built against the loaded models (route-build.ts), so the
 * service is created once the start-up models are loaded; an invalid file
 * then throws RoutesFileError (start-up fails), while an invalid file on a
 * reload keeps the previous routes and logs why.
 *
 * Routes are scoped like models: a caller sees a route when it sees the
 * route's tenant (the stable arm's model's). To any other caller the name
 * reads exactly as a missing model.
 */
import { clone } from '@bufbuild/protobuf';
import type { Logger } from 'pino';
import type { ModelInferRequest, ModelInferResponse } from '../../generated/grpc_service_pb.js';
import { ModelConfigSchema, type ModelConfig } from '../../generated/model_config_pb.js';
import type { ModelManager } from '../../repository/model-manager.js';
import type { ModelVersion } from '../../repository/model-version.js';
import type { ServerMetrics } from '../../observability/metrics.js';
import { RouteMetrics } from '../../observability/route-metrics.js';
import { visibleTo, type Caller } from '../../security/caller.js';
import type { ModelSignature } from '../../routing/route-compatibility.js';
import type { Route, RouteSnapshot, RoutingEvent } from '../../routing/route-table.js';
import { directoryWatchTrigger, RoutesReloader, type ReloadResult } from '../../routing/routes-reloader.js';
import { compareOutputs, SHADOW_DIFF_BUCKETS } from '../../routing/shadow-compare.js';
import { ShadowQueue } from '../../routing/shadow.js';
import type { ShadowConfig } from '../../routing/routes-config.js';
import { buildRoutes, readyVersion, type LoadedRoutes, type RouteInfo } from './route-build.js';
import { numericOutputs } from './route-answers.js';

export interface RouteServiceOptions {
  readonly file: string;
  readonly models: ModelManager;
  readonly metrics: ServerMetrics;
  readonly logger: Logger;
  /** --require-api-key: a route's models must share one tenant. */
  readonly tenantScoped: boolean;
  /** Shadow jobs waiting, at most; beyond it they are dropped and counted. */
  readonly shadowQueueSize: number;
  /** Shadow jobs running at once, at most. */
  readonly shadowConcurrency: number;
  /** Watch the file's directory for changes (default true). */
  readonly watch?: boolean;
  /** New routes took over (a reload that swapped): the front-door threads' catalog names them (door-catalog.ts). */
  readonly onSwap?: () => void;
}

/** A route a caller may call. */
export interface VisibleRoute {
  readonly route: Route;
  readonly info: RouteInfo;
}

/** What ModelReady, ModelMetadata, ModelConfig and RepositoryIndex answer for a route. */
export interface RouteDescription {
  readonly name: string;
  /** Every arm's model version is loaded and ready. */
  readonly ready: boolean;
  /** Why not, when not ready. */
  readonly reason: string;
  /** The route's inputs and outputs (ModelMetadata form: the stable arm's). */
  readonly signature: ModelSignature | undefined;
  /** The stable arm's version now (undefined when it is not ready). */
  readonly stable: ModelVersion | undefined;
}

/** A shadow job's request: sent after the primary answered, compared with its answer. */
export type ShadowSender = (request: ModelInferRequest) => Promise<ModelInferResponse>;

/** Last reload, for /healthz. */
interface ReloadRecord {
  readonly status: ReloadResult['status'];
  readonly why: string;
  readonly at: string;
  readonly error?: string;
}

export class RouteService {
  private readonly reloader: RoutesReloader<LoadedRoutes>;
  private readonly shadow: ShadowQueue;
  private readonly log: Logger;
  readonly metrics: RouteMetrics;
  private lastReload: ReloadRecord | undefined;
  /** Per route: shadow errors not logged yet, and when one was last logged (one warning a minute at most). */
  private readonly shadowErrorLog = new Map<string, { lastMs: number; suppressed: number }>();

  /** Loads the file now: throws RoutesFileError (or a read error) for a file that cannot serve. */
  constructor(private readonly options: RouteServiceOptions) {
    this.log = options.logger.child({ component: 'routes' });
    const build = (text: string, file: string) =>
      buildRoutes(text, file, {
        models: options.models,
        tenantScoped: options.tenantScoped,
        onEvent: (event) => this.onEvent(event),
      });
    this.reloader = new RoutesReloader<LoadedRoutes>({
      file: options.file,
      build,
      triggers: options.watch === false ? [] : [directoryWatchTrigger(options.file, 200, (err) => this.onWatchError(err))],
      onResult: (result, current) => this.onReload(result, current),
      onSwap: (next) => {
        this.initSeries(next);
        this.options.onSwap?.();
      },
    });
    this.metrics = new RouteMetrics(options.metrics.registry, SHADOW_DIFF_BUCKETS);
    this.shadow = new ShadowQueue({ capacity: options.shadowQueueSize, concurrency: options.shadowConcurrency });
    const routes = this.reloader.current();
    this.metrics.setSource({
      breakers: () => this.reloader.current().table.breakerStates(),
      rolledBack: () => this.rolledBackRows(),
      shadowQueued: () => this.shadow.counts().queued,
    });
    this.initSeries(routes);
    this.log.info({ file: options.file, routes: this.summary(routes) }, 'routes loaded');
  }

  /** Starts watching the file. */
  start(): void {
    this.reloader.start();
  }

  /** Reads the file again (SIGHUP); the previous routes stay when it is refused. */
  reload(why: string): Promise<ReloadResult> {
    return this.reloader.reload(why);
  }

  /** Stops watching and refuses new shadow work (queued jobs are dropped and counted; running ones finish). */
  close(): void {
    this.reloader.stop();
    this.shadow.close();
  }

  /** Resolves once no shadow job is queued or running (tests, shutdown). */
  shadowIdle(): Promise<void> {
    return this.shadow.idle();
  }

  /** Every route's name (a request naming one is a route's, not a model's). */
  names(): readonly string[] {
    return this.reloader.current().table.names();
  }

  /** The route `name` when `caller` may see it; undefined otherwise (the name then reads as a model name). */
  lookup(name: string, caller: Caller): VisibleRoute | undefined {
    const routes = this.reloader.current();
    const route = routes.table.get(name);
    const info = routes.info.get(name);
    if (route === undefined || info === undefined || !visibleTo(caller)(info.tenant)) return undefined;
    return { route, info };
  }

  /** The routes `caller` may see, in file order. */
  list(caller: Caller): RouteDescription[] {
    return this.reloader
      .current()
      .table.names()
      .flatMap((name) => {
        const description = this.describe(name, caller);
        return description === undefined ? [] : [description];
      });
  }

  /** ModelReady / ModelMetadata's view of a route; undefined when there is no such route for `caller`. */
  describe(name: string, caller: Caller): RouteDescription | undefined {
    const visible = this.lookup(name, caller);
    if (visible === undefined) return undefined;
    const { route } = visible;
    const notReady = route.config.arms.filter((arm) => readyVersion(this.options.models, arm.model, arm.version) === undefined);
    const stableArm = route.config.arms.find((arm) => arm.name === route.stableArm)!;
    return {
      name,
      ready: notReady.length === 0,
      reason:
        notReady.length === 0
          ? ''
          : `route: arm${notReady.length > 1 ? 's' : ''} ${notReady.map((arm) => `'${arm.name}' (model '${arm.model}'${arm.version === undefined ? '' : ` version ${arm.version}`})`).join(', ')} not ready`,
      signature: route.signature,
      stable: readyVersion(this.options.models, stableArm.model, stableArm.version),
    };
  }

  /** The stable arm's version now; undefined when it is not ready. */
  stableVersion(route: Route): ModelVersion | undefined {
    const arm = route.config.arms.find((a) => a.name === route.stableArm)!;
    return readyVersion(this.options.models, arm.model, arm.version);
  }

  /** The stable arm's config, named as the route (ModelConfig for a route). */
  routeConfig(description: RouteDescription): ModelConfig | undefined {
    if (description.stable === undefined) return undefined;
    const config = clone(ModelConfigSchema, description.stable.config);
    config.name = description.name;
    return config;
  }

  /**
   * Queues a copy of a request for the route's shadow, to be compared with
   * the primary's answer. Never blocks and never throws: a full queue drops
   * (counted); the job's failure is counted and logged, never seen by the
   * client.
   */
  offerShadow(route: string, shadow: ShadowConfig, primary: ModelInferResponse, send: ShadowSender, request: ModelInferRequest): void {
    const shadowRequest: ModelInferRequest = { ...request, modelName: shadow.model, modelVersion: shadow.version === undefined ? '' : String(shadow.version) };
    const job = async () => {
      try {
        const answer = await send(shadowRequest);
        const primaryValues = numericOutputs(primary);
        const comparison = compareOutputs(primaryValues, numericOutputs(answer));
        if (!comparison.ok) throw new Error(`shadow answer not comparable: ${comparison.reason}`);
        this.metrics.observeShadowDiff(route, comparison.maxAbsDiff);
      } catch (err) {
        this.metrics.countShadowError(route);
        this.logShadowError(route, shadow, err);
        throw err;
      }
    };
    if (this.shadow.offer(job)) this.metrics.countShadowRequest(route);
    else this.metrics.countShadowDropped(route);
  }

  /** For /healthz: the file, the last reload, and every route's arms, weights, breakers and rollbacks. */
  healthSnapshot(): { file: string; loaded_at: string; last_reload?: ReloadRecord; shadow_queue: { queued: number; running: number }; routes: Record<string, RouteSnapshot> } {
    const routes = this.reloader.current();
    const counts = this.shadow.counts();
    return {
      file: this.options.file,
      loaded_at: new Date(routes.loadedAt).toISOString(),
      ...(this.lastReload !== undefined ? { last_reload: this.lastReload } : {}),
      shadow_queue: { queued: counts.queued, running: counts.running },
      routes: routes.table.snapshot(),
    };
  }

  private rolledBackRows(): { route: string; arm: string; value: number }[] {
    const table = this.reloader.current().table;
    return table.names().flatMap((name) => {
      const route = table.get(name)!;
      if (route.config.rollback === undefined) return [];
      const rolledBack = new Set(route.rolledBackArms());
      return route.config.arms.map((arm) => ({ route: name, arm: arm.name, value: rolledBack.has(arm.name) ? 1 : 0 }));
    });
  }

  private initSeries(routes: LoadedRoutes): void {
    for (const name of routes.table.names()) {
      if (routes.table.get(name)!.config.shadow !== undefined) this.metrics.initShadow(name);
    }
  }

  private summary(routes: LoadedRoutes): Record<string, string> {
    return Object.fromEntries(
      routes.table.names().map((name) => {
        const route = routes.table.get(name)!;
        const arms = route.config.arms.map((arm) => `${arm.name}=${arm.model}${arm.version === undefined ? '' : `@${arm.version}`}:${arm.weight}`);
        return [name, arms.join(',')];
      }),
    );
  }

  private onReload(result: ReloadResult, current: LoadedRoutes): void {
    this.metrics.countReload(result.status);
    // Unrelated changes in the file's directory read an unchanged file: not worth remembering.
    if (result.status === 'unchanged') {
      this.log.debug({ file: this.options.file, why: result.why }, 'routes file unchanged');
      return;
    }
    this.lastReload = {
      status: result.status,
      why: result.why,
      at: new Date().toISOString(),
      ...(result.status === 'refused' ? { error: result.error.message } : {}),
    };
    if (result.status === 'swapped') {
      this.log.info({ file: this.options.file, why: result.why, routes: this.summary(current) }, 'routes reloaded');
    } else {
      this.log.error({ file: this.options.file, why: result.why, error: result.error.message }, 'routes file refused: keeping the previous routes');
    }
  }

  private onWatchError(error: Error): void {
    this.log.warn({ file: this.options.file, error: error.message }, 'cannot watch the routes file: it reloads on SIGHUP only');
  }

  private onEvent(event: RoutingEvent): void {
    if (event.type === 'rollback') {
      this.metrics.countRollback(event.route, event.arm);
      this.log.error(
        { route: event.route, arm: event.arm, reason: event.reason, window: event.counts, stable_arm: event.stableArm },
        'route arm rolled back: its weight is 0 and its header mapping goes to the stable arm until the routes file changes',
      );
      return;
    }
    const fields = {
      route: event.route,
      arm: event.arm,
      from: event.from,
      to: event.to,
      reason: event.reason,
      ...(event.counts !== undefined ? { window: event.counts } : {}),
      ...(event.latencyMs !== undefined ? { latency_ms: Math.round(event.latencyMs * 1000) / 1000 } : {}),
    };
    if (event.to === 'open') this.log.warn(fields, 'circuit breaker opened: the arm answers from the fallback');
    else if (event.to === 'half_open') this.log.info(fields, 'circuit breaker half-open: admitting probes');
    else this.log.info(fields, 'circuit breaker closed');
  }

  private logShadowError(route: string, shadow: ShadowConfig, err: unknown): void {
    const now = performance.now();
    const entry = this.shadowErrorLog.get(route);
    if (entry !== undefined && now - entry.lastMs < 60_000) {
      entry.suppressed++;
      return;
    }
    this.shadowErrorLog.set(route, { lastMs: now, suppressed: 0 });
    this.log.warn(
      {
        route,
        shadow_model: shadow.model,
        error: err instanceof Error ? err.message : String(err),
        ...(entry !== undefined && entry.suppressed > 0 ? { not_logged_since: entry.suppressed } : {}),
      },
      'shadow request failed (the client was answered; at most one such line a minute per route)',
    );
  }
}
