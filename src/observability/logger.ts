/**
 * The root pino logger. Components take children of it
 * (`logger.child({component: 'repository'})`) so every line says where it came from.
 *
 * Field names are shared across components: time, level, service, component,
 * request_id, trace_id, model, model_version, tenant, latency_ms, status, error
 * (a message string, never an object), so one query works on every line.
 *
 * Two formats (`--log-format`): `json`, one JSON object a line for log
 * collectors, and `pretty`, one human-readable line a record for a terminal:
 * `TIME LEVEL [component] message key=value ...`. Pretty is formatted here
 * from pino's own JSON line, without a transport (no worker thread, no extra
 * package), and written synchronously like the JSON lines.
 */
import { pino, type Logger, type LevelWithSilent } from 'pino';

export type LogFormat = 'json' | 'pretty';

/**
 * The root logger, on stdout, or appended to `file` (`--log-file`; written
 * synchronously like stdout, so the last lines before an exit are there).
 */
export function createRootLogger(level: LevelWithSilent, format: LogFormat = 'json', file?: string): Logger {
  const options = {
    level,
    base: { service: 'hotpath' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  if (format === 'json' && file === undefined) return pino(options);
  const out = file === undefined ? pino.destination({ fd: 1, sync: true }) : pino.destination({ dest: file, sync: true, append: true });
  if (format === 'json') return pino(options, out);
  return pino(options, { write: (line: string) => out.write(prettyLine(line)) });
}

/** Fields every record has, shown in the line's head rather than as key=value. */
const HEAD_FIELDS = new Set(['time', 'level', 'msg', 'component', 'service', 'pid', 'hostname']);

/**
 * One pino JSON line as `TIME LEVEL [component] message key=value ...`, ending
 * in a newline. Values with spaces, quotes or control characters are quoted
 * JSON strings, so a record never spans two lines.
 */
export function prettyLine(jsonLine: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine.endsWith('\n') ? jsonLine : `${jsonLine}\n`;
  }
  const level = String(record['level'] ?? '').toUpperCase().padEnd(5);
  const component = typeof record['component'] === 'string' ? ` [${record['component']}]` : '';
  const message = typeof record['msg'] === 'string' ? ` ${escapeControl(record['msg'])}` : '';
  const fields = Object.entries(record)
    .filter(([key]) => !HEAD_FIELDS.has(key))
    .map(([key, value]) => ` ${key}=${prettyValue(value)}`)
    .join('');
  return `${String(record['time'] ?? '')} ${level}${component}${message}${fields}\n`;
}

function prettyValue(value: unknown): string {
  if (typeof value === 'string') return /^[^\s"=\\\p{Cc}]+$/u.test(value) ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}

function escapeControl(text: string): string {
  // Every control character, as JSON writes it.
  return text.replace(/\p{Cc}/gu, (c) => JSON.stringify(c).slice(1, -1));
}
