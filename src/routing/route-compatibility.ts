/**
 * The routes-file rules that need the model registry: every arm, the shadow
 * and the fallback model must accept the route's inputs and produce its
 * outputs, and default fallback outputs must match them. The registry is
 * reached only through `SignatureLookup`, so this stays pure and the wiring
 * passes the real lookup.
 *
 * The route's signature is its stable arm's (routes-config.ts
 * `stableArmName`): ModelMetadata for the route answers with it. Another
 * model is compatible when:
 *   - inputs: it has exactly the route's input names (a missing one could
 *     not be fed, an extra one would be refused as unknown), each with the
 *     same datatype and a compatible shape;
 *   - outputs: it has every route output with the same datatype and a
 *     compatible shape; extra outputs are allowed (the wiring answers only
 *     the route's outputs).
 * Two shapes are compatible when they have the same rank and each dimension
 * is equal or -1 (dynamic) on either side.
 * Default fallback outputs must name every route output, and only those,
 * each with the route output's datatype.
 */
import type { RouteConfig, RoutesConfig } from './routes-config.js';
import type { RoutesProblem } from './routes-file.js';

export interface TensorSignature {
  readonly name: string;
  /** The KServe V2 datatype (`FP32`), as ModelMetadata gives it. */
  readonly datatype: string;
  /** As ModelMetadata gives it: -1 for a dynamic dimension, the batch dimension included. */
  readonly shape: readonly number[];
}

export interface ModelSignature {
  readonly inputs: readonly TensorSignature[];
  readonly outputs: readonly TensorSignature[];
}

/**
 * The signature of a loaded, ready model version; undefined when there is no
 * such model or version. `version` undefined: the version the model's version
 * policy serves for a request without one.
 */
export type SignatureLookup = (model: string, version: number | undefined) => ModelSignature | undefined;

export interface CompatibilityResult {
  /** The signature of every route whose models all fit, keyed by route name. */
  readonly signatures: ReadonlyMap<string, ModelSignature>;
  /** Empty when every route fits. */
  readonly problems: readonly RoutesProblem[];
}

/**
 * Checks every route of `config` against the registry. A route name that is
 * also a model name is a problem too: clients could not reach the model.
 */
export function checkRouteCompatibility(config: RoutesConfig, signatureOf: SignatureLookup): CompatibilityResult {
  const signatures = new Map<string, ModelSignature>();
  const problems: RoutesProblem[] = [];
  for (const route of config.routes.values()) {
    const before = problems.length;
    const report = (field: string, message: string): void => {
      problems.push({ route: route.name, field, message });
    };
    const signature = checkRoute(route, signatureOf, report);
    if (problems.length === before && signature !== undefined) signatures.set(route.name, signature);
  }
  return { signatures, problems };
}

type Report = (field: string, message: string) => void;

function describe(model: string, version: number | undefined): string {
  return version === undefined ? `model '${model}'` : `model '${model}' version ${version}`;
}

function checkRoute(route: RouteConfig, signatureOf: SignatureLookup, report: Report): ModelSignature | undefined {
  if (signatureOf(route.name, undefined) !== undefined) {
    report('', `expected a name no model has, got '${route.name}', which is also a model in the repository`);
  }
  const stable = route.arms.find((arm) => arm.name === route.stableArm)!;
  const reference = signatureOf(stable.model, stable.version);
  if (reference === undefined) {
    report(`arms.${stable.name}`, `expected a loaded model, got ${describe(stable.model, stable.version)}, which is not loaded`);
    return undefined;
  }
  const candidates: { field: string; model: string; version: number | undefined }[] = [
    ...route.arms.filter((arm) => arm !== stable).map((arm) => ({ field: `arms.${arm.name}`, model: arm.model, version: arm.version })),
  ];
  if (route.shadow !== undefined) candidates.push({ field: 'shadow', ...route.shadow });
  if (route.fallback?.kind === 'model') candidates.push({ field: 'fallback', ...route.fallback });
  for (const { field, model, version } of candidates) {
    const signature = signatureOf(model, version);
    if (signature === undefined) {
      report(field, `expected a loaded model, got ${describe(model, version)}, which is not loaded`);
      continue;
    }
    for (const message of signatureMismatches(reference, signature)) {
      report(field, `${describe(model, version)} ${message} (compared with the stable arm '${stable.name}')`);
    }
  }
  if (route.fallback?.kind === 'outputs') {
    const given = new Map(route.fallback.outputs.map((o) => [o.name, o]));
    for (const output of reference.outputs) {
      const value = given.get(output.name);
      if (value === undefined) {
        report('fallback.outputs', `expected a default for every route output, got none for '${output.name}'`);
      } else if (value.datatype !== output.datatype) {
        report(`fallback.outputs.${output.name}.datatype`, `expected ${output.datatype} (the route output's), got ${value.datatype}`);
      }
    }
    const names = new Set(reference.outputs.map((o) => o.name));
    for (const output of route.fallback.outputs) {
      if (!names.has(output.name)) {
        report(`fallback.outputs.${output.name}`, `expected a route output (one of ${[...names].join(', ')}), got '${output.name}'`);
      }
    }
  }
  return reference;
}

function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** Whether two shapes agree: same rank, each dimension equal or -1 on either side. */
export function shapesCompatible(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((dim, i) => dim === b[i] || dim < 0 || b[i]! < 0);
}

/** Why `candidate` cannot stand in for `reference`: one phrase per mismatch, empty when it can. */
export function signatureMismatches(reference: ModelSignature, candidate: ModelSignature): string[] {
  const problems: string[] = [];
  const candidateInputs = new Map(candidate.inputs.map((t) => [t.name, t]));
  for (const input of reference.inputs) {
    const other = candidateInputs.get(input.name);
    if (other === undefined) problems.push(`does not accept input '${input.name}'`);
    else problems.push(...tensorMismatches('input', input, other));
  }
  const referenceInputs = new Set(reference.inputs.map((t) => t.name));
  for (const input of candidate.inputs) {
    if (!referenceInputs.has(input.name)) problems.push(`requires input '${input.name}', which the route does not have`);
  }
  const candidateOutputs = new Map(candidate.outputs.map((t) => [t.name, t]));
  for (const output of reference.outputs) {
    const other = candidateOutputs.get(output.name);
    if (other === undefined) problems.push(`does not produce output '${output.name}'`);
    else problems.push(...tensorMismatches('output', output, other));
  }
  return problems;
}

function tensorMismatches(kind: 'input' | 'output', expected: TensorSignature, actual: TensorSignature): string[] {
  const problems: string[] = [];
  if (expected.datatype !== actual.datatype) {
    problems.push(`has ${kind} '${expected.name}' of datatype ${actual.datatype}, expected ${expected.datatype}`);
  }
  if (!shapesCompatible(expected.shape, actual.shape)) {
    problems.push(`has ${kind} '${expected.name}' of shape ${shapeText(actual.shape)}, expected ${shapeText(expected.shape)}`);
  }
  return problems;
}
