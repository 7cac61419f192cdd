/**
 * How `hotpath serve` ends on SIGTERM or SIGINT: drain (HotpathServer.drain),
 * then exit, always within drain delay + drain timeout + a few seconds.
 *
 * Node's process.exit() joins every worker thread, and a worker stuck inside
 * onnxruntime's native code (an operator that never returns) is never
 * joined: that made a server log `stopped graceful:false` and stay alive 75 s
 * until killed. So:
 *   - a clean drain with every worker gone exits 0 through process.exit();
 *   - otherwise (drain timeout, a pool that would not close, a worker still
 *     stopping) the logs are flushed and the addon ends the process (_exit)
 *     with status 1, without waiting for any thread;
 *   - a JS timer does the same if the drain itself overruns, and a native
 *     watchdog thread a little later in case the event loop is blocked
 *     (inside process.exit(), say);
 *   - a second signal ends the process at once (status 1), also from the addon.
 *
 * Main thread only.
 */
import { pino, type Logger } from 'pino';
import { armExitWatchdog, exitProcessNow } from '../native/process-exit.js';
import { poolsStillStopping } from '../workers/model-pool.js';

/** After the drain's own limits, the JS deadline's margin... */
export const SHUTDOWN_GRACE_MS = 2000;
/** ...and the native watchdog's (later, so the JS path can log first). */
export const WATCHDOG_GRACE_MS = 4000;

export interface Drainable {
  /** Resolves true when every request finished and every pool closed in time. */
  drain(): Promise<boolean>;
}

export interface ShutdownTiming {
  readonly drainDelayMs: number;
  readonly drainTimeoutMs: number;
}

export function installShutdown(server: Drainable, logger: Logger, timing: ShutdownTiming): void {
  let signals = 0;
  const shutdown = (signal: string) => {
    signals += 1;
    if (signals > 1) {
      logger.warn({ signal }, 'second signal: exiting without waiting for the drain');
      return endNow(logger, 1);
    }
    logger.info({ signal }, 'shutting down');
    const budgetMs = timing.drainDelayMs + timing.drainTimeoutMs;
    try {
      armExitWatchdog(budgetMs + WATCHDOG_GRACE_MS, 1);
    } catch (err) {
      logger.warn({ error: err instanceof Error ? err.message : String(err) }, 'cannot arm the exit watchdog; the JS deadline alone bounds the shutdown');
    }
    // Not unref'd: until it fires or the drain ends, the process has work to do.
    const deadline = setTimeout(() => {
      logger.error({ drain_budget_ms: budgetMs }, 'shutdown overran the drain delay and timeout: exiting now');
      endNow(logger, 1);
    }, budgetMs + SHUTDOWN_GRACE_MS);
    server.drain().then(
      (graceful) => {
        clearTimeout(deadline);
        finish(logger, graceful ? 0 : 1);
      },
      (err: unknown) => {
        clearTimeout(deadline);
        logger.error({ error: err instanceof Error ? err.message : String(err) }, 'shutdown failed');
        finish(logger, 1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

/** process.exit() when nothing can keep it from returning, else the addon's _exit. */
function finish(logger: Logger, status: number): void {
  const stopping = poolsStillStopping();
  if (status === 0 && stopping === 0) {
    flushLogs(logger);
    process.exit(0);
  }
  if (stopping > 0) {
    logger.warn({ pools_still_stopping: stopping }, 'worker threads are stuck in native code: exiting without joining them');
  }
  endNow(logger, status === 0 ? 1 : status);
}

/** Flushes the logs, then ends the process from the addon: no thread is joined. */
function endNow(logger: Logger, status: number): never {
  flushLogs(logger);
  try {
    return exitProcessNow(status);
  } catch {
    // No addon to exit with (it failed to load): SIGKILL ends the process whatever its threads do.
    process.kill(process.pid, 'SIGKILL');
    throw new Error('unreachable: SIGKILL did not end the process');
  }
}

/**
 * Writes out what the logger still buffers, synchronously: pino's default
 * destination (SonicBoom) writes asynchronously, and _exit would drop its
 * buffer. The pretty format's destination is synchronous already.
 */
function flushLogs(logger: Logger): void {
  try {
    const stream = (logger as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as { flushSync?: () => void } | undefined;
    if (typeof stream?.flushSync === 'function') stream.flushSync();
    else logger.flush();
  } catch {
    // A failed flush must not keep the process alive.
  }
}
