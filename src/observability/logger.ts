/**
 * The root pino logger. Components take children of it
 * (`logger.child({component: 'repository'})`) so every line says where it came from.
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
