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
  sendUnaryData,
  ServerDuplexStream,
  ServerUnaryCall,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import type { ModelInferRequest, ModelInferResponse, ModelStreamInferResponse } from '../../generated/grpc_service_pb.js';
import { toServiceError } from '../../common/serving-error.js';
import type { InferContext, InferencePath } from '../../inference/infer-context.js';
import { requestContextFrom, trailersFor, watchCancellation } from '../request-context.js';
import { serveModelStream } from './model-stream-infer.js';
import { callerOf, metadataHeaders } from '../admission.js';
import { peerAddress } from '../../routing/arm-choice.js';

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
 * with its metadata and peer for a route's arm choice.
 */
function contextOf(
  call: ServerUnaryCall<ModelInferRequest, ModelInferResponse> | ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>,
): InferContext {
  return {
    ...requestContextFrom(call.metadata, call.getDeadline()),
    cancelledAtMs: watchCancellation(call),
    caller: callerOf(call),
    // Read only by a route's arm choice: the peer is parsed when a route asks for it.
    view: {
      header: metadataHeaders(call.metadata),
      get peer() {
        return peerAddress(call.getPeer());
      },
    },
  };
}
