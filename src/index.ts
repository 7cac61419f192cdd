/**
 * `hotpath`: the server, embedded in your own Node process.
 *
 *   const server = createServer({ modelRepository: './models', grpcPort: 0 });
 *   const ports = await server.start();     // bound and loaded
 *   server.ready();                         // true once every start-up model is READY
 *   await server.close();                   // or drain() for the graceful shutdown
 *
 * The options are `hotpath serve`'s flags, in camelCase and typed, and their
 * defaults are the command line's: missing options are filled by the same
 * parser (`parseServeOptions`), so an embedded server and `hotpath serve`
 * cannot drift apart. Durations are in ms (`drainDelayMs`), sizes in bytes.
 *
 * The client is `hotpath/client`.
 */
import type { Logger } from 'pino';
import { parseServeOptions, type ServeOptions } from './cli.js';
import { createRootLogger } from './observability/logger.js';
import { packageInfo } from './native/loader.js';
import { HotpathServer, type BoundPorts } from './server/hotpath-server.js';

export type { BoundPorts, ServeOptions };

/** `hotpath serve`'s options; only `modelRepository` is required. */
export type CreateServerOptions = Partial<Omit<ServeOptions, 'modelRepository'>> & {
  /** The Triton-layout model repository (`--model-repository`). */
  readonly modelRepository: string;
  /** Log through this pino logger; default: a new one on stdout (`logLevel`, `logFormat`). */
  readonly logger?: Logger;
};

export interface EmbeddedServer {
  /**
   * Binds the ports (the process is live from then on), then loads, warms and
   * checks every start-up model. Resolves with the bound ports (port 0 resolved)
   * once the repository is loaded; a model that failed leaves `ready()` false.
   * Call it once.
   */
  start(): Promise<BoundPorts>;
  /**
   * A method, not a promise: whether the server is ready now, the answer
   * ServerReady and `/v2/health/ready` give (started, every start-up model
   * READY, not draining).
   */
  ready(): boolean;
  /** The bound ports; undefined before `start()` has bound them. */
  readonly ports: BoundPorts | undefined;
  /**
   * The graceful shutdown `hotpath serve` runs on SIGTERM: unready at once,
   * new calls refused after `drainDelayMs`, in-flight requests given
   * `drainTimeoutMs`, then everything closed. Resolves true when all of it
   * finished in time. Idempotent.
   */
  drain(): Promise<boolean>;
  /** Shuts down without the load-balancer delay (in-flight requests still finish). Idempotent. */
  close(): Promise<void>;
}

export function createServer(options: CreateServerOptions): EmbeddedServer {
  if (typeof options?.modelRepository !== 'string' || options.modelRepository === '') {
    throw new TypeError('createServer: modelRepository is required');
  }
  const { logger: given, modelRepository, ...overrides } = options;
  // The command line's defaults, from its own parser; then what the caller set.
  const defaults = parseServeOptions(['--model-repository', modelRepository]);
  const filled: ServeOptions = { ...defaults, ...definedOnly(overrides) };
  checkOptions(filled);
  const logger = given ?? createRootLogger(filled.logLevel, filled.logFormat);
  const server = new HotpathServer({
    ...filled,
    serverName: 'hotpath',
    serverVersion: packageInfo().version,
    logger,
  });
  let ports: BoundPorts | undefined;
  let started: Promise<BoundPorts> | undefined;
  return {
    start() {
      started ??= (async () => {
        ports = await server.listen();
        await server.loadModels();
        return ports;
      })();
      return started;
    },
    ready: () => server.isReady(),
    get ports() {
      return ports;
    },
    drain: () => server.drain(),
    close: () => server.stop(),
  };
}

function definedOnly<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined)) as Partial<T>;
}

/** The checks the command line's parser makes on the values an embedder can set directly. */
function checkOptions(o: ServeOptions): void {
  const integer = (name: string, value: number, min: number, max: number) => {
    if (!Number.isInteger(value) || value < min || value > max) {
      throw new RangeError(`createServer: ${name}: expected an integer in ${min}..${max}, got ${value}`);
    }
  };
  integer('grpcPort', o.grpcPort, 0, 65535);
  integer('httpPort', o.httpPort, -1, 65535);
  integer('metricsPort', o.metricsPort, -1, 65535);
  integer('intraOpThreads', o.intraOpThreads, 1, 1024);
  integer('modelLoadConcurrency', o.modelLoadConcurrency, 1, 64);
  integer('drainDelayMs', o.drainDelayMs, 0, 3_600_000);
  integer('drainTimeoutMs', o.drainTimeoutMs, 0, 3_600_000);
  if (!(o.accessLogSampleRate >= 0 && o.accessLogSampleRate <= 1)) {
    throw new RangeError(`createServer: accessLogSampleRate: expected a number in 0..1, got ${o.accessLogSampleRate}`);
  }
  if (!o.allowGrpc && !o.allowHttp) {
    throw new RangeError('createServer: allowGrpc and allowHttp are both false: nothing would serve');
  }
}
