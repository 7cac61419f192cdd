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
import { ServingError, unavailable } from '../../common/serving-error.js';
import { echo, echoField } from '../../common/echo.js';
import { visibleTo, type Caller } from '../../security/caller.js';
import { externalShape } from '../../tensor/model-signature.js';
import type { RouteDescription, RouteService } from '../../inference/routing/route-service.js';
import { unary } from '../unary.js';

export interface ServerIdentity {
  readonly name: string;
  readonly version: string;
  /** Readiness of the whole server (models loaded, not draining). */
  readonly isReady: () => boolean;
}

/** KServe / Triton protocol extensions this server implements (binary_tensor_data: over HTTP). */
export const SERVER_EXTENSIONS = ['model_repository', 'model_configuration', 'statistics', 'parameters', 'binary_tensor_data'];

/** The routes (--routes) the model-level RPCs also answer for; undefined without routes. */
export type RouteLookup = () => Pick<RouteService, 'describe' | 'list' | 'routeConfig'> | undefined;

/**
 * `routes`: a route name answers as a model: ModelReady (every arm ready),
 * ModelMetadata (the route's inputs and outputs, no versions of its own) and
 * ModelConfig (the stable arm's config under the route's name).
 */
export function serverHandlers(models: ModelManager, server: ServerIdentity, routes: RouteLookup = () => undefined): UntypedServiceImplementation {
  const routeOf = (name: string, version: string, caller: Caller): RouteDescription | undefined => {
    const route = routes()?.describe(name, caller);
    if (route !== undefined && version !== '') {
      throw new ServingError('not_found', `model ${echo(name)} version ${echoField(version)} is not found: ${echo(name)} is a route, which has no versions of its own`);
    }
    return route;
  };
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
      const route = routeOf(request.name, request.version, caller);
      if (route !== undefined) return create(ModelReadyResponseSchema, { ready: route.ready });
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
      const route = routeOf(request.name, request.version, caller);
      if (route !== undefined) {
        if (route.signature === undefined) throw unavailable(`route ${echo(request.name)} has no signature: ${route.reason}`);
        const tensor = (t: { name: string; datatype: string; shape: readonly number[] }) => ({
          name: t.name,
          datatype: t.datatype,
          shape: t.shape.map((dim) => BigInt(dim)),
        });
        return create(ModelMetadataResponseSchema, {
          name: request.name,
          versions: [],
          platform: route.stable?.config.platform || 'onnxruntime_onnx',
          inputs: route.signature.inputs.map(tensor),
          outputs: route.signature.outputs.map(tensor),
        });
      }
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
      const route = routeOf(request.name, request.version, caller);
      if (route !== undefined) {
        const config = routes()?.routeConfig(route);
        if (config === undefined) throw unavailable(`route ${echo(request.name)}: its stable arm is not ready, so it has no config to show (${route.reason})`);
        return create(ModelConfigResponseSchema, { config });
      }
      const version = models.resolve(request.name, request.version, visibleTo(caller));
      return create(ModelConfigResponseSchema, { config: version.config });
    }),
  };
}
