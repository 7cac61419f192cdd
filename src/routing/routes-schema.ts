/**
 * The JSON Schema (draft-07) of the routes file (`--routes FILE`, YAML).
 *
 * The schema lives here as a constant so the compiled package validates with
 * exactly this schema, with no file to locate at run time; the checked-in copy
 * `src/routing/routes.schema.json` (for editors, e.g. yaml-language-server's
 * `# yaml-language-server: $schema=...`) is compared with it by
 * test/unit/routing-schema.test.ts, which rewrites it when run with
 * HOTPATH_WRITE_ROUTES_SCHEMA=1.
 *
 * The schema checks shapes and ranges. Rules that relate fields (weights not
 * all 0, header and rollback arms exist, a fallback is a model or outputs)
 * are checked by routes-file.ts, and the rules that need the model registry
 * by route-compatibility.ts.
 */
import { WIRE_DATATYPES } from '../tensor/wire-types.js';
import { ROUTE_DEFAULTS } from './routes-config.js';

/** Route and arm names: metric labels and response parameters. */
export const ROUTE_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
/** A header or gRPC metadata name (an HTTP token). */
export const HEADER_NAME_PATTERN = "^[A-Za-z0-9!#$%&'*+.^_`|~-]+$";

const modelName = {
  type: 'string',
  minLength: 1,
  // As the repository allows: no path separators or NUL, not '.' or '..'.
  pattern: '^(?!\\.{1,2}$)[^/\\\\\\u0000]+$',
  description: 'A model in the repository.',
};
const version = { type: 'integer', minimum: 1, description: "The model version; omitted, the model's version policy picks." };
const rate = { type: 'number', exclusiveMinimum: 0, maximum: 1 };
const seconds = { type: 'number', exclusiveMinimum: 0, maximum: 86400 };
const ms = { type: 'number', exclusiveMinimum: 0 };
const requests = { type: 'integer', minimum: 1 };

const B = ROUTE_DEFAULTS.breaker;
const R = ROUTE_DEFAULTS.rollback;

export const ROUTES_SCHEMA = {
  $schema: 'http://json-schema.org/draft-07/schema#',
  title: 'hotpath routes file',
  description: 'Virtual model names (routes) that choose among model versions: canary, A/B, shadow, breakers, rollback.',
  type: 'object',
  required: ['routes'],
  additionalProperties: false,
  properties: {
    routes: {
      type: 'object',
      description: 'Route name (the model name clients call) → route.',
      propertyNames: { pattern: ROUTE_NAME_PATTERN },
      additionalProperties: { $ref: '#/definitions/route' },
    },
  },
  definitions: {
    route: {
      type: 'object',
      required: ['arms'],
      additionalProperties: false,
      properties: {
        arms: {
          type: 'object',
          minProperties: 1,
          description: 'Arm name → model, version and weight.',
          propertyNames: { pattern: ROUTE_NAME_PATTERN },
          additionalProperties: { $ref: '#/definitions/arm' },
        },
        header: {
          type: 'object',
          required: ['name', 'arms'],
          additionalProperties: false,
          description: 'A header (or gRPC metadata) whose value picks an arm; unmapped values fall through.',
          properties: {
            name: { type: 'string', pattern: HEADER_NAME_PATTERN },
            arms: {
              type: 'object',
              minProperties: 1,
              description: 'Header value (matched case-insensitively) → arm name.',
              additionalProperties: { type: 'string' },
            },
          },
        },
        sticky_key: {
          type: 'string',
          pattern: HEADER_NAME_PATTERN,
          description: 'A header / metadata whose value is hashed (rendezvous) over the weights.',
        },
        sticky_fallback: {
          enum: ['address', 'random'],
          default: ROUTE_DEFAULTS.sticky_fallback,
          description: "Without a sticky key: 'address' hashes x-forwarded-for's first entry, then the peer; 'random' picks by weight.",
        },
        shadow: {
          type: 'object',
          required: ['model', 'percent'],
          additionalProperties: false,
          properties: { model: modelName, version, percent: { type: 'number', minimum: 0, maximum: 100 } },
        },
        breaker: {
          type: 'object',
          additionalProperties: false,
          description: 'A circuit breaker per arm over a rolling window.',
          properties: {
            window_s: { ...seconds, default: B.window_s },
            min_requests: { ...requests, default: B.min_requests },
            error_rate: { ...rate, default: B.error_rate },
            slow_ms: { ...ms, description: 'Answers slower than this count as slow; omitted, slowness is not checked.' },
            slow_rate: { ...rate, default: B.slow_rate },
            open_s: { ...seconds, default: B.open_s },
            probes: { type: 'integer', minimum: 1, maximum: 100, default: B.probes, description: 'Probe requests admitted while half-open.' },
          },
        },
        fallback: {
          type: 'object',
          additionalProperties: false,
          description: 'What an open breaker answers with: {model[, version]} or {outputs: {NAME: {datatype, value}}}.',
          properties: {
            model: modelName,
            version,
            outputs: {
              type: 'object',
              minProperties: 1,
              additionalProperties: {
                type: 'object',
                required: ['datatype', 'value'],
                additionalProperties: false,
                properties: {
                  datatype: { enum: [...WIRE_DATATYPES] },
                  value: { type: ['number', 'boolean', 'string'] },
                },
              },
            },
          },
        },
        rollback: {
          type: 'object',
          required: ['arm'],
          additionalProperties: false,
          description: "Rolls the arm back (weight 0, header falls through to stable) when its window crosses a threshold.",
          properties: {
            arm: { type: 'string' },
            window_s: { ...seconds, default: R.window_s },
            min_requests: { ...requests, default: R.min_requests },
            error_rate: rate,
            slow_ms: ms,
            slow_rate: { ...rate, default: R.slow_rate },
          },
        },
      },
    },
    arm: {
      type: 'object',
      required: ['model', 'weight'],
      additionalProperties: false,
      properties: {
        model: modelName,
        version,
        weight: { type: 'number', minimum: 0, description: 'Relative weight; 0 is reached only through the header.' },
      },
    },
  },
} as const;
