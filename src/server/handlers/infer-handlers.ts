/**
 * ModelInfer (unary) and ModelStreamInfer (bidirectional).
 *
 * On the stream, each request is answered independently and in completion
 * order; the response echoes the request `id` so clients can match them. A
 * failed request does not end the stream: as in Triton, it is answered with
 * `error_message` and the stream stays open.
 */
import { create } from '@bufbuild/protobuf';
import type { ServerDuplexStream, UntypedServiceImplementation } from '@grpc/grpc-js';
import {
  ModelStreamInferResponseSchema,
  type ModelInferRequest,
  type ModelStreamInferResponse,
} from '../../generated/grpc_service_pb.js';
import { toServiceError } from '../../common/serving-error.js';
import type { InferenceRunner } from '../inference-runner.js';
import { unary } from '../unary.js';

export function inferHandlers(runner: InferenceRunner): UntypedServiceImplementation {
  return {
    ModelInfer: unary((request: ModelInferRequest) => runner.infer(request)),
    ModelStreamInfer: (stream: ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>) => {
      let pending = 0;
      let ended = false;
      const finishIfDone = () => {
        if (ended && pending === 0) stream.end();
      };
      stream.on('data', (request: ModelInferRequest) => {
        pending += 1;
        runner
          .infer(request)
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
      });
    },
  };
}
