/**
 * A model's drift reference, `drift/reference.json` in its model directory:
 * per numeric tensor (inputs and outputs) of shape [-1, F] (or [-1]), per
 * column up to a bound, the bin edges and proportions for PSI and a sorted
 * sample for KS (drift-stats.ts). ReferenceBuilder gathers the columns of
 * decoded tensors (from an archive, a CSV file, or the first served rows) and
 * builds one. Files only; no server code.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { featureReference, type FeatureReference } from './drift-stats.js';

export const REFERENCE_FORMAT = 'hotpath-drift-reference/1';
export const REFERENCE_FILE = path.join('drift', 'reference.json');
/** Columns per tensor a reference (and the live window) follows by default. */
export const DEFAULT_MAX_FEATURES = 32;

export type TensorKind = 'input' | 'output';

export interface TensorReference {
  readonly name: string;
  readonly kind: TensorKind;
  /** Column index → its reference; columns past the bound are absent. */
  readonly features: (FeatureReference & { readonly index: number })[];
}

export interface DriftReference {
  readonly format: typeof REFERENCE_FORMAT;
  readonly created: string;
  /** Where the rows came from: 'archive:DIR', 'csv:FILE', 'capture'. */
  readonly source: string;
  readonly rows: number;
  readonly tensors: TensorReference[];
}

/** Rows and columns of a tensor's shape: [B, F] or [B] (one column); undefined for any other rank. */
export function tableShape(shape: readonly (number | bigint)[]): { rows: number; columns: number } | undefined {
  if (shape.length === 1) return { rows: Number(shape[0]), columns: 1 };
  if (shape.length === 2) return { rows: Number(shape[0]), columns: Number(shape[1]) };
  return undefined;
}

/** Gathers column values per tensor and builds a reference from them. */
export class ReferenceBuilder {
  private readonly columns = new Map<string, { kind: TensorKind; name: string; values: number[][] }>();
  private rowCount = 0;

  constructor(private readonly maxFeatures = DEFAULT_MAX_FEATURES) {}

  get rows(): number {
    return this.rowCount;
  }

  /**
   * Adds a tensor's rows. `countRows`: this tensor's rows count as the
   * reference's rows (the first input of a request, say). A tensor whose shape
   * is not [B, F] or [B] is skipped.
   */
  add(kind: TensorKind, name: string, shape: readonly (number | bigint)[], data: ArrayLike<number>, countRows = false): void {
    const table = tableShape(shape);
    if (table === undefined || table.rows * table.columns !== data.length) return;
    const key = `${kind}\u0000${name}`;
    let entry = this.columns.get(key);
    if (entry === undefined) {
      entry = { kind, name, values: [] };
      this.columns.set(key, entry);
    }
    const kept = Math.min(table.columns, this.maxFeatures);
    while (entry.values.length < kept) entry.values.push([]);
    for (let row = 0; row < table.rows; row += 1) {
      for (let column = 0; column < kept; column += 1) entry.values[column]!.push(data[row * table.columns + column]!);
    }
    if (countRows) this.rowCount += table.rows;
  }

  build(source: string): DriftReference {
    const tensors: TensorReference[] = [];
    for (const { kind, name, values } of this.columns.values()) {
      tensors.push({ name, kind, features: values.map((column, index) => ({ index, ...featureReference(column) })) });
    }
    return { format: REFERENCE_FORMAT, created: new Date().toISOString(), source, rows: this.rowCount, tensors };
  }
}

export class DriftReferenceError extends Error {}

/** A parsed reference, checked for shape (a file written by hand fails with what is wrong). */
export function parseReference(text: string, where: string): DriftReference {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new DriftReferenceError(`${where}: not JSON (${(err as Error).message})`);
  }
  const reference = value as Partial<DriftReference>;
  if (reference?.format !== REFERENCE_FORMAT) throw new DriftReferenceError(`${where}: expected "format": "${REFERENCE_FORMAT}"`);
  if (!Array.isArray(reference.tensors)) throw new DriftReferenceError(`${where}: expected "tensors" to be an array`);
  for (const tensor of reference.tensors) {
    if (typeof tensor?.name !== 'string' || (tensor.kind !== 'input' && tensor.kind !== 'output') || !Array.isArray(tensor.features)) {
      throw new DriftReferenceError(`${where}: each tensor needs "name", "kind" ('input' or 'output') and "features"`);
    }
    for (const feature of tensor.features) {
      const ok =
        Number.isInteger(feature?.index) &&
        Array.isArray(feature.edges) &&
        Array.isArray(feature.proportions) &&
        feature.proportions.length === feature.edges.length + 1 &&
        Array.isArray(feature.sample);
      if (!ok) throw new DriftReferenceError(`${where}: tensor '${tensor.name}': each feature needs "index", "edges", "proportions" (one more than edges) and "sample"`);
    }
  }
  return reference as DriftReference;
}

/** The model directory's reference; undefined when it has none. */
export async function readReference(modelDir: string): Promise<DriftReference | undefined> {
  const file = path.join(modelDir, REFERENCE_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return parseReference(text, file);
}

/** Writes `drift/reference.json` under `modelDir` (through a temporary file: a reader never sees half). */
export async function writeReference(modelDir: string, reference: DriftReference): Promise<string> {
  const file = path.join(modelDir, REFERENCE_FILE);
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.tmp-${process.pid}`;
  await writeFile(temporary, `${JSON.stringify(reference)}\n`);
  await rename(temporary, file);
  return file;
}
