/**
 * The HTTP server on `--http-port`: the KServe V2 / Triton REST protocol
 * beside the health endpoints, on the same request path as gRPC.
 *
 *   GET  /v2/health/live, /v2/health/ready, /healthz      health (health-endpoints.ts)
 *   GET  /v2                                              server metadata
 *   GET  /v2/models/stats                                 statistics of every model
 *   GET  /v2/models/{m}[/versions/{v}]                    model metadata
 *   GET  /v2/models/{m}[/versions/{v}]/ready|config|stats
 *   GET  /v2/models/{m}[/versions/{v}]/drift             drift report (datachecks/drift)
 *   POST /v2/models/{m}[/versions/{v}]/infer              inference (infer-endpoint.ts)
 *   POST /v2/repository/index
 *   POST /v2/repository/models/{m}/load|unload
 *
 * Paths match as Triton's do (a version is digits; a model name one
 * percent-decoded path segment; the query string is ignored). An unknown path
 * is 404, a known path with the wrong method 405 with `Allow`; every failure
 * body is `{"error": "..."}`.
 *
 * Connections are kept alive (every answer has a Content-Length) for longer
 * than the usual load-balancer idle timeout (60 s by default,
 * `--http-idle-timeout`), so the balancer, not the server, closes idle ones. A client that sends `Expect: 100-continue` with a
 * body above the limit gets its 413 before sending the body.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import https from 'node:https';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { invalidArgument, notFound } from '../../common/serving-error.js';
import { echo } from '../../common/echo.js';
import { applyHttpConnectionLimits, type ConnectionLimits } from '../../security/connection-limits.js';
import type { InferencePath } from '../../inference/infer-context.js';
import { answerExpectContinue, type BodyLimits } from './body-reader.js';
import { BodyBudget, type BodyBudgetShare } from './body-budget.js';
import { JsonParser } from './json-parser.js';
import { DOOR_LIMIT_DEFAULTS, type DoorLimits } from '../../security/door-limits.js';
import { answerHealthz, answerLive, answerReady, type HealthProbes } from './health-endpoints.js';
import { HttpFramingError, sendError, statusOf, type Exchange } from './http-reply.js';
import { InferEndpoint } from './infer-endpoint.js';
import { ProtocolEndpoints } from './rest-handlers.js';
import { HttpAdmission } from './http-admission.js';
import { RefusalLog } from '../../observability/refusal-log.js';
import type { Caller, CallGate } from '../../security/caller.js';
import { sendJson } from './http-reply.js';

export interface RestServerOptions {
  readonly health: HealthProbes;
  /** The request path (with routes in front when --routes is given). */
  readonly runner: InferencePath;
  /** The GRPCInferenceService implementation, whose unary RPCs the REST endpoints run (see rest-handlers.ts). */
  readonly protocol: UntypedServiceImplementation;
  /** --max-message-size: the largest request body taken (413 above it). */
  readonly maxMessageBytes: number;
  /** This door's admission: --http-restricted-api groups and, with --require-api-key, API keys (security/caller.ts). */
  readonly gate: CallGate;
  readonly logger: Logger;
  /** HTTPS (`--http-use-ssl...`, see security/tls.ts); undefined: plain HTTP. */
  readonly tls?: https.ServerOptions | undefined;
  /** Idle and request timeouts, requests per connection (`--http-idle-timeout`...); default: security/connection-limits.ts. */
  readonly connections?: ConnectionLimits | undefined;
  /** Body budget, JSON parse queue, header and body-idle timeouts (security/door-limits.ts); defaults there. */
  readonly doors?: DoorLimits | undefined;
  /** With front-door threads: the main thread's share of the body budget's count, shared with every door thread (body-budget.ts); absent: its own. */
  readonly bodyBudgetMemory?: BodyBudgetShare | undefined;
  /** GET /v2/models/{m}[/versions/{v}]/drift: the model's drift report (throws NOT_FOUND for an unknown model). */
  readonly driftReport?: ((name: string, version: string, caller: Caller) => Promise<unknown>) | undefined;
}

type Endpoint = (exchange: Exchange, ...segments: string[]) => Promise<void> | void;

interface Route {
  readonly path: RegExp;
  /** Endpoints by HTTP method; captured path segments are passed percent-decoded ('' when absent). */
  readonly methods: Readonly<Record<string, Endpoint>>;
}

const MODEL = '/v2/models/([^/]+)(?:/versions/([0-9]+))?';

const SERVED =
  'GET /v2, /v2/health/live, /v2/health/ready, /healthz, /v2/models/stats, ' +
  '/v2/models/{model}[/versions/{version}][/ready|/config|/stats|/drift]; ' +
  'POST /v2/models/{model}[/versions/{version}]/infer, /v2/repository/index, /v2/repository/models/{model}/load|unload';

export function createRestHttpServer(options: RestServerOptions): http.Server {
  const log = options.logger.child({ component: 'http' });
  const admission = new HttpAdmission(options.gate, new RefusalLog(options.logger.child({ component: 'auth' })));
  // 413, 408 and the budgets' 503: logged as refusals are, rate-limited with counts (a client decides how many there are).
  const framing = new RefusalLog(log);
  // Body bytes in flight (shared with the door threads when there are any) and JSON parse work (one worker per thread).
  const doors = options.doors ?? {};
  const bodies = httpBodyLimits(options.maxMessageBytes, doors, options.bodyBudgetMemory);
  const protocol = new ProtocolEndpoints(options.protocol, bodies, admission);
  const inference = new InferEndpoint(options.runner, bodies, admission);
  const routes = restRoutes(options.health, admission, protocol, inference, options.driftReport);

  const handle = (request: IncomingMessage, response: ServerResponse) => {
    const path = (request.url ?? '/').split('?')[0]!;
    Promise.resolve()
      .then(() => dispatch(routes, { request, response }, path))
      .catch((err: unknown) => answerFailure({ request, response }, path, err, log, framing));
  };

  // Node checks header and request timeouts on a sweep (30 s by default); once a second makes
  // --header-timeout fire within a second of its value.
  const sweep = { connectionsCheckingInterval: 1000 };
  const server: http.Server =
    options.tls === undefined ? http.createServer(sweep, handle) : https.createServer({ ...options.tls, ...sweep }, handle);
  applyHttpConnectionLimits(server, options.connections);
  // A new request's headers must arrive within --header-timeout (idle kept-alive connections are --http-idle-timeout's).
  server.headersTimeout = Math.min(doors.headerTimeoutMs ?? DOOR_LIMIT_DEFAULTS.headerTimeoutMs, server.requestTimeout || Infinity);
  server.once('close', () => void bodies.json?.close());
  answerExpectContinue(server, options.maxMessageBytes, framing, handle);
  return server;
}

/**
 * One door's body limits (--max-message-size, --http-body-budget,
 * --http-json-queue, --body-idle-timeout): the main thread's REST server and
 * each front-door thread build their own, the same way; `budgetMemory` (each
 * thread's BodyBudgetShare of one memory) shares one budget between them. The JsonParser's
 * worker is the caller's to close.
 */
export function httpBodyLimits(maxMessageBytes: number, doors: DoorLimits, budgetMemory?: BodyBudgetShare): BodyLimits {
  return {
    maxBytes: maxMessageBytes,
    budget: new BodyBudget(Math.max(doors.httpBodyBudgetBytes ?? 2 * maxMessageBytes, maxMessageBytes), budgetMemory),
    json: new JsonParser({ maxQueued: doors.httpJsonQueue ?? DOOR_LIMIT_DEFAULTS.httpJsonQueue }),
    idleTimeoutMs: doors.bodyIdleTimeoutMs ?? DOOR_LIMIT_DEFAULTS.bodyIdleTimeoutMs,
  };
}

/**
 * A request's failure as the REST server answers it: a framing refusal (413,
 * 408, a budget's 503) logged as a refusal, rate-limited; a 5xx logged as a
 * warning; then `{"error": ...}` with its status.
 */
export function answerFailure({ request, response }: Exchange, path: string, err: unknown, log: Logger, framing: RefusalLog): void {
  if (err instanceof HttpFramingError && err.status !== 405) {
    framing.refused(
      `http:${err.status}`,
      { door: 'http', method: request.method, path: path.slice(0, 256), peer: request.socket.remoteAddress, status: err.status, reason: err.message },
      'request refused',
    );
  } else if (statusOf(err) >= 500) {
    log.warn({ method: request.method, path: path.slice(0, 256), err }, 'HTTP request failed');
  }
  sendError(response, err);
}

const INFER_PATH = new RegExp(`^${MODEL}/infer$`);

/**
 * The model and version ('' for none) of `POST /v2/models/{m}[/versions/{v}]/infer`,
 * matched and decoded as the router does; undefined for any other request,
 * and for a segment the router would refuse (malformed percent-encoding).
 */
export function inferTarget(method: string | undefined, path: string): { readonly model: string; readonly version: string } | undefined {
  if (method !== 'POST') return undefined;
  const match = INFER_PATH.exec(path);
  if (match === null) return undefined;
  try {
    return { model: decodeSegment(match[1]!), version: decodeSegment(match[2] ?? '') };
  } catch {
    return undefined;
  }
}

function restRoutes(
  health: HealthProbes,
  admission: HttpAdmission,
  protocol: ProtocolEndpoints,
  inference: InferEndpoint,
  driftReport: RestServerOptions['driftReport'],
): Route[] {
  const route = (path: string, methods: Record<string, Endpoint>): Route => ({ path: new RegExp(`^${path}$`), methods });
  // Probes need no API key (restricted groups still apply); /healthz lists the models for the admin only.
  return [
    route('/v2/health/live', {
      GET: ({ request, response }) => {
        admission.admit('ServerLive', request);
        answerLive(response, health);
      },
    }),
    route('/v2/health/ready', {
      GET: ({ request, response }) => {
        admission.admit('ServerReady', request);
        return answerReady(response, health);
      },
    }),
    route('/healthz', { GET: ({ request, response }) => answerHealthz(response, health, admission.admit('Healthz', request).admin) }),
    route('/v2', { GET: (exchange) => protocol.serverMetadata(exchange) }),
    // Before the model routes, as in Triton: a model named 'stats' has no metadata route.
    route('/v2/models/stats', { GET: (exchange) => protocol.modelStatistics(exchange, '', '') }),
    route(MODEL, { GET: (exchange, name, version) => protocol.modelMetadata(exchange, name!, version!) }),
    route(`${MODEL}/ready`, { GET: (exchange, name, version) => protocol.modelReady(exchange, name!, version!) }),
    route(`${MODEL}/config`, { GET: (exchange, name, version) => protocol.modelConfig(exchange, name!, version!) }),
    route(`${MODEL}/stats`, { GET: (exchange, name, version) => protocol.modelStatistics(exchange, name!, version!) }),
    // Drift reads like statistics: the same restricted-API group and key scope.
    route(`${MODEL}/drift`, {
      GET: async ({ request, response }, name, version) => {
        const caller = admission.admit('ModelStatistics', request);
        if (driftReport === undefined) throw notFound(`model ${echo(name!)} is not found in the repository`);
        sendJson(response, 200, await driftReport(name!, version!, caller));
      },
    }),
    route(`${MODEL}/infer`, { POST: async (exchange, name, version) => void (await inference.infer(exchange, name!, version!)) }),
    route('/v2/repository/index', { POST: (exchange) => protocol.repositoryIndex(exchange) }),
    route('/v2/repository/models/([^/]+)/load', { POST: (exchange, name) => protocol.loadModel(exchange, name!) }),
    route('/v2/repository/models/([^/]+)/unload', { POST: (exchange, name) => protocol.unloadModel(exchange, name!) }),
  ];
}

async function dispatch(routes: readonly Route[], exchange: Exchange, path: string): Promise<void> {
  const method = exchange.request.method ?? 'GET';
  for (const route of routes) {
    const match = route.path.exec(path);
    if (match === null) continue;
    const endpoint = route.methods[method];
    if (endpoint === undefined) {
      const allowed = Object.keys(route.methods);
      throw new HttpFramingError(405, `method ${method} is not allowed on ${echo(path)}; use ${allowed.join(' or ')}`, {
        allow: allowed.join(', '),
      });
    }
    return endpoint(exchange, ...match.slice(1).map((segment) => decodeSegment(segment ?? '')));
  }
  throw notFound(`no route for ${method} ${echo(path)}; served: ${SERVED}`);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw invalidArgument(`malformed percent-encoding in path segment ${echo(segment)}`);
  }
}
