/**
 * `hotpath`: the server, embedded in your own Node process.
 *
 *   const server = createServer({ modelRepository: './models', grpcPort: 0 });
 *   const ports = await server.start();     // bound and loaded
 *   server.ready();                         // true once every start-up model is READY
 *   await server.close();                   // or drain() for the graceful shutdown
 *
 * The options are `hotpath serve`'s flags, in camelCase and typed. Their
 * defaults and checks come from the same options table as the command line's
 * (cli/serve-options.ts), so an embedded server and `hotpath serve` cannot
 * drift apart: a bad value throws a RangeError naming the option, as the
 * command line exits 2 naming the flag. Durations are in ms
 * (`drainDelayMs`), sizes in bytes.
 *
 * The client is `hotpath/client`.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { fillServeOptions, type ServeOptions } from './cli/serve-options.js';
import { UsageError } from './common/flag-values.js';
import { createRootLogger } from './observability/logger.js';
import { packageInfo } from './native/loader.js';
import { HotpathServer, type BoundPorts } from './server/hotpath-server.js';

export type { BoundPorts, ServeOptions };
export { PortInUseError } from './server/hotpath-server.js';

/** `hotpath serve`'s options; only `modelRepository` is required. */
export type CreateServerOptions = Partial<Omit<ServeOptions, 'modelRepositories'>> & {
  /** The Triton-layout model repository (`--model-repository`), or several, served as one. */
  readonly modelRepository: string | readonly string[];
  /** Log through this pino logger; default: a new one on stdout (`logLevel`, `logFormat`). */
  readonly logger?: Logger;
};

export interface EmbeddedServer {
  /**
   * Binds the ports (the process is live from then on), then loads, warms and
   * checks every start-up model. Resolves with the bound ports (port 0 resolved)
   * once the repository is loaded; a model that failed leaves `ready()` false,
   * or, with `exitOnError`, closes the server and rejects naming it.
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
  const roots = typeof options?.modelRepository === 'string' ? [options.modelRepository] : options?.modelRepository;
  if (!Array.isArray(roots) || roots.length === 0 || roots.some((dir) => typeof dir !== 'string' || dir === '')) {
    throw new TypeError('createServer: modelRepository is required');
  }
  const { logger: given, modelRepository: _repository, ...overrides } = options;
  let filled: ServeOptions;
  try {
    // The table's defaults, what the caller set, then every check the command line makes.
    filled = fillServeOptions({ ...overrides, modelRepositories: roots.map((dir) => path.resolve(dir)) });
  } catch (err) {
    if (err instanceof UsageError) throw new RangeError(`createServer: ${err.message}`);
    throw err;
  }
  const logger = given ?? createRootLogger(filled.logLevel, filled.logFormat, filled.logFile);
  const server = new HotpathServer({ ...filled, serverVersion: packageInfo().version, logger });
  let ports: BoundPorts | undefined;
  let started: Promise<BoundPorts> | undefined;
  return {
    start() {
      started ??= (async () => {
        ports = await server.listen();
        await server.loadModels();
        const failed = server.failedStartupModels();
        if (filled.exitOnError && failed.length > 0) {
          await server.stop();
          throw new Error(`createServer: exitOnError: start-up models failed to load: ${failed.map((f) => `${f.name} (${f.reason})`).join('; ')}`);
        }
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
