/**
 * A wire-format pre-scan of a ModelInferRequest, run on its bytes before
 * protobuf-es decodes them, so a message whose repeated fields cannot fit its
 * declared inputs is refused before it becomes millions of objects.
 *
 * Why: decoding amplifies. An empty `bytes_contents` entry is 2 bytes on the
 * wire and a Uint8Array (about 100 bytes of heap) once decoded; an int64
 * element is 1 byte and a BigInt. 32 MB of empty entries decoded for minutes
 * and took GBs. The scan walks tags and lengths only: it allocates nothing
 * per field, reads no payload but the shape varints, and costs about one pass
 * over the bytes.
 *
 * What it refuses (INVALID_ARGUMENT, naming the field, the limit and the
 * count):
 * - an input whose typed `contents` hold more elements than its `shape` has;
 * - typed contents of more than MAX_TYPED_ELEMENTS elements in all (large
 *   tensors belong in `raw_input_contents`, which is what Triton's clients
 *   send; those are one buffer per input, not one object per element);
 * - more `raw_input_contents` entries than inputs;
 * - more inputs, outputs, shape dimensions or parameters than PRESCAN_LIMITS.
 *
 * Anything the scan cannot follow (a truncated or malformed message) is left
 * to the decoder, which reports it as it always has. Pure; any thread.
 *
 * A message that passes (nearly all of them) costs the walk and nothing
 * else: the names a refusal quotes are decoded and echoed only when one is
 * made, and an input without typed contents allocates no record of them.
 */
import { invalidArgument } from '../common/serving-error.js';
import { echo } from '../common/echo.js';

/** Decodes the (bounded) names refusals quote; one for the module, not one per name. */
const NAMES = new TextDecoder();

/** The bounds the scan enforces; documented in the README's security section. */
export const PRESCAN_LIMITS = {
  inputs: 4096,
  outputs: 4096,
  /** Shape dimensions of one input. */
  dims: 64,
  /** Entries of one `parameters` map (the request's, an input's or an output's). */
  parameters: 1024,
  /** Typed `contents` elements of all inputs together. */
  typedElements: 1 << 20,
} as const;

const CONTENT_FIELDS = [
  '',
  'bool_contents',
  'int_contents',
  'int64_contents',
  'uint_contents',
  'uint64_contents',
  'fp32_contents',
  'fp64_contents',
  'bytes_contents',
] as const;

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

/** Thrown inside the scan when the bytes stop making sense; the scan then leaves them to the decoder. */
class Malformed extends Error {}

/** A cursor over a slice of the message. */
class Reader {
  pos: number;
  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
  ) {
    this.pos = start;
  }

  get done(): boolean {
    return this.pos >= this.end;
  }

  /** A varint as a number: exact below 2^53, which every length and count here is; larger values come out approximate. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 10; i += 1) {
      if (this.pos >= this.end) throw new Malformed();
      const byte = this.buf[this.pos++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value;
      scale *= 128;
    }
    throw new Malformed();
  }

  /** The end of the payload `len()` last passed (exclusive). */
  fieldEnd = 0;

  /**
   * Moves past a length-delimited field's payload; returns where it starts,
   * its end is in `fieldEnd` (no pair is allocated: every field of every
   * request passes here).
   */
  len(): number {
    const length = this.varint();
    const start = this.pos;
    if (length > this.end - start) throw new Malformed();
    this.pos = start + length;
    this.fieldEnd = this.pos;
    return start;
  }

  skip(wire: number): void {
    if (wire === WIRE_VARINT) this.varint();
    else if (wire === WIRE_I64) this.advance(8);
    else if (wire === WIRE_LEN) this.len();
    else if (wire === WIRE_I32) this.advance(4);
    else throw new Malformed(); // groups: not in this proto
  }

  private advance(n: number): void {
    if (n > this.end - this.pos) throw new Malformed();
    this.pos += n;
  }
}

interface InputScan {
  /** Where the input's name is in the message (the latest `name` field seen so far); -1: none yet. */
  nameStart: number;
  nameEnd: number;
  dims: number[];
  /** Typed content elements counted so far. */
  contents: number;
}

/**
 * The input's name as a refusal quotes it: its first 256 bytes, decoded, or
 * `#index` when none has been seen yet. Only ever called to build a refusal.
 */
function inputName(buf: Uint8Array, input: InputScan, index: number): string {
  return input.nameStart < 0 ? `#${index}` : NAMES.decode(buf.subarray(input.nameStart, Math.min(input.nameEnd, input.nameStart + 256)));
}

/** Refuses (throws INVALID_ARGUMENT) a ModelInferRequest that cannot fit its declared inputs; see the file comment. */
export function prescanInferRequest(bytes: Uint8Array): void {
  try {
    scan(bytes);
  } catch (err) {
    if (err instanceof Malformed) return; // the decoder reports it
    throw err;
  }
}

function scan(bytes: Uint8Array): void {
  const r = new Reader(bytes, 0, bytes.length);
  let inputs = 0;
  let outputs = 0;
  let raw = 0;
  let parameters = 0;
  let typed = 0;
  while (!r.done) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (wire !== WIRE_LEN || field < 4 || field > 7) {
      r.skip(wire);
      continue;
    }
    const start = r.len();
    const end = r.fieldEnd;
    if (field === 4) {
      parameters += 1;
      if (parameters > PRESCAN_LIMITS.parameters) throw tooMany('parameters', PRESCAN_LIMITS.parameters, 'entries in the request parameters');
    } else if (field === 5) {
      if (inputs === PRESCAN_LIMITS.inputs) throw tooMany('inputs', PRESCAN_LIMITS.inputs, 'inputs');
      typed += scanInput(new Reader(bytes, start, end), inputs, PRESCAN_LIMITS.typedElements - typed);
      inputs += 1;
    } else if (field === 6) {
      outputs += 1;
      if (outputs > PRESCAN_LIMITS.outputs) throw tooMany('outputs', PRESCAN_LIMITS.outputs, 'requested outputs');
      scanOutput(new Reader(bytes, start, end), outputs - 1);
    } else {
      // Fail fast: more raw entries than inputs can ever be is refused without counting further.
      raw += 1;
      if (raw > PRESCAN_LIMITS.inputs) throw tooMany('raw_input_contents', PRESCAN_LIMITS.inputs, 'entries (one per input)');
    }
  }
  if (raw > inputs) {
    throw invalidArgument(`raw_input_contents: expected at most one entry per input (${inputs}), got ${raw}`);
  }
}

/**
 * Checks one input; returns its typed content elements. `typedLeft`: typed
 * elements the message may still hold (PRESCAN_LIMITS.typedElements less the
 * earlier inputs').
 */
function scanInput(r: Reader, index: number, typedLeft: number): number {
  const input: InputScan = { nameStart: -1, nameEnd: -1, dims: [], contents: 0 };
  let parameters = 0;
  // Typed contents, checked once the shape is known (fields may come in any order); most inputs have none.
  let contents: Array<[number, number]> | undefined;
  while (!r.done) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_LEN) {
      input.nameStart = r.len();
      input.nameEnd = r.fieldEnd;
    } else if (field === 3 && wire === WIRE_VARINT) {
      pushDim(r.buf, input, index, r.varint());
    } else if (field === 3 && wire === WIRE_LEN) {
      const start = r.len();
      const packed = new Reader(r.buf, start, r.fieldEnd);
      while (!packed.done) pushDim(r.buf, input, index, packed.varint());
    } else if (field === 4 && wire === WIRE_LEN) {
      r.len();
      parameters += 1;
      if (parameters > PRESCAN_LIMITS.parameters) {
        throw tooMany(`input ${echo(inputName(r.buf, input, index))}: parameters`, PRESCAN_LIMITS.parameters, 'entries');
      }
    } else if (field === 5 && wire === WIRE_LEN) {
      const start = r.len();
      (contents ??= []).push([start, r.fieldEnd]);
    } else {
      r.skip(wire);
    }
  }
  if (contents === undefined) return 0;
  const capacity = input.dims.reduce((product, dim) => product * Math.max(0, dim), 1);
  // Counting stops at the first element past either bound: a flood costs the bound, not its size.
  const limit = Math.min(capacity, typedLeft);
  const fields = new Set<string>();
  for (const [start, end] of contents) {
    input.contents += contentElements(new Reader(r.buf, start, end), fields, limit - input.contents);
    if (input.contents <= limit) continue;
    const name = echo(inputName(r.buf, input, index));
    const used = [...fields].join(', ');
    if (capacity <= typedLeft) {
      throw invalidArgument(`input ${name}: ${used}: expected at most ${capacity} elements (shape [${input.dims.join(',')}]), got more`);
    }
    throw invalidArgument(
      `input ${name}: ${used}: typed contents of all inputs together hold more than ${PRESCAN_LIMITS.typedElements} elements; ` +
        'send large tensors in raw_input_contents',
    );
  }
  return input.contents;
}

function pushDim(buf: Uint8Array, input: InputScan, index: number, raw: number): void {
  if (input.dims.length === PRESCAN_LIMITS.dims) throw tooMany(`input ${echo(inputName(buf, input, index))}: shape`, PRESCAN_LIMITS.dims, 'dimensions');
  // A negative int64 is a 10-byte varint of 2^64 + value; any value that large means "negative" here.
  input.dims.push(raw >= 2 ** 63 ? raw - 2 ** 64 : raw);
}

/**
 * Elements in one InferTensorContents occurrence (packed or not), counted up
 * to the first past `limit`; records which fields are used. The loop reads a
 * one-byte tag and length inline: that is every tag here, and the flood's
 * entries, so a large message costs one tight pass.
 */
function contentElements(r: Reader, fields: Set<string>, limit: number): number {
  let count = 0;
  let sawBytes = false;
  const buf = r.buf;
  while (!r.done && count <= limit) {
    // bytes_contents entries shorter than 128 bytes: tag 0x42, a one-byte length.
    const at = r.pos;
    if (buf[at] === 0x42 && at + 1 < r.end && buf[at + 1]! < 0x80) {
      const next = at + 2 + buf[at + 1]!;
      if (next > r.end) throw new Malformed();
      r.pos = next;
      count += 1;
      sawBytes = true;
      continue;
    }
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    const name = CONTENT_FIELDS[field];
    if (name === undefined || field === 0) {
      r.skip(wire);
      continue;
    }
    fields.add(name);
    if (wire !== WIRE_LEN || field === 8) {
      r.skip(wire);
      count += 1;
      continue;
    }
    // A packed run of numbers.
    const start = r.len();
    const end = r.fieldEnd;
    if (field === 6) count += Math.floor((end - start) / 4);
    else if (field === 7) count += Math.floor((end - start) / 8);
    else for (let i = start; i < end && count <= limit; i += 1) if (buf[i]! < 0x80) count += 1;
  }
  if (sawBytes) fields.add('bytes_contents');
  return count;
}

function scanOutput(r: Reader, index: number): void {
  // Where the latest name field is (a refusal quotes it); -1: none yet.
  let nameStart = -1;
  let nameEnd = -1;
  let parameters = 0;
  while (!r.done) {
    const tag = r.varint();
    const field = Math.floor(tag / 8);
    const wire = tag & 7;
    if (field === 1 && wire === WIRE_LEN) {
      nameStart = r.len();
      nameEnd = r.fieldEnd;
    } else if (field === 2 && wire === WIRE_LEN) {
      r.len();
      parameters += 1;
      if (parameters > PRESCAN_LIMITS.parameters) {
        const name = nameStart < 0 ? `#${index}` : NAMES.decode(r.buf.subarray(nameStart, Math.min(nameEnd, nameStart + 256)));
        throw tooMany(`output ${echo(name)}: parameters`, PRESCAN_LIMITS.parameters, 'entries');
      }
    } else {
      r.skip(wire);
    }
  }
}

/** The refusal of a count past its limit (built only when one is refused). */
function tooMany(where: string, limit: number, what: string): Error {
  return invalidArgument(`${where}: expected at most ${limit} ${what}, got more`);
}
