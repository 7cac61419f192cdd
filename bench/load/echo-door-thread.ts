// One door thread of the threaded echo (echo-door-threads.ts), a worker
// thread: a grpc-js echo server that never listens, fed by
// `createConnectionInjector` with the connections the echo process's
// acceptor hands it, as hotpath's door threads are
// (src/server/door-thread-main.ts).
//
// Ownership: each descriptor that arrives is this thread's; the net.Socket
// wrapped around it closes it, and the close is posted back so the acceptor
// frees the connection's slot.
import * as grpc from '@grpc/grpc-js';
import net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';

import { asBuffer, echoServer } from './echo-service.js';
import type { EchoDoorData, FromEchoDoor, ToEchoDoor } from './echo-door-threads.js';

const port = parentPort!;
const post = (message: FromEchoDoor) => port.postMessage(message);
const data = workerData as EchoDoorData;
const server = echoServer(asBuffer(data.response));
const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());

port.on('message', (message: ToEchoDoor) => {
  let socket: net.Socket;
  try {
    socket = new net.Socket({ fd: message.fd, readable: true, writable: true });
  } catch (err) {
    // A bench echo: a connection it cannot take fails the run loudly rather than going missing.
    throw new Error(`echo door thread ${data.index}: could not wrap descriptor ${message.fd}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  socket.once('close', () => post({ type: 'closed', id: message.id }));
  injector.injectConnection(socket);
});

post({ type: 'ready' });
