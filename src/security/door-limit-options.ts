/**
 * The serve flags of the doors' process-wide limits (security/door-limits.ts),
 * parsed with the command line's one message format per flag (common/flag-values.ts).
 */
import { booleanFlag, byteSizeFlag, integerFlag, UsageError } from '../common/flag-values.js';
import type { OptionEntry } from '../common/option-table.js';
import { DOOR_LIMIT_DEFAULTS, type DoorLimits } from './door-limits.js';

const FLAGS = ['http-body-budget', 'http-json-queue', 'max-connections', 'max-connections-per-peer', 'header-timeout', 'body-idle-timeout', 'grpc-ignore-idle-stream-frames'] as const;

/** Each flag's help line (the usage wraps it). */
const HELP: Readonly<Record<(typeof FLAGS)[number], string>> = {
  'http-body-budget': 'request body bytes held at once, received and inflated, all HTTP requests together; beyond it 503 with Retry-After (default: twice --max-message-size)',
  'http-json-queue': `large JSON bodies (over 256 KiB) waiting for the parse thread at once; beyond it 503 with Retry-After (default ${DOOR_LIMIT_DEFAULTS.httpJsonQueue})`,
  'max-connections': 'open connections of the gRPC, HTTP and metrics ports together; more are closed at once (default 0 = the descriptor limit, ulimit -n, less a quarter kept for files and threads: 768 at 1024)',
  'max-connections-per-peer': "open connections of one IP address (default 0 = a quarter of --max-connections); behind a proxy every client has the proxy's address",
  'header-timeout': `a new connection must send its request headers (HTTP) or its HTTP/2 preface (gRPC) within MS ms (default ${DOOR_LIMIT_DEFAULTS.headerTimeoutMs})`,
  'body-idle-timeout': `both doors: an HTTP request body that sends no byte for MS ms is answered 408 and its connection closed; a gRPC request message that stops part way for MS ms is answered DEADLINE_EXCEEDED and its stream reset (default ${DOOR_LIMIT_DEFAULTS.bodyIdleTimeoutMs}; 0 = no limit)`,
  'grpc-ignore-idle-stream-frames': "drop frames a client sends on a gRPC stream it never opened (the Python client's transport resets calls cancelled at once that way, which otherwise ends the whole connection); plaintext gRPC only; costs throughput (default false)",
};

/** The boolean one among FLAGS (bare `--flag` means true). */
const BOOLEAN_FLAGS: ReadonlySet<string> = new Set(['grpc-ignore-idle-stream-frames']);

export interface DoorLimitOptions {
  /** `--http-body-budget`, `--max-connections`...: the doors' process-wide limits (security/door-limits.ts). */
  doors: DoorLimits;
}

const INTEGER_RANGES: Readonly<Record<string, readonly [keyof DoorLimits, number, number]>> = {
  'http-json-queue': ['httpJsonQueue', 1, 1024],
  'max-connections': ['maxConnections', 0, 1_000_000],
  'max-connections-per-peer': ['maxConnectionsPerPeer', 0, 1_000_000],
  'header-timeout': ['headerTimeoutMs', 1, 2 ** 31 - 1],
  'body-idle-timeout': ['bodyIdleTimeoutMs', 0, 2 ** 31 - 1],
};

export const DOOR_LIMIT_OPTIONS: readonly OptionEntry<object>[] = [{
  flags: FLAGS.map((flag) => ({
    name: flag,
    arg: BOOLEAN_FLAGS.has(flag) ? undefined : /timeout/.test(flag) ? 'MS' : flag === 'http-body-budget' ? 'SIZE' : 'N',
    help: HELP[flag],
  })),
  defaults: (): DoorLimitOptions => ({ doors: { grpcIgnoreIdleStreamFrames: false } }),
  parse: (values): Partial<DoorLimitOptions> => (FLAGS.some((flag) => values[flag] !== undefined) ? { doors: doorLimits(values) } : {}),
  check: (options: DoorLimitOptions, name) => {
    for (const [field, min, max] of Object.values(INTEGER_RANGES)) {
      const value = options.doors?.[field] as number | undefined;
      if (value !== undefined && !(Number.isInteger(value) && value >= min && value <= max)) {
        throw new UsageError(`${name('doors')}.${field}: expected an integer in ${min}..${max}, got ${value}`);
      }
    }
  },
  fields: Object.fromEntries(FLAGS.map((flag) => [flag, 'doors'])),
}];

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
