/**
 * The REST endpoints other than inference: server and model metadata,
 * readiness, configuration, statistics and the model repository. Each turns
 * its URL and JSON body into the protocol request, runs the same operation
 * the gRPC RPC runs (unary.ts `operationOf`), and writes the protocol
 * response as Triton's HTTP server does (proto-json.ts). So both doors give
 * the same answers and the same errors, and a rule added to an RPC (model
 * control mode refusing a load, say) holds on both.
 *
 * Where Triton's HTTP answers differ in shape from its gRPC messages, this
 * follows Triton's HTTP: the config is the bare ModelConfig, the repository
 * index a bare array, a model that is not ready is 400 with an error, and
 * load and unload answer 200 with an empty body.
 *
 * Every endpoint first admits its request (http-admission.ts): restricted
 * groups and API keys are checked before a body is read, and the operation
 * runs for the admitted caller, so its scope holds on this door as on gRPC.
 */
import { create } from '@bufbuild/protobuf';
import type { UntypedServiceImplementation } from '@grpc/grpc-js';
import {
  ModelConfigRequestSchema,
  ModelMetadataRequestSchema,
  ModelMetadataResponseSchema,
  ModelReadyRequestSchema,
  ModelStatisticsRequestSchema,
  ModelStatisticsResponseSchema,
  RepositoryIndexRequestSchema,
  RepositoryIndexResponse_ModelIndexSchema,
  RepositoryModelLoadRequestSchema,
  RepositoryModelUnloadRequestSchema,
  ServerMetadataRequestSchema,
  ServerMetadataResponseSchema,
  type ModelConfigRequest,
  type ModelConfigResponse,
  type ModelMetadataRequest,
  type ModelMetadataResponse,
  type ModelReadyRequest,
  type ModelReadyResponse,
  type ModelRepositoryParameter,
  type ModelStatisticsRequest,
  type ModelStatisticsResponse,
  type RepositoryIndexRequest,
  type RepositoryIndexResponse,
  type RepositoryModelLoadRequest,
  type RepositoryModelLoadResponse,
  type RepositoryModelUnloadRequest,
  type RepositoryModelUnloadResponse,
  type ServerMetadataRequest,
  type ServerMetadataResponse,
} from '../../generated/grpc_service_pb.js';
import { ModelConfigSchema } from '../../generated/model_config_pb.js';
import { invalidArgument, ServingError } from '../../common/serving-error.js';
import { echo } from '../../common/echo.js';
import { operationOf, type UnaryOperation } from '../unary.js';
import type { HttpAdmission } from './http-admission.js';
import { readJsonBody, type BodyLimits } from './body-reader.js';
import { sendBody, sendJson, type Exchange } from './http-reply.js';
import { kindOf, optionalObject, show, type JsonObject } from './json-body.js';
import { tritonJson } from './proto-json.js';

export class ProtocolEndpoints {
  private readonly serverMetadataOp: UnaryOperation<ServerMetadataRequest, ServerMetadataResponse>;
  private readonly modelMetadataOp: UnaryOperation<ModelMetadataRequest, ModelMetadataResponse>;
  private readonly modelReadyOp: UnaryOperation<ModelReadyRequest, ModelReadyResponse>;
  private readonly modelConfigOp: UnaryOperation<ModelConfigRequest, ModelConfigResponse>;
  private readonly statisticsOp: UnaryOperation<ModelStatisticsRequest, ModelStatisticsResponse>;
  private readonly indexOp: UnaryOperation<RepositoryIndexRequest, RepositoryIndexResponse>;
  private readonly loadOp: UnaryOperation<RepositoryModelLoadRequest, RepositoryModelLoadResponse>;
  private readonly unloadOp: UnaryOperation<RepositoryModelUnloadRequest, RepositoryModelUnloadResponse>;

  /**
   * `protocol`: the GRPCInferenceService implementation (its unary RPCs);
   * `bodies`: --max-message-size and the door's body budget; `admission`: the door's gate.
   */
  constructor(
    protocol: UntypedServiceImplementation,
    private readonly bodies: BodyLimits,
    private readonly admission: HttpAdmission,
  ) {
    this.serverMetadataOp = operationOf(protocol, 'ServerMetadata');
    this.modelMetadataOp = operationOf(protocol, 'ModelMetadata');
    this.modelReadyOp = operationOf(protocol, 'ModelReady');
    this.modelConfigOp = operationOf(protocol, 'ModelConfig');
    this.statisticsOp = operationOf(protocol, 'ModelStatistics');
    this.indexOp = operationOf(protocol, 'RepositoryIndex');
    this.loadOp = operationOf(protocol, 'RepositoryModelLoad');
    this.unloadOp = operationOf(protocol, 'RepositoryModelUnload');
  }

  /** GET /v2: `{name, version, extensions}`. */
  async serverMetadata({ request, response }: Exchange): Promise<void> {
    const caller = this.admission.admit('ServerMetadata', request);
    const metadata = await this.serverMetadataOp(create(ServerMetadataRequestSchema), caller);
    sendJson(response, 200, tritonJson(ServerMetadataResponseSchema, metadata));
  }

  /** GET /v2/models/{m}[/versions/{v}]: `{name, versions, platform, inputs, outputs}`. */
  async modelMetadata({ request, response }: Exchange, name: string, version: string): Promise<void> {
    const caller = this.admission.admit('ModelMetadata', request);
    const metadata = await this.modelMetadataOp(create(ModelMetadataRequestSchema, { name, version }), caller);
    sendJson(response, 200, tritonJson(ModelMetadataResponseSchema, metadata));
  }

  /** GET .../ready: 200 with no body when ready; 400 with an error when not (Triton's answer); 404 when unknown. */
  async modelReady({ request, response }: Exchange, name: string, version: string): Promise<void> {
    const caller = this.admission.admit('ModelReady', request);
    const { ready } = await this.modelReadyOp(create(ModelReadyRequestSchema, { name, version }), caller);
    if (!ready) {
      throw new ServingError('precondition', `model ${echo(name)}${version === '' ? '' : ` version ${echo(version)}`} is not ready`);
    }
    sendBody(response, 200, 'application/json', []);
  }

  /** GET .../config: the ModelConfig itself, with Triton's (proto) field names. */
  async modelConfig({ request, response }: Exchange, name: string, version: string): Promise<void> {
    const caller = this.admission.admit('ModelConfig', request);
    const { config } = await this.modelConfigOp(create(ModelConfigRequestSchema, { name, version }), caller);
    sendJson(response, 200, config === undefined ? {} : tritonJson(ModelConfigSchema, config));
  }

  /** GET .../stats and GET /v2/models/stats (name ''): `{model_stats: [...]}`. */
  async modelStatistics({ request, response }: Exchange, name: string, version: string): Promise<void> {
    const caller = this.admission.admit('ModelStatistics', request);
    const statistics = await this.statisticsOp(create(ModelStatisticsRequestSchema, { name, version }), caller);
    sendJson(response, 200, tritonJson(ModelStatisticsResponseSchema, statistics));
  }

  /** POST /v2/repository/index, body `{ready?}` or none: an array of `{name, version, state, reason}`. */
  async repositoryIndex({ request, response }: Exchange): Promise<void> {
    const caller = this.admission.admit('RepositoryIndex', request);
    const body = optionalObject(await readJsonBody({ request, response }, this.bodies), '{"ready": true|false}');
    const ready = body['ready'] ?? false;
    if (typeof ready !== 'boolean') throw invalidArgument(`'ready' must be true or false; got ${kindOf(ready)}`);
    const index = await this.indexOp(create(RepositoryIndexRequestSchema, { ready }), caller);
    sendJson(response, 200, index.models.map((entry) => tritonJson(RepositoryIndexResponse_ModelIndexSchema, entry)));
  }

  /** POST /v2/repository/models/{m}/load, body `{parameters?}` or none. */
  async loadModel({ request, response }: Exchange, modelName: string): Promise<void> {
    const caller = this.admission.admit('RepositoryModelLoad', request);
    const body = optionalObject(await readJsonBody({ request, response }, this.bodies), '{"parameters": {...}}');
    await this.loadOp(create(RepositoryModelLoadRequestSchema, { modelName, parameters: repositoryParameters(body) }), caller);
    sendBody(response, 200, 'application/json', []);
  }

  /** POST /v2/repository/models/{m}/unload, body `{parameters?}` or none. */
  async unloadModel({ request, response }: Exchange, modelName: string): Promise<void> {
    const caller = this.admission.admit('RepositoryModelUnload', request);
    const body = optionalObject(await readJsonBody({ request, response }, this.bodies), '{"parameters": {...}}');
    await this.unloadOp(create(RepositoryModelUnloadRequestSchema, { modelName, parameters: repositoryParameters(body) }), caller);
    sendBody(response, 200, 'application/json', []);
  }
}

/**
 * Load/unload `parameters` as protocol ModelRepositoryParameters: strings,
 * booleans and integers as such, and `file:<path>` values (base64, as
 * Triton takes them) as bytes. Whether a parameter is accepted is the RPC's
 * decision, not this conversion's.
 */
function repositoryParameters(body: JsonObject): Record<string, ModelRepositoryParameter> {
  const parameters = body['parameters'];
  if (parameters === undefined) return {};
  if (parameters === null || typeof parameters !== 'object' || Array.isArray(parameters)) {
    throw invalidArgument(`'parameters' must be a JSON object; got ${kindOf(parameters)}`);
  }
  const out: Record<string, ModelRepositoryParameter> = {};
  for (const [key, value] of Object.entries(parameters as JsonObject)) {
    out[key] = {
      $typeName: 'inference.ModelRepositoryParameter',
      parameterChoice: repositoryParameterChoice(key, value),
    };
  }
  return out;
}

function repositoryParameterChoice(key: string, value: unknown): ModelRepositoryParameter['parameterChoice'] {
  if (typeof value === 'string') {
    return key.startsWith('file:') ? { case: 'bytesParam', value: Buffer.from(value, 'base64') } : { case: 'stringParam', value };
  }
  if (typeof value === 'boolean') return { case: 'boolParam', value };
  if (typeof value === 'number' && Number.isSafeInteger(value)) return { case: 'int64Param', value: BigInt(value) };
  throw invalidArgument(`parameter ${echo(key)} must be a string, an integer or a boolean; got ${show(value)}`);
}
