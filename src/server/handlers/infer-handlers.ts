/**
 * ModelInfer (unary) and ModelStreamInfer (bidirectional).
 *
 * On the stream, each request is answered independently and in completion
 * order; the response echoes the request `id` so clients can match them. A
 * failed request does not end the stream: as in Triton, it is answered with
 * `error_message` and the stream stays open.
 *
 * Every call carries a request id (the caller's `x-request-id`, or a generated
 * one) that is logged with each of its requests and returned in the trailing
 * metadata. When a drain stops accepting, an open stream answers what it has
 * admitted and then ends with OK.
 */
import { create } from '@bufbuild/protobuf';
import type {
  sendUnaryData,
  ServerDuplexStream,
  ServerUnaryCall,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import {
  ModelStreamInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
  type ModelStreamInferResponse,
} from '../../generated/grpc_service_pb.js';
import { toServiceError } from '../../common/serving-error.js';
import type { InferenceRunner } from '../inference-runner.js';
import { requestContextFrom, trailersFor, watchCancellation } from '../request-context.js';

export function inferHandlers(runner: InferenceRunner): UntypedServiceImplementation {
  return {
    ModelInfer: (call: ServerUnaryCall<ModelInferRequest, ModelInferResponse>, callback: sendUnaryData<ModelInferResponse>) => {
      // Cancellation is Triton's CANCELED failure for a request that had not started (InferenceRunner).
      const context = { ...requestContextFrom(call.metadata, call.getDeadline()), cancelledAtMs: watchCancellation(call) };
      runner.infer(call.request, context).then(
        (response) => callback(null, response, trailersFor(context)),
        (err: unknown) => callback({ ...toServiceError(err), metadata: trailersFor(context) }),
      );
    },
    ModelStreamInfer: (stream: ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>) => {
      const context = { ...requestContextFrom(stream.metadata, stream.getDeadline()), cancelledAtMs: watchCancellation(stream) };
      let pending = 0;
      let ended = false;
      let closed = false;
      const finishIfDone = () => {
        if (ended && pending === 0 && !closed) {
          closed = true;
          unsubscribe();
          if (!stream.cancelled && !stream.destroyed) stream.end(trailersFor(context));
        }
      };
      const unsubscribe = runner.onStopAccepting(() => {
        ended = true;
        finishIfDone();
      });
      stream.on('data', (request: ModelInferRequest) => {
        if (closed) return;
        pending += 1;
        runner
          .infer(request, context, 'ModelStreamInfer')
          .then(
            (inferResponse) => create(ModelStreamInferResponseSchema, { inferResponse }),
            (err: unknown) =>
              create(ModelStreamInferResponseSchema, {
                errorMessage: toServiceError(err).details,
                inferResponse: { modelName: request.modelName, modelVersion: request.modelVersion, id: request.id },
              }),
          )
          .then((response) => {
            if (!stream.cancelled && !stream.destroyed) stream.write(response);
          })
          .finally(() => {
            pending -= 1;
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
    },
  };
}
