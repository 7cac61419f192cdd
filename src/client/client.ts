/**
 * The typed Node client for the KServe V2 / Triton gRPC protocol
 * (`inference.GRPCInferenceService`): hotpath's, and any Triton server's.
 *
 * One grpc-js channel per client; every call is a Promise. Messages are the
 * protobuf-es types generated from the protocol's .proto files, the same ones
 * the server uses. Failed calls reject with InferenceError (gRPC status +
 * the server's message).
 */
import { create, type MessageInitShape } from '@bufbuild/protobuf';
import {
  Client,
  credentials as grpcCredentials,
  Metadata,
  status,
  type CallOptions as GrpcCallOptions,
  type ChannelCredentials,
  type ChannelOptions,
} from '@grpc/grpc-js';
import { checkServerIdentity as standardServerIdentityCheck, type PeerCertificate } from 'node:tls';
import type { ModelConfig } from '../generated/model_config_pb.js';
import {
  ModelConfigRequestSchema,
  ModelMetadataRequestSchema,
  ModelReadyRequestSchema,
  ModelStatisticsRequestSchema,
  RepositoryIndexRequestSchema,
  RepositoryModelLoadRequestSchema,
  RepositoryModelUnloadRequestSchema,
  ServerLiveRequestSchema,
  ServerMetadataRequestSchema,
  ServerReadyRequestSchema,
  type ModelInferRequest,
  type ModelRepositoryParameterSchema,
  type ModelStatistics,
  type ModelStreamInferResponse,
} from '../generated/grpc_service_pb.js';
import { InferenceError } from './errors.js';
import { buildInferRequest, toInferResult, type InferRequestOptions, type InferResult } from './infer-messages.js';
import { rpc, type MethodName, type RequestOf, type ResponseOf } from './rpc.js';
import { InferStream } from './stream.js';
import type { InferInput } from './tensors.js';

/** Certificates for TLS, as tritonclient's `root_certificates`, `private_key`, `certificate_chain`. */
export interface TlsOptions {
  /** PEM roots to trust; default: the system's. */
  readonly rootCertificates?: Buffer | string;
  /** Client key and certificate chain (PEM), for mutual TLS. */
  readonly privateKey?: Buffer | string;
  readonly certificateChain?: Buffer | string;
  /**
   * The name the server's certificate must carry (and the SNI sent), when it
   * is not the URL's host: e.g. connecting to an IP address or through a tunnel.
   */
  readonly serverName?: string;
  /**
   * A further check of the server's certificate on each new connection, after
   * the usual chain and hostname checks passed (e.g. pinning a fingerprint);
   * return an Error to refuse the connection.
   */
  readonly checkServerIdentity?: (hostname: string, certificate: PeerCertificate) => Error | undefined;
}

export interface ClientOptions {
  /**
   * TLS: `true` (system roots) or certificates. Default: plaintext, unless the
   * URL says `grpcs://` or `https://`. `credentials` overrides this.
   */
  readonly tls?: boolean | TlsOptions;
  /** Any grpc-js channel credentials (e.g. with call credentials for auth). */
  readonly credentials?: ChannelCredentials;
  /** The deadline of every call that sets none itself, in ms; default: none. */
  readonly timeoutMs?: number;
  /** Largest response accepted; default 2 GiB - 1, tritonclient's (grpc-js's own default is 4 MiB). */
  readonly maxReceiveMessageBytes?: number;
  /** Largest request sent; default: unlimited. */
  readonly maxSendMessageBytes?: number;
  /** Further grpc-js channel options (keepalive, load balancing, ...). */
  readonly channelOptions?: ChannelOptions;
  /** Headers sent with every call, e.g. `{'x-request-id': 'abc'}` (keys lower-case). */
  readonly metadata?: Readonly<Record<string, string>>;
  /**
   * A tenant's API key (a server with --require-api-key), sent with every
   * call as `authorization: Bearer <apiKey>`. Use it over TLS: the key is a
   * bearer secret. A per-call `authorization` header overrides it.
   */
  readonly apiKey?: string;
}

/** Per-call options, on every method. */
export interface CallOptions {
  /** This call's deadline in ms (overrides the client's `timeoutMs`). */
  readonly timeoutMs?: number;
  /** Headers for this call, added to the client's: e.g. `{'x-request-id': 'abc'}`. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Cancels the call; it then rejects with CANCELLED. */
  readonly signal?: AbortSignal;
}

export interface InferOptions extends InferRequestOptions, CallOptions {}

export interface VersionOptions extends CallOptions {
  /** A model version; default: the version policy's. */
  readonly version?: string | number;
}

export interface StreamOptions {
  /** Deadline of the whole stream in ms (default: the client's `timeoutMs`). */
  readonly timeoutMs?: number;
  readonly metadata?: Readonly<Record<string, string>>;
}

export interface ServerMetadata {
  readonly name: string;
  readonly version: string;
  readonly extensions: string[];
}

export interface TensorMetadata {
  readonly name: string;
  readonly datatype: string;
  /** -1 marks a variable dimension (the batch dimension included, when the model batches). */
  readonly shape: number[];
}

export interface ModelMetadata {
  readonly name: string;
  readonly versions: string[];
  readonly platform: string;
  readonly inputs: TensorMetadata[];
  readonly outputs: TensorMetadata[];
}

/** One RepositoryIndex entry: a model version and its state (READY, LOADING, UNAVAILABLE, ...). */
export interface RepositoryModel {
  readonly name: string;
  readonly version: string;
  readonly state: string;
  readonly reason: string;
}

export type RepositoryParameterValue = boolean | number | bigint | string | Uint8Array;

const TRITONCLIENT_MAX_RECEIVE = 2 ** 31 - 1;

/**
 * A client for `url`: `host:port` or `grpc://host:port` (plaintext),
 * `grpcs://host:port` (TLS), or any grpc-js target (`dns:///...`, `unix:///...`).
 */
export function createClient(url: string, options: ClientOptions = {}): HotpathClient {
  return new HotpathClient(url, options);
}

export class HotpathClient {
  private readonly channel: Client;
  private readonly defaultMetadata: Readonly<Record<string, string>>;
  private readonly defaultTimeoutMs: number | undefined;

  constructor(url: string, options: ClientOptions = {}) {
    const { target, tls } = parseUrl(url);
    const serverName = typeof options.tls === 'object' ? options.tls.serverName : undefined;
    this.channel = new Client(target, channelCredentials(options, tls), {
      'grpc.max_receive_message_length': options.maxReceiveMessageBytes ?? TRITONCLIENT_MAX_RECEIVE,
      'grpc.max_send_message_length': options.maxSendMessageBytes ?? -1,
      ...(serverName === undefined ? {} : { 'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName }),
      ...options.channelOptions,
    });
    this.defaultMetadata = { ...options.metadata, ...bearerHeader(options.apiKey) };
    this.defaultTimeoutMs = options.timeoutMs;
  }

  /** ServerLive. */
  async live(options: CallOptions = {}): Promise<boolean> {
    return (await this.call('serverLive', create(ServerLiveRequestSchema), options)).live;
  }

  /** ServerReady without a model; ModelReady with one (an unknown model rejects with NOT_FOUND). */
  ready(options?: CallOptions): Promise<boolean>;
  ready(model: string, options?: VersionOptions): Promise<boolean>;
  async ready(modelOrOptions?: string | CallOptions, options: VersionOptions = {}): Promise<boolean> {
    if (typeof modelOrOptions !== 'string') {
      return (await this.call('serverReady', create(ServerReadyRequestSchema), modelOrOptions ?? {})).ready;
    }
    const request = create(ModelReadyRequestSchema, { name: modelOrOptions, version: versionLabel(options.version) });
    return (await this.call('modelReady', request, options)).ready;
  }

  /** ServerMetadata without a model; ModelMetadata with one. */
  metadata(options?: CallOptions): Promise<ServerMetadata>;
  metadata(model: string, options?: VersionOptions): Promise<ModelMetadata>;
  async metadata(modelOrOptions?: string | CallOptions, options: VersionOptions = {}): Promise<ServerMetadata | ModelMetadata> {
    if (typeof modelOrOptions !== 'string') {
      const { name, version, extensions } = await this.call('serverMetadata', create(ServerMetadataRequestSchema), modelOrOptions ?? {});
      return { name, version, extensions };
    }
    const request = create(ModelMetadataRequestSchema, { name: modelOrOptions, version: versionLabel(options.version) });
    const response = await this.call('modelMetadata', request, options);
    const tensor = (t: { name: string; datatype: string; shape: bigint[] }): TensorMetadata => ({
      name: t.name,
      datatype: t.datatype,
      shape: t.shape.map((dim) => Number(dim)),
    });
    return {
      name: response.name,
      versions: response.versions,
      platform: response.platform,
      inputs: response.inputs.map(tensor),
      outputs: response.outputs.map(tensor),
    };
  }

  /** ModelConfig: Triton's `ModelConfig` message (protobuf-es; 64-bit fields are bigints). */
  async config(model: string, options: VersionOptions = {}): Promise<ModelConfig> {
    const request = create(ModelConfigRequestSchema, { name: model, version: versionLabel(options.version) });
    const { config } = await this.call('modelConfig', request, options);
    if (config === undefined) throw new InferenceError(status.INTERNAL, `ModelConfig for '${model}' came back without a config`);
    return config;
  }

  /** ModelStatistics: every model's versions without a model; that model's (or one version's) with one. */
  async statistics(model?: string, options: VersionOptions = {}): Promise<ModelStatistics[]> {
    const request = create(ModelStatisticsRequestSchema, { name: model ?? '', version: versionLabel(options.version) });
    return (await this.call('modelStatistics', request, options)).modelStats;
  }

  /** RepositoryIndex: every model version in the repository, or only the ready ones. */
  async repositoryIndex(options: CallOptions & { readonly ready?: boolean } = {}): Promise<RepositoryModel[]> {
    const request = create(RepositoryIndexRequestSchema, { ready: options.ready ?? false });
    const { models } = await this.call('repositoryIndex', request, options);
    return models.map(({ name, version, state, reason }) => ({ name, version, state, reason }));
  }

  /** RepositoryModelLoad: resolves once the model is loaded (and, on hotpath, warmed and checked). */
  async load(model: string, options: CallOptions & { readonly parameters?: Record<string, RepositoryParameterValue> } = {}): Promise<void> {
    const request = create(RepositoryModelLoadRequestSchema, {
      modelName: model,
      parameters: repositoryParameters(options.parameters),
    });
    await this.call('repositoryModelLoad', request, options);
  }

  /** RepositoryModelUnload: resolves once the model is unloaded (in-flight requests finish first). */
  async unload(model: string, options: CallOptions & { readonly unloadDependents?: boolean } = {}): Promise<void> {
    const request = create(RepositoryModelUnloadRequestSchema, {
      modelName: model,
      parameters: repositoryParameters(
        options.unloadDependents === undefined ? undefined : { unload_dependents: options.unloadDependents },
      ),
    });
    await this.call('repositoryModelUnload', request, options);
  }

  /**
   * ModelInfer. Inputs by name: a typed array (1-D), `string[]`/`Uint8Array[]`
   * (1-D BYTES), or `{datatype?, shape, data}`. All travel in raw_input_contents.
   */
  async infer(model: string, inputs: Readonly<Record<string, InferInput>>, options: InferOptions = {}): Promise<InferResult> {
    const request: ModelInferRequest = buildInferRequest(model, inputs, options);
    return toInferResult(await this.call('modelInfer', request, options));
  }

  /** Opens a ModelStreamInfer stream (see InferStream). */
  stream(options: StreamOptions = {}): InferStream {
    const method = rpc('modelStreamInfer');
    const call = this.channel.makeBidiStreamRequest<ModelInferRequest, ModelStreamInferResponse>(
      method.path,
      method.serialize,
      method.deserialize,
      this.metadataFor(options.metadata),
      this.grpcOptionsFor(options.timeoutMs),
    );
    return new InferStream(call);
  }

  /** Closes the channel: later calls fail at once. Open streams should be ended first. */
  close(): void {
    this.channel.close();
  }

  private call<M extends MethodName>(name: M, request: RequestOf<M>, options: CallOptions): Promise<ResponseOf<M>> {
    const method = rpc(name);
    // Captured here so a rejection points at the caller, not at grpc-js internals.
    const callSite = new Error();
    return new Promise<ResponseOf<M>>((resolve, reject) => {
      const signal = options.signal;
      if (signal?.aborted) {
        reject(new InferenceError(status.CANCELLED, `cancelled before it was sent: ${String(signal.reason)}`));
        return;
      }
      const onAbort = () => call.cancel();
      const call = this.channel.makeUnaryRequest<RequestOf<M>, ResponseOf<M>>(
        method.path,
        method.serialize,
        method.deserialize,
        request,
        this.metadataFor(options.metadata),
        this.grpcOptionsFor(options.timeoutMs),
        (err, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (err) reject(InferenceError.fromServiceError(err, callSite));
          else resolve(response!);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private metadataFor(headers: Readonly<Record<string, string>> | undefined): Metadata {
    const metadata = new Metadata();
    for (const [key, value] of Object.entries(this.defaultMetadata)) metadata.set(key, value);
    for (const [key, value] of Object.entries(headers ?? {})) metadata.set(key, value);
    return metadata;
  }

  private grpcOptionsFor(timeoutMs: number | undefined): GrpcCallOptions {
    const ms = timeoutMs ?? this.defaultTimeoutMs;
    return ms === undefined || !Number.isFinite(ms) || ms <= 0 ? {} : { deadline: Date.now() + ms };
  }
}

function parseUrl(url: string): { target: string; tls: boolean } {
  const match = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/i.exec(url);
  const scheme = match?.[1]?.toLowerCase();
  if (match === null || scheme === undefined || !['grpc', 'grpcs', 'http', 'https'].includes(scheme)) {
    return { target: url, tls: false };
  }
  return { target: match[2]!.replace(/\/+$/, ''), tls: scheme === 'grpcs' || scheme === 'https' };
}

function channelCredentials(options: ClientOptions, tlsFromUrl: boolean): ChannelCredentials {
  if (options.credentials !== undefined) return options.credentials;
  const tls = options.tls ?? tlsFromUrl;
  if (tls === false) return grpcCredentials.createInsecure();
  const certs: TlsOptions = tls === true ? {} : tls;
  const pem = (value: Buffer | string | undefined) => (value === undefined ? null : Buffer.from(value));
  const extraCheck = certs.checkServerIdentity;
  // grpc-js hands this to Node in place of its hostname check, so the standard check runs first.
  const verify = extraCheck === undefined
    ? {}
    : {
        checkServerIdentity: (hostname: string, certificate: PeerCertificate) =>
          standardServerIdentityCheck(hostname, certificate) ?? extraCheck(hostname, certificate),
      };
  return grpcCredentials.createSsl(pem(certs.rootCertificates), pem(certs.privateKey), pem(certs.certificateChain), verify);
}

function versionLabel(version: string | number | undefined): string {
  return version === undefined ? '' : String(version);
}

type RepositoryParameterInit = MessageInitShape<typeof ModelRepositoryParameterSchema>;

function repositoryParameters(
  parameters: Readonly<Record<string, RepositoryParameterValue>> | undefined,
): Record<string, RepositoryParameterInit> {
  const wire: Record<string, RepositoryParameterInit> = {};
  for (const [key, value] of Object.entries(parameters ?? {})) {
    if (typeof value === 'boolean') wire[key] = { parameterChoice: { case: 'boolParam', value } };
    else if (typeof value === 'string') wire[key] = { parameterChoice: { case: 'stringParam', value } };
    else if (value instanceof Uint8Array) wire[key] = { parameterChoice: { case: 'bytesParam', value } };
    else wire[key] = { parameterChoice: { case: 'int64Param', value: BigInt(value) } };
  }
  return wire;
}

/** `{authorization: 'Bearer <key>'}` for an API key; the key itself is never part of an error message. */
function bearerHeader(apiKey: string | undefined): Record<string, string> {
  if (apiKey === undefined) return {};
  if (typeof apiKey !== 'string' || !/^[\x21-\x7e]+$/.test(apiKey)) {
    const what = typeof apiKey !== 'string' ? typeof apiKey : `a string of ${apiKey.length} characters with spaces or non-ASCII characters`;
    throw new TypeError(`apiKey: expected printable ASCII without spaces (the key the server's tenants file hashes), got ${what}`);
  }
  return { authorization: `Bearer ${apiKey}` };
}
