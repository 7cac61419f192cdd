/**
 * The serve flags of the doors' process-wide limits (security/door-limits.ts),
 * parsed with the command line's one message format per flag (common/flag-values.ts).
 */
import { booleanFlag, byteSizeFlag, integerFlag } from '../common/flag-values.js';
import { DOOR_LIMIT_DEFAULTS, type DoorLimits } from './door-limits.js';

export const DOOR_LIMITS_USAGE = `  --http-body-budget SIZE      request body bytes held at once, received and inflated, all HTTP requests
                               together; beyond it 503 with Retry-After (default: twice
                               --max-message-size)
  --http-json-queue N          large JSON bodies (over 256 KiB) waiting for the parse thread at once;
                               beyond it 503 with Retry-After (default ${DOOR_LIMIT_DEFAULTS.httpJsonQueue})
  --max-connections N          open connections of the gRPC, HTTP and metrics ports together; more are
                               closed at once (default 0 = the descriptor limit, ulimit -n, less a
                               quarter kept for files and threads: 768 at 1024)
  --max-connections-per-peer N open connections of one IP address (default 0 = a quarter of
                               --max-connections); behind a proxy every client has the proxy's address
  --header-timeout MS          a new connection must send its request headers (HTTP) or its HTTP/2
                               preface (gRPC) within MS ms (default ${DOOR_LIMIT_DEFAULTS.headerTimeoutMs})
  --body-idle-timeout MS       an HTTP request body that sends no byte for MS ms is answered 408 and
                               its connection closed (default ${DOOR_LIMIT_DEFAULTS.bodyIdleTimeoutMs}; 0 = no limit)
  --grpc-ignore-idle-stream-frames BOOL
                               drop frames a client sends on a gRPC stream it never opened (the
                               Python client's transport resets calls cancelled at once that way,
                               which otherwise ends the whole connection); plaintext gRPC only;
                               costs throughput (default false)
`;

const FLAGS = ['http-body-budget', 'http-json-queue', 'max-connections', 'max-connections-per-peer', 'header-timeout', 'body-idle-timeout', 'grpc-ignore-idle-stream-frames'] as const;

/** The boolean ones among FLAGS (cli.ts's BOOLEAN_FLAGS takes them: bare `--flag` means true). */
export const DOOR_BOOLEAN_FLAGS = ['grpc-ignore-idle-stream-frames'] as const;

/** The flags for parseArgs. */
export function doorLimitFlagOptions(): Record<(typeof FLAGS)[number], { type: 'string' }> {
  return Object.fromEntries(FLAGS.map((flag) => [flag, { type: 'string' }])) as Record<(typeof FLAGS)[number], { type: 'string' }>;
}

/** The limits the flags give; absent flags are left to the defaults (door-limits.ts). */
export function doorLimits(values: Readonly<Record<string, unknown>>): DoorLimits {
  const raw = (flag: (typeof FLAGS)[number]) => values[flag] as string | undefined;
  const integer = (flag: (typeof FLAGS)[number], min: number, max = 2 ** 31 - 1) => {
    const value = raw(flag);
    return value === undefined ? undefined : integerFlag(`--${flag}`, value, min, max);
  };
  const budget = raw('http-body-budget');
  return {
    httpBodyBudgetBytes: budget === undefined ? undefined : byteSizeFlag('--http-body-budget', budget),
    httpJsonQueue: integer('http-json-queue', 1, 1024),
    maxConnections: integer('max-connections', 0, 1_000_000),
    maxConnectionsPerPeer: integer('max-connections-per-peer', 0, 1_000_000),
    headerTimeoutMs: integer('header-timeout', 1),
    bodyIdleTimeoutMs: integer('body-idle-timeout', 0),
    grpcIgnoreIdleStreamFrames: booleanFlag('--grpc-ignore-idle-stream-frames', values['grpc-ignore-idle-stream-frames'] as string | undefined, false),
  };
}
