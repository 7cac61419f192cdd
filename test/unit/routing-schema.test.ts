import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { ROUTE_DEFAULTS } from '../../src/routing/routes-config.js';
import { ROUTES_SCHEMA } from '../../src/routing/routes-schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const schemaFile = path.join(root, 'src/routing/routes.schema.json');
const serialized = `${JSON.stringify(ROUTES_SCHEMA, null, 2)}\n`;

// The routes file from issue 13, verbatim.
const ISSUE_EXAMPLE = `
routes:
  scorer:                                   # the name clients call
    arms:
      stable: { model: ctr_mlp, version: 1, weight: 90 }
      canary: { model: ctr_mlp, version: 2, weight: 10 }
    header: { name: x-model-stage, arms: { canary: canary, stable: stable } }
    sticky_key: x-user-id                   # a header / metadata key
    sticky_fallback: address                # optional: x-forwarded-for's first entry, then the peer
    shadow: { model: ctr_mlp_next, percent: 5 }
    breaker: { window_s: 30, min_requests: 20, error_rate: 0.5, slow_ms: 50, slow_rate: 0.5, open_s: 10 }
    fallback: { outputs: { score: { datatype: FP32, value: 0.0 } } }   # or { model: ctr_small }
    rollback: { arm: canary, error_rate: 0.05, slow_ms: 50, slow_rate: 0.2, window_s: 60 }
`;

describe('routes JSON Schema', () => {
  it('the checked-in routes.schema.json is the schema the code validates with', () => {
    // HOTPATH_WRITE_ROUTES_SCHEMA=1 npx vitest run test/unit/routing-schema.test.ts rewrites it.
    if (process.env.HOTPATH_WRITE_ROUTES_SCHEMA === '1') writeFileSync(schemaFile, serialized);
    expect(readFileSync(schemaFile, 'utf8'), 'run with HOTPATH_WRITE_ROUTES_SCHEMA=1 to regenerate').toBe(serialized);
  });

  it('is a valid draft-07 schema that strict Ajv compiles', () => {
    const ajv = new Ajv({ strict: true, allowUnionTypes: true });
    expect(ajv.validateSchema(ROUTES_SCHEMA)).toBe(true);
    expect(() => ajv.compile(ROUTES_SCHEMA)).not.toThrow();
  });

  it("accepts the issue's example file", () => {
    const validate = new Ajv({ allErrors: true, allowUnionTypes: true }).compile(ROUTES_SCHEMA);
    expect(validate(parse(ISSUE_EXAMPLE)), JSON.stringify(validate.errors)).toBe(true);
  });

  it('documents the defaults the code applies', () => {
    const route = ROUTES_SCHEMA.definitions.route.properties;
    expect(route.sticky_fallback.default).toBe(ROUTE_DEFAULTS.sticky_fallback);
    for (const [key, value] of Object.entries(ROUTE_DEFAULTS.breaker)) {
      expect((route.breaker.properties as Record<string, { default?: unknown }>)[key]?.default).toBe(value);
    }
    for (const [key, value] of Object.entries(ROUTE_DEFAULTS.rollback)) {
      expect((route.rollback.properties as Record<string, { default?: unknown }>)[key]?.default).toBe(value);
    }
  });

  it('rejects names that would escape the repository or break labels', () => {
    const validate = new Ajv({ allowUnionTypes: true }).compile(ROUTES_SCHEMA);
    const file = (route: string, model: string) => ({ routes: { [route]: { arms: { a: { model, weight: 1 } } } } });
    expect(validate(file('scorer', 'ctr_mlp'))).toBe(true);
    expect(validate(file('scorer', '..'))).toBe(false);
    expect(validate(file('scorer', 'a/b'))).toBe(false);
    expect(validate(file('scorer', ''))).toBe(false);
    expect(validate(file('bad name', 'ctr_mlp'))).toBe(false);
    expect(validate(file('.hidden', 'ctr_mlp'))).toBe(false);
  });
});
