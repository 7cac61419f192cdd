/**
 * The gRPC port's listening socket, owned here rather than by grpc-js, so
 * that connections are counted and timed before grpc-js sees them: grpc-js
 * has no connection cap and no timeout before an HTTP/2 session starts.
 *
 * A `net.Server` accepts; each connection passes the ConnectionGate (total
 * and per-peer caps) and is handed to grpc-js through
 * `Server.createConnectionInjector(credentials)`, which runs the same
 * HTTP/2 (and TLS, with the same certificate-provider credentials, so
 * SIGHUP reloads still reach new handshakes) as a port bound by grpc-js.
 * A connection that has not sent the 24-byte HTTP/2 client preface (or, on
 * TLS, as many bytes of its handshake) within --header-timeout is closed:
 * a slowloris holds a descriptor for seconds, not for ever.
 *
 * Closing: `stopAccepting()` stops accepting; the connections already handed over
 * belong to grpc-js and end with its tryShutdown/forceShutdown.
 */
import net from 'node:net';
import type { Server, ServerCredentials } from '@grpc/grpc-js';
import type { ConnectionGate } from './connection-gate.js';
import { withIdleStreamFrameFilter } from './idle-reset-filter.js';

/** "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n": what every HTTP/2 client sends first. */
const HTTP2_PREFACE_BYTES = 24;

export class GrpcListener {
  private readonly listener: net.Server;

  constructor(
    grpc: Server,
    credentials: ServerCredentials,
    private readonly gate: ConnectionGate,
    private readonly headerTimeoutMs: number,
    /**
     * Plaintext only: put each connection behind the idle-stream frame filter
     * (server/idle-reset-filter.ts, --grpc-ignore-idle-stream-frames).
     * `onDropped` counts what it drops.
     */
    idleStreamFilter?: { readonly onDropped: () => void } | undefined,
  ) {
    const injector = grpc.createConnectionInjector(credentials);
    this.listener = net.createServer((socket) => {
      if (!this.gate.admit(socket, 'grpc')) return;
      watchHttp2Preface(socket, this.headerTimeoutMs);
      injector.injectConnection(idleStreamFilter === undefined ? socket : withIdleStreamFrameFilter(socket, idleStreamFilter.onDropped));
    });
  }

  /** Binds `host:port` (0: any free port); resolves with the port bound. */
  listen(host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      this.listener.once('error', onError);
      this.listener.listen(port, host, () => {
        this.listener.off('error', onError);
        const address = this.listener.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /**
   * Stops accepting connections; open ones stay with grpc-js (its shutdown
   * ends them). Not awaited: net.Server's close callback waits for every
   * connection, and these end only when grpc-js ends them.
   */
  stopAccepting(): void {
    if (this.listener.listening) this.listener.close();
  }
}

/**
 * Closes `socket` when it has not sent the 24-byte HTTP/2 client preface (or,
 * on TLS, as many bytes of its handshake) within `timeoutMs`. Also used by
 * the front-door threads on the connections handed to them.
 */
export function watchHttp2Preface(socket: net.Socket, timeoutMs: number): void {
  // bytesRead counts what the socket delivered, also once grpc-js's HTTP/2 session consumes it.
  const timer = setTimeout(() => {
    if (socket.bytesRead < HTTP2_PREFACE_BYTES) socket.destroy();
  }, timeoutMs);
  timer.unref();
  socket.once('close', () => clearTimeout(timer));
}
