import { describe, expect, it } from 'vitest';
import { requestView } from '../../src/routing/arm-choice.js';
import type { ModelSignature } from '../../src/routing/route-compatibility.js';
import { buildRouteTable, RouteTable, type Decision, type RoutingEvent } from '../../src/routing/route-table.js';
import { RoutesFileError } from '../../src/routing/routes-file.js';
import { parseRoutesText } from '../../src/routing/routes-file.js';

function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILE = `
routes:
  scorer:
    arms:
      stable: { model: ctr_mlp, version: 1, weight: 90 }
      canary: { model: ctr_mlp, version: 2, weight: 10 }
    header: { name: x-model-stage, arms: { canary: canary, stable: stable } }
    sticky_key: x-user-id
    sticky_fallback: address
    shadow: { model: ctr_mlp_next, percent: 5 }
    breaker: { window_s: 30, min_requests: 20, error_rate: 0.5, slow_ms: 50, slow_rate: 0.5, open_s: 10 }
    fallback: { outputs: { score: { datatype: FP32, value: 0.0 } } }
    rollback: { arm: canary, error_rate: 0.05, slow_ms: 50, slow_rate: 0.2, window_s: 60 }
  plain:
    arms:
      only: { model: ctr_small, weight: 1 }
`;

function setup(text = FILE) {
  let t = 0;
  const events: RoutingEvent[] = [];
  const table = new RouteTable(parseRoutesText(text), {
    now: () => t,
    random: seededRandom(7),
    onEvent: (e) => events.push(e),
  });
  return { table, events, advance: (ms: number) => void (t += ms), scorer: table.get('scorer')! };
}

const asCanary = requestView({ 'x-model-stage': 'canary' });
const asStable = requestView({ 'x-model-stage': 'stable' });

function primary(decision: Decision): Extract<Decision, { kind: 'primary' }> {
  expect(decision.kind).toBe('primary');
  return decision as Extract<Decision, { kind: 'primary' }>;
}

describe('RouteTable: choosing', () => {
  it('lists its routes and finds them by name', () => {
    const { table } = setup();
    expect(table.names()).toEqual(['scorer', 'plain']);
    expect(table.get('ctr_mlp')).toBeUndefined();
  });

  it("answers with the arm's model and version", () => {
    const { scorer } = setup();
    expect(primary(scorer.choose(asCanary))).toMatchObject({ route: 'scorer', arm: 'canary', model: 'ctr_mlp', version: 2, reason: 'header' });
    expect(primary(scorer.choose(asStable))).toMatchObject({ arm: 'stable', version: 1, reason: 'header' });
    const sticky = primary(scorer.choose(requestView({ 'x-user-id': 'user-42' })));
    for (let i = 0; i < 20; i++) expect(primary(scorer.choose(requestView({ 'x-user-id': 'user-42' }))).arm).toBe(sticky.arm);
  });

  it('splits sticky keys by weight', () => {
    const { scorer } = setup();
    let canary = 0;
    for (let i = 0; i < 20_000; i++) if (primary(scorer.choose(requestView({ 'x-user-id': `u${i}` }))).arm === 'canary') canary++;
    expect(Math.abs(canary / 20_000 - 0.1)).toBeLessThan(0.02);
  });

  it('marks about `percent` of requests for the shadow', () => {
    const { scorer, table } = setup();
    let shadowed = 0;
    for (let i = 0; i < 20_000; i++) {
      const d = primary(scorer.choose(asStable));
      if (d.shadow !== undefined) {
        shadowed++;
        expect(d.shadow).toEqual({ model: 'ctr_mlp_next', version: undefined, percent: 5 });
      }
    }
    expect(Math.abs(shadowed / 20_000 - 0.05)).toBeLessThan(0.01);
    expect(primary(table.get('plain')!.choose(requestView({}))).shadow).toBeUndefined();
  });
});

describe('RouteTable: breakers', () => {
  it('opens under failures, answers from the fallback (degraded), and recovers', () => {
    const { scorer, events, advance } = setup(FILE.replace('rollback: { arm: canary, error_rate: 0.05, slow_ms: 50, slow_rate: 0.2, window_s: 60 }', ''));
    for (let i = 0; i < 20; i++) scorer.record(scorer.choose(asCanary), 'error', 5);
    const degraded = scorer.choose(asCanary);
    expect(degraded).toEqual({
      kind: 'fallback',
      route: 'scorer',
      arm: 'canary',
      reason: 'header',
      degraded: true,
      fallback: { kind: 'outputs', outputs: [{ name: 'score', datatype: 'FP32', value: 0 }] },
    });
    scorer.record(degraded, 'error', 5); // ignored: not the arm's outcome
    expect(primary(scorer.choose(asStable)).arm).toBe('stable'); // the other arm's breaker is closed
    expect(events).toEqual([
      { type: 'breaker', route: 'scorer', arm: 'canary', from: 'closed', to: 'open', reason: 'error_rate', counts: { requests: 20, errors: 20, slow: 0 } },
    ]);
    expect(scorer.breakerStates()).toEqual([
      { route: 'scorer', arm: 'stable', value: 0 },
      { route: 'scorer', arm: 'canary', value: 2 },
    ]);
    advance(10_000);
    for (let i = 0; i < 3; i++) scorer.record(primary(scorer.choose(asCanary)), 'ok', 5);
    expect(scorer.breakerStates()[1]!.value).toBe(0);
    expect(events.map((e) => (e.type === 'breaker' ? `${e.to}` : e.type))).toEqual(['open', 'half_open', 'closed']);
  });

  it('opens under latency', () => {
    const { scorer } = setup(FILE.replace(/    rollback: .*\n/, ''));
    for (let i = 0; i < 20; i++) scorer.record(scorer.choose(asStable), 'ok', 80);
    expect(scorer.choose(asStable).kind).toBe('fallback');
  });

  it('answers UNAVAILABLE at once without a fallback', () => {
    const text = 'routes:\n  r:\n    arms: { a: { model: m, weight: 1 } }\n    breaker: { min_requests: 2, open_s: 5 }\n';
    const { table } = setup(text);
    const r = table.get('r')!;
    for (let i = 0; i < 2; i++) r.record(r.choose(requestView({})), 'error', 1);
    const decision = r.choose(requestView({}));
    expect(decision).toEqual({
      kind: 'unavailable',
      route: 'r',
      arm: 'a',
      reason: 'random',
      message: "route 'r' arm 'a': circuit breaker open (probes in 5s), and the route has no fallback",
    });
  });

  it('names the fallback model', () => {
    const text = 'routes:\n  r:\n    arms: { a: { model: m, weight: 1 } }\n    breaker: { min_requests: 1 }\n    fallback: { model: small, version: 3 }\n';
    const { table } = setup(text);
    const r = table.get('r')!;
    r.record(r.choose(requestView({})), 'error', 1);
    expect(r.choose(requestView({}))).toMatchObject({ kind: 'fallback', degraded: true, fallback: { kind: 'model', model: 'small', version: 3 } });
  });
});

describe('RouteTable: rollback', () => {
  it('rolls the canary back under injected failures: weight 0, header to stable, event, snapshot', () => {
    const { scorer, events, table } = setup(FILE.replace('min_requests: 20, error_rate: 0.5', 'min_requests: 1000, error_rate: 0.5'));
    for (let i = 0; i < 19; i++) scorer.record(scorer.choose(asCanary), 'ok', 5);
    expect(scorer.rolledBackArms()).toEqual([]);
    scorer.record(scorer.choose(asCanary), 'error', 5); // 1/20 = 5%
    expect(scorer.rolledBackArms()).toEqual(['canary']);
    expect(events).toEqual([{ type: 'rollback', route: 'scorer', stableArm: 'stable', arm: 'canary', reason: 'error_rate', counts: { requests: 20, errors: 1, slow: 0 } }]);
    expect(primary(scorer.choose(asCanary))).toMatchObject({ arm: 'stable', reason: 'header_rolled_back' });
    for (let i = 0; i < 2_000; i++) expect(primary(scorer.choose(requestView({ 'x-user-id': `u${i}` }))).arm).toBe('stable');
    expect(table.snapshot()).toEqual({
      scorer: {
        arms: {
          stable: { model: 'ctr_mlp', version: 1, weight: 90, configured_weight: 90, rolled_back: false, breaker: { state: 'closed', value: 0 } },
          canary: { model: 'ctr_mlp', version: 2, weight: 0, configured_weight: 10, rolled_back: true, breaker: { state: 'closed', value: 0 } },
        },
        stable_arm: 'stable',
        rolled_back: ['canary'],
      },
      plain: { arms: { only: { model: 'ctr_small', weight: 1, configured_weight: 1, rolled_back: false } }, stable_arm: 'only', rolled_back: [] },
    });
  });

  it('only watches the rollback arm', () => {
    const { scorer } = setup(FILE.replace('min_requests: 20, error_rate: 0.5', 'min_requests: 1000, error_rate: 0.5'));
    for (let i = 0; i < 100; i++) scorer.record(scorer.choose(asStable), 'error', 5);
    expect(scorer.rolledBackArms()).toEqual([]);
  });

  it('rolling back the highest-weight arm makes the next one stable', () => {
    const text = 'routes:\n  r:\n    arms: { big: { model: m, weight: 70 }, small: { model: m, weight: 30 } }\n    rollback: { arm: big, error_rate: 0.5, min_requests: 2 }\n';
    const { table } = setup(text);
    const r = table.get('r')!;
    expect(r.stableArm).toBe('big');
    const toBig = () => {
      for (;;) {
        const d = primary(r.choose(requestView({})));
        if (d.arm === 'big') return d;
      }
    };
    r.record(toBig(), 'error', 1);
    r.record(toBig(), 'error', 1);
    expect(r.rolledBackArms()).toEqual(['big']);
    expect(r.stableArm).toBe('small');
    for (let i = 0; i < 200; i++) expect(primary(r.choose(requestView({}))).arm).toBe('small');
  });
});

describe('buildRouteTable', () => {
  const CTR: ModelSignature = { inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 4] }], outputs: [{ name: 'score', datatype: 'FP32', shape: [-1, 1] }] };

  it('checks the models and keeps each route signature', () => {
    const text = 'routes:\n  r: { arms: { a: { model: m, weight: 1 } } }\n';
    const table = buildRouteTable(text, 'routes.yaml', (model) => (model === 'm' ? CTR : undefined));
    expect(table.get('r')!.signature).toBe(CTR);
    expect(buildRouteTable(text, 'routes.yaml', undefined).get('r')!.signature).toBeUndefined();
  });

  it('refuses the whole file when a route does not fit', () => {
    const text = 'routes:\n  r: { arms: { a: { model: m, weight: 1 }, b: { model: gone, weight: 1 } } }\n';
    expect(() => buildRouteTable(text, 'routes.yaml', (model) => (model === 'm' ? CTR : undefined))).toThrow(RoutesFileError);
    expect(() => buildRouteTable(text, 'routes.yaml', (model) => (model === 'm' ? CTR : undefined))).toThrow(
      /^routes file routes\.yaml: route 'r': arms\.b: expected a loaded model, got model 'gone', which is not loaded$/,
    );
  });

  it('defaults to the real clock and Math.random', () => {
    const table = buildRouteTable('routes:\n  r: { arms: { a: { model: m, weight: 1 }, b: { model: m, weight: 1 } } }\n', 'x', undefined);
    const arms = new Set<string>();
    for (let i = 0; i < 200; i++) arms.add(primary(table.get('r')!.choose(requestView({}))).arm);
    expect([...arms].sort()).toEqual(['a', 'b']);
  });
});
