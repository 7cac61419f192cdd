/**
 * Reads the routes file (YAML): parse, validate against the JSON Schema
 * (routes-schema.ts), check the rules that relate fields, and return frozen
 * `RoutesConfig` data. Every problem is collected, not just the first, and
 * each names the route, the field, what was expected and what was found:
 *
 *   routes file /etc/hotpath/routes.yaml: route 'scorer': arms.canary.weight: expected a number >= 0, got -1
 *
 * Checks that need the model registry (arms accept the route's inputs) are in
 * route-compatibility.ts. Pure apart from `readRoutesFile`'s one read.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { LineCounter, parseDocument } from 'yaml';
import type { WireDatatype } from '../tensor/wire-types.js';
import {
  ROUTE_DEFAULTS,
  stableArmName,
  type ArmConfig,
  type BreakerConfig,
  type FallbackConfig,
  type FallbackOutput,
  type HeaderRule,
  type RollbackConfig,
  type RouteConfig,
  type RoutesConfig,
  type ShadowConfig,
} from './routes-config.js';
import { ROUTES_SCHEMA } from './routes-schema.js';

export interface RoutesProblem {
  /** Undefined for a problem with the file as a whole. */
  readonly route: string | undefined;
  /** Dotted path inside the route (`arms.canary.weight`), or inside the file. */
  readonly field: string;
  /** `expected …, got …`. */
  readonly message: string;
}

/** An invalid routes file. `problems` lists every problem found; the message shows them all. */
export class RoutesFileError extends Error {
  override readonly name = 'RoutesFileError';

  constructor(
    /** The file name, or a description of where the text came from. */
    readonly source: string,
    readonly problems: readonly RoutesProblem[],
  ) {
    super(
      problems.length === 1
        ? `routes file ${source}: ${formatProblem(problems[0]!)}`
        : `routes file ${source}: ${problems.length} problems:\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`,
    );
  }
}

export function formatProblem(problem: RoutesProblem): string {
  const where = problem.route === undefined ? '' : `route '${problem.route}': `;
  return `${where}${problem.field === '' ? '' : `${problem.field}: `}${problem.message}`;
}

/** Reads and validates a routes file; throws RoutesFileError (unreadable files included). */
export function readRoutesFile(file: string): RoutesConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new RoutesFileError(file, [{ route: undefined, field: '', message: `cannot read: ${(err as Error).message}` }]);
  }
  return parseRoutesText(text, file);
}

/** Parses and validates routes-file text; throws RoutesFileError. */
export function parseRoutesText(text: string, source = '(text)'): RoutesConfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: false, lineCounter: lines });
  if (doc.errors.length > 0) {
    throw new RoutesFileError(
      source,
      doc.errors.map((e) => {
        const pos = lines.linePos(e.pos[0]);
        return { route: undefined, field: `line ${pos.line}, column ${pos.col}`, message: `invalid YAML: ${e.message}` };
      }),
    );
  }
  const data: unknown = doc.toJS();
  // YAML has .inf and .nan; JSON Schema's number type accepts them.
  const nonFinite = nonFiniteNumbers(data, []);
  if (nonFinite.length > 0) {
    throw new RoutesFileError(source, nonFinite.map((path) => schemaProblem({
      instancePath: path.map((p) => `/${p.replace(/~/g, '~0').replace(/\//g, '~1')}`).join(''),
      keyword: 'finite', params: {}, schemaPath: '', message: 'expected a finite number',
    }, data)));
  }
  const validate = schemaValidator();
  if (!validate(data)) {
    throw new RoutesFileError(source, dedupe((validate.errors ?? []).map((e) => schemaProblem(e, data))));
  }
  const file = data as RoutesFileData;
  const problems: RoutesProblem[] = [];
  const routes = new Map<string, RouteConfig>();
  for (const [name, route] of Object.entries(file.routes)) {
    const before = problems.length;
    const config = buildRoute(name, route, (field, message) => problems.push({ route: name, field, message }));
    if (problems.length === before) routes.set(name, config);
  }
  if (problems.length > 0) throw new RoutesFileError(source, problems);
  return Object.freeze({ routes: routes as ReadonlyMap<string, RouteConfig> });
}

// ---------------------------------------------------------------------------
// Schema validation and its messages.

let compiled: ValidateFunction | undefined;

function schemaValidator(): ValidateFunction {
  // allowUnionTypes: a fallback value is a number, a boolean or a string.
  // verbose: errors carry their parent schema, which lists the known fields.
  compiled ??= new Ajv({ allErrors: true, strict: true, allowUnionTypes: true, verbose: true }).compile(ROUTES_SCHEMA);
  return compiled;
}

/** The file's shape once the schema accepted it. */
interface RoutesFileData {
  routes: Record<string, RouteData>;
}
interface ModelRef { model: string; version?: number }
interface RouteData {
  arms: Record<string, ModelRef & { weight: number }>;
  header?: { name: string; arms: Record<string, string> };
  sticky_key?: string;
  sticky_fallback?: 'address' | 'random';
  shadow?: ModelRef & { percent: number };
  breaker?: Partial<Record<'window_s' | 'min_requests' | 'error_rate' | 'slow_ms' | 'slow_rate' | 'open_s' | 'probes', number>>;
  fallback?: Partial<ModelRef> & { outputs?: Record<string, { datatype: WireDatatype; value: number | boolean | string }> };
  rollback?: { arm: string } & Partial<Record<'window_s' | 'min_requests' | 'error_rate' | 'slow_ms' | 'slow_rate', number>>;
}

function nonFiniteNumbers(value: unknown, path: string[]): string[][] {
  if (typeof value === 'number') return Number.isFinite(value) ? [] : [path];
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, child]) => nonFiniteNumbers(child, [...path, key]));
}

function decodePointer(pointer: string): string[] {
  if (pointer === '') return [];
  return pointer.slice(1).split('/').map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function valueAt(data: unknown, path: readonly string[]): unknown {
  let value = data;
  for (const key of path) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

/** A value for a message, cut to a readable length. */
export function shown(value: unknown): string {
  const text = value === undefined ? 'nothing' : JSON.stringify(value) ?? String(value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

function schemaProblem(error: ErrorObject, data: unknown): RoutesProblem {
  const path = decodePointer(error.instancePath);
  const actual = valueAt(data, path);
  const params = error.params as Record<string, unknown>;
  let field = [...path];
  let message: string;
  switch (error.keyword) {
    case 'required':
      field.push(String(params.missingProperty));
      message = 'expected this required field, got nothing';
      break;
    case 'additionalProperties': {
      const schema = error.parentSchema as { properties?: Record<string, unknown> } | undefined;
      const known = Object.keys(schema?.properties ?? {});
      field.push(String(params.additionalProperty));
      message = `unknown field; expected one of ${known.join(', ')}`;
      break;
    }
    case 'pattern':
      if (error.propertyName !== undefined) {
        field.push(error.propertyName);
        message = `expected a name matching ${String(params.pattern)}, got ${shown(error.propertyName)}`;
      } else {
        message = `expected a string matching ${String(params.pattern)}, got ${shown(actual)}`;
      }
      break;
    case 'propertyNames':
      // Reported in detail by the 'pattern' error that comes with it.
      field = [...path, String(params.propertyName)];
      message = 'invalid name';
      break;
    case 'type':
      message = `expected ${String(params.type).replace(/,/g, ' or ')}, got ${shown(actual)}`;
      break;
    case 'enum':
      message = `expected one of ${(params.allowedValues as unknown[]).map((v) => String(v)).join(', ')}, got ${shown(actual)}`;
      break;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      message = `expected a number ${String(params.comparison)} ${String(params.limit)}, got ${shown(actual)}`;
      break;
    case 'minProperties':
      message = `expected at least ${String(params.limit)} entr${params.limit === 1 ? 'y' : 'ies'}, got none`;
      break;
    case 'minLength':
      message = `expected a non-empty string, got ${shown(actual)}`;
      break;
    case 'finite':
      message = `expected a finite number, got ${String(actual)}`;
      break;
    default:
      message = `${error.message ?? 'invalid'} (got ${shown(actual)})`;
  }
  const inRoute = field[0] === 'routes' && field.length >= 2;
  return {
    route: inRoute ? field[1] : undefined,
    field: (inRoute ? field.slice(2) : field).join('.') || (inRoute ? '' : '(file)'),
    message,
  };
}

function dedupe(problems: RoutesProblem[]): RoutesProblem[] {
  const seen = new Set<string>();
  // A bad name yields both a 'pattern' and a 'propertyNames' error; keep the detailed one.
  const detailed = new Set(problems.filter((p) => p.message !== 'invalid name').map((p) => `${p.route}|${p.field}`));
  return problems.filter((p) => {
    const key = `${p.route}|${p.field}|${p.message}`;
    if (seen.has(key) || (p.message === 'invalid name' && detailed.has(`${p.route}|${p.field}`))) return false;
    seen.add(key);
    return true;
  });
}

// ---------------------------------------------------------------------------
// Rules between fields, and the conversion to RouteConfig.

type Report = (field: string, message: string) => void;

function buildRoute(name: string, data: RouteData, report: Report): RouteConfig {
  const arms: ArmConfig[] = Object.entries(data.arms).map(([armName, arm]) =>
    Object.freeze({ name: armName, model: arm.model, version: arm.version, weight: arm.weight }),
  );
  const armNames = arms.map((arm) => arm.name);
  const isArm = (value: string): boolean => armNames.includes(value);
  const armList = armNames.join(', ');

  if (!arms.some((arm) => arm.weight > 0)) {
    report('arms', `expected at least one arm with weight > 0, got all weights 0 (${armList})`);
  }

  let header: HeaderRule | undefined;
  if (data.header !== undefined) {
    const map = new Map<string, string>();
    for (const [value, arm] of Object.entries(data.header.arms)) {
      const key = value.trim().toLowerCase();
      if (!isArm(arm)) report(`header.arms.${value}`, `expected an arm name (one of ${armList}), got ${shown(arm)}`);
      else if (map.has(key)) report(`header.arms.${value}`, `expected each value once (values match case-insensitively), got ${shown(value)} again`);
      else map.set(key, arm);
    }
    header = Object.freeze({ name: data.header.name.toLowerCase(), arms: map as ReadonlyMap<string, string> });
  }

  let shadow: ShadowConfig | undefined;
  if (data.shadow !== undefined) {
    shadow = Object.freeze({ model: data.shadow.model, version: data.shadow.version, percent: data.shadow.percent });
  }

  let breaker: BreakerConfig | undefined;
  if (data.breaker !== undefined) {
    const b = { ...ROUTE_DEFAULTS.breaker, ...data.breaker };
    if (data.breaker.slow_rate !== undefined && data.breaker.slow_ms === undefined) {
      report('breaker.slow_rate', 'expected slow_ms alongside slow_rate (what counts as slow), got no slow_ms');
    }
    breaker = Object.freeze({
      windowMs: b.window_s * 1000,
      minRequests: b.min_requests,
      errorRate: b.error_rate,
      slowMs: data.breaker.slow_ms,
      slowRate: b.slow_rate,
      openMs: b.open_s * 1000,
      probes: b.probes,
    });
  }

  const fallback = data.fallback === undefined ? undefined : buildFallback(data.fallback, report);
  if (fallback !== undefined && breaker === undefined) {
    report('fallback', 'expected a breaker block alongside fallback (the fallback answers while a breaker is open), got no breaker');
  }

  let rollback: RollbackConfig | undefined;
  if (data.rollback !== undefined) {
    const r = { ...ROUTE_DEFAULTS.rollback, ...data.rollback };
    if (!isArm(r.arm)) {
      report('rollback.arm', `expected an arm name (one of ${armList}), got ${shown(r.arm)}`);
    } else if (!arms.some((arm) => arm.name !== r.arm && arm.weight > 0)) {
      report('rollback.arm', `expected another arm with weight > 0 to take the traffic once ${shown(r.arm)} is rolled back, got none`);
    }
    if (data.rollback.error_rate === undefined && data.rollback.slow_ms === undefined) {
      report('rollback', 'expected error_rate and/or slow_ms (the thresholds that trigger it), got neither');
    }
    if (data.rollback.slow_rate !== undefined && data.rollback.slow_ms === undefined) {
      report('rollback.slow_rate', 'expected slow_ms alongside slow_rate (what counts as slow), got no slow_ms');
    }
    rollback = Object.freeze({
      arm: r.arm,
      windowMs: r.window_s * 1000,
      minRequests: r.min_requests,
      errorRate: data.rollback.error_rate,
      slowMs: data.rollback.slow_ms,
      slowRate: r.slow_rate,
    });
  }

  return Object.freeze({
    name,
    arms: Object.freeze(arms),
    header,
    stickyKey: data.sticky_key?.toLowerCase(),
    stickyFallback: data.sticky_fallback ?? ROUTE_DEFAULTS.sticky_fallback,
    shadow,
    breaker,
    fallback,
    rollback,
    stableArm: stableArmName(arms) ?? armNames[0]!,
  });
}

const INTEGER_RANGES: Partial<Record<WireDatatype, readonly [number, number]>> = {
  INT8: [-128, 127],
  UINT8: [0, 255],
  INT16: [-32768, 32767],
  UINT16: [0, 65535],
  INT32: [-(2 ** 31), 2 ** 31 - 1],
  UINT32: [0, 2 ** 32 - 1],
  INT64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  UINT64: [0, Number.MAX_SAFE_INTEGER],
};

function buildFallback(data: NonNullable<RouteData['fallback']>, report: Report): FallbackConfig | undefined {
  const hasModel = data.model !== undefined;
  const hasOutputs = data.outputs !== undefined;
  if (hasModel === hasOutputs) {
    report('fallback', `expected either {model[, version]} or {outputs: {NAME: {datatype, value}}}, got ${hasModel ? 'both' : shown(data)}`);
    return undefined;
  }
  if (data.model !== undefined) return Object.freeze({ kind: 'model', model: data.model, version: data.version });
  if (data.version !== undefined) report('fallback.version', 'expected no version with outputs (version belongs to a fallback model), got ' + shown(data.version));
  const outputs: FallbackOutput[] = [];
  for (const [name, { datatype, value }] of Object.entries(data.outputs ?? {})) {
    const problem = fallbackValueProblem(datatype, value);
    if (problem !== undefined) report(`fallback.outputs.${name}.value`, `${problem}, got ${shown(value)}`);
    outputs.push(Object.freeze({ name, datatype, value }));
  }
  return Object.freeze({ kind: 'outputs', outputs: Object.freeze(outputs) });
}

/** Why `value` cannot fill a tensor of `datatype` (undefined when it can). */
function fallbackValueProblem(datatype: WireDatatype, value: number | boolean | string): string | undefined {
  if (datatype === 'BYTES') return typeof value === 'string' ? undefined : 'expected a string for BYTES';
  if (datatype === 'BOOL') {
    return typeof value === 'boolean' || value === 0 || value === 1 ? undefined : 'expected true, false, 0 or 1 for BOOL';
  }
  if (typeof value !== 'number') return `expected a number for ${datatype}`;
  const range = INTEGER_RANGES[datatype];
  if (range === undefined) return undefined; // FP16, FP32, FP64
  if (!Number.isInteger(value) || value < range[0] || value > range[1]) {
    return `expected an integer in ${range[0]}..${range[1]} for ${datatype}`;
  }
  return undefined;
}
