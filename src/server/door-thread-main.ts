/**
 * The entry point of a front-door thread (a worker_threads Worker started by
 * server/door-threads.ts with a DoorThreadSettings as workerData).
 *
 * It builds a gRPC server and an HTTP server that listen on nothing: the
 * main thread's acceptor (server/door-acceptor.ts) hands it accepted
 * connections as duplicated descriptors, and this thread wraps each in a
 * net.Socket and gives it to grpc-js (`createConnectionInjector`) or to its
 * HTTP server (a 'connection' event). What each connection gets here is what
 * it gets on the main thread: TLS (the same certificate files, reloaded on
 * SIGHUP), the gRPC connection options, the HTTP timeouts, the header
 * timeout, the idle-stream frame filter, the body-idle watch and the
 * admission from headers (tenant limits included: the main thread's limiter,
 * shared). Inference for the versions the main thread's
 * door catalog lists is served here (inference/door-inference.ts): gRPC
 * ModelInfer, ModelStreamInfer requests, and HTTP infer (server/door-http.ts).
 * Every other admitted call is forwarded to the main thread
 * (server/door-forwarding.ts), bytes as received (a stream's request the door
 * does not serve goes as one ModelInfer).
 *
 * Connection caps are counted once, by the acceptor on the main thread: each
 * connection's close is posted back so its slot is freed.
 *
 * Logs: pino lines are posted to the main thread and written by its logger
 * (one destination, one format), tagged `door_thread`.
 *
 * This whole module runs on its door thread only.
 */
import { closeSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import pino from 'pino';
import { fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  type ModelInferRequest,
  type ModelInferResponse,
  type ModelStreamInferResponse,
} from '../generated/grpc_service_pb.js';
import { status, type MethodDefinition, type sendUnaryData, type ServerDuplexStream, type ServerUnaryCall, type ServiceError } from '@grpc/grpc-js';
import { ServingError, toServiceError } from '../common/serving-error.js';
import { AccessLog } from '../observability/access-log.js';
import { DoorInference, ForwardToMainThread } from '../inference/door-inference.js';
import type { InferContext, InferencePath } from '../inference/infer-context.js';
import { serveModelStream } from './handlers/model-stream-infer.js';
import { contextOf } from './handlers/infer-handlers.js';
import { REQUEST_ID_HEADER, trailersFor } from './request-context.js';
import { RefusalLog } from '../observability/refusal-log.js';
import { doorGates } from '../security/caller.js';
import { applyHttpConnectionLimits, grpcConnectionOptions } from '../security/connection-limits.js';
import { ServerTls, type TlsFiles } from '../security/tls.js';
import { TenantLimiter } from '../security/tenant-limits.js';
import { GrpcAdmission } from './admission.js';
import { GrpcForwarding, HttpForwarding, passThroughDefinition } from './door-forwarding.js';
import { DOOR_COUNTERS, newDoorCounters, type DoorThreadSettings, type FromDoorMessage, type ToDoorMessage } from './door-thread-settings.js';
import { grpcBodyIdleInterceptors } from './grpc-body-idle.js';
import { inferenceServiceDefinition, UndecodedMessage } from './grpc-service-definition.js';
import { watchHttp2Preface } from './grpc-listener.js';
import { answerExpectContinue } from './http/body-reader.js';
import { httpBodyLimits } from './http/rest-server.js';
import { DoorHttp } from './door-http.js';
import { HttpAdmission } from './http/http-admission.js';
import { withIdleStreamFrameFilter } from './idle-reset-filter.js';

const port = parentPort;
if (port === null) throw new Error('door-thread-main runs as a worker thread (server/door-threads.ts starts it)');
const settings = workerData as DoorThreadSettings;
const post = (message: FromDoorMessage) => port.postMessage(message);

const logger = pino(
  { level: settings.logLevel, base: { door_thread: settings.index } },
  { write: (line: string) => post({ type: 'log', line }) },
);
const log = logger.child({ component: 'door-thread' });

// The same gates the main thread builds (keys, restricted groups), from the same settings.
const gates = doorGates({
  ...settings.access,
  // Structured clone turned each digest into a Uint8Array; the key ring compares Buffers.
  apiKeys: settings.access.apiKeys.map((key) => ({ tenant: key.tenant, sha256: Buffer.from(key.sha256) })),
});

// The main thread's tenant limiter, shared: this thread admits against the same counts, in its own shard of refusals.
const limits = settings.tenantLimits === undefined ? undefined : TenantLimiter.attach(settings.tenantLimits, { shard: settings.index + 1 });

/** The gRPC port: a server fed by injected connections, forwarding every call. */
function grpcDoor(forwardPath: string, tls: ServerTls | undefined) {
  // As the main thread's: a ModelInfer whose caller's tenant is over its limits is refused before its message is read.
  const admission = new GrpcAdmission({ gate: gates.grpc, refusals: new RefusalLog(logger.child({ component: 'auth' })), limits });
  const server = new Server({
    'grpc.max_receive_message_length': settings.maxMessageBytes,
    'grpc.max_send_message_length': 256 * 1024 * 1024,
    ...grpcConnectionOptions(settings.connections),
    interceptors: [
      ...grpcBodyIdleInterceptors(settings.bodyIdleTimeoutMs, logger),
      (descriptor, call) => admission.interceptor(descriptor, call),
    ],
  });
  const forwarding = new GrpcForwarding(forwardPath, settings.maxMessageBytes);
  // Typed as the main thread's (the same prescan guard): ModelStreamInfer's messages are decoded here.
  const typed = inferenceServiceDefinition();
  const inference = { ...passThroughDefinition(typed), ModelStreamInfer: typed.ModelStreamInfer! };
  admission.register(inference);
  const handlers = forwarding.handlers(inference);
  handlers.ModelInfer = servedHere(handlers.ModelInfer as ForwardedUnary, typed.ModelInfer as MethodDefinition<ModelInferRequest, ModelInferResponse>);
  handlers.ModelStreamInfer = streamedHere(forwarding);
  server.addService(inference, handlers);
  const health = passThroughDefinition(healthService);
  admission.register(health, (method) => `Health${method}`);
  server.addService(health, forwarding.handlers(health));
  const injector = server.createConnectionInjector(tls?.grpcCredentials() ?? ServerCredentials.createInsecure());
  const drops = new RefusalLog(logger.child({ component: 'connections' }));
  const filter = settings.grpcIgnoreIdleStreamFrames && tls === undefined;
  return {
    adopt(socket: net.Socket): void {
      watchHttp2Preface(socket, settings.headerTimeoutMs);
      injector.injectConnection(
        filter
          ? withIdleStreamFrameFilter(socket, () =>
              drops.refused('grpc:idle-stream-frame', {}, 'dropped a frame for a gRPC stream the client never opened (a call it cancelled at once)'))
          : socket,
      );
    },
    drained: () => new Promise<void>((resolve) => server.tryShutdown(() => resolve())),
    cut: () => server.forceShutdown(),
    close: () => forwarding.close(),
  };
}

type ForwardedUnary = (call: ServerUnaryCall<Buffer, Buffer>, callback: sendUnaryData<Buffer>) => void;

/** This thread's ModelInfer counts, read by the main thread at scrape time (one writer: this thread). */
const counts = new Float64Array(settings.counters ?? newDoorCounters());

/** ModelInfer as served in the door thread (the main thread's door catalog). */
const served = new DoorInference({
  door: settings.index,
  logger: logger.child({ component: 'door-inference' }),
  accessLog: new AccessLog(logger, settings.accessLogSampleRate),
  limits,
  onDeviceFault: (report) => post({ type: 'device-fault', report }),
});

/**
 * ModelInfer: decoded and served here when the catalog lists its version
 * (door-inference.ts); otherwise, or when the door hands it back
 * (ForwardToMainThread, before anything was counted), forwarded as received.
 * A request the prescan or the decoder refuses is forwarded too: the main
 * thread answers it with its own status and message.
 */
function servedHere(forward: ForwardedUnary, typed: MethodDefinition<ModelInferRequest, ModelInferResponse>): ForwardedUnary {
  return (call, callback) => {
    let request: ModelInferRequest;
    let context: InferContext;
    try {
      // The main thread's own decoding (the prescan guard, then the decoder): a refusal is the main thread's to answer.
      const decoded = typed.requestDeserialize(call.request) as ModelInferRequest | UndecodedMessage;
      if (decoded instanceof UndecodedMessage) throw decoded.refusal;
      request = decoded;
      context = contextOf(call as unknown as ServerUnaryCall<ModelInferRequest, ModelInferResponse>);
    } catch {
      counts[DOOR_COUNTERS.forwarded]! += 1;
      forward(call, callback);
      return;
    }
    served.infer(request, context).then(
      (response) => {
        counts[DOOR_COUNTERS.servedInDoor]! += 1;
        callback(null, typed.responseSerialize(response), trailersFor(context));
      },
      (err: unknown) => {
        if (err instanceof ForwardToMainThread) {
          counts[DOOR_COUNTERS.forwarded]! += 1;
          forward(call, callback);
          return;
        }
        counts[DOOR_COUNTERS.servedInDoor]! += 1;
        callback({ ...toServiceError(err), metadata: trailersFor(context) });
      },
    );
  };
}

/** Called when the drain begins: open ModelStreamInfer streams answer what they admitted and end. */
const stopListeners = new Set<() => void>();

/**
 * ModelStreamInfer served here (model-stream-infer.ts's pacing and answers,
 * as on the main thread): each request is served by the door when its
 * version is in the catalog, otherwise (or when the door hands it back)
 * sent to the main thread as one ModelInfer with the stream's metadata and
 * deadline, its answer or error put on the stream in its place.
 */
function streamedHere(forwarding: GrpcForwarding) {
  return (stream: ServerDuplexStream<ModelInferRequest, ModelStreamInferResponse>) => {
    let context: InferContext;
    try {
      context = contextOf(stream);
    } catch (err) {
      stream.emit('error', toServiceError(err));
      return;
    }
    // Each request the door hands back carries the stream's request id, so the main thread logs it under the
    // id the client gets in the stream's trailers (as one thread logs every request of a stream).
    const forwardedStreamMetadata = stream.metadata.clone();
    forwardedStreamMetadata.set(REQUEST_ID_HEADER, context.requestId);
    const path: InferencePath = {
      infer: async (request, requestContext, method) => {
        try {
          const answer = await served.infer(request, requestContext, method);
          counts[DOOR_COUNTERS.servedInDoor]! += 1;
          return answer;
        } catch (err) {
          if (!(err instanceof ForwardToMainThread)) {
            counts[DOOR_COUNTERS.servedInDoor]! += 1;
            throw err;
          }
        }
        counts[DOOR_COUNTERS.forwarded]! += 1;
        // As the main thread's runner: a request whose client cancelled before it started fails CANCELED.
        if (requestContext.cancelledAtMs?.() !== undefined) {
          throw new ServingError('cancelled', `model '${request.modelName}': the client cancelled the request before it started executing`);
        }
        let bytes: Buffer;
        try {
          bytes = await forwarding.inferOnMain(toBinary(ModelInferRequestSchema, request), forwardedStreamMetadata, stream);
        } catch (err) {
          // The main thread's answer to this request: its status and message, as one thread gives them.
          const failure = err as Partial<ServiceError>;
          throw new ServingError(failure.code ?? status.UNAVAILABLE, failure.details ?? 'the front door could not reach the server thread');
        }
        return fromBinary(ModelInferResponseSchema, bytes);
      },
      get isAccepting() {
        return !draining;
      },
      onStopAccepting(listener) {
        stopListeners.add(listener);
        return () => stopListeners.delete(listener);
      },
    };
    serveModelStream(stream, path, context);
  };
}

/** The HTTP port: an HTTP(S) server fed by 'connection' events, serving ModelInfer here (door-http.ts) and forwarding the rest. */
function httpDoor(forwardPath: string, tls: ServerTls | undefined) {
  const admission = new HttpAdmission(gates.http, new RefusalLog(logger.child({ component: 'auth' })));
  const forwarding = new HttpForwarding(forwardPath, admission);
  const httpLog = logger.child({ component: 'http' });
  const framing = new RefusalLog(httpLog);
  const requests = new DoorHttp({
    served,
    forwarding,
    admission,
    bodies: httpBodyLimits(settings.maxMessageBytes, {
      httpBodyBudgetBytes: settings.httpBodyBudgetBytes,
      httpJsonQueue: settings.httpJsonQueue,
      bodyIdleTimeoutMs: settings.bodyIdleTimeoutMs,
    }, settings.httpBodyBudgetMemory),
    log: httpLog,
    framing,
    count: (answeredBy) => {
      counts[answeredBy === 'door' ? DOOR_COUNTERS.servedInDoor : DOOR_COUNTERS.forwarded]! += 1;
    },
  });
  // Requests in flight, so the drain waits for their answers (a server that never listened has no close() to wait on).
  let active = 0;
  let idle: (() => void) | undefined;
  const tracked = (request: http.IncomingMessage, response: http.ServerResponse) => {
    active += 1;
    response.once('close', () => {
      active -= 1;
      if (active === 0) idle?.();
    });
    requests.handle(request, response);
  };
  // As rest-server.ts: the timeouts are swept once a second.
  const sweep = { connectionsCheckingInterval: 1000 };
  const server: http.Server =
    tls === undefined ? http.createServer(sweep, tracked) : https.createServer({ ...tls.httpsOptions(), ...sweep }, tracked);
  tls?.follow(server);
  applyHttpConnectionLimits(server, settings.connections);
  server.headersTimeout = Math.min(settings.headerTimeoutMs, server.requestTimeout || Infinity);
  // Node (20 and 24, lib/_http_server.js) builds the server's connections list and starts the sweep of
  // headersTimeout/requestTimeout only on the server's 'listening' event (setupConnectionsTracking); without
  // that list the timeouts never fire and closeIdleConnections/closeAllConnections do nothing. This server
  // never listens (connections come as 'connection' events), so it gets the event once here, before the first
  // connection; the sweep's interval is unref'd, so it keeps no thread alive.
  server.emit('listening');
  // A declared body above the limit gets its 413 before the body is sent, as on the main thread.
  answerExpectContinue(server, settings.maxMessageBytes, framing, tracked);
  return {
    adopt(socket: net.Socket): void {
      server.emit('connection', socket);
    },
    drained: () =>
      new Promise<void>((resolve) => {
        server.closeIdleConnections();
        if (active === 0) resolve();
        else idle = resolve;
      }),
    cut: () => server.closeAllConnections(),
    close: () => {
      forwarding.close();
      void requests.close();
    },
  };
}

/** A door's certificates, read here from the files the main thread checked at start-up. */
function doorTls(door: 'grpc' | 'http', files: TlsFiles | undefined): ServerTls | undefined {
  return files === undefined ? undefined : new ServerTls(door, files);
}

const grpcTls = doorTls('grpc', settings.grpc?.tls);
const httpTls = doorTls('http', settings.http?.tls);
const doors = {
  grpc: settings.grpc === undefined ? undefined : grpcDoor(settings.grpc.forwardPath, grpcTls),
  http: settings.http === undefined ? undefined : httpDoor(settings.http.forwardPath, httpTls),
};

let draining = false;

/**
 * An accepted connection from the acceptor. The descriptor is ours now: wrapped, the socket closes it; a door
 * that is off (never sent) or draining closes it at once. Whatever goes wrong here costs this connection only:
 * it is closed, its close is posted (so the main thread frees its slot under the caps) and the thread goes on.
 */
function takeConnection(message: Extract<ToDoorMessage, { type: 'connection' }>): void {
  let socket: net.Socket | undefined;
  try {
    socket = new net.Socket({ fd: message.fd, readable: true, writable: true });
    socket.once('close', () => post({ type: 'closed', id: message.id }));
    const door = doors[message.door];
    if (door === undefined || draining) {
      socket.destroy();
      return;
    }
    door.adopt(socket);
  } catch (err) {
    log.error({ err, door: message.door }, 'could not take a connection from the acceptor: closing it');
    if (socket !== undefined) {
      // The socket owns the descriptor: closing it posts 'closed'.
      socket.destroy();
      return;
    }
    try {
      closeSync(message.fd);
    } catch (closeErr) {
      log.warn({ err: closeErr, fd: message.fd }, 'could not close the descriptor of a connection it could not take');
    }
    post({ type: 'closed', id: message.id });
  }
}

/** SIGHUP: each door's certificate files again; a failure keeps the certificates this thread has. */
function reloadCertificates(): void {
  for (const [door, tls] of [['grpc', grpcTls], ['http', httpTls]] as const) {
    if (tls === undefined) continue;
    try {
      tls.reload();
    } catch (err) {
      // The main thread checks the same files and logs its own failure; each door thread says what it kept.
      log.error({ err, door }, 'certificate reload failed: keeping the current certificates');
    }
  }
}

port.on('message', (message: ToDoorMessage) => {
  switch (message.type) {
    case 'connection':
      takeConnection(message);
      return;
    case 'reload-certificates':
      reloadCertificates();
      return;
    case 'catalog':
      served.update(message.catalog);
      return;
    case 'drain':
      draining = true;
      for (const listener of [...stopListeners]) listener();
      void Promise.all([doors.grpc?.drained(), doors.http?.drained()]).then(() => {
        doors.grpc?.close();
        doors.http?.close();
        return served.close();
      }).finally(() => {
        post({ type: 'drained' });
      });
      return;
    case 'cut':
      doors.grpc?.cut();
      doors.http?.cut();
      return;
  }
});

log.debug({ grpc: settings.grpc !== undefined, http: settings.http !== undefined }, 'door thread ready');
post({ type: 'ready' });
