/**
 * The gRPC door's decoder for ModelInferRequest, the one message of every
 * inference call: one pass over the bytes, straight into the message object,
 * for the fields clients send on every call (model name, version and id; the
 * inputs' name, datatype and shape; the requested outputs' names; the raw
 * input contents).
 *
 * Why not protobuf-es's `fromBinary` alone: it creates each message from its
 * schema, reads every field through the reflection API and decodes strings
 * with a TextDecoder, several times the work of a walk over these few
 * fields (issue 19's main-thread budget).
 *
 * The result is the message fromBinary makes: the same fields, defaults,
 * `$typeName`s and property order, `raw_input_contents` as views of the
 * request's bytes (fromBinary's `subarray` too), and the shape's int64s as
 * BigInts. test/unit/infer-request-decoding compares the two on random
 * requests. A message with anything else (parameters, typed `contents`, an
 * unknown field, a wire type or varint this walk does not expect, a dim
 * outside [0, 2^53), a string that is not ASCII, bytes that run short) is
 * decoded by fromBinary whole, so
 * rarer fields and every decoding error are exactly as before.
 * Pure; any thread.
 */
import { fromBinary } from '@bufbuild/protobuf';
import {
  ModelInferRequestSchema,
  type ModelInferRequest,
  type ModelInferRequest_InferInputTensor,
  type ModelInferRequest_InferRequestedOutputTensor,
} from '../generated/grpc_service_pb.js';

/** ModelInferRequest from its wire bytes. */
export function decodeModelInferRequest(bytes: Uint8Array): ModelInferRequest {
  return walkModelInferRequest(bytes) ?? fromBinary(ModelInferRequestSchema, bytes);
}

/** Where the walk is; `failed` once it met something it leaves to fromBinary. One per walk. */
class Cursor {
  at: number;
  failed = false;
  constructor(
    readonly bytes: Uint8Array,
    /** The same bytes as a Buffer, for its native latin1 decoding (grpc-js hands us a Buffer: no wrap then). */
    readonly buffer: Buffer,
    at: number,
    readonly end: number,
  ) {
    this.at = at;
  }

  /** A cursor over `[at, end)` of the same bytes. */
  within(at: number, end: number): Cursor {
    return new Cursor(this.bytes, this.buffer, at, end);
  }

  /** A varint of at most 53 bits (every tag and length, and the dims this walk accepts); -1 and `failed` otherwise. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8 && this.at < this.end; i += 1) {
      const byte = this.bytes[this.at++]!;
      value += (byte & 0x7f) * scale;
      if (byte < 0x80) return value <= Number.MAX_SAFE_INTEGER ? value : this.fail();
      scale *= 0x80;
    }
    return this.fail();
  }

  /** The end of a length-delimited payload that starts here; -1 and `failed` when it runs past `end`. */
  payloadEnd(): number {
    const length = this.varint();
    if (this.failed || length > this.end - this.at) return this.fail();
    return this.at + length;
  }

  string(): string {
    const end = this.payloadEnd();
    if (this.failed) return '';
    const start = this.at;
    this.at = end;
    // Non-ASCII text is left to fromBinary (it checks UTF-8 strictly for proto3 and keeps a leading
    // U+FEFF): rare in names and ids, and its errors are then exactly fromBinary's.
    for (let i = start; i < end; i += 1) if (this.bytes[i]! >= 0x80) return this.failText();
    // A short name is built here (cheaper than a call into native code, and V8 keeps strings under 13
    // characters flat); a longer one is sliced natively, flat, not as a chain of concatenations.
    if (end - start > 12) return this.buffer.toString('latin1', start, end);
    let text = '';
    for (let i = start; i < end; i += 1) text += String.fromCharCode(this.bytes[i]!);
    return text;
  }

  private failText(): string {
    this.fail();
    return '';
  }

  fail(): -1 {
    this.failed = true;
    this.at = this.end;
    return -1;
  }
}

/** The walk alone: the message, or undefined when it holds something left to fromBinary (exported for tests). */
export function walkModelInferRequest(bytes: Uint8Array): ModelInferRequest | undefined {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const cursor = new Cursor(bytes, buffer, 0, bytes.length);
  const request: ModelInferRequest = {
    $typeName: 'inference.ModelInferRequest',
    modelName: '',
    modelVersion: '',
    id: '',
    parameters: {},
    inputs: [],
    outputs: [],
    rawInputContents: [],
  };
  while (cursor.at < cursor.end && !cursor.failed) {
    const tag = cursor.varint();
    switch (tag) {
      case 0x0a: // 1 model_name
        request.modelName = cursor.string();
        break;
      case 0x12: // 2 model_version
        request.modelVersion = cursor.string();
        break;
      case 0x1a: // 3 id
        request.id = cursor.string();
        break;
      case 0x2a: // 5 inputs
        request.inputs.push(walkInput(cursor));
        break;
      case 0x32: // 6 outputs
        request.outputs.push(walkOutput(cursor));
        break;
      case 0x3a: {
        // 7 raw_input_contents: a view of the request's bytes, as fromBinary's
        const end = cursor.payloadEnd();
        if (cursor.failed) break;
        request.rawInputContents.push(bytes.subarray(cursor.at, end));
        cursor.at = end;
        break;
      }
      default: // 4 parameters, an unknown field, a wire type not expected here
        cursor.fail();
    }
  }
  return cursor.failed ? undefined : request;
}

function walkInput(cursor: Cursor): ModelInferRequest_InferInputTensor {
  const input: ModelInferRequest_InferInputTensor = {
    $typeName: 'inference.ModelInferRequest.InferInputTensor',
    name: '',
    datatype: '',
    shape: [],
    parameters: {},
  };
  const end = cursor.payloadEnd();
  if (cursor.failed) return input;
  const inner = cursor.within(cursor.at, end);
  while (inner.at < end && !inner.failed) {
    const tag = inner.varint();
    switch (tag) {
      case 0x0a: // 1 name
        input.name = inner.string();
        break;
      case 0x12: // 2 datatype
        input.datatype = inner.string();
        break;
      case 0x1a: {
        // 3 shape, packed (what every encoder writes for proto3)
        const shapeEnd = inner.payloadEnd();
        if (inner.failed) break;
        const within = inner.within(inner.at, shapeEnd);
        while (within.at < shapeEnd && !within.failed) input.shape.push(bigintOf(within.varint()));
        if (within.failed) inner.fail();
        else inner.at = shapeEnd;
        break;
      }
      case 0x18: // 3 shape, one unpacked element (a parser must accept both)
        input.shape.push(bigintOf(inner.varint()));
        break;
      default: // 4 parameters, 5 contents, an unknown field
        inner.fail();
    }
  }
  if (inner.failed) cursor.fail();
  else cursor.at = end;
  return input;
}

function walkOutput(cursor: Cursor): ModelInferRequest_InferRequestedOutputTensor {
  const output: ModelInferRequest_InferRequestedOutputTensor = {
    $typeName: 'inference.ModelInferRequest.InferRequestedOutputTensor',
    name: '',
    parameters: {},
  };
  const end = cursor.payloadEnd();
  if (cursor.failed) return output;
  const inner = cursor.within(cursor.at, end);
  while (inner.at < end && !inner.failed) {
    if (inner.varint() === 0x0a) output.name = inner.string(); // 1 name
    else inner.fail(); // 2 parameters, an unknown field
  }
  if (inner.failed) cursor.fail();
  else cursor.at = end;
  return output;
}

/**
 * The BigInts of the small dims nearly every shape is made of, made once
 * (a BigInt is an immutable value, so one per number can be shared);
 * a failed varint's -1 never becomes a dim, the walk is abandoned.
 */
const SMALL_BIGINTS: readonly bigint[] = Array.from({ length: 1025 }, (_, n) => BigInt(n));

function bigintOf(n: number): bigint {
  return n < 0 ? -1n : (SMALL_BIGINTS[n] ?? BigInt(n));
}
