/**
 * ModelStreamInfer (bidirectional), with backpressure both ways.
 *
 * Each request is answered independently and in completion order; the
 * response echoes the request `id` so clients can match them. A failed
 * request does not end the stream: as in Triton, it is answered with
 * `error_message` and the stream stays open. When a drain stops accepting, an
 * open stream answers what it has admitted and then ends with OK.
 *
 * Backpressure: a stream holds at most `maxPending` requests between reading
 * one and handing its answer to grpc-js. At that bound, or when grpc-js
 * reports its write buffer full (`write()` returned false: the peer is not
 * reading, its HTTP/2 window is spent), the stream stops reading: it is
 * paused, grpc-js stops asking the HTTP/2 stream for messages, and flow
 * control makes the client wait. Reading resumes once the answers drain
 * ('drain') and the pending count is back at half the bound. So a client that
 * writes without reading costs the server a bounded number of requests and
 * answers, not a heap that grows with time; the stream itself is never refused.
 *
 * One instance per call; the event loop only.
 */
import { create } from '@bufbuild/protobuf';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import {
  ModelStreamInferResponseSchema,
  type ModelInferRequest,
  type ModelStreamInferResponse,
} from '../../generated/grpc_service_pb.js';
import { toServiceError } from '../../common/serving-error.js';
import type { InferContext, InferencePath } from '../../inference/infer-context.js';
import { trailersFor } from '../request-context.js';
import { UndecodedMessage } from '../grpc-service-definition.js';

/** Requests one stream holds at once (read, not yet answered); the default of ModelStreamInfer's bound. */
export const STREAM_MAX_PENDING = 64;

export function serveModelStream(
  // A request its guard refused arrives as an UndecodedMessage (grpc-service-definition.ts).
  stream: ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>,
  runner: InferencePath,
  context: InferContext,
  maxPending = STREAM_MAX_PENDING,
): void {
  let pending = 0;
  let writeBlocked = false;
  let ended = false;
  let closed = false;
  const finishIfDone = () => {
    if (ended && pending === 0 && !closed) {
      closed = true;
      unsubscribe();
      if (!stream.cancelled && !stream.destroyed) stream.end(trailersFor(context));
    }
  };
  // Read only while the stream has room for more work and the peer takes answers.
  const pace = () => {
    if (closed) return;
    if (pending >= maxPending || writeBlocked) {
      if (!stream.isPaused()) stream.pause();
    } else if (stream.isPaused() && pending <= maxPending / 2) {
      stream.resume();
    }
  };
  const unsubscribe = runner.onStopAccepting(() => {
    ended = true;
    finishIfDone();
  });
  const answer = (response: ModelStreamInferResponse) => {
    if (stream.cancelled || stream.destroyed || closed) return;
    if (!stream.write(response)) writeBlocked = true;
  };
  stream.on('drain', () => {
    writeBlocked = false;
    pace();
  });
  stream.on('data', (request: ModelInferRequest | UndecodedMessage) => {
    if (closed) return;
    pending += 1;
    pace();
    const answered =
      request instanceof UndecodedMessage
        ? Promise.resolve(create(ModelStreamInferResponseSchema, { errorMessage: toServiceError(request.refusal).details }))
        : runner.infer(request, context, 'ModelStreamInfer').then(
            // A literal, every field given, rather than `create`, which walks the schema per call
            // (as infer-response.ts does for the answer itself); errors keep `create` for its defaults.
            (inferResponse): ModelStreamInferResponse => ({ $typeName: 'inference.ModelStreamInferResponse', errorMessage: '', inferResponse }),
            (err: unknown) =>
              create(ModelStreamInferResponseSchema, {
                errorMessage: toServiceError(err).details,
                inferResponse: { modelName: request.modelName, modelVersion: request.modelVersion, id: request.id },
              }),
          );
    void answered.then(answer).finally(() => {
      pending -= 1;
      pace();
      finishIfDone();
    });
  });
  stream.on('end', () => {
    ended = true;
    finishIfDone();
  });
  stream.on('error', () => {
    // The client went away; in-flight requests finish and their answers are dropped.
    ended = true;
    closed = true;
    unsubscribe();
  });
  if (!runner.isAccepting) {
    ended = true;
    finishIfDone();
  }
}
