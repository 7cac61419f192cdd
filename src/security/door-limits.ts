/**
 * Process-wide limits of the front doors, against hostile and careless
 * clients (issue 21): what all requests together may hold, how many
 * connections the doors take, and how long a connection may take to say
 * what it wants.
 *
 * - HTTP body budget (`--http-body-budget`): request body bytes in memory,
 *   received and inflated, all requests together (server/http/body-budget.ts).
 * - JSON parse queue (`--http-json-queue`): large JSON bodies parsed off the
 *   event loop, at most this many waiting (server/http/json-parser.ts).
 * - Connections (`--max-connections`, `--max-connections-per-peer`): open
 *   connections of the gRPC, HTTP and metrics ports together, and of one peer
 *   address (server/connection-gate.ts). The total defaults to what the
 *   process's descriptor limit (RLIMIT_NOFILE) leaves after a reserve for
 *   model files, worker threads, logs and the addon; the per-peer cap to a
 *   quarter of the total, so one address cannot take the server's
 *   descriptors. Behind a proxy or a load balancer every client shares the
 *   proxy's address: raise the per-peer cap to the total there.
 * - Header timeout (`--header-timeout`): a new connection must send its
 *   request headers (HTTP) or its HTTP/2 preface (gRPC) within this.
 * - Body idle timeout (`--body-idle-timeout`), both doors: an HTTP request
 *   body that stops arriving for this long is answered 408 and the
 *   connection closed (server/http/body-reader.ts); a gRPC request message
 *   that stops part way is answered DEADLINE_EXCEEDED and its stream reset
 *   (server/grpc-body-idle.ts).
 * - Idle-stream frames (`--grpc-ignore-idle-stream-frames`): tolerance for
 *   grpc-core clients whose cancellations would otherwise cost the connection.
 *
 * Pure values and one read of /proc at start-up; any thread.
 */
import { readFileSync } from 'node:fs';

export interface DoorLimits {
  /** `--http-body-budget`: bytes of request bodies in flight, all HTTP requests together; default twice --max-message-size. */
  readonly httpBodyBudgetBytes?: number | undefined;
  /** `--http-json-queue`: large JSON bodies queued for the parse worker at once. */
  readonly httpJsonQueue?: number | undefined;
  /** `--max-connections`: open connections of all ports together; 0 = derived from RLIMIT_NOFILE. */
  readonly maxConnections?: number | undefined;
  /** `--max-connections-per-peer`: open connections of one IP address; 0 = a quarter of the total. */
  readonly maxConnectionsPerPeer?: number | undefined;
  /** `--header-timeout`: ms a new connection has to send its request headers (HTTP) or HTTP/2 preface (gRPC). */
  readonly headerTimeoutMs?: number | undefined;
  /** `--body-idle-timeout`: ms an HTTP request body, or a gRPC request message part way through, may go without a byte. */
  readonly bodyIdleTimeoutMs?: number | undefined;
  /**
   * `--grpc-ignore-idle-stream-frames`: drop the frames a client sends on a
   * stream it never opened (grpc-core's reset of a call cancelled at once)
   * instead of letting them end the connection; plaintext gRPC only
   * (server/idle-reset-filter.ts). Default false.
   */
  readonly grpcIgnoreIdleStreamFrames?: boolean | undefined;
}

export const DOOR_LIMIT_DEFAULTS = {
  httpJsonQueue: 8,
  headerTimeoutMs: 10_000,
  bodyIdleTimeoutMs: 30_000,
} as const;

/** Descriptors kept back from connections: model files, worker threads, pipes, logs, the addon, epoll. */
export const DESCRIPTOR_RESERVE_FRACTION = 0.25;
export const DESCRIPTOR_RESERVE_MIN = 128;

/** Used when the limit cannot be read (not Linux): the common default soft limit. */
const FALLBACK_DESCRIPTORS = 1024;

/**
 * The soft RLIMIT_NOFILE of this process. Node has no getrlimit; on Linux
 * /proc/self/limits has it. `limitsText` is for tests.
 */
export function descriptorLimit(limitsText?: string): number {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return FALLBACK_DESCRIPTORS;
    }
  }
  const soft = /^Max open files\s+(\S+)/m.exec(text)?.[1];
  if (soft === undefined) return FALLBACK_DESCRIPTORS;
  return soft === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(soft);
}

/** The connection caps for a descriptor limit: total = limit less the reserve, per peer = a quarter of it (explicit values win). */
export function connectionCaps(limits: DoorLimits, descriptors = descriptorLimit()): { total: number; perPeer: number } {
  const reserve = Math.max(DESCRIPTOR_RESERVE_MIN, Math.ceil(descriptors * DESCRIPTOR_RESERVE_FRACTION));
  const derived = Math.max(1, Math.min(descriptors - reserve, 1_000_000));
  const total = limits.maxConnections !== undefined && limits.maxConnections > 0 ? limits.maxConnections : derived;
  const perPeer = limits.maxConnectionsPerPeer !== undefined && limits.maxConnectionsPerPeer > 0
    ? Math.min(limits.maxConnectionsPerPeer, total)
    : Math.max(1, Math.floor(total / 4));
  return { total, perPeer };
}
