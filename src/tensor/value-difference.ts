/**
 * How far apart two numeric tensor elements are, for comparing answers (a
 * route's shadow against its primary, a replay against the archive): the
 * absolute difference, with NaN equal to NaN and NaN against a number an
 * infinite difference, so a model that starts answering NaN is never "close".
 * Pure; safe in any thread.
 */
export function absDiff(x: number, y: number): number {
  if (x === y) return 0;
  const xNaN = Number.isNaN(x);
  const yNaN = Number.isNaN(y);
  if (xNaN && yNaN) return 0;
  if (xNaN || yNaN) return Infinity;
  return Math.abs(x - y);
}
