// The serve benchmark's `echo` contender: a grpc-js server, in its own
// process, whose ModelInfer answers every request with one canned response
// (the bytes hotpath answered the same request body with). Request and
// response pass through identity (de)serializers, so it does no protobuf work:
// what it costs per request is grpc-js and HTTP/2, the transport's ceiling on
// these cores. Same receive/send limits as the hotpath server. It says
// `ready` with its port and serves until the suite kills it (or goes away).
import * as grpc from '@grpc/grpc-js';

import { parentChannel } from './child-process.js';
import { MODEL_INFER_PATH } from '../../src/perf/grpc-frames.js';
import type { ToChild } from './messages.js';

export interface EchoConfig {
  /** The serialized ModelInferResponse to answer with. */
  readonly response: Uint8Array;
}

const identity = (bytes: Buffer): Buffer => bytes;

async function serve(cfg: EchoConfig): Promise<number> {
  const canned = Buffer.from(cfg.response.buffer, cfg.response.byteOffset, cfg.response.byteLength);
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
  return new Promise((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port)));
  });
}

const channel = parentChannel();
channel.onMessage((message: ToChild) => {
  if (message.type !== 'start') return;
  serve(message.config as EchoConfig).then(
    (port) => channel.send({ type: 'ready', info: port }),
    (err: unknown) =>
      process.send!({ type: 'error', message: `echo server: ${err instanceof Error ? err.message : err}` }, () => process.exit(1)),
  );
});
