// The serve benchmark's `echo` contender: a grpc-js server, in its own
// process, whose ModelInfer answers every request with one canned response
// (the bytes hotpath answered the same request body with). Request and
// response pass through identity (de)serializers, so it does no protobuf work:
// what it costs per request is grpc-js and HTTP/2, the transport's ceiling on
// these cores. Same receive/send limits as the hotpath server
// (echo-service.ts). With `threads` > 1 it has hotpath's front-door threading:
// one acceptor handing connections round-robin to that many threads
// (echo-door-threads.ts). It says `ready` with its port, answers `report`
// with the connections each door thread took, and serves until the suite
// kills it (or goes away).
import * as grpc from '@grpc/grpc-js';

import { parentChannel } from './child-process.js';
import { EchoDoorThreads } from './echo-door-threads.js';
import { asBuffer, echoServer } from './echo-service.js';
import type { ToChild } from './messages.js';

export interface EchoConfig {
  /** The serialized ModelInferResponse to answer with. */
  readonly response: Uint8Array;
  /** Front-door threads (default 1: the main thread serves, as with hotpath's default). */
  readonly threads?: number;
}

/** What `report` answers: the connections each door thread took (null with one thread: the main thread took them). */
export interface EchoReport {
  readonly door_connections: number[] | null;
}

async function serve(cfg: EchoConfig): Promise<{ port: number; doors: EchoDoorThreads | undefined }> {
  const threads = cfg.threads ?? 1;
  if (threads > 1) {
    const doors = await EchoDoorThreads.start(threads, cfg.response);
    return { port: await doors.listen('127.0.0.1'), doors };
  }
  const server = echoServer(asBuffer(cfg.response));
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return { port, doors: undefined };
}

const channel = parentChannel();
let doors: EchoDoorThreads | undefined;
channel.onMessage((message: ToChild) => {
  if (message.type === 'report') {
    channel.send({ type: 'done', result: { door_connections: doors?.connections() ?? null } satisfies EchoReport });
    return;
  }
  if (message.type !== 'start') return;
  serve(message.config as EchoConfig).then(
    (started) => {
      doors = started.doors;
      channel.send({ type: 'ready', info: started.port });
    },
    (err: unknown) =>
      process.send!({ type: 'error', message: `echo server: ${err instanceof Error ? err.message : err}` }, () => process.exit(1)),
  );
});
