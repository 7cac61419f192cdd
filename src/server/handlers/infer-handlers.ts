/**
 * ModelInfer (unary) and ModelStreamInfer (bidirectional; its pacing and
 * answers are in model-stream-infer.ts).
 *
 * Every call carries a request id (the caller's `x-request-id`, or a generated
 * one) that is logged with each of its requests and returned in the trailing
 * metadata. When a drain stops accepting, an open stream answers what it has
 * admitted and then ends with OK.
 */
import type {
  Metadata,
  sendUnaryData,
  ServerDuplexStream,
  ServerUnaryCall,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { ModelInferRequest, ModelInferResponse, ModelStreamInferResponse } from '../../generated/grpc_service_pb.js';
import { toServiceError } from '../../common/serving-error.js';
import type { InferContext, InferencePath } from '../../inference/infer-context.js';
import { deadlineMsOf, firstString, requestIdOf, traceIdOf, trailersFor, watchCancellation } from '../request-context.js';
import { serveModelStream } from './model-stream-infer.js';
import { callerOf } from '../admission.js';
import { peerAddress, type RequestView } from '../../routing/arm-choice.js';

/** `runner`: the request path (with routes in front when --routes is given). */
export function inferHandlers(runner: InferencePath): UntypedServiceImplementation {
  return {
    ModelInfer: (call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>, callback: sendUnaryData<ModelInferResponse>) => {
      // Cancellation is Triton's CANCELED failure for a request that had not started (InferenceRunner).
      let context: InferContext;
      try {
        context = contextOf(call);
      } catch (err) {
        callback(toServiceError(err));
        return;
      }
      runner.infer(call.request, context).then(
        (response) => callback(null, response, trailersFor(context)),
        (err: unknown) => callback({ ...toServiceError(err), metadata: trailersFor(context) }),
      );
    },
    ModelStreamInfer: (stream: ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>) => {
      let context: InferContext;
      try {
        // Every request on the stream is scoped to the caller admitted for the stream.
        context = contextOf(stream);
      } catch (err) {
        stream.emit('error', toServiceError(err));
        return;
      }
      serveModelStream(stream, runner, context);
    },
  };
}

/**
 * A call's request context and the caller admission.ts admitted for it
 * (callerOf throws for a call that skipped admission: a bug, answered INTERNAL),
 * with its metadata and peer for a route's arm choice. One object per call,
 * built in one literal (no spread of an intermediate); the view is one small
 * object whose lookups run only when a route reads them.
 */
export function contextOf(
  call: ServerUnaryCall<ModelInferRequest, ModelInferResponse> | ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>,
): InferContext {
  const metadata = call.metadata;
  return {
    requestId: requestIdOf(metadata),
    traceId: traceIdOf(metadata),
    deadlineMs: deadlineMsOf(call.getDeadline()),
    cancelledAtMs: watchCancellation(call),
    caller: callerOf(call),
    view: new CallView(call),
  };
}

/** A grpc-js call as a route's arm choice reads it: metadata by name, the peer parsed on first read. */
class CallView implements RequestView {
  constructor(private readonly call: { readonly metadata: Metadata; getPeer(): string }) {}

  header(name: string): string | undefined {
    return firstString(this.call.metadata, name);
  }

  get peer(): string | undefined {
    return peerAddress(this.call.getPeer());
  }
}
