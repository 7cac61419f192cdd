/**
 * Byte sizes as people write them in flags and config files. Shared by the
 * command line (common/flag-values.ts) and the tenants file
 * (tenancy/tenant-config.ts), each of which words the failure as its own error.
 */

/** A text that is not a byte size; the message names `what` and the text. */
export class ByteSizeError extends Error {}

/**
 * Suffixes, case-insensitive. Kubernetes' binary quantities (`512Mi`, `2Gi`)
 * are the IEC ones without the B. A bare letter (`512m`, `2G`) is binary too,
 * as in `java -Xmx` and `docker -m`, and as it always was here; Kubernetes
 * reads `2G` as 2·10⁹, so decimal sizes are written `2GB`.
 */
const UNITS: Readonly<Record<string, number>> = {
  '': 1, b: 1,
  kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40,
  ki: 2 ** 10, mi: 2 ** 20, gi: 2 ** 30, ti: 2 ** 40,
  kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12,
  k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40,
};

/** Parses `512MiB`, `512Mi`, `1.5GiB`, `100MB`, `4096` into bytes (an integer). */
export function parseByteSize(text: string, what: string): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  const unit = match?.[2]?.toLowerCase() ?? '';
  const factor = UNITS[unit];
  if (!match || factor === undefined) {
    throw new ByteSizeError(
      `${what}: expected a byte size such as 4096, 512MiB, 2GiB or 100MB, got '${text}'`,
    );
  }
  const bytes = Math.floor(Number(match[1]) * factor);
  if (!Number.isSafeInteger(bytes) || bytes <= 0) {
    throw new ByteSizeError(`${what}: expected a positive size, got '${text}'`);
  }
  return bytes;
}
