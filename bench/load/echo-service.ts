// The echo contender's gRPC server, built the same way on the echo process's
// main thread (one thread) and in each of its door threads
// (echo-door-thread.ts): a grpc-js server with hotpath's receive/send limits
// whose ModelInfer answers every request with one canned response through
// identity (de)serializers, so it does no protobuf work.
import * as grpc from '@grpc/grpc-js';

import { MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';

const identity = (bytes: Buffer): Buffer => bytes;

/** A server (not bound: the caller binds it or injects connections into it) answering ModelInfer with `canned`. */
export function echoServer(canned: Buffer): grpc.Server {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': 256 * 1024 * 1024,
    'grpc.max_send_message_length': 256 * 1024 * 1024,
  });
  const registered = server.register<Buffer, Buffer>(
    MODEL_INFER_PATH,
    (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) => callback(null, canned),
    identity,
    identity,
    'unary',
  );
  if (!registered) throw new Error(`could not register ${MODEL_INFER_PATH}`);
  return server;
}

/** A Buffer over `bytes` (no copy): IPC and workerData deliver a Uint8Array. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
