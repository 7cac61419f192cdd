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
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Metadata } from '@grpc/grpc-js';
import { invalidArgument } from '../../common/serving-error.js';
import { epochMs } from '../../workers/worker-protocol.js';
import type { InferencePath } from '../../inference/infer-context.js';
import { peerAddress, requestView } from '../../routing/arm-choice.js';
import { REQUEST_ID_HEADER, requestContextFrom, TRACEPARENT_HEADER, type RequestContext } from '../request-context.js';
import { parseJsonBody, readBody, type BodyLimits } from './body-reader.js';
import { HttpFramingError, sendBody, sendError, type Exchange } from './http-reply.js';
import { show } from './json-body.js';
import { decodeInferRequest, encodeInferResponse } from './tensor-codec.js';
import type { HttpAdmission } from './http-admission.js';

/** The binary tensor data extension's header: the JSON part's length in a body with binary data after it. */
export const INFERENCE_HEADER_CONTENT_LENGTH = 'inference-header-content-length';

const EMPTY = new Uint8Array(0);

/** The access log's method for HTTP inferences. */
const METHOD = 'HTTP ModelInfer';

export class InferEndpoint {
  constructor(
    private readonly runner: InferencePath,
    private readonly bodies: BodyLimits,
    private readonly admission: HttpAdmission,
  ) {}

  async infer({ request, response }: Exchange, modelName: string, modelVersion: string): Promise<void> {
    const context = httpRequestContext(request, response);
    response.setHeader(REQUEST_ID_HEADER, context.requestId);
    try {
      const caller = this.admission.admit('ModelInfer', request);
      const headerLength = inferenceHeaderLength(request);
      const body = await readBody({ request, response }, this.bodies, headerLength ?? Infinity);
      // The JSON part parses off the event loop when large (json-parser.ts); a bad length is decodeInferRequest's to report.
      const jsonLength = headerLength ?? body.byteLength;
      const whole = headerLength === undefined;
      const root = jsonLength <= body.byteLength ? await parseJsonBody(body.subarray(0, jsonLength), this.bodies, whole) : undefined;
      // An all-JSON body may have moved to the parse worker; nothing of it is needed after its value.
      const decoded = decodeInferRequest(modelName, modelVersion, whole ? EMPTY : body, headerLength, root);
      // The headers and the peer choose a route's arm (src/inference/routing).
      const view = requestView(request.headers, () => peerAddress(request.socket.remoteAddress ?? ''));
      const answer = await this.runner.infer(
        decoded.request,
        { requestId: context.requestId, traceId: context.traceId, deadlineMs: context.deadlineMs, cancelledAtMs: context.cancelledAtMs, caller, view },
        METHOD,
      );
      const { json, binary } = encodeInferResponse(answer, decoded.outputs);
      // As Triton: the header and octet-stream only when binary bytes follow the JSON.
      if (binary.some((part) => part.byteLength > 0)) {
        sendBody(response, 200, 'application/octet-stream', [json, ...binary], {
          [INFERENCE_HEADER_CONTENT_LENGTH]: String(json.byteLength),
        });
      } else {
        sendBody(response, 200, 'application/json', [json]);
      }
    } catch (err) {
      // Framing refusals (413, 408, the budgets' 503) are answered and logged by the server (rest-server.ts).
      if (err instanceof HttpFramingError) throw err;
      sendError(response, err);
    }
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
