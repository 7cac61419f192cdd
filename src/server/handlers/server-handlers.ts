/**
 * Server- and model-level query RPCs: liveness, readiness, metadata, config.
 * Model-level ones answer only for models the caller sees (security/caller.ts);
 * another tenant's model reads exactly as a missing one.
 */
import { create } from '@bufbuild/protobuf';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import {
  ModelConfigResponseSchema,
  ModelMetadataResponseSchema,
  ModelReadyResponseSchema,
  ServerLiveResponseSchema,
  ServerMetadataResponseSchema,
  ServerReadyResponseSchema,
  type ModelConfigRequest,
  type ModelMetadataRequest,
  type ModelReadyRequest,
} from '../../generated/grpc_service_pb.js';
import type { ModelManager } from '../../repository/model-manager.js';
import { ServingError } from '../../common/serving-error.js';
import { visibleTo } from '../../security/caller.js';
import { externalShape } from '../../tensor/model-signature.js';
import { unary } from '../unary.js';

export interface ServerIdentity {
  readonly name: string;
  readonly version: string;
  /** Readiness of the whole server (models loaded, not draining). */
  readonly isReady: () => boolean;
}

/** KServe / Triton protocol extensions this server implements (binary_tensor_data: over HTTP). */
export const SERVER_EXTENSIONS = ['model_repository', 'model_configuration', 'statistics', 'parameters', 'binary_tensor_data'];

export function serverHandlers(models: ModelManager, server: ServerIdentity): UntypedServiceImplementation {
  return {
    ServerLive: unary(() => create(ServerLiveResponseSchema, { live: true })),
    ServerReady: unary(() => create(ServerReadyResponseSchema, { ready: server.isReady() })),
    ServerMetadata: unary(() =>
      create(ServerMetadataResponseSchema, {
        name: server.name,
        version: server.version,
        extensions: SERVER_EXTENSIONS,
      }),
    ),
    ModelReady: unary((request: ModelReadyRequest, caller) => {
      const visible = visibleTo(caller);
      try {
        return create(ModelReadyResponseSchema, { ready: models.resolve(request.name, request.version, visible).state === 'READY' });
      } catch (err) {
        // Known-but-not-ready answers false; an unknown model or version is an error, as in Triton.
        if (err instanceof ServingError && models.isKnown(request.name, visible) && err.kind !== 'not_found') {
          return create(ModelReadyResponseSchema, { ready: false });
        }
        throw err;
      }
    }),
    ModelMetadata: unary((request: ModelMetadataRequest, caller) => {
      const version = models.resolve(request.name, request.version, visibleTo(caller));
      const signature = version.signature;
      const tensor = (spec: (typeof signature.inputs)[number]) => ({
        name: spec.name,
        datatype: spec.datatype,
        shape: externalShape(signature, spec).map((dim) => BigInt(dim)),
      });
      return create(ModelMetadataResponseSchema, {
        name: request.name,
        versions: models.readyVersions(request.name).map((v) => v.versionLabel),
        platform: version.config.platform || 'onnxruntime_onnx',
        inputs: signature.inputs.map(tensor),
        outputs: signature.outputs.map(tensor),
      });
    }),
    ModelConfig: unary((request: ModelConfigRequest, caller) => {
      const version = models.resolve(request.name, request.version, visibleTo(caller));
      return create(ModelConfigResponseSchema, { config: version.config });
    }),
  };
}
