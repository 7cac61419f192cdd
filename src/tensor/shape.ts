/**
 * Shape arithmetic shared by request validation, the worker and the codecs.
 * Shapes are plain number arrays; -1 marks a variable dimension in a config.
 */

/** The number of elements of a concrete shape (all dims ≥ 0). [] is a scalar: 1. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}

/** Formats a shape the way error messages quote it: `[-1,32]`. */
export function formatShape(shape: readonly number[]): string {
  return `[${shape.join(',')}]`;
}

/** Whether a concrete shape fits a config shape, where -1 in `pattern` matches any size. */
export function shapeMatches(pattern: readonly number[], actual: readonly number[]): boolean {
  if (pattern.length !== actual.length) return false;
  return pattern.every((dim, i) => dim === -1 || dim === actual[i]);
}

/**
 * Resolves a reshape target against a concrete element count: at most one -1 is
 * inferred. Returns undefined when the element count cannot be reshaped to it.
 */
export function resolveReshape(target: readonly number[], count: number): number[] | undefined {
  const wildcard = target.indexOf(-1);
  if (wildcard !== target.lastIndexOf(-1)) return undefined;
  if (wildcard < 0) return elementCount(target) === count ? [...target] : undefined;
  const known = elementCount(target.filter((_, i) => i !== wildcard));
  if (known === 0 || count % known !== 0) return undefined;
  const resolved = [...target];
  resolved[wildcard] = count / known;
  return resolved;
}
