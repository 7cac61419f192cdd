/**
 * `hotpath perf --input-data FILE`: perf_analyzer's JSON layout for real
 * input data, `{"data": [ { "INPUT0": ..., "INPUT1": ... } ]}`, where each
 * input is one of
 *   - a flat list of values, row-major (`[0.1, 0.2, ...]`; strings for BYTES),
 *     whose shape is the model's (or `--shape`'s);
 *   - `{"content": [...], "shape": [...]}`, the values and their shape;
 *   - `{"b64": "..."}`, the tensor's raw little-endian bytes in base64.
 * As in perf_analyzer, an entry holds one batch element; with `-b N` the
 * element is repeated N times, and `shape` is given without the batch dim.
 *
 * Refused, each with a message naming the field: more than one entry in
 * `data` (this generator sends one pre-encoded request over and over),
 * sequence streams (a list of lists), `validation_data`, any key besides
 * `data`, and FP16 given as numbers (give its bytes as b64). An input the
 * model has and the file leaves out, or one the file has and the model does
 * not, is refused when the request is built (request-body.ts).
 *
 * Pure; safe in any thread.
 */
import { UsageError } from '../common/flag-values.js';
import { isWireDatatype, wireTypeInfo } from '../tensor/wire-types.js';

/** One input's data from the file: values (numbers, booleans or strings) or raw bytes; `shape` when the file gives it. */
export type FileTensor =
  | { readonly kind: 'values'; readonly values: readonly (number | string | boolean)[]; readonly shape: readonly number[] | undefined }
  | { readonly kind: 'bytes'; readonly bytes: Buffer };

/** The file's one entry, by input name. */
export type InputDataFile = ReadonlyMap<string, FileTensor>;

/** Parses the file's text; `file` names it in messages. Throws UsageError naming the field. */
export function parseInputDataFile(text: string, file: string): InputDataFile {
  const where = `--input-data ${file}`;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${where}: expected JSON, got text that is not (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!isObject(json)) throw new UsageError(`${where}: expected an object {"data": [...]}, got ${describe(json)}`);
  for (const key of Object.keys(json)) {
    if (key !== 'data') {
      throw new UsageError(`${where}: field '${key}' is not supported (only "data"${key === 'validation_data' ? '; outputs are not validated' : ''})`);
    }
  }
  const data = json['data'];
  if (!Array.isArray(data)) throw new UsageError(`${where}: field 'data': expected a list of entries, got ${describe(data)}`);
  if (data.length === 0) throw new UsageError(`${where}: field 'data': expected one entry, got an empty list`);
  if (data.length > 1) {
    throw new UsageError(`${where}: field 'data': expected one entry, got ${data.length} (hotpath perf sends one request's data repeatedly)`);
  }
  const entry: unknown = data[0];
  if (Array.isArray(entry)) throw new UsageError(`${where}: field 'data[0]': a list of steps (a sequence stream) is not supported; expected {"INPUT": ...}`);
  if (!isObject(entry)) throw new UsageError(`${where}: field 'data[0]': expected an object of inputs, got ${describe(entry)}`);
  const tensors = new Map<string, FileTensor>();
  for (const [name, value] of Object.entries(entry)) tensors.set(name, fileTensor(value, `${where}: field 'data[0].${name}'`));
  return tensors;
}

function fileTensor(value: unknown, where: string): FileTensor {
  if (Array.isArray(value)) return { kind: 'values', values: flatValues(value, where), shape: undefined };
  if (!isObject(value)) throw new UsageError(`${where}: expected a list, {"content", "shape"} or {"b64"}, got ${describe(value)}`);
  if ('b64' in value) {
    if (typeof value['b64'] !== 'string') throw new UsageError(`${where}.b64: expected a base64 string, got ${describe(value['b64'])}`);
    if (Object.keys(value).length > 1) throw new UsageError(`${where}: expected only "b64", got also ${Object.keys(value).filter((k) => k !== 'b64').join(', ')}`);
    return { kind: 'bytes', bytes: Buffer.from(value['b64'], 'base64') };
  }
  for (const key of Object.keys(value)) {
    if (key !== 'content' && key !== 'shape') throw new UsageError(`${where}.${key}: not supported (expected "content" and "shape", or "b64")`);
  }
  if (!Array.isArray(value['content'])) throw new UsageError(`${where}.content: expected a list of values, got ${describe(value['content'])}`);
  const shape = value['shape'];
  if (shape !== undefined && (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0))) {
    throw new UsageError(`${where}.shape: expected a list of non-negative integers, got ${JSON.stringify(shape)}`);
  }
  return { kind: 'values', values: flatValues(value['content'], `${where}.content`), shape: shape as number[] | undefined };
}

/** Nested lists are read row-major, as a flat list. */
function flatValues(list: readonly unknown[], where: string): (number | string | boolean)[] {
  const out: (number | string | boolean)[] = [];
  const walk = (items: readonly unknown[]): void => {
    for (const item of items) {
      if (Array.isArray(item)) walk(item);
      else if (typeof item === 'number' || typeof item === 'string' || typeof item === 'boolean') out.push(item);
      else throw new UsageError(`${where}: expected numbers, booleans or strings, got ${describe(item)}`);
    }
  };
  walk(list);
  return out;
}

/**
 * One batch element's bytes for `datatype` with `count` elements: numbers
 * little-endian, BYTES as 4-byte length-prefixed UTF-8. `where` names the
 * field in errors (a count or type that does not fit the input).
 */
export function fileTensorBytes(tensor: FileTensor, datatype: string, count: number, where: string): Buffer {
  if (!isWireDatatype(datatype)) throw new UsageError(`${where}: datatype '${datatype}' is not supported`);
  if (tensor.kind === 'bytes') {
    if (datatype !== 'BYTES' && tensor.bytes.length !== count * wireTypeInfo(datatype).size) {
      throw new UsageError(`${where}.b64: expected ${count * wireTypeInfo(datatype).size} bytes (${count} ${datatype}), got ${tensor.bytes.length}`);
    }
    return tensor.bytes;
  }
  const values = tensor.values;
  if (values.length !== count) throw new UsageError(`${where}: expected ${count} values (the shape's), got ${values.length}`);
  if (datatype === 'BYTES') {
    return Buffer.concat(values.map((v) => {
      const text = Buffer.from(String(v), 'utf8');
      const prefix = Buffer.alloc(4);
      prefix.writeUInt32LE(text.length, 0);
      return Buffer.concat([prefix, text]);
    }));
  }
  if (datatype === 'FP16') throw new UsageError(`${where}: FP16 values are not supported as numbers; give the bytes as {"b64": ...}`);
  const size = wireTypeInfo(datatype).size;
  const bytes = Buffer.alloc(count * size);
  values.forEach((raw, i) => {
    try {
      writeValue(bytes, datatype, raw, i * size, `${where}[${i}]`);
    } catch (err) {
      if (err instanceof RangeError) throw new UsageError(`${where}[${i}]: ${JSON.stringify(raw)} does not fit ${datatype}`);
      throw err;
    }
  });
  return bytes;
}

function writeValue(bytes: Buffer, datatype: string, raw: number | string | boolean, at: number, where: string): void {
  {
    const v = typeof raw === 'boolean' ? Number(raw) : typeof raw === 'number' ? raw : Number.NaN;
    if (Number.isNaN(v) && typeof raw !== 'number') throw new UsageError(`${where}: expected a number for ${datatype}, got ${JSON.stringify(raw)}`);
    switch (datatype) {
      case 'FP32': bytes.writeFloatLE(v, at); break;
      case 'FP64': bytes.writeDoubleLE(v, at); break;
      case 'BOOL': bytes.writeUInt8(v ? 1 : 0, at); break;
      case 'INT8': bytes.writeInt8(v, at); break;
      case 'UINT8': bytes.writeUInt8(v, at); break;
      case 'INT16': bytes.writeInt16LE(v, at); break;
      case 'UINT16': bytes.writeUInt16LE(v, at); break;
      case 'INT32': bytes.writeInt32LE(v, at); break;
      case 'UINT32': bytes.writeUInt32LE(v, at); break;
      case 'INT64': bytes.writeBigInt64LE(BigInt(Math.trunc(v)), at); break;
      case 'UINT64': bytes.writeBigUInt64LE(BigInt(Math.trunc(v)), at); break;
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  return typeof value === 'object' ? 'an object' : `${typeof value} ${JSON.stringify(value)}`.slice(0, 60);
}
