/**
 * A front-door thread's HTTP requests (server/door-thread-main.ts).
 *
 * `POST /v2/models/{m}[/versions/{v}]/infer` for a version this thread serves
 * (DoorInference.serves, asked from the URL and the admitted caller before the
 * body is read) is answered here by the main thread's own REST endpoint code
 * (http/infer-endpoint.ts: the same body limits, JSON rules, binary tensor
 * extension, headers, statuses, error bodies and cancellation on disconnect)
 * over this thread's DoorInference. Every other request is forwarded to the
 * main thread as received (door-forwarding.ts). A ModelInfer the
 * DoorInference hands back after its body was read (ForwardToMainThread: a
 * version unloading, a batcher refusal, a re-run; nothing counted yet) is
 * forwarded with the body as read, so the main thread answers and counts it
 * once, as it would with one thread.
 *
 * Each ModelInfer that passed the admission is counted once: answered here or
 * by the main thread. A framing refusal (413, 408, a budget's 503) is not
 * counted, as gRPC's transport refusals are not; nor is a request to be
 * forwarded whose client had already gone (the main thread never sees it, so
 * hotpath_door_model_infer_total stays what ModelStatistics counts).
 *
 * Ownership: one handler per door thread, on that thread only; its JSON parse
 * worker is ended by `close()`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { ForwardToMainThread, type DoorInference } from '../inference/door-inference.js';
import type { RefusalLog } from '../observability/refusal-log.js';
import type { HttpForwarding } from './door-forwarding.js';
import type { BodyLimits } from './http/body-reader.js';
import type { HttpAdmission } from './http/http-admission.js';
import { InferEndpoint } from './http/infer-endpoint.js';
import { answerFailure, inferTarget } from './http/rest-server.js';

export interface DoorHttpOptions {
  /** This thread's ModelInfer (the main thread's door catalog): its lookup and its run. */
  readonly served: Pick<DoorInference, 'serves' | 'infer'>;
  /** The main thread's REST server, for everything not answered here. */
  readonly forwarding: HttpForwarding;
  /** The door's admission (the same gate as the forwarding's). */
  readonly admission: HttpAdmission;
  /** This door's body limits (rest-server.ts httpBodyLimits). */
  readonly bodies: BodyLimits;
  /** component 'http': failures answered 5xx are logged here. */
  readonly log: Logger;
  /** Framing refusals (413, 408, 503), rate-limited. */
  readonly framing: RefusalLog;
  /** One admitted ModelInfer, answered in this thread ('door') or forwarded ('main'). */
  readonly count: (answeredBy: 'door' | 'main') => void;
}

export class DoorHttp {
  private readonly endpoint: InferEndpoint;

  constructor(private readonly options: DoorHttpOptions) {
    const { served, forwarding } = options;
    this.endpoint = new InferEndpoint(served, options.bodies, options.admission, {
      servesHere: (model, version, caller) => served.serves(model, version, caller),
      handsOn: (err) => err instanceof ForwardToMainThread,
      send: ({ request, response }, body) => forwarding.forward(request, response, body),
      counted: (outcome) => options.count(outcome === 'answered' ? 'door' : 'main'),
    });
  }

  /** The door's request handler. */
  readonly handle = (request: IncomingMessage, response: ServerResponse): void => {
    const path = (request.url ?? '/').split('?')[0]!;
    const target = inferTarget(request.method, path);
    if (target === undefined) {
      this.options.forwarding.handle(request, response);
      return;
    }
    // Counted by the endpoint (`counted`) before the client can hold its answer; 'abandoned' and 'refused' are not.
    this.endpoint.infer({ request, response }, target.model, target.version).catch((err: unknown) =>
      answerFailure({ request, response }, path, err, this.options.log, this.options.framing),
    );
  };

  /** Ends the JSON parse worker (the thread is draining: no request is open). */
  async close(): Promise<void> {
    await this.options.bodies.json?.close();
  }
}
