/** The current time as epoch milliseconds with sub-ms precision, comparable across threads. */
export function epochMs(): number {
  return performance.timeOrigin + performance.now();
}
