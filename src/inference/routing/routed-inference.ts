/**
 * The request path with routes in front: a request whose model name is a
 * route (one the caller may see) is routed; any other goes to the
 * InferenceRunner as it is. Routing wraps the runner and never reaches
 * inside it: a routed request is the same request, renamed to the chosen
 * arm's model and version.
 *
 * Per routed request:
 *   1. the route chooses (header, sticky key, address, weighted random) and
 *      asks the arm's breaker: a primary decision, a fallback, or UNAVAILABLE;
 *   2. a primary runs on the arm's model; a fallback runs on the fallback
 *      model or is answered with the default outputs;
 *   3. the answer is the route's: model_name the route, model_version the
 *      version that scored it, parameters `hotpath_arm` (and
 *      `hotpath_degraded: true` from a fallback);
 *   4. how it ended is recorded exactly once, in a finally, into the route
 *      that chose (a reload in between changes nothing for it): 'ok',
 *      'error' for failures of the model or server, 'abandoned' for a
 *      request that failed for the client's own reasons or never ran;
 *   5. a primary picked for the shadow is, once answered, copied to the
 *      shadow queue (never awaited).
 */
import type { ModelInferRequest, ModelInferResponse } from '../../generated/grpc_service_pb.js';
import { classifyError, ServingError, unavailable } from '../../common/serving-error.js';
import type { ErrorKind } from '../../common/error-kinds.js';
import { echo, echoField } from '../../common/echo.js';
import type { RouteResult } from '../../observability/metric-names.js';
import type { Decision, Route } from '../../routing/route-table.js';
import type { Outcome } from '../../routing/breaker.js';
import type { RequestView } from '../../routing/arm-choice.js';
import type { InferContext, InferencePath, InferenceRunner } from '../inference-runner.js';
import type { RouteService } from './route-service.js';
import { defaultOutputsAnswer, markRouteAnswer } from './route-answers.js';

/** Failures that say nothing about the arm: the client's own, or requests refused before they ran. */
const NOT_THE_ARMS: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  'invalid',
  'cancelled',
  'rate_limited',
  'over_quota',
  'unauthenticated',
  'permission_denied',
  'restricted',
]);

const NO_HEADERS: RequestView = { header: () => undefined, peer: undefined };

export class RoutedInference implements InferencePath {
  constructor(
    private readonly runner: InferenceRunner,
    /** The routes now; undefined without --routes (or before they are loaded). */
    private readonly routes: () => RouteService | undefined,
  ) {}

  get isAccepting(): boolean {
    return this.runner.isAccepting;
  }

  get inflightRequests(): number {
    return this.runner.inflightRequests;
  }

  onStopAccepting(listener: () => void): () => void {
    return this.runner.onStopAccepting(listener);
  }

  infer(request: ModelInferRequest, context: InferContext, method = 'ModelInfer'): Promise<ModelInferResponse> {
    const service = this.routes();
    const visible = service?.lookup(request.modelName, context.caller);
    if (service === undefined || visible === undefined) return this.runner.infer(request, context, method);
    return this.inferRoute(service, visible.route, request, context, method);
  }

  private async inferRoute(
    service: RouteService,
    route: Route,
    request: ModelInferRequest,
    context: InferContext,
    method: string,
  ): Promise<ModelInferResponse> {
    if (!this.runner.isAccepting) throw unavailable('server is shutting down; retry on another replica');
    if (request.modelVersion !== '') {
      throw new ServingError(
        'not_found',
        `model ${echo(request.modelName)} version ${echoField(request.modelVersion)} is not found: ${echo(request.modelName)} is a route, ` +
          'which has no versions of its own; call it without a version (the answer\'s model_version is the version that scored it)',
      );
    }
    const decision = route.choose(context.view ?? NO_HEADERS);
    const started = performance.now();
    let outcome: Outcome = 'abandoned';
    let result: RouteResult = 'abandoned';
    try {
      switch (decision.kind) {
        case 'unavailable':
          result = 'unavailable';
          throw unavailable(decision.message);
        case 'fallback': {
          const answer = await this.fallback(service, route, decision, request, context, method);
          result = 'fallback';
          return markRouteAnswer(answer, route.name, decision.arm, true);
        }
        case 'primary': {
          const answer = await this.runner.infer(renamed(request, decision.model, decision.version), context, method);
          outcome = 'ok';
          result = 'ok';
          if (decision.shadow !== undefined) {
            service.offerShadow(route.name, decision.shadow, answer, (copy) => this.runShadow(copy, context), request);
          }
          return markRouteAnswer(answer, route.name, decision.arm, false);
        }
      }
    } catch (err) {
      const ended = this.outcomeOf(err);
      // Only the arm's own answers feed its breaker and rollback watch; a failed fallback counts in the metric.
      if (decision.kind === 'primary') outcome = ended;
      if (decision.kind !== 'unavailable') result = ended;
      throw inRoute(err, route.name, decision.arm);
    } finally {
      route.record(decision, outcome, performance.now() - started);
      service.metrics.countRequest(route.name, decision.arm, result);
    }
  }

  /** The fallback's answer: the fallback model's, or the default outputs. */
  private async fallback(
    service: RouteService,
    route: Route,
    decision: Extract<Decision, { kind: 'fallback' }>,
    request: ModelInferRequest,
    context: InferContext,
    method: string,
  ): Promise<ModelInferResponse> {
    const fallback = decision.fallback;
    if (fallback.kind === 'model') return this.runner.infer(renamed(request, fallback.model, fallback.version), context, method);
    const signature = route.signature;
    if (signature === undefined) throw unavailable(`route '${route.name}': no signature for its default outputs`);
    return defaultOutputsAnswer(request, signature, fallback.outputs, service.stableVersion(route));
  }

  /** A shadow copy: the same caller, no client deadline or cancellation, outside the tenant's limits. */
  private runShadow(copy: ModelInferRequest, context: InferContext): Promise<ModelInferResponse> {
    return this.runner.infer(copy, { requestId: context.requestId, traceId: context.traceId, caller: context.caller, shadow: true }, 'Shadow');
  }

  /** 'error' for a failure of the arm (model or server); 'abandoned' for the client's own, or a request that never ran. */
  private outcomeOf(err: unknown): Outcome {
    if (!this.runner.isAccepting) return 'abandoned';
    return NOT_THE_ARMS.has(classifyError(err).kind) ? 'abandoned' : 'error';
  }
}

/** The request as the arm's model takes it (a shallow copy: the tensors are shared, never written). */
function renamed(request: ModelInferRequest, model: string, version: number | undefined): ModelInferRequest {
  return { ...request, modelName: model, modelVersion: version === undefined ? '' : String(version) };
}

/** A routed failure, its kind kept, its message saying which route and arm. */
function inRoute(err: unknown, route: string, arm: string): unknown {
  const { kind, message } = classifyError(err);
  if (message.startsWith(`route '${route}'`)) return err;
  return new ServingError(kind, `route '${route}' arm '${arm}': ${message}`);
}
