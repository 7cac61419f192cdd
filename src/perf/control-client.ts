/**
 * The few control calls `hotpath perf` and `hotpath tune` make besides the
 * load itself, over either protocol the load speaks: the model's metadata
 * (to build the request), its config (max_batch_size, and for tune the whole
 * ModelConfig), its statistics (the server's side of a window), and a load
 * with or without Triton's `config` override. Over gRPC they go through the
 * typed client; over HTTP through node:http with the V2 REST routes
 * (`GET /v2/models/{m}`, `.../config`, `.../stats`,
 * `POST /v2/repository/models/{m}/load`), so a server that offers only one
 * door is measured over that door.
 *
 * Main thread of the perf or tune process; a client owns its connections
 * until `close`.
 */
import http from 'node:http';
import https from 'node:https';
import { fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { createClient, type ClientOptions, type HotpathClient, type ModelMetadata } from '../client/client.js';
import { ModelConfigSchema, type ModelConfig } from '../generated/model_config_pb.js';
import { splitAddress } from './h2-raw-session.js';
import { serverStatsFromJson, sumStatistics, type StatsSnapshot } from './server-stats.js';

export type Protocol = 'grpc' | 'http';

export interface ControlOptions {
  readonly protocol: Protocol;
  /** host:port */
  readonly url: string;
  readonly apiKey: string | undefined;
  /** PEM bytes and server name; undefined: plaintext. */
  readonly tls: { readonly ca?: Buffer | undefined; readonly cert?: Buffer | undefined; readonly key?: Buffer | undefined; readonly serverName?: string | undefined } | undefined;
}

export interface ControlClient {
  metadata(model: string, version: string): Promise<ModelMetadata>;
  config(model: string, version: string): Promise<ModelConfig>;
  statistics(model: string, version: string): Promise<StatsSnapshot>;
  /** Loads (or reloads) the model; with `config`, that ModelConfig replaces config.pbtxt for this load. */
  load(model: string, config: ModelConfig | undefined, timeoutMs: number): Promise<void>;
  close(): void;
}

/** A ModelConfig as the JSON the `config` load parameter carries (proto field names, as Triton reads it). */
export function configJson(config: ModelConfig): string {
  return JSON.stringify(toJson(ModelConfigSchema, config, { useProtoFieldName: true }));
}

export function createControlClient(options: ControlOptions): ControlClient {
  return options.protocol === 'grpc' ? new GrpcControl(options) : new HttpControl(options);
}

const CALL_TIMEOUT_MS = 10_000;

class GrpcControl implements ControlClient {
  private readonly client: HotpathClient;

  constructor(options: ControlOptions) {
    const clientOptions: ClientOptions = {
      ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
      ...(options.tls === undefined ? {} : {
        tls: { rootCertificates: options.tls.ca, certificateChain: options.tls.cert, privateKey: options.tls.key, serverName: options.tls.serverName },
      }),
    };
    this.client = createClient(options.tls === undefined ? options.url : `grpcs://${options.url}`, clientOptions);
  }

  metadata(model: string, version: string): Promise<ModelMetadata> {
    return this.client.metadata(model, { ...versionOption(version), timeoutMs: CALL_TIMEOUT_MS });
  }

  config(model: string, version: string): Promise<ModelConfig> {
    return this.client.config(model, { ...versionOption(version), timeoutMs: CALL_TIMEOUT_MS });
  }

  async statistics(model: string, version: string): Promise<StatsSnapshot> {
    return sumStatistics(await this.client.statistics(model, { ...versionOption(version), timeoutMs: CALL_TIMEOUT_MS }));
  }

  load(model: string, config: ModelConfig | undefined, timeoutMs: number): Promise<void> {
    return this.client.load(model, { timeoutMs, ...(config === undefined ? {} : { parameters: { config: configJson(config) } }) });
  }

  close(): void {
    this.client.close();
  }
}

class HttpControl implements ControlClient {
  private readonly agent: http.Agent;

  constructor(private readonly options: ControlOptions) {
    const tls = options.tls;
    this.agent = tls === undefined
      ? new http.Agent({ keepAlive: true, maxSockets: 2 })
      : new https.Agent({ keepAlive: true, maxSockets: 2, ca: tls.ca, cert: tls.cert, key: tls.key, ...(tls.serverName ? { servername: tls.serverName } : {}) });
  }

  async metadata(model: string, version: string): Promise<ModelMetadata> {
    const json = await this.request('GET', modelPath(model, version), undefined, CALL_TIMEOUT_MS) as Record<string, unknown>;
    const tensors = (list: unknown) => (Array.isArray(list) ? list : []).map((t: { name: string; datatype: string; shape: (number | string)[] }) => ({
      name: t.name, datatype: t.datatype, shape: t.shape.map(Number),
    }));
    return {
      name: String(json['name'] ?? model),
      versions: Array.isArray(json['versions']) ? json['versions'].map(String) : [],
      platform: String(json['platform'] ?? ''),
      inputs: tensors(json['inputs']),
      outputs: tensors(json['outputs']),
    };
  }

  async config(model: string, version: string): Promise<ModelConfig> {
    const json = await this.request('GET', `${modelPath(model, version)}/config`, undefined, CALL_TIMEOUT_MS);
    // The config route answers the bare ModelConfig (Triton's shape); ignore fields a newer server adds.
    return fromJson(ModelConfigSchema, json as JsonValue, { ignoreUnknownFields: true });
  }

  async statistics(model: string, version: string): Promise<StatsSnapshot> {
    return serverStatsFromJson(await this.request('GET', `${modelPath(model, version)}/stats`, undefined, CALL_TIMEOUT_MS));
  }

  async load(model: string, config: ModelConfig | undefined, timeoutMs: number): Promise<void> {
    const body = config === undefined ? {} : { parameters: { config: configJson(config) } };
    await this.request('POST', `/v2/repository/models/${encodeURIComponent(model)}/load`, body, timeoutMs);
  }

  close(): void {
    this.agent.destroy();
  }

  /** One JSON exchange; a non-2xx answer throws with the server's `error` text. */
  private request(method: string, route: string, body: unknown, timeoutMs: number): Promise<unknown> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const [host, port] = splitAddress(this.options.url);
    const headers: http.OutgoingHttpHeaders = {
      ...(payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': payload.length }),
      ...(this.options.apiKey === undefined ? {} : { authorization: `Bearer ${this.options.apiKey}` }),
    };
    const transport = this.options.tls === undefined ? http : https;
    return new Promise((resolve, reject) => {
      const request = transport.request({ host, port, path: route, method, headers, agent: this.agent, timeout: timeoutMs }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: unknown;
          try {
            json = text === '' ? {} : JSON.parse(text);
          } catch {
            json = undefined;
          }
          const status = response.statusCode ?? 0;
          if (status >= 200 && status < 300 && json !== undefined) return resolve(json);
          const error = typeof json === 'object' && json !== null && 'error' in json ? String((json as { error: unknown }).error) : text.slice(0, 200);
          reject(new Error(`${method} ${route}: HTTP ${status}${error ? `: ${error}` : ''}`));
        });
      });
      request.on('timeout', () => request.destroy(new Error(`${method} ${route}: no answer within ${timeoutMs} ms`)));
      request.on('error', reject);
      request.end(payload);
    });
  }
}

function versionOption(version: string): { version?: string } {
  return version === '' ? {} : { version };
}

/** The V2 REST path of a model, or of one version of it. */
export function modelPath(model: string, version: string): string {
  return `/v2/models/${encodeURIComponent(model)}${version === '' ? '' : `/versions/${encodeURIComponent(version)}`}`;
}

