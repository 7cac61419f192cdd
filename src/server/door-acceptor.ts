/**
 * The front-door acceptor (`--front-door-threads N`, N > 1): the main thread
 * binds the public gRPC and HTTP ports itself, so binding behaves exactly as
 * with one thread (a port another process holds is EADDRINUSE, never a
 * silent share as `reusePort` would allow), and hands each accepted
 * connection, round-robin, to a door thread.
 *
 * Why explicit balance and not `reusePort` in every thread: Linux picks a
 * `reusePort` listener by a hash of the connection's 4-tuple, so 4
 * connections land 2-2 on 2 threads only about 3 times in 8; and Node 20
 * refuses the second bind. Round-robin spreads any pooled client evenly and
 * works on every Node this package supports.
 *
 * The hand-off: the server accepts with `pauseOnConnect` (no byte is read on
 * this thread), the connection passes the ConnectionGate (the caps stay
 * process-wide: the slot is freed when the door thread posts the close), the
 * addon duplicates the descriptor (src/native/socket-handoff.ts), the door
 * thread gets the duplicate, and this thread's socket is destroyed (closing
 * only the original descriptor).
 *
 * Ownership: main thread only; owns the public listening sockets.
 */
import { closeSync } from 'node:fs';
import net from 'node:net';
import type { Logger } from 'pino';
import { duplicateSocket } from '../native/socket-handoff.js';
import type { ConnectionGate } from './connection-gate.js';

/** Where a connection goes: a door thread takes the descriptor and its gate slot's release; false: none could. */
export type HandOff = (door: 'grpc' | 'http', fd: number, release: () => void) => boolean;

export class DoorAcceptor {
  private readonly listeners: net.Server[] = [];
  private readonly log: Logger;

  constructor(
    private readonly gate: ConnectionGate,
    private readonly handOff: HandOff,
    logger: Logger,
  ) {
    this.log = logger.child({ component: 'door-acceptor' });
  }

  /** Binds `host:port` for `door` (0: any free port); resolves with the port bound, rejects with the bind's error. */
  listen(door: 'grpc' | 'http', host: string, port: number): Promise<number> {
    const listener = net.createServer({ pauseOnConnect: true }, (socket) => this.accept(door, socket));
    this.listeners.push(listener);
    return new Promise((resolve, reject) => {
      listener.once('error', reject);
      listener.listen(port, host, () => {
        listener.off('error', reject);
        // A later accept error (EMFILE, say) is logged; the listener keeps listening.
        listener.on('error', (err) => this.log.error({ door, err }, 'accept failed'));
        const address = listener.address();
        resolve(typeof address === 'object' && address !== null ? address.port : port);
      });
    });
  }

  /** Stops accepting; the connections handed over stay with their door threads. */
  stopAccepting(): void {
    for (const listener of this.listeners) if (listener.listening) listener.close();
  }

  private accept(door: 'grpc' | 'http', socket: net.Socket): void {
    const release = this.gate.reserve(socket.remoteAddress ?? 'unknown', door);
    if (release === undefined) {
      socket.destroy();
      return;
    }
    let copy: number | undefined;
    try {
      copy = duplicateSocket(descriptorOf(socket));
    } catch (err) {
      this.log.warn({ door, err }, 'could not hand a connection to a door thread: closing it');
    }
    // This thread's handle goes in every case; the duplicate (if any) keeps the connection open for the door.
    socket.destroy();
    if (copy === undefined) {
      release();
      return;
    }
    if (!this.handOff(door, copy, release)) {
      closeSync(copy);
      release();
    }
  }
}

/**
 * The descriptor under an accepted TCP socket. Node has no public API for it:
 * `_handle.fd` is libuv's descriptor on Unix (documented as internal, stable
 * for years, and -1 on Windows, which this package does not support).
 */
function descriptorOf(socket: net.Socket): number {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new Error('the accepted socket has no descriptor');
  return fd;
}
