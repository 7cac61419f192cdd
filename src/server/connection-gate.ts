/**
 * Counts the doors' open connections and refuses those over the caps: the
 * total (gRPC, HTTP and metrics ports together) and per peer IP address
 * (security/door-limits.ts: --max-connections, --max-connections-per-peer,
 * derived from the descriptor limit by default). A refused connection is
 * closed as soon as it is accepted, before a byte of it is read, so a client
 * that opens connections without end holds at most its per-peer share of
 * descriptors and the other clients keep theirs.
 *
 * Refusals are logged rate-limited with counts (observability/refusal-log.ts).
 * Peer addresses are normalised (an IPv4-mapped IPv6 address counts as its
 * IPv4 address). Behind a proxy every client shares the proxy's address.
 *
 * One per process (both doors share it); main thread (or the door thread
 * that owns the listeners); plain fields.
 */
import type net from 'node:net';
import type { RefusalLog } from '../observability/refusal-log.js';

export type Door = 'grpc' | 'http' | 'metrics';

export interface ConnectionCaps {
  readonly total: number;
  readonly perPeer: number;
}

export class ConnectionGate {
  private open = 0;
  private readonly byPeer = new Map<string, number>();

  constructor(
    readonly caps: ConnectionCaps,
    private readonly refusals: RefusalLog,
  ) {}

  /** Open connections now, all doors. */
  get openConnections(): number {
    return this.open;
  }

  /** Open connections of `address` now. */
  openFrom(address: string): number {
    return this.byPeer.get(peerKey(address)) ?? 0;
  }

  /**
   * Counts `socket` until it closes, or closes it at once when a cap is
   * reached (returns false). Call on every accepted connection, first.
   */
  admit(socket: net.Socket, door: Door): boolean {
    const release = this.reserve(socket.remoteAddress ?? 'unknown', door);
    if (release === undefined) {
      socket.destroy();
      return false;
    }
    socket.once('close', release);
    return true;
  }

  /**
   * Counts a connection from `address` and returns what frees its slot (call
   * it once, when the connection closes), or logs the refusal and returns
   * undefined when a cap is reached (the caller closes the connection). For a
   * connection that closes elsewhere: the front-door acceptor hands its
   * sockets to door threads, which post their closes back.
   */
  reserve(address: string, door: Door): (() => void) | undefined {
    const peer = peerKey(address);
    const fromPeer = this.byPeer.get(peer) ?? 0;
    const over = this.open >= this.caps.total ? 'total' : fromPeer >= this.caps.perPeer ? 'per_peer' : undefined;
    if (over !== undefined) {
      this.refusals.refused(
        `${door}:connection_${over}`,
        {
          door,
          peer,
          open: this.open,
          open_from_peer: fromPeer,
          cap: over === 'total' ? this.caps.total : this.caps.perPeer,
          flag: over === 'total' ? '--max-connections' : '--max-connections-per-peer',
        },
        'connection refused: over the cap',
      );
      return undefined;
    }
    this.open += 1;
    this.byPeer.set(peer, fromPeer + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open -= 1;
      const left = (this.byPeer.get(peer) ?? 1) - 1;
      if (left <= 0) this.byPeer.delete(peer);
      else this.byPeer.set(peer, left);
    };
  }

  /** Makes every connection of `server` pass the gate (before its own listeners see it). */
  guard(server: net.Server, door: Door): void {
    server.prependListener('connection', (socket: net.Socket) => {
      this.admit(socket, door);
    });
  }
}

/** The IP address a peer is counted under. */
export function peerKey(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
