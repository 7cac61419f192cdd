/**
 * The root pino logger. Components take children of it
 * (`logger.child({component: 'repository'})`) so every line says where it came from.
 *
 * Field names are shared across components: time, level, service, component,
 * request_id, trace_id, model, model_version, tenant, latency_ms, status, error
 * (a message string, never an object), so one query works on every line.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export function createRootLogger(level: LevelWithSilent): Logger {
  return pino({
    level,
    base: { service: 'hotpath' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
  });
}
