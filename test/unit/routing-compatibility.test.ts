import { describe, expect, it } from 'vitest';
import {
  checkRouteCompatibility,
  shapesCompatible,
  signatureMismatches,
  type ModelSignature,
  type SignatureLookup,
} from '../../src/routing/route-compatibility.js';
import { parseRoutesText } from '../../src/routing/routes-file.js';

const CTR: ModelSignature = {
  inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 16] }],
  outputs: [{ name: 'score', datatype: 'FP32', shape: [-1, 1] }],
};

/** A registry of `model` or `model@version` → signature. */
function registry(models: Record<string, ModelSignature>): SignatureLookup {
  return (model, version) => models[version === undefined ? model : `${model}@${version}`] ?? models[model];
}

const FILE = `
routes:
  scorer:
    arms:
      stable: { model: ctr_mlp, version: 1, weight: 90 }
      canary: { model: ctr_mlp, version: 2, weight: 10 }
    shadow: { model: ctr_next, percent: 5 }
    breaker: {}
    fallback: { model: ctr_small }
`;

describe('shapes and signatures', () => {
  it('treats -1 as matching any size, and rank as binding', () => {
    expect(shapesCompatible([-1, 16], [8, 16])).toBe(true);
    expect(shapesCompatible([-1, 16], [-1, -1])).toBe(true);
    expect(shapesCompatible([-1, 16], [-1, 8])).toBe(false);
    expect(shapesCompatible([-1, 16], [16])).toBe(false);
  });

  it('names every mismatch', () => {
    const other: ModelSignature = {
      inputs: [
        { name: 'features', datatype: 'FP64', shape: [-1, 8] },
        { name: 'extra', datatype: 'FP32', shape: [-1] },
      ],
      outputs: [{ name: 'prob', datatype: 'FP32', shape: [-1, 1] }],
    };
    expect(signatureMismatches(CTR, other)).toEqual([
      "has input 'features' of datatype FP64, expected FP32",
      "has input 'features' of shape [-1, 8], expected [-1, 16]",
      "requires input 'extra', which the route does not have",
      "does not produce output 'score'",
    ]);
    expect(signatureMismatches(CTR, { inputs: [], outputs: CTR.outputs })).toEqual(["does not accept input 'features'"]);
  });

  it('allows extra outputs', () => {
    const more = { ...CTR, outputs: [...CTR.outputs, { name: 'logit', datatype: 'FP32', shape: [-1, 1] }] };
    expect(signatureMismatches(CTR, more)).toEqual([]);
  });
});

describe('checkRouteCompatibility', () => {
  const config = parseRoutesText(FILE);

  it("returns each route's signature (its stable arm's) when every model fits", () => {
    const result = checkRouteCompatibility(config, registry({ ctr_mlp: CTR, ctr_next: CTR, ctr_small: CTR }));
    expect(result.problems).toEqual([]);
    expect(result.signatures.get('scorer')).toBe(CTR);
  });

  it('names the arm, the shadow and the fallback that do not fit', () => {
    const narrow: ModelSignature = { inputs: [{ name: 'features', datatype: 'FP32', shape: [-1, 8] }], outputs: CTR.outputs };
    const result = checkRouteCompatibility(
      config,
      registry({ 'ctr_mlp@1': CTR, 'ctr_mlp@2': narrow, ctr_small: { inputs: CTR.inputs, outputs: [] } }),
    );
    expect(result.signatures.has('scorer')).toBe(false);
    expect(result.problems).toEqual([
      {
        route: 'scorer',
        field: 'arms.canary',
        message: "model 'ctr_mlp' version 2 has input 'features' of shape [-1, 8], expected [-1, 16] (compared with the stable arm 'stable')",
      },
      { route: 'scorer', field: 'shadow', message: "expected a loaded model, got model 'ctr_next', which is not loaded" },
      { route: 'scorer', field: 'fallback', message: "model 'ctr_small' does not produce output 'score' (compared with the stable arm 'stable')" },
    ]);
  });

  it('fails a route whose stable arm is not loaded', () => {
    const result = checkRouteCompatibility(config, registry({}));
    expect(result.problems).toEqual([
      { route: 'scorer', field: 'arms.stable', message: "expected a loaded model, got model 'ctr_mlp' version 1, which is not loaded" },
    ]);
  });

  it('refuses a route named like a model', () => {
    const result = checkRouteCompatibility(config, registry({ ctr_mlp: CTR, ctr_next: CTR, ctr_small: CTR, scorer: CTR }));
    expect(result.problems).toEqual([
      { route: 'scorer', field: '', message: "expected a name no model has, got 'scorer', which is also a model in the repository" },
    ]);
  });

  it('checks default outputs against the route outputs', () => {
    const withOutputs = (outputs: string) =>
      parseRoutesText(`routes:\n  scorer:\n    arms: { a: { model: ctr_mlp, weight: 1 } }\n    breaker: {}\n    fallback: { outputs: { ${outputs} } }\n`);
    const lookup = registry({ ctr_mlp: CTR });
    expect(checkRouteCompatibility(withOutputs('score: { datatype: FP32, value: 0 }'), lookup).problems).toEqual([]);
    expect(checkRouteCompatibility(withOutputs('score: { datatype: INT32, value: 0 }, junk: { datatype: FP32, value: 1 }'), lookup).problems).toEqual([
      { route: 'scorer', field: 'fallback.outputs.score.datatype', message: "expected FP32 (the route output's), got INT32" },
      { route: 'scorer', field: 'fallback.outputs.junk', message: "expected a route output (one of score), got 'junk'" },
    ]);
    const twoOutputs = registry({ ctr_mlp: { ...CTR, outputs: [...CTR.outputs, { name: 'logit', datatype: 'FP32', shape: [-1, 1] }] } });
    expect(checkRouteCompatibility(withOutputs('score: { datatype: FP32, value: 0 }'), twoOutputs).problems).toEqual([
      { route: 'scorer', field: 'fallback.outputs', message: "expected a default for every route output, got none for 'logit'" },
    ]);
  });

  it('keeps the routes that fit apart from those that do not', () => {
    const two = parseRoutesText('routes:\n  good: { arms: { a: { model: ctr_mlp, weight: 1 } } }\n  bad: { arms: { a: { model: gone, weight: 1 } } }\n');
    const result = checkRouteCompatibility(two, registry({ ctr_mlp: CTR }));
    expect([...result.signatures.keys()]).toEqual(['good']);
    expect(result.problems.map((p) => p.route)).toEqual(['bad']);
  });
});
