/**
 * What the main thread and a front-door thread tell each other
 * (`--front-door-threads N`, server/door-threads.ts): the settings a door
 * thread starts from (its workerData) and the messages both ways. Plain data
 * only: everything here crosses `postMessage` by structured clone, so no
 * logger, no Buffer that must stay a Buffer, no function.
 *
 * What a door thread does: it owns the connections the acceptor hands it
 * (TLS, HTTP/2 and HTTP/1 framing, the connection options, the header
 * timeout, the admission from headers); it serves ModelInfer (gRPC and HTTP)
 * itself for the versions of the door catalog the main thread posts
 * (inference/door-catalog.ts), and forwards every other call, bytes as sent,
 * to the main thread's own servers over private unix sockets
 * (server/door-forwarding.ts). Statistics and metrics of the requests it
 * serves go to shared memory the main thread's scrape reads, and so do the
 * tenants' rate and in-flight counts (the main thread's limiter, shared); the
 * cache and routes stay the main thread's (their requests are forwarded).
 */
import type { ConnectionLimits } from '../security/connection-limits.js';
import type { DoorCatalog } from '../inference/door-catalog.js';
import type { DeviceFaultReport } from '../inference/door-inference.js';
import type { TlsFiles } from '../security/tls.js';
import type { BodyBudgetShare } from './http/body-budget.js';
import type { SharedTenantLimits } from '../security/tenant-limits.js';

/**
 * A door thread's counts (Float64 words in a SharedArrayBuffer, written by
 * the door thread alone, read by the main thread at scrape time): ModelInfer
 * calls it answered itself, and those it forwarded, gRPC and HTTP together
 * (HTTP: POST .../infer requests past the admission; server/door-http.ts).
 */
export const DOOR_COUNTERS = { servedInDoor: 0, forwarded: 1, words: 2 } as const;

export function newDoorCounters(): SharedArrayBuffer {
  return new SharedArrayBuffer(DOOR_COUNTERS.words * Float64Array.BYTES_PER_ELEMENT);
}

/** The gRPC or the HTTP port, as a door thread serves it. */
export interface DoorPortSettings {
  /** Certificates, read by the door thread itself (and again on a reload message); undefined: plaintext. */
  readonly tls: TlsFiles | undefined;
  /** The main thread's private listener this door forwards to (a unix socket path). */
  readonly forwardPath: string;
}

export interface DoorThreadSettings {
  /** 0..N-1: the door's label in logs and metrics (`door_thread`). */
  readonly index: number;
  /** The thread's counts (DOOR_COUNTERS); FrontDoorThreads sets it (a replacement continues its predecessor's). */
  readonly counters?: SharedArrayBuffer;
  /** pino's level name of the server's logger; the door's lines go to the main thread's logger. */
  readonly logLevel: string;
  readonly maxMessageBytes: number;
  /** --log-sample-rate (the access log's successes): the door logs the requests it serves. */
  readonly accessLogSampleRate: number;
  readonly connections: ConnectionLimits | undefined;
  readonly headerTimeoutMs: number;
  readonly bodyIdleTimeoutMs: number;
  /** --http-body-budget and --http-json-queue as given (undefined: their defaults), for the HTTP bodies the door reads. */
  readonly httpBodyBudgetBytes?: number | undefined;
  readonly httpJsonQueue?: number | undefined;
  /** The door's share (its slot) of the body budget's count, shared with the main thread and the other doors (http/body-budget.ts); absent: the door's own. */
  readonly httpBodyBudgetMemory?: BodyBudgetShare | undefined;
  /** --grpc-ignore-idle-stream-frames (plaintext gRPC only, as on the main thread). */
  readonly grpcIgnoreIdleStreamFrames: boolean;
  /**
   * The access settings the door's admission decides from (API keys as
   * `{tenant, sha256}` with the digest as bytes, restricted groups).
   */
  readonly access: {
    readonly requireApiKey: boolean | undefined;
    readonly apiKeys: readonly { readonly tenant: string; readonly sha256: Uint8Array }[];
    readonly adminTenant: string | undefined;
    readonly grpcRestrictedProtocol: readonly string[];
    readonly httpRestrictedApi: readonly string[];
  };
  /**
   * The main thread's tenant limiter, shared (security/tenant-limits.ts
   * share()): the door admits against the same counts, so each tenant's
   * limits hold for the whole process. Undefined: no tenant has limits.
   */
  readonly tenantLimits?: SharedTenantLimits | undefined;
  /** undefined: the door is off (--allow-grpc=false, --http-port -1). */
  readonly grpc: DoorPortSettings | undefined;
  readonly http: DoorPortSettings | undefined;
}

/** Main thread → door thread. */
export type ToDoorMessage =
  /** An accepted connection: `fd` is a duplicate the door now owns; `id` names it in the 'closed' answer. */
  | { readonly type: 'connection'; readonly door: 'grpc' | 'http'; readonly fd: number; readonly id: number }
  /** SIGHUP: read the certificate files again (new handshakes take them). */
  | { readonly type: 'reload-certificates' }
  /** The versions to serve ModelInfer for here from now on (inference/door-catalog.ts). */
  | { readonly type: 'catalog'; readonly catalog: DoorCatalog }
  /** The drain: no new calls; answer 'drained' once every open call has finished. */
  | { readonly type: 'drain' }
  /** The drain timed out: cut what is still open. */
  | { readonly type: 'cut' };

/** Door thread → main thread. */
export type FromDoorMessage =
  /** The door's servers are built: connections may come. */
  | { readonly type: 'ready' }
  /** Connection `id` closed: its slot under the connection caps is free again. */
  | { readonly type: 'closed'; readonly id: number }
  /** One pino line (JSON), written by the main thread's logger. */
  | { readonly type: 'log'; readonly line: string }
  /** Every call the door had open finished (after 'drain'). */
  | { readonly type: 'drained' }
  /** A batch of the door's requests on `model` `version` failed on the device: the main thread moves the version to CPU. */
  | { readonly type: 'device-fault'; readonly report: DeviceFaultReport };
