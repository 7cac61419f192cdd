/**
 * Compares the shadow's outputs with the primary's, for the
 * absolute-difference histogram.
 *
 * The number a request contributes is the MAXIMUM absolute difference over
 * every element of every compared output: the worst disagreement in that
 * answer. For the usual scoring route (one score per row, batch of one) that
 * is simply |primary score - shadow score|; for a batch or a vector output a
 * mean would hide one badly wrong row among many right ones. The mean is
 * returned too, for logs.
 *
 * Only numeric outputs are compared: the caller passes decoded numbers (FP16
 * converted from its raw bits; BYTES outputs left out). A NaN on one side
 * only is an infinite difference; NaN on both sides, or equal infinities, is
 * no difference.
 */
import { absDiff } from '../tensor/value-difference.js';

/** One output's elements: a typed array (BigInt64Array included) or a plain array. */
export type NumericValues = ArrayLike<number> | ArrayLike<bigint>;

export interface OutputComparison {
  /** The largest |primary - shadow| over all compared elements (what the histogram observes). */
  readonly maxAbsDiff: number;
  readonly meanAbsDiff: number;
  /** Elements compared. */
  readonly elements: number;
}

export type ComparisonResult =
  | ({ readonly ok: true } & OutputComparison)
  /** The answers cannot be compared; `reason` names the output and what differed. */
  | { readonly ok: false; readonly reason: string };

/**
 * Compares `names` (default: every primary output) element by element.
 * A missing output or a length mismatch is not comparable (count it as a
 * shadow error, not as a difference).
 */
export function compareOutputs(
  primary: ReadonlyMap<string, NumericValues>,
  shadow: ReadonlyMap<string, NumericValues>,
  names: Iterable<string> = primary.keys(),
): ComparisonResult {
  let max = 0;
  let sum = 0;
  let elements = 0;
  for (const name of names) {
    const a = primary.get(name);
    const b = shadow.get(name);
    if (a === undefined || b === undefined) {
      return { ok: false, reason: `output '${name}' is missing from the ${a === undefined ? 'primary' : 'shadow'} answer` };
    }
    if (a.length !== b.length) {
      return { ok: false, reason: `output '${name}' has ${b.length} elements in the shadow answer, ${a.length} in the primary` };
    }
    for (let i = 0; i < a.length; i++) {
      const diff = absDiff(Number(a[i]), Number(b[i]));
      if (diff > max) max = diff;
      sum += diff;
    }
    elements += a.length;
  }
  return { ok: true, maxAbsDiff: max, meanAbsDiff: elements === 0 ? 0 : sum / elements, elements };
}


/**
 * Bucket bounds for the absolute-difference histogram: from 1e-6 (float32
 * round-off between two runs of one model) up to 1 (a score flipped end to
 * end), three per decade. Larger differences land in +Inf.
 */
export const SHADOW_DIFF_BUCKETS: readonly number[] = Object.freeze([
  1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,
]);
