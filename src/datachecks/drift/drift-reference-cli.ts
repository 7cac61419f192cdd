/**
 * `hotpath drift-reference`: builds a model's `drift/reference.json` from a
 * payload archive (the model's answered requests: its inputs and outputs),
 * a CSV file (one row per line, one numeric column per feature, an optional
 * header line) or a .npy file (a numeric [rows, F] or [rows] array, C order),
 * and writes it into the model directory.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { status } from '@grpc/grpc-js';
import { integerFlag, UsageError } from '../../common/flag-values.js';
import { ArchiveDirectoryError, ArchiveReader, archivedRequest, archivedResponse } from '../archive/archive-reader.js';
import { decodeAnswer, decodeInputs, numericValues } from '../archive/tensor-values.js';
import { DEFAULT_MAX_FEATURES, ReferenceBuilder, writeReference, type DriftReference } from './drift-reference.js';

export const DRIFT_REFERENCE_USAGE = `usage: hotpath drift-reference --model-dir DIR --archive ARCHIVE [--model M] [--version V] [options]
       hotpath drift-reference --model-dir DIR --csv FILE --tensor NAME [--kind input|output] [options]
       hotpath drift-reference --model-dir DIR --npy FILE --tensor NAME [--kind input|output] [options]

  Writes DIR/drift/reference.json: per numeric tensor of shape [-1, F] (or [-1]),
  per column, bin edges and proportions (PSI) and a sorted sample (KS).

  --model-dir DIR     the model's directory in the repository
  --archive ARCHIVE   a payload archive (hotpath serve --archive): the model's answered requests
  --model M           the archived model name (default: the model directory's name)
  --version V         only records of that version
  --csv FILE          rows of numbers, comma separated, one column per feature; a first
                      line that is not numbers is a header and is skipped
  --npy FILE          a NumPy array, [rows, F] or [rows], of f4, f8, i1..i8 or u1..u8, C order
  --tensor NAME       the tensor the CSV's or .npy's columns belong to (an input's name, usually)
  --kind K            input (default) or output: which side of the model that tensor is
  --max-features N    columns kept per tensor (default ${DEFAULT_MAX_FEATURES})
  --max-rows N        rows read at most (default: all)
`;

export async function driftReferenceCommand(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<void> {
  try {
    if (argv.includes('--help') || argv.includes('-h')) {
      out.write(DRIFT_REFERENCE_USAGE);
      return;
    }
    const { values, positionals } = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'model-dir': { type: 'string' },
        archive: { type: 'string' },
        model: { type: 'string' },
        version: { type: 'string' },
        csv: { type: 'string' },
        npy: { type: 'string' },
        tensor: { type: 'string' },
        kind: { type: 'string' },
        'max-features': { type: 'string' },
        'max-rows': { type: 'string' },
      },
    });
    if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
    const modelDir = values['model-dir'];
    if (modelDir === undefined) throw new UsageError('--model-dir is required');
    const sources = [values.archive, values.csv, values.npy].filter((v) => v !== undefined);
    if (sources.length !== 1) throw new UsageError('give one of --archive, --csv or --npy');
    const maxFeatures = values['max-features'] === undefined ? DEFAULT_MAX_FEATURES : integerFlag('--max-features', values['max-features'], 1, 4096);
    const maxRows = values['max-rows'] === undefined ? Infinity : integerFlag('--max-rows', values['max-rows'], 1, Number.MAX_SAFE_INTEGER);
    let reference: DriftReference;
    if (values.archive !== undefined) {
      const model = values.model ?? path.basename(path.resolve(modelDir));
      reference = await fromArchive(values.archive, model, values.version, maxFeatures, maxRows);
    } else {
      if (values.tensor === undefined) throw new UsageError(`${values.csv !== undefined ? '--csv' : '--npy'} needs --tensor NAME`);
      const kind = values.kind ?? 'input';
      if (kind !== 'input' && kind !== 'output') throw new UsageError(`--kind: expected input or output, got '${kind}'`);
      reference =
        values.csv !== undefined
          ? await fromCsv(values.csv, values.tensor, kind, maxFeatures, maxRows)
          : await fromNpy(values.npy!, values.tensor, kind, maxFeatures, maxRows);
    }
    if (reference.rows === 0) throw new UsageError(`no rows found in ${reference.source}`);
    const file = await writeReference(modelDir, reference);
    const features = reference.tensors.reduce((sum, t) => sum + t.features.length, 0);
    out.write(`${file}: ${reference.rows} rows, ${reference.tensors.length} tensors, ${features} features (from ${reference.source})\n`);
  } catch (err) {
    const usage = err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'));
    if (!usage && !(err instanceof ArchiveDirectoryError)) throw err;
    process.stderr.write(`hotpath drift-reference: ${(err as Error).message}\n${usage ? `\n${DRIFT_REFERENCE_USAGE}` : ''}`);
    process.exitCode = 2;
  }
}

/** The model's answered requests in the archive: their inputs and outputs. */
export async function fromArchive(dir: string, model: string, version: string | undefined, maxFeatures: number, maxRows = Infinity): Promise<DriftReference> {
  const builder = new ReferenceBuilder(maxFeatures);
  for await (const record of new ArchiveReader(dir).records()) {
    if (builder.rows >= maxRows) break;
    if (record.model !== model || (version !== undefined && record.version !== version) || record.statusCode !== status.OK) continue;
    const response = archivedResponse(record);
    if (response === undefined) continue;
    let first = true;
    for (const [kind, tensors] of [['input', decodeInputs(archivedRequest(record))], ['output', decodeAnswer(response)]] as const) {
      for (const [name, tensor] of Object.entries(tensors)) {
        const data = numericValues(tensor);
        if (data === undefined) continue;
        builder.add(kind, name, tensor.shape, data, first);
        first = false;
      }
    }
  }
  return builder.build(`archive:${dir}`);
}

export async function fromCsv(file: string, tensor: string, kind: 'input' | 'output', maxFeatures: number, maxRows = Infinity): Promise<DriftReference> {
  const lines = (await readFile(file, 'utf8')).split(/\r?\n/).filter((line) => line.trim() !== '');
  const rows: number[][] = [];
  for (const [i, line] of lines.entries()) {
    if (rows.length >= maxRows) break;
    const cells = line.split(',').map((cell) => (cell.trim() === '' ? Number.NaN : Number(cell)));
    if (i === 0 && cells.every(Number.isNaN)) continue; // a header
    if (rows.length > 0 && cells.length !== rows[0]!.length) {
      throw new UsageError(`${file}: line ${i + 1} has ${cells.length} columns, the first row ${rows[0]!.length}`);
    }
    rows.push(cells);
  }
  const builder = new ReferenceBuilder(maxFeatures);
  if (rows.length > 0) builder.add(kind, tensor, [rows.length, rows[0]!.length], rows.flat(), true);
  return builder.build(`csv:${file}`);
}

const NPY_MAGIC = Buffer.from('\x93NUMPY', 'latin1');
const NPY_TYPES: Record<string, [number, (view: DataView, at: number, little: boolean) => number]> = {
  f4: [4, (v, at, le) => v.getFloat32(at, le)],
  f8: [8, (v, at, le) => v.getFloat64(at, le)],
  i1: [1, (v, at) => v.getInt8(at)],
  u1: [1, (v, at) => v.getUint8(at)],
  i2: [2, (v, at, le) => v.getInt16(at, le)],
  u2: [2, (v, at, le) => v.getUint16(at, le)],
  i4: [4, (v, at, le) => v.getInt32(at, le)],
  u4: [4, (v, at, le) => v.getUint32(at, le)],
  i8: [8, (v, at, le) => Number(v.getBigInt64(at, le))],
  u8: [8, (v, at, le) => Number(v.getBigUint64(at, le))],
};

/** A .npy file (format 1.0 to 3.0): a numeric [rows, F] or [rows] array in C order. */
export async function fromNpy(file: string, tensor: string, kind: 'input' | 'output', maxFeatures: number, maxRows = Infinity): Promise<DriftReference> {
  const bytes = await readFile(file);
  if (bytes.byteLength < 10 || !bytes.subarray(0, 6).equals(NPY_MAGIC)) throw new UsageError(`${file}: not a .npy file`);
  const major = bytes[6]!;
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const headerStart = major === 1 ? 10 : 12;
  const header = bytes.subarray(headerStart, headerStart + headerLength).toString('latin1');
  const descr = /'descr':\s*'([<>|=])([a-z]\d)'/.exec(header);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header);
  if (descr === null || shape === null || NPY_TYPES[descr[2]!] === undefined) throw new UsageError(`${file}: expected a numeric array (f4, f8, i1..i8, u1..u8)`);
  if (/'fortran_order':\s*True/.test(header)) throw new UsageError(`${file}: a Fortran-order array; save it in C order`);
  const dims = shape[1]!.split(',').map((d) => d.trim()).filter((d) => d !== '').map(Number);
  if (dims.length < 1 || dims.length > 2) throw new UsageError(`${file}: expected a [rows, F] or [rows] array, got shape (${dims.join(', ')})`);
  const [size, read] = NPY_TYPES[descr[2]!]!;
  const little = descr[1] !== '>';
  const columns = dims[1] ?? 1;
  const rows = Math.min(dims[0]!, maxRows);
  const dataStart = headerStart + headerLength;
  if (bytes.byteLength < dataStart + dims[0]! * columns * size) throw new UsageError(`${file}: shorter than its shape says`);
  const view = new DataView(bytes.buffer, bytes.byteOffset + dataStart);
  const values = new Float64Array(rows * columns);
  for (let i = 0; i < values.length; i += 1) values[i] = read(view, i * size, little);
  const builder = new ReferenceBuilder(maxFeatures);
  if (rows > 0) builder.add(kind, tensor, dims.length === 1 ? [rows] : [rows, columns], values, true);
  return builder.build(`npy:${file}`);
}
