/**
 * Repository and statistics RPCs: index, load, unload, per-version statistics.
 * The index and statistics list only the models the caller sees (its
 * tenant's; all for the admin, or for everyone without API keys); load and
 * unload need the admin (security/caller.ts). A load may carry Triton's
 * `config` parameter, a whole ModelConfig as JSON that replaces config.pbtxt
 * for that load (repository/config-override.ts); `file:` parameters (model
 * files sent with the request) are refused.
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
import { CONFIG_OVERRIDE_PARAMETER, parseConfigOverride, type ConfigOverride } from '../../repository/config-override.js';
import { ModelConfigError } from '../../repository/model-config.js';
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
      const { [CONFIG_OVERRIDE_PARAMETER]: config, ...rest } = request.parameters;
      refuseParameters('RepositoryModelLoad', rest, `expected none or '${CONFIG_OVERRIDE_PARAMETER}'`);
      requireModelName(request.modelName);
      await models.load(request.modelName, config === undefined ? undefined : configOverride(config));
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

/**
 * The load's `config` parameter as a ModelConfig, or INVALID_ARGUMENT naming
 * the parameter and what is wrong in it. Only the admin gets here: the load
 * handler's `requireAdmin` has passed.
 */
function configOverride(parameter: ModelRepositoryParameter): ConfigOverride {
  const choice = parameter.parameterChoice;
  if (choice.case !== 'stringParam') {
    throw invalidArgument(
      `RepositoryModelLoad: parameter '${CONFIG_OVERRIDE_PARAMETER}': expected a string (a ModelConfig as JSON), got ${choice.case ?? 'no value'}`,
    );
  }
  try {
    return parseConfigOverride(choice.value);
  } catch (err) {
    if (err instanceof ModelConfigError) {
      throw invalidArgument(`RepositoryModelLoad: parameter '${CONFIG_OVERRIDE_PARAMETER}': ${err.reason}`);
    }
    throw err;
  }
}

/**
 * Parameters this RPC does not take, refused instead of ignored: Triton's
 * `file:<path>` (model files sent with the load; hotpath reads models from
 * its repository only) and anything unknown.
 */
function refuseParameters(rpc: string, parameters: Record<string, ModelRepositoryParameter>, expected = 'expected none'): void {
  const keys = Object.keys(parameters);
  const file = keys.find((k) => k.startsWith('file:'));
  if (file !== undefined) {
    throw invalidArgument(`${rpc}: parameter ${echo(file)}: file overrides are not supported; model files are read from the model repository only`);
  }
  if (keys.length > 0) {
    throw invalidArgument(`${rpc}: parameter${keys.length > 1 ? 's' : ''} ${keys.map((k) => echo(k)).join(', ')} not supported; ${expected}`);
  }
}
