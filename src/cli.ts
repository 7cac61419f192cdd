#!/usr/bin/env node
/**
 * The `hotpath` command line: the entry point and the serve command.
 *
 *   hotpath serve --model-repository DIR [--grpc-port 8001] [--http-port 8000]
 *   hotpath tritonserver --model-store=DIR ...   (the same: KServe's Triton runtime's args)
 *
 * Triton's default ports are the defaults here, and tritonserver's flags are
 * taken as Triton spells them (`--model-store`, `--allow-http=false`, an
 * unambiguous prefix...), so a tritonserver command line works as it is:
 * the options table (cli/serve-options.ts) knows every flag, and the ones
 * that mean nothing here are accepted with a warning.
 */
import { readFileSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRootLogger } from './observability/logger.js';
import { HotpathServer, PortInUseError } from './server/hotpath-server.js';
import { installShutdown } from './cli/shutdown.js';
import { startMemoryTrimmer } from './cli/lifecycle-options.js';
import { readServeCommandLine, SERVE_USAGE } from './cli/serve-options.js';
import { RoutesFileError } from './routing/routes-file.js';
import { UsageError } from './common/flag-values.js';

function packageVersion(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const candidate of [path.join(here, '..', 'package.json'), path.join(here, '..', '..', 'package.json')]) {
    try {
      return (JSON.parse(readFileSync(candidate, 'utf8')) as { version: string }).version;
    } catch {
      // try the next location: src/ under vitest, dist/src/ when compiled
    }
  }
  return '0.0.0';
}

async function serve(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) return printUsage();
  if (argv.includes('--version')) return printVersion();
  const { options, warnings, written } = readServeCommandLine(argv);
  for (const dir of options.modelRepositories) requireDirectory(dir, written.get('model-repository') ?? '--model-repository');
  const root = createRootLogger(options.logLevel, options.logFormat, options.logFile);
  const logger = root.child({ component: 'cli' });
  for (const warning of warnings) logger.warn(warning);
  // What the flags came to, for --log-verbose (no secrets: keys and restricted-header values stay out).
  logger.debug(
    {
      server_name: options.serverName,
      model_repositories: options.modelRepositories,
      model_control_mode: options.modelControlMode,
      model_load_concurrency: options.modelLoadConcurrency,
      default_max_batch_size: options.defaultMaxBatchSize,
      response_cache_bytes: options.responseCacheBytes,
      metrics_interval_ms: options.metricsIntervalMs,
      strict_readiness: options.strictReadiness,
      exit_on_error: options.exitOnError,
    },
    'serve options',
  );
  const server = new HotpathServer({ ...options, serverVersion: packageVersion(), logger: root });
  if (options.faultInjection) logger.warn('fault injection is enabled: test-only hooks are honoured');
  installShutdown(server, logger, options);
  startMemoryTrimmer(options.memoryTrimIntervalMs, logger, () => server.releaseCachedMemory());
  // Certificate rotation and the routes file; with the handler, SIGHUP no longer ends the process (Node's default).
  process.on('SIGHUP', () => {
    logger.info({ signal: 'SIGHUP' }, options.routesFile === undefined ? 'reloading certificates' : 'reloading certificates and routes');
    try {
      server.reloadCertificates();
    } catch (err) {
      // A signal must never take the server down: the current certificates stay.
      logger.error({ error: err instanceof Error ? err.message : String(err) }, 'certificate reload failed');
    }
    // Both reloads run on every SIGHUP; a refused routes file is logged by the routes component.
    server.reloadRoutes('SIGHUP')?.catch((err: unknown) => {
      logger.error({ error: err instanceof Error ? err.message : String(err) }, 'routes reload failed');
    });
  });
  let ports;
  try {
    ports = await server.listen();
  } catch (err) {
    // One line naming the flag as the user wrote it, and the port; the server has nothing to drain yet.
    if (err instanceof PortInUseError) {
      const flag = written.get(`${err.door}-port`) ?? `--${err.door}-port`;
      throw new StartupError(`${flag} ${err.port}: the port is in use on ${err.address} (EADDRINUSE); free it or choose another port`);
    }
    throw err;
  }
  try {
    await server.loadModels();
  } catch (err) {
    // The routes do not fit the loaded models: exit 2 naming each problem, as for a malformed file.
    if (err instanceof RoutesFileError) throw new UsageError(`--routes: ${err.message}`);
    throw err;
  }
  const failed = server.failedStartupModels();
  if (options.exitOnError && failed.length > 0) {
    for (const { name, reason } of failed) logger.error({ model: name, error: reason }, 'start-up model failed to load');
    logger.fatal({ models: failed.map((f) => f.name) }, '--exit-on-error: a start-up model failed to load; exiting');
    await server.stop();
    process.exit(1);
  }
  // One machine-readable line for harnesses that start the server on port 0.
  logger.info(
    { grpc_port: ports.grpc, http_port: ports.http, metrics_port: ports.metrics, ready: server.isReady() },
    'hotpath serving',
  );
}

/** A start-up failure the user can fix from the command line: exit 2, one line, no stack and no usage. */
class StartupError extends Error {}

/** A repository root must exist when the server starts (the parser itself reads no directories). */
function requireDirectory(dir: string, flag: string): void {
  let isDirectory = false;
  try {
    isDirectory = statSync(dir).isDirectory();
  } catch {
    throw new UsageError(`${flag}: expected an existing directory, got '${dir}' (it does not exist)`);
  }
  if (!isDirectory) throw new UsageError(`${flag}: expected a directory, got '${dir}' (a file)`);
}

function printUsage(): void {
  process.stdout.write(SERVE_USAGE);
}

function printVersion(): void {
  process.stdout.write(`hotpath ${packageVersion()}\n`);
}

/** A command that is not one: exit 2 with the usage. */
class CommandError extends UsageError {}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  // KServe's Triton runtime passes `tritonserver` as its first argument (its image's entrypoint runs it).
  if (command === 'serve' || command === 'tritonserver') return serve(rest);
  // The archive tools load only when asked for: serve never needs them.
  if (command === 'archive') return (await import('./datachecks/archive/archive-cli.js')).archiveCommand(rest);
  if (command === 'replay') return (await import('./datachecks/archive/replay-cli.js')).replayCommand(rest);
  if (command === 'perf') return (await import('./perf/perf-command.js')).perfCommand(rest);
  if (command === 'tune') return (await import('./perf/tune-command.js')).tuneCommand(rest);
  if (command === 'drift-reference') return (await import('./datachecks/drift/drift-reference-cli.js')).driftReferenceCommand(rest);
  if (command === '--help' || command === '-h' || command === 'help') return printUsage();
  if (command === '--version') return printVersion();
  // tritonserver has no subcommand: `hotpath --model-store=/mnt/models ...`
  // (a KServe runtime's args after the image's entrypoint) serves.
  if (command?.startsWith('--')) return serve(argv);
  throw new CommandError(command ? `unknown command '${command}'` : 'missing command');
}

/** The command whose options a usage error is about: a tool's, or serve's (also without a subcommand). */
function commandOf(first: string | undefined): string {
  return first === 'archive' || first === 'replay' || first === 'drift-reference' || first === 'perf' || first === 'tune' ? first : 'serve';
}

// Runs only as the program itself: `node dist/src/cli.js`, or the `hotpath`
// bin link (npx, node_modules/.bin), which resolves to this file. Importing
// the module never starts a server, whatever the importing script is called.
function invokedDirectly(): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(path.resolve(script)) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}
if (invokedDirectly()) {
  main(process.argv.slice(2)).catch((err: unknown) => {
    // A wrong command: the usage. A wrong flag or value: its one line, so a crash-looping pod's log tail says what is wrong.
    if (err instanceof CommandError) {
      process.stderr.write(`hotpath: ${err.message}\n\n${SERVE_USAGE}`);
      process.exit(2);
    }
    if (err instanceof UsageError || err instanceof StartupError) {
      process.stderr.write(`hotpath: ${err.message}\n${err instanceof UsageError ? `(hotpath ${commandOf(process.argv[2])} --help lists the options)\n` : ''}`);
      process.exit(2);
    }
    process.stderr.write(`hotpath: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
    process.exit(1);
  });
}
