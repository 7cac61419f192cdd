/**
 * Repository and statistics RPCs: index, load, unload, per-version statistics.
 * The index and statistics list only the models the caller sees (its
 * tenant's; all for the admin, or for everyone without API keys); load and
 * unload need the admin (security/caller.ts).
 */
import { create } from '@bufbuild/protobuf';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import {
  ModelStatisticsResponseSchema,
  RepositoryIndexResponseSchema,
  RepositoryModelLoadResponseSchema,
  RepositoryModelUnloadResponseSchema,
  type ModelRepositoryParameter,
  type ModelStatisticsRequest,
  type RepositoryIndexRequest,
  type RepositoryModelLoadRequest,
  type RepositoryModelUnloadRequest,
} from '../../generated/grpc_service_pb.js';
import type { ModelManager } from '../../repository/model-manager.js';
import { invalidArgument, notFound } from '../../common/serving-error.js';
import { echo, echoField } from '../../common/echo.js';
import { requireAdmin, visibleTo } from '../../security/caller.js';
import { unary } from '../unary.js';
import type { RouteLookup } from './server-handlers.js';

/** `routes`: RepositoryIndex lists the routes (--routes) the caller sees after the models, without a version. */
export function repositoryHandlers(models: ModelManager, routes: RouteLookup = () => undefined): UntypedServiceImplementation {
  return {
    RepositoryIndex: unary(async (request: RepositoryIndexRequest, caller) => {
      const entries = await models.index(request.ready, visibleTo(caller));
      const routeEntries = (routes()?.list(caller) ?? [])
        .filter((route) => route.ready || !request.ready)
        .map((route) => ({ name: route.name, version: '', state: route.ready ? 'READY' : 'UNAVAILABLE', reason: route.ready ? 'route' : route.reason }));
      // The wire message has Triton's four fields; executor details are /healthz's.
      return create(RepositoryIndexResponseSchema, {
        models: [...entries.map(({ name, version, state, reason }) => ({ name, version, state, reason })), ...routeEntries],
      });
    }),
    RepositoryModelLoad: unary(async (request: RepositoryModelLoadRequest, caller) => {
      requireAdmin(caller, 'RepositoryModelLoad');
      refuseParameters('RepositoryModelLoad', request.parameters);
      requireModelName(request.modelName);
      await models.load(request.modelName);
      return create(RepositoryModelLoadResponseSchema, {});
    }),
    RepositoryModelUnload: unary(async (request: RepositoryModelUnloadRequest, caller) => {
      requireAdmin(caller, 'RepositoryModelUnload');
      // `unload_dependents` concerns ensembles, which hotpath does not have: accepted and moot.
      const { unload_dependents: _ignored, ...rest } = request.parameters;
      refuseParameters('RepositoryModelUnload', rest);
      requireModelName(request.modelName);
      await models.unload(request.modelName);
      return create(RepositoryModelUnloadResponseSchema, {});
    }),
    ModelStatistics: unary((request: ModelStatisticsRequest, caller) => {
      const visible = visibleTo(caller);
      if (request.name !== '' && !models.isKnown(request.name, visible)) {
        throw notFound(`model ${echo(request.name)} is not found`);
      }
      let versions = models.versions(request.name || undefined, visible);
      if (request.version !== '') {
        versions = versions.filter((v) => v.versionLabel === request.version);
        if (versions.length === 0) throw notFound(`model ${echo(request.name)} version ${echoField(request.version)} is not found`);
      }
      return create(ModelStatisticsResponseSchema, {
        modelStats: versions.map((v) => v.statistics.toProto(v.modelName, v.versionLabel)),
      });
    }),
  };
}

function requireModelName(name: string): void {
  if (name === '') throw invalidArgument('model_name is empty; expected the name of a model in the repository');
}

/** Config and file overrides on load are not supported yet; say so instead of ignoring them. */
function refuseParameters(rpc: string, parameters: Record<string, ModelRepositoryParameter>): void {
  const keys = Object.keys(parameters);
  if (keys.length > 0) {
    throw invalidArgument(`${rpc}: parameter${keys.length > 1 ? 's' : ''} ${keys.map((k) => echo(k)).join(', ')} not supported; expected none`);
  }
}
