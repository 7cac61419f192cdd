import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fallbackOutputShape, stableArmName } from '../../src/routing/routes-config.js';
import { parseRoutesText, readRoutesFile, RoutesFileError } from '../../src/routing/routes-file.js';

const ISSUE_EXAMPLE = `
routes:
  scorer:
    arms:
      stable: { model: ctr_mlp, version: 1, weight: 90 }
      canary: { model: ctr_mlp, version: 2, weight: 10 }
    header: { name: X-Model-Stage, arms: { canary: canary, stable: stable } }
    sticky_key: x-user-id
    sticky_fallback: address
    shadow: { model: ctr_mlp_next, percent: 5 }
    breaker: { window_s: 30, min_requests: 20, error_rate: 0.5, slow_ms: 50, slow_rate: 0.5, open_s: 10 }
    fallback: { outputs: { score: { datatype: FP32, value: 0.0 } } }
    rollback: { arm: canary, error_rate: 0.05, slow_ms: 50, slow_rate: 0.2, window_s: 60 }
`;

/** One route with `arms` and the extra YAML lines `extra` (indented under the route). */
function route(extra = '', arms = 'stable: { model: m, weight: 90 }\n      canary: { model: m, version: 2, weight: 10 }'): string {
  return `routes:\n  scorer:\n    arms:\n      ${arms}\n${extra
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => `    ${l}`)
    .join('\n')}\n`;
}

function problemsOf(text: string): string[] {
  try {
    parseRoutesText(text, 'routes.yaml');
  } catch (err) {
    expect(err).toBeInstanceOf(RoutesFileError);
    return (err as RoutesFileError).problems.map((p) => `${p.route ?? '-'} | ${p.field} | ${p.message}`);
  }
  throw new Error('expected the routes file to be refused');
}

describe('parseRoutesText: the issue example', () => {
  const config = parseRoutesText(ISSUE_EXAMPLE, 'routes.yaml');
  const scorer = config.routes.get('scorer')!;

  it('reads every block', () => {
    expect([...config.routes.keys()]).toEqual(['scorer']);
    expect(scorer.arms).toEqual([
      { name: 'stable', model: 'ctr_mlp', version: 1, weight: 90 },
      { name: 'canary', model: 'ctr_mlp', version: 2, weight: 10 },
    ]);
    expect(scorer.header?.name).toBe('x-model-stage'); // lower-cased
    expect([...scorer.header!.arms]).toEqual([
      ['canary', 'canary'],
      ['stable', 'stable'],
    ]);
    expect(scorer.stickyKey).toBe('x-user-id');
    expect(scorer.stickyFallback).toBe('address');
    expect(scorer.shadow).toEqual({ model: 'ctr_mlp_next', version: undefined, percent: 5 });
    expect(scorer.breaker).toEqual({
      windowMs: 30_000, minRequests: 20, errorRate: 0.5, slowMs: 50, slowRate: 0.5, openMs: 10_000, probes: 3,
    });
    expect(scorer.fallback).toEqual({ kind: 'outputs', outputs: [{ name: 'score', datatype: 'FP32', value: 0 }] });
    expect(scorer.rollback).toEqual({ arm: 'canary', windowMs: 60_000, minRequests: 20, errorRate: 0.05, slowMs: 50, slowRate: 0.2 });
    expect(scorer.stableArm).toBe('stable');
  });

  it('returns frozen data', () => {
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(scorer)).toBe(true);
    expect(Object.isFrozen(scorer.arms)).toBe(true);
    expect(Object.isFrozen(scorer.arms[0])).toBe(true);
    expect(Object.isFrozen(scorer.breaker)).toBe(true);
  });
});

describe('parseRoutesText: defaults and minimal routes', () => {
  it('accepts a route with only arms, and an empty routes map', () => {
    const r = parseRoutesText(route('', 'only: { model: m, weight: 1 }')).routes.get('scorer')!;
    expect(r).toMatchObject({ header: undefined, stickyKey: undefined, stickyFallback: 'random', shadow: undefined, breaker: undefined, fallback: undefined, rollback: undefined, stableArm: 'only' });
    expect(parseRoutesText('routes: {}').routes.size).toBe(0);
  });

  it('fills breaker and rollback defaults', () => {
    const r = parseRoutesText(route('breaker: {}\nfallback: { model: small }\nrollback: { arm: canary, error_rate: 0.1 }')).routes.get('scorer')!;
    expect(r.breaker).toEqual({ windowMs: 30_000, minRequests: 20, errorRate: 0.5, slowMs: undefined, slowRate: 0.5, openMs: 10_000, probes: 3 });
    expect(r.rollback).toEqual({ arm: 'canary', windowMs: 60_000, minRequests: 20, errorRate: 0.1, slowMs: undefined, slowRate: 0.2 });
    expect(r.fallback).toEqual({ kind: 'model', model: 'small', version: undefined });
  });

  it('keeps several routes in file order', () => {
    const text = 'routes:\n  b: { arms: { x: { model: m, weight: 1 } } }\n  a: { arms: { y: { model: n, weight: 1 } } }\n';
    expect([...parseRoutesText(text).routes.keys()]).toEqual(['b', 'a']);
  });
});

describe('stable arm', () => {
  it("is the arm named 'stable', else the highest weight, first on ties", () => {
    expect(stableArmName([{ name: 'a', weight: 90 }, { name: 'stable', weight: 10 }])).toBe('stable');
    expect(stableArmName([{ name: 'a', weight: 10 }, { name: 'b', weight: 90 }])).toBe('b');
    expect(stableArmName([{ name: 'a', weight: 50 }, { name: 'b', weight: 50 }])).toBe('a');
    expect(stableArmName([{ name: 'stable', weight: 90 }, { name: 'b', weight: 10 }], (n) => n === 'stable')).toBe('b');
    expect(stableArmName([{ name: 'a', weight: 1 }], () => true)).toBeUndefined();
  });

  it('default output shapes take the batch size in the leading dynamic dimension', () => {
    expect(fallbackOutputShape([-1, 1], 4)).toEqual([4, 1]);
    expect(fallbackOutputShape([-1, -1], 2)).toEqual([2, 1]);
    expect(fallbackOutputShape([3], 7)).toEqual([3]);
  });
});

describe('parseRoutesText: schema problems name the route, the field, expected and actual', () => {
  it.each([
    ['a negative weight', route('', 'stable: { model: m, weight: -1 }\n      canary: { model: m, weight: 1 }'), /scorer \| arms\.stable\.weight \| expected a number >= 0, got -1/],
    ['a shadow percent over 100', route('shadow: { model: s, percent: 150 }'), /scorer \| shadow\.percent \| expected a number <= 100, got 150/],
    ['a breaker error_rate over 1', route('breaker: { error_rate: 1.5 }\nfallback: { model: f }'), /scorer \| breaker\.error_rate \| expected a number <= 1, got 1\.5/],
    ['a breaker error_rate of 0', route('breaker: { error_rate: 0 }'), /breaker\.error_rate \| expected a number > 0, got 0/],
    ['min_requests 0', route('breaker: { min_requests: 0 }'), /breaker\.min_requests \| expected a number >= 1, got 0/],
    ['a fractional min_requests', route('breaker: { min_requests: 2.5 }'), /breaker\.min_requests \| expected integer, got 2\.5/],
    ['open_s 0', route('breaker: { open_s: 0 }'), /breaker\.open_s \| expected a number > 0, got 0/],
    ['a version 0', route('', 'stable: { model: m, version: 0, weight: 1 }'), /arms\.stable\.version \| expected a number >= 1, got 0/],
    ['an unknown field', route('stikcy_key: x-user-id'), /scorer \| stikcy_key \| unknown field; expected one of arms, header, sticky_key/],
    ['an unknown arm field', route('', 'stable: { model: m, weight: 1, wieght: 2 }'), /arms\.stable\.wieght \| unknown field; expected one of model, version, weight/],
    ['a missing weight', route('', 'stable: { model: m }'), /arms\.stable\.weight \| expected this required field, got nothing/],
    ['no arms', 'routes:\n  scorer: { shadow: { model: s, percent: 1 } }\n', /scorer \| arms \| expected this required field/],
    ['empty arms', 'routes:\n  scorer: { arms: {} }\n', /scorer \| arms \| expected at least 1 entry, got none/],
    ['a bad sticky_fallback', route('sticky_fallback: cookie'), /sticky_fallback \| expected one of address, random, got "cookie"/],
    ['a bad datatype', route('breaker: {}\nfallback: { outputs: { score: { datatype: FLOAT, value: 0 } } }'), /fallback\.outputs\.score\.datatype \| expected one of BOOL, .*FP32.*, got "FLOAT"/],
    ['a bad route name', 'routes:\n  "bad name": { arms: { a: { model: m, weight: 1 } } }\n', /bad name \|  \| expected a name matching/],
    ['a bad arm name', route('', '"a b": { model: m, weight: 1 }'), /scorer \| arms\.a b \| expected a name matching/],
    ['a model path', route('', 'stable: { model: ../etc, weight: 1 }'), /arms\.stable\.model \| expected a string matching .*, got "\.\.\/etc"/],
    ['a weight of .inf', route('', 'stable: { model: m, weight: .inf }'), /arms\.stable\.weight \| expected a finite number, got Infinity/],
    ['no routes key', 'route: {}\n', /- \| routes \| expected this required field/],
    ['a scalar file', '42\n', /- \| \(file\) \| expected object, got 42/],
    ['an empty file', '', /- \| \(file\) \| expected object, got null/],
  ])('refuses %s', (_what, text, pattern) => {
    expect(problemsOf(text).join('\n')).toMatch(pattern);
  });

  it('reports YAML syntax errors with their line', () => {
    expect(problemsOf('routes:\n  scorer: { arms: [\n')[0]).toMatch(/line \d+, column \d+ \| invalid YAML/);
    expect(problemsOf('routes:\n  a: { arms: { x: { model: m, weight: 1 } } }\n  a: { arms: { x: { model: m, weight: 1 } } }\n')[0]).toMatch(/line 3, column 3 \| invalid YAML: Map keys must be unique/);
  });

  it('collects every problem, and the message lists them', () => {
    const text = route('shadow: { model: s, percent: 101 }', 'stable: { model: m, weight: -1 }');
    expect(() => parseRoutesText(text, '/etc/routes.yaml')).toThrow(
      /^routes file \/etc\/routes\.yaml: 2 problems:\n {2}- route 'scorer': arms\.stable\.weight: expected a number >= 0, got -1\n {2}- route 'scorer': shadow\.percent: expected a number <= 100, got 101$/,
    );
  });
});

describe('parseRoutesText: rules between fields', () => {
  it.each([
    ['all weights 0', route('', 'a: { model: m, weight: 0 }\n      b: { model: m, weight: 0 }'), /scorer \| arms \| expected at least one arm with weight > 0, got all weights 0 \(a, b\)/],
    ['a header mapped to no arm', route('header: { name: x-stage, arms: { beta: gamma } }'), /header\.arms\.beta \| expected an arm name \(one of stable, canary\), got "gamma"/],
    ['header values equal but for case', route('header: { name: x-stage, arms: { Canary: canary, canary: stable } }'), /header\.arms\.canary \| expected each value once/],
    ['a rollback arm that does not exist', route('rollback: { arm: canry, error_rate: 0.1 }'), /rollback\.arm \| expected an arm name \(one of stable, canary\), got "canry"/],
    ['rolling back the only weighted arm', route('rollback: { arm: stable, error_rate: 0.1 }', 'stable: { model: m, weight: 1 }\n      canary: { model: m, weight: 0 }'), /rollback\.arm \| expected another arm with weight > 0 to take the traffic once "stable" is rolled back, got none/],
    ['a rollback without thresholds', route('rollback: { arm: canary }'), /scorer \| rollback \| expected error_rate and\/or slow_ms/],
    ['a rollback slow_rate without slow_ms', route('rollback: { arm: canary, error_rate: 0.1, slow_rate: 0.3 }'), /rollback\.slow_rate \| expected slow_ms alongside slow_rate/],
    ['a breaker slow_rate without slow_ms', route('breaker: { slow_rate: 0.3 }'), /breaker\.slow_rate \| expected slow_ms alongside slow_rate/],
    ['a fallback with model and outputs', route('breaker: {}\nfallback: { model: f, outputs: { s: { datatype: FP32, value: 0 } } }'), /scorer \| fallback \| expected either \{model\[, version\]\} or \{outputs: .*\}, got both/],
    ['an empty fallback', route('breaker: {}\nfallback: {}'), /scorer \| fallback \| expected either .*, got \{\}/],
    ['a fallback without a breaker', route('fallback: { model: f }'), /scorer \| fallback \| expected a breaker block alongside fallback/],
    ['a version with default outputs', route('breaker: {}\nfallback: { version: 2, outputs: { s: { datatype: FP32, value: 0 } } }'), /fallback\.version \| expected no version with outputs/],
    ['a string for FP32', route('breaker: {}\nfallback: { outputs: { s: { datatype: FP32, value: "x" } } }'), /fallback\.outputs\.s\.value \| expected a number for FP32, got "x"/],
    ['300 for UINT8', route('breaker: {}\nfallback: { outputs: { s: { datatype: UINT8, value: 300 } } }'), /fallback\.outputs\.s\.value \| expected an integer in 0\.\.255 for UINT8, got 300/],
    ['1.5 for INT32', route('breaker: {}\nfallback: { outputs: { s: { datatype: INT32, value: 1.5 } } }'), /expected an integer in -2147483648\.\.2147483647 for INT32, got 1\.5/],
    ['2 for BOOL', route('breaker: {}\nfallback: { outputs: { s: { datatype: BOOL, value: 2 } } }'), /expected true, false, 0 or 1 for BOOL, got 2/],
    ['a number for BYTES', route('breaker: {}\nfallback: { outputs: { s: { datatype: BYTES, value: 1 } } }'), /expected a string for BYTES, got 1/],
  ])('refuses %s', (_what, text, pattern) => {
    expect(problemsOf(text).join('\n')).toMatch(pattern);
  });

  it('accepts values of every kind that fit', () => {
    const text = route(
      'breaker: {}\nfallback: { outputs: { a: { datatype: BOOL, value: true }, b: { datatype: BYTES, value: none }, c: { datatype: INT64, value: -5 }, d: { datatype: FP16, value: 0.5 } } }',
    );
    expect(parseRoutesText(text).routes.get('scorer')!.fallback).toMatchObject({ kind: 'outputs' });
  });

  it('accepts header-only arms (weight 0) and header values in any case', () => {
    const r = parseRoutesText(route('header: { name: x-stage, arms: { CANARY: canary } }', 'stable: { model: m, weight: 1 }\n      canary: { model: m, weight: 0 }')).routes.get('scorer')!;
    expect(r.header!.arms.get('canary')).toBe('canary');
  });

  it('reports problems of several routes, each by name', () => {
    const text = 'routes:\n  a: { arms: { x: { model: m, weight: 0 } } }\n  b: { arms: { y: { model: m, weight: 1 } }, rollback: { arm: z, error_rate: 0.1 } }\n';
    const problems = problemsOf(text);
    expect(problems).toHaveLength(2);
    expect(problems[0]).toMatch(/^a \| arms \|/);
    expect(problems[1]).toMatch(/^b \| rollback\.arm \|/);
  });
});

describe('readRoutesFile', () => {
  it('reads a file, and names it when it cannot', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'hotpath-routes-'));
    try {
      const file = path.join(dir, 'routes.yaml');
      writeFileSync(file, ISSUE_EXAMPLE);
      expect(readRoutesFile(file).routes.has('scorer')).toBe(true);
      expect(() => readRoutesFile(path.join(dir, 'missing.yaml'))).toThrow(/^routes file .*missing\.yaml: cannot read: ENOENT/);
      writeFileSync(file, route('', 'stable: { model: m, weight: -2 }'));
      expect(() => readRoutesFile(file)).toThrow(new RegExp(`^routes file ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: route 'scorer': arms\\.stable\\.weight: expected a number >= 0, got -2$`));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
