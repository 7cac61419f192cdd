/**
 * POST /v2/models/{m}[/versions/{v}]/infer: the body becomes a
 * ModelInferRequest (tensor-codec.ts), which runs through the same
 * InferenceRunner.infer as gRPC's ModelInfer (same validation, batching,
 * statistics, metrics, access log and errors), and the ModelInferResponse
 * becomes JSON, followed by binary outputs when asked for.
 *
 * The request id is the caller's `x-request-id` header (or a generated one)
 * and is returned in the `x-request-id` response header, success or not; a
 * W3C `traceparent` header sets the logged trace id. A client that closes
 * the connection before the answer has cancelled the request (Triton's
 * CANCELED, when it had not started yet). HTTP carries no deadline. The
 * request is admitted (http-admission.ts) before its body is read.
 *
 * A front-door thread serves the same endpoint over its own runner
 * (inference/door-inference.ts) with an InferHandOff: the requests that are
 * the main thread's go there instead, as received when that is known from
 * the URL and the caller, or with the body as read here when the runner
 * hands the request back after reading it (server/door-http.ts), its
 * charge to --http-body-budget released first (the other server charges the
 * body as it reads it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Metadata } from '@grpc/grpc-js';
import { invalidArgument } from '../../common/serving-error.js';
import { epochMs } from '../../workers/worker-protocol.js';
import type { InferencePath } from '../../inference/infer-context.js';
import { peerAddress, requestView } from '../../routing/arm-choice.js';
import type { Caller } from '../../security/caller.js';
import { REQUEST_ID_HEADER, requestContextFrom, TRACEPARENT_HEADER, type RequestContext } from '../request-context.js';
import { parseJsonBody, readHeldBody, type BodyLimits, type HeldBody } from './body-reader.js';
import { HttpFramingError, sendBody, sendError, type Exchange } from './http-reply.js';
import { show } from './json-body.js';
import { decodeInferRequest, encodeInferResponse } from './tensor-codec.js';
import type { HttpAdmission } from './http-admission.js';

/** The binary tensor data extension's header: the JSON part's length in a body with binary data after it. */
export const INFERENCE_HEADER_CONTENT_LENGTH = 'inference-header-content-length';

const EMPTY = new Uint8Array(0);

/** The access log's method for HTTP inferences. */
const METHOD = 'HTTP ModelInfer';

/**
 * Where a front-door thread's endpoint sends the requests it does not answer
 * itself (the main thread's REST server, server/door-forwarding.ts). The
 * main thread's own endpoint has none.
 */
export interface InferHandOff {
  /** Decided from the URL and the admitted caller, before a byte of the body is read: whether this endpoint runs the request. */
  servesHere(modelName: string, modelVersion: string, caller: Caller): boolean;
  /** Whether the runner's failure hands the request on (the runner counted nothing of it). */
  handsOn(err: unknown): boolean;
  /**
   * Sends the request on; the other server answers `response`. `body`:
   * undefined when nothing of it was read here (it streams on as received),
   * else the whole body as read here (inflated). Returns false when nothing
   * was sent: the client had already gone, so no server answers or counts
   * the request.
   */
  send(exchange: Exchange, body?: Buffer): boolean;
  /**
   * Called once per admitted request, before the client can hold its answer:
   * right before an answer made here is sent ('answered'), or once the
   * request was sent on ('handed-on'). So a count kept here is in any scrape
   * the client makes after its answer.
   */
  counted(outcome: 'answered' | 'handed-on'): void;
}

/**
 * What became of a request: answered here (an answer or a failure), handed
 * on (InferHandOff.send), abandoned (to be handed on, but its client had
 * gone: no server ran or counted it), or refused by the admission before it
 * reached the request path. A framing refusal (413, 408, the budgets' 503)
 * is thrown.
 */
export type InferOutcome = 'answered' | 'handed-on' | 'abandoned' | 'refused';

export class InferEndpoint {
  /** `runner`: the request path (only its infer is used); `handOff`: a front-door thread's, see InferHandOff. */
  constructor(
    private readonly runner: Pick<InferencePath, 'infer'>,
    private readonly bodies: BodyLimits,
    private readonly admission: HttpAdmission,
    private readonly handOff?: InferHandOff,
  ) {}

  async infer({ request, response }: Exchange, modelName: string, modelVersion: string): Promise<InferOutcome> {
    const context = httpRequestContext(request, response);
    response.setHeader(REQUEST_ID_HEADER, context.requestId);
    let caller: Caller;
    try {
      caller = this.admission.admit('ModelInfer', request);
    } catch (err) {
      sendError(response, err);
      return 'refused';
    }
    if (this.handOff !== undefined && !this.handOff.servesHere(modelName, modelVersion, caller)) {
      return this.handedOn(this.handOff.send({ request, response }));
    }
    let held: HeldBody | undefined;
    let counted = false;
    try {
      const headerLength = inferenceHeaderLength(request);
      held = await readHeldBody({ request, response }, this.bodies, headerLength ?? Infinity);
      const body = held.bytes;
      // The JSON part parses off the event loop when large (json-parser.ts); a bad length is decodeInferRequest's to report.
      const jsonLength = headerLength ?? body.byteLength;
      const whole = headerLength === undefined;
      // An all-JSON body may move to the parse worker (no copy) unless it may still be handed on whole.
      const owned = whole && this.handOff === undefined;
      const root = jsonLength <= body.byteLength ? await parseJsonBody(body.subarray(0, jsonLength), this.bodies, owned) : undefined;
      // Nothing of a moved body is needed after its value.
      const decoded = decodeInferRequest(modelName, modelVersion, whole ? EMPTY : body, headerLength, root);
      // The headers and the peer choose a route's arm (src/inference/routing).
      const view = requestView(request.headers, () => peerAddress(request.socket.remoteAddress ?? ''));
      const answer = await this.runner.infer(
        decoded.request,
        { requestId: context.requestId, traceId: context.traceId, deadlineMs: context.deadlineMs, cancelledAtMs: context.cancelledAtMs, caller, view },
        METHOD,
      );
      const { json, binary } = encodeInferResponse(answer, decoded.outputs);
      counted = true;
      this.handOff?.counted('answered');
      // As Triton: the header and octet-stream only when binary bytes follow the JSON.
      if (binary.some((part) => part.byteLength > 0)) {
        sendBody(response, 200, 'application/octet-stream', [json, ...binary], {
          [INFERENCE_HEADER_CONTENT_LENGTH]: String(json.byteLength),
        });
      } else {
        sendBody(response, 200, 'application/json', [json]);
      }
      return 'answered';
    } catch (err) {
      // Framing refusals (413, 408, the budgets' 503) are answered and logged by the server (rest-server.ts).
      if (err instanceof HttpFramingError) throw err;
      // Only the runner hands a request on, so the body was read whole.
      if (this.handOff !== undefined && held !== undefined && this.handOff.handsOn(err)) {
        // The other server charges the body to the budget as it reads it: held here too, it would count twice
        // (compressed and inflated, for a gzip body) and could be refused for its own bytes.
        held.release();
        return this.handedOn(this.handOff.send({ request, response }, held.bytes));
      }
      if (!counted) this.handOff?.counted('answered');
      sendError(response, err);
      return 'answered';
    }
  }

  /** A hand-off's outcome: counted once it was sent (before the other server can answer). */
  private handedOn(sent: boolean): InferOutcome {
    if (!sent) return 'abandoned';
    this.handOff?.counted('handed-on');
    return 'handed-on';
  }
}

/** Inference-Header-Content-Length as a number; undefined when absent (the whole body is JSON). */
function inferenceHeaderLength(request: IncomingMessage): number | undefined {
  const header = request.headers[INFERENCE_HEADER_CONTENT_LENGTH];
  if (header === undefined) return undefined;
  const text = (Array.isArray(header) ? header.join(',') : header).trim();
  if (!/^\d{1,15}$/.test(text)) {
    throw invalidArgument(`Inference-Header-Content-Length must be a byte count (a non-negative integer); got ${show(text)}`);
  }
  const length = Number(text);
  if (length === 0) {
    throw invalidArgument(
      'Inference-Header-Content-Length 0 (a raw binary request with no JSON header) is not supported; ' +
        'send the JSON inference header, then the binary data',
    );
  }
  return length;
}

/** The request's context from its headers, validated as gRPC metadata is, with cancellation by disconnect. */
function httpRequestContext(request: IncomingMessage, response: ServerResponse): RequestContext {
  const metadata = new Metadata();
  for (const key of [REQUEST_ID_HEADER, TRACEPARENT_HEADER]) {
    const value = request.headers[key];
    // Metadata takes printable ASCII only; anything else counts as not sent.
    if (typeof value === 'string' && /^[\x20-\x7e]*$/.test(value)) metadata.set(key, value);
  }
  let cancelledAtMs: number | undefined;
  response.once('close', () => {
    if (!response.writableFinished) cancelledAtMs = epochMs();
  });
  const { requestId, traceId, deadlineMs } = requestContextFrom(metadata);
  return { requestId, traceId, deadlineMs, cancelledAtMs: () => cancelledAtMs };
}
