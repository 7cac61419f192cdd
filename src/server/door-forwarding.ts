/**
 * A front-door thread's forwarding (server/door-threads.ts): every gRPC call
 * and every HTTP request a door thread admits goes, as sent, to the main
 * thread's own servers over their private unix sockets, and the answer comes
 * back as the main thread made it. So status codes, messages, statistics,
 * the cache, routes, control RPCs and tenant limits behave exactly as with
 * one thread: the main thread runs them, once, with its own checks (it
 * admits every forwarded call again: the door's admission only spares the
 * main thread the bodies of refused calls).
 *
 * gRPC: a pass-through service definition (identity serializers: the door
 * never decodes a message) for every method of GRPCInferenceService and
 * grpc.health.v1, whose handlers forward through one grpc-js Client per door
 * thread. Metadata goes as received (less the headers grpc-js sets itself),
 * with `x-forwarded-for` set to the client's address when the client sent
 * none (the main thread's peer is the private socket, and address-sticky
 * routes read x-forwarded-for first), and with the call's deadline; leading
 * and trailing metadata and the status come back; a cancelled call cancels
 * its forward. ModelStreamInfer and Health/Watch are piped with backpressure.
 *
 * HTTP: the door decides the admission from the headers (the same gate and
 * the same messages as the main thread's endpoints) and streams the body and
 * the answer through a keep-alive agent on the main thread's socket (with
 * `x-forwarded-for` as for gRPC); an answer cut mid-body cuts the client's.
 * A ModelInfer the door read and then hands back (server/door-http.ts) goes
 * the same way with the body it read.
 *
 * Ownership: one DoorForwarding per door thread, on that thread only.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import { pipeline, type Readable, type Writable } from 'node:stream';
import {
  Client,
  credentials,
  type Deadline,
  Metadata,
  status,
  type MethodDefinition,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type ServerWritableStream,
  type ServiceDefinition,
  type ServiceError,
  type StatusObject,
  type UntypedServiceImplementation,
  type sendUnaryData,
} from '@grpc/grpc-js';
import { unavailable } from '../common/serving-error.js';
import type { RpcName } from '../security/restricted-api.js';
import type { HttpAdmission } from './http/http-admission.js';
import { sendError } from './http/http-reply.js';

/** GRPCInferenceService's ModelInfer (grpc-service-definition.ts's path form). */
const MODEL_INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';

/** Bytes in, bytes out: the door never decodes a message. */
const identity = (bytes: Buffer): Buffer => bytes;

/** Headers grpc-js sets on every call itself; a copy from the client would be sent twice. */
const CALL_HEADERS = ['user-agent', 'content-type', 'te', 'grpc-timeout', 'grpc-encoding', 'grpc-accept-encoding', 'accept-encoding'];

/** `definition`'s methods (paths, stream kinds, names) with identity serializers. */
export function passThroughDefinition(definition: ServiceDefinition): ServiceDefinition<Record<string, MethodDefinition<Buffer, Buffer>>> {
  const methods: Record<string, MethodDefinition<Buffer, Buffer>> = {};
  for (const [name, method] of Object.entries(definition)) {
    methods[name] = {
      path: method.path,
      requestStream: method.requestStream,
      responseStream: method.responseStream,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
      originalName: method.originalName,
    };
  }
  return methods;
}

export class GrpcForwarding {
  private readonly client: Client;

  /** `forwardPath`: the main thread's private gRPC socket; `maxMessageBytes`: --max-message-size. */
  constructor(forwardPath: string, maxMessageBytes: number) {
    this.client = new Client(`unix:${forwardPath}`, credentials.createInsecure(), {
      'grpc.max_send_message_length': maxMessageBytes,
      // The main thread's answers may be as large as its own send limit (server-doors.ts).
      'grpc.max_receive_message_length': 256 * 1024 * 1024,
      // One connection carries every call of this door; it must not be closed for idling.
      'grpc.client_idle_timeout_ms': 2 ** 31 - 1,
    });
  }

  /** Handlers that forward every method of `definition` (a passThroughDefinition). */
  handlers(definition: ServiceDefinition): UntypedServiceImplementation {
    const handlers: UntypedServiceImplementation = {};
    for (const [name, method] of Object.entries(definition)) {
      if (!method.requestStream && !method.responseStream) handlers[name] = this.unary(method.path);
      else if (!method.requestStream) handlers[name] = this.serverStream(method.path);
      else if (method.responseStream) handlers[name] = this.bidi(method.path);
      // No client-streaming RPC exists in either service; one added later is answered UNIMPLEMENTED by grpc-js.
    }
    return handlers;
  }

  close(): void {
    this.client.close();
  }

  /**
   * One ModelInfer on the main thread, for a request a door stream read but
   * hands back (ForwardToMainThread): its answer bytes, or the main
   * thread's error (a ServiceError with its status and message). Sent with
   * `metadata` (the stream's: its key, and the request id the caller sets:
   * the main thread admits it again) and the stream's deadline; cancelled
   * when `stream` is (its client went away).
   */
  inferOnMain(request: Uint8Array, metadata: Metadata, stream: { getPeer(): string; getDeadline(): Deadline; once(event: 'cancelled', listener: () => void): unknown; off(event: 'cancelled', listener: () => void): unknown }): Promise<Buffer> {
    const bytes = Buffer.from(request.buffer, request.byteOffset, request.byteLength);
    return new Promise((resolve, reject) => {
      const call = this.client.makeUnaryRequest(
        MODEL_INFER_PATH, identity, identity, bytes, forwardedMetadata(metadata, stream.getPeer()), { deadline: stream.getDeadline() },
        (err, answer) => {
          stream.off('cancelled', cancel);
          if (err !== null || answer === undefined) reject(err ?? new Error('the main thread sent no answer'));
          else resolve(answer);
        },
      );
      const cancel = () => call.cancel();
      stream.once('cancelled', cancel);
    });
  }

  private unary(path: string) {
    return (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => {
      let trailers: Metadata | undefined;
      const upstream = this.client.makeUnaryRequest(
        path, identity, identity, call.request, forwardedMetadata(call.metadata, call.getPeer()), { deadline: call.getDeadline() },
        (err, answer) => {
          if (err !== null) {
            callback(asServerError(err));
            return;
          }
          // grpc-js calls this before it emits 'status'; the trailers are known a tick later.
          process.nextTick(() => callback(null, answer, trailers));
        },
      );
      upstream.on('metadata', (metadata: Metadata) => call.sendMetadata(metadata));
      upstream.on('status', (end: StatusObject) => {
        trailers = end.metadata;
      });
      call.on('cancelled', () => upstream.cancel());
    };
  }

  private serverStream(path: string) {
    return (call: ServerWritableStream<Buffer, Buffer>) => {
      const upstream = this.client.makeServerStreamRequest(
        path, identity, identity, call.request, forwardedMetadata(call.metadata, call.getPeer()), { deadline: call.getDeadline() },
      );
      pipeAnswers(upstream, call);
      call.on('cancelled', () => upstream.cancel());
    };
  }

  private bidi(path: string) {
    return (call: ServerDuplexStream<Buffer, Buffer>) => {
      const upstream = this.client.makeBidiStreamRequest(path, identity, identity, forwardedMetadata(call.metadata, call.getPeer()), {
        deadline: call.getDeadline(),
      });
      // Requests go on with the upstream's backpressure; the client's half-close ends the upstream's requests.
      call.pipe(upstream as unknown as Writable);
      pipeAnswers(upstream, call);
      call.on('cancelled', () => upstream.cancel());
    };
  }
}

/** The main thread's answers onto the door's call, then its status (OK: trailers; else the error as sent). */
function pipeAnswers(upstream: Readable, call: ServerWritableStream<Buffer, Buffer> | ServerDuplexStream<Buffer, Buffer>): void {
  upstream.on('metadata', (metadata: Metadata) => call.sendMetadata(metadata));
  upstream.pipe(call as unknown as Writable, { end: false });
  // The status comes after the last message; 'error' carries the same status and is handled here.
  upstream.on('error', () => {});
  upstream.on('status', (end: StatusObject) => {
    const finish = () => {
      if (end.code === status.OK) call.end(end.metadata);
      else call.emit('error', { code: end.code, details: end.details, metadata: end.metadata });
    };
    // Answers still buffered in the pipe go first: grpc-js ends the stream before it emits the status.
    if (upstream.readableEnded) finish();
    else upstream.once('end', finish);
  });
}

/** A copy of the call's metadata, less what grpc-js sets on a call of its own, with the client's address. */
function forwardedMetadata(metadata: Metadata, peer: string): Metadata {
  const copy = metadata.clone();
  for (const name of CALL_HEADERS) copy.remove(name);
  const address = grpcPeerAddress(peer);
  if (address !== undefined && copy.get('x-forwarded-for').length === 0) copy.set('x-forwarded-for', address);
  return copy;
}

/**
 * The address in grpc-js's server-side `getPeer()`: `remoteAddress:remotePort`
 * (IPv6 unbracketed, so `::1:5555`: the port goes first, as a TCP peer always
 * has one), the bare address without a port, or 'unknown' (undefined here).
 */
function grpcPeerAddress(peer: string): string | undefined {
  const address = peer.replace(/:\d+$/, '');
  if (isIP(address) !== 0) return clientAddressOf(address);
  return isIP(peer) !== 0 ? clientAddressOf(peer) : undefined;
}

/**
 * A socket's remote address as x-forwarded-for carries it: an IPv4-mapped IPv6
 * address as its IPv4 form, as the main thread's peerAddress() reads a peer, so
 * an address-sticky route hashes a client alike with or without door threads.
 */
function clientAddressOf(remoteAddress: string | undefined): string | undefined {
  if (remoteAddress === undefined || remoteAddress === '') return undefined;
  return remoteAddress.startsWith('::ffff:') && remoteAddress.includes('.') ? remoteAddress.slice(7) : remoteAddress;
}

function asServerError(err: ServiceError): Partial<StatusObject> {
  return { code: err.code, details: err.details, metadata: err.metadata };
}

/** The RPC an HTTP endpoint admits (rest-server.ts's routes), so the door decides before the body; undefined: no endpoint. */
export function restRpcOf(method: string, path: string): RpcName | undefined {
  for (const [pattern, methods] of REST_ADMISSIONS) {
    if (pattern.test(path)) return methods[method];
  }
  return undefined;
}

const MODEL = '/v2/models/[^/]+(?:/versions/[0-9]+)?';
const REST_ADMISSIONS: readonly (readonly [RegExp, Readonly<Record<string, RpcName>>])[] = [
  [/^\/v2\/health\/live$/, { GET: 'ServerLive' }],
  [/^\/v2\/health\/ready$/, { GET: 'ServerReady' }],
  [/^\/healthz$/, { GET: 'Healthz' }],
  [/^\/v2$/, { GET: 'ServerMetadata' }],
  [/^\/v2\/models\/stats$/, { GET: 'ModelStatistics' }],
  [new RegExp(`^${MODEL}$`), { GET: 'ModelMetadata' }],
  [new RegExp(`^${MODEL}/ready$`), { GET: 'ModelReady' }],
  [new RegExp(`^${MODEL}/config$`), { GET: 'ModelConfig' }],
  [new RegExp(`^${MODEL}/stats$`), { GET: 'ModelStatistics' }],
  [new RegExp(`^${MODEL}/drift$`), { GET: 'ModelStatistics' }],
  [new RegExp(`^${MODEL}/infer$`), { POST: 'ModelInfer' }],
  [/^\/v2\/repository\/index$/, { POST: 'RepositoryIndex' }],
  [/^\/v2\/repository\/models\/[^/]+\/load$/, { POST: 'RepositoryModelLoad' }],
  [/^\/v2\/repository\/models\/[^/]+\/unload$/, { POST: 'RepositoryModelUnload' }],
];

/** Hop-by-hop headers: about one connection, not the request; each side sets its own. */
const HOP_HEADERS = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'expect']);

export class HttpForwarding {
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });

  constructor(
    private readonly forwardPath: string,
    private readonly admission: HttpAdmission,
  ) {}

  /** The door's request handler: admitted here, then forwarded as received. */
  readonly handle = (request: IncomingMessage, response: ServerResponse): void => {
    const path = (request.url ?? '/').split('?')[0]!;
    const rpc = restRpcOf(request.method ?? 'GET', path);
    try {
      // Unknown paths and methods go on: the main thread answers their 404 and 405 as it does today.
      if (rpc !== undefined) this.admission.admit(rpc, request);
    } catch (err) {
      sendError(response, err);
      return;
    }
    this.forward(request, response);
  };

  /**
   * Sends an admitted request to the main thread, which answers `response`.
   * `body`: undefined while nothing of the request's body was read (it
   * streams on as received); else the whole body as the door read it,
   * inflated (a ModelInfer the door thread hands back after reading it), sent
   * with its own length and without the Content-Encoding it arrived in.
   * Returns false when nothing was sent: the client had gone, so the main
   * thread never sees (or counts) the request.
   */
  forward(request: IncomingMessage, response: ServerResponse, body?: Buffer): boolean {
    // A client gone while the door read or ran its request: nobody is left to answer.
    if (response.destroyed) return false;
    const headers = forwardedHeaders(request);
    if (body !== undefined) {
      delete headers['transfer-encoding'];
      delete headers['content-encoding'];
      headers['content-length'] = String(body.byteLength);
    }
    const upstream = http.request(
      { socketPath: this.forwardPath, agent: this.agent, method: request.method, path: request.url, headers },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answerHeaders(answer));
        // pipeline, not pipe: an answer cut mid-body (the main thread's socket reset) cuts the client's too,
        // so the client sees a truncated answer fail instead of waiting on a response that never ends.
        pipeline(answer, response, (err) => {
          if (err) response.destroy();
        });
      },
    );
    upstream.on('error', () => {
      if (!response.headersSent) sendError(response, unavailable('the front door could not reach the server thread'));
      else response.destroy();
    });
    // A client gone before its answer: the forwarded request goes too.
    response.on('close', () => {
      if (!response.writableFinished) upstream.destroy();
    });
    if (body === undefined) request.pipe(upstream);
    else upstream.end(body);
    return true;
  }

  close(): void {
    this.agent.destroy();
  }
}

function forwardedHeaders(request: IncomingMessage): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(request.headers)) if (!HOP_HEADERS.has(name) && value !== undefined) headers[name] = value;
  // A chunked body stays chunked on the way (its length is not known here either).
  if (request.headers['transfer-encoding'] !== undefined) headers['transfer-encoding'] = 'chunked';
  // The main thread's peer is the private socket: the client's address goes along unless the client sent one.
  const address = clientAddressOf(request.socket.remoteAddress);
  if (address !== undefined && headers['x-forwarded-for'] === undefined) headers['x-forwarded-for'] = address;
  return headers;
}

function answerHeaders(answer: IncomingMessage): http.OutgoingHttpHeaders {
  const headers: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(answer.headers)) if (!HOP_HEADERS.has(name) && value !== undefined) headers[name] = value;
  return headers;
}
