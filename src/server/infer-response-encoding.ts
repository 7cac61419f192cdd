/**
 * The gRPC door's encoder for inference answers (ModelInferResponse and the
 * ModelStreamInferResponse that wraps one): the message's size is computed
 * first, then it is written into one Buffer of exactly that size.
 *
 * Why not protobuf-es's `toBinary` alone: its BinaryWriter grows a list of
 * chunks and forks a new one for every nested message (each output tensor,
 * each packed shape), then joins them into a new array, so an answer costs
 * several allocations and a copy of its raw output bytes between chunks.
 * Answers are the one message of every inference call, and their fields are
 * few and fixed, so they are worth a writer of their own (issue 19's main-
 * thread budget).
 *
 * The bytes are those toBinary writes (fields in number order, proto3
 * defaults left out, the shape packed); test/unit/infer-response-encoding
 * compares the two on random answers. A message with anything this writer
 * does not handle (a parameter, typed `contents`, unknown fields, a dim that
 * is negative or past 2^53) is left to toBinary whole, so the fast path is
 * never the only reader of a rarer field. Pure; any thread.
 */
import { toBinary } from '@bufbuild/protobuf';
import {
  ModelInferResponseSchema,
  ModelStreamInferResponseSchema,
  type ModelInferResponse,
  type ModelInferResponse_InferOutputTensor,
  type ModelStreamInferResponse,
} from '../generated/grpc_service_pb.js';

// Wire tags: (field number << 3) | wire type 2 (length-delimited), every field here being one.
const TAG_1 = 0x0a;
const TAG_2 = 0x12;
const TAG_3 = 0x1a;
const TAG_5 = 0x2a;
const TAG_6 = 0x32;

/** ModelInferResponse as bytes, ready for grpc-js to frame. */
export function encodeModelInferResponse(response: ModelInferResponse): Buffer {
  const size = responseSize(response);
  if (size < 0) return wrap(toBinary(ModelInferResponseSchema, response));
  const out = Buffer.allocUnsafe(size);
  writeResponse(out, 0, response);
  return out;
}

/** ModelStreamInferResponse as bytes: an error message and/or an answer (field 2). */
export function encodeModelStreamInferResponse(message: ModelStreamInferResponse): Buffer {
  const inner = message.inferResponse;
  const innerSize = inner === undefined ? 0 : responseSize(inner);
  if (innerSize < 0 || !noUnknownFields(message)) return wrap(toBinary(ModelStreamInferResponseSchema, message));
  const errorBytes = Buffer.byteLength(message.errorMessage);
  let size = errorBytes === 0 ? 0 : 1 + varintSize(errorBytes) + errorBytes;
  if (inner !== undefined) size += 1 + varintSize(innerSize) + innerSize;
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  if (errorBytes !== 0) at = writeString(out, at, TAG_1, message.errorMessage, errorBytes);
  if (inner !== undefined) {
    out[at++] = TAG_2;
    at = writeVarint(out, at, innerSize);
    writeResponse(out, at, inner);
  }
  return out;
}

/** Wrap, don't copy: toBinary's result is ours alone. */
function wrap(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The encoded size of `response`, or -1 when it holds a field this writer leaves to toBinary. */
function responseSize(response: ModelInferResponse): number {
  if (!noUnknownFields(response) || !isEmpty(response.parameters)) return -1;
  let size = stringFieldSize(response.modelName) + stringFieldSize(response.modelVersion) + stringFieldSize(response.id);
  for (const output of response.outputs) {
    const body = outputSize(output);
    if (body < 0) return -1;
    size += 1 + varintSize(body) + body;
  }
  for (const raw of response.rawOutputContents) size += 1 + varintSize(raw.byteLength) + raw.byteLength;
  return size;
}

function outputSize(output: ModelInferResponse_InferOutputTensor): number {
  if (!noUnknownFields(output) || !isEmpty(output.parameters) || output.contents !== undefined) return -1;
  let size = stringFieldSize(output.name) + stringFieldSize(output.datatype);
  const dims = shapeSize(output.shape);
  if (dims < 0) return -1;
  if (output.shape.length > 0) size += 1 + varintSize(dims) + dims;
  return size;
}

/** The packed shape's payload size, or -1 for a dim outside [0, 2^53). */
function shapeSize(shape: readonly bigint[]): number {
  let size = 0;
  for (const dim of shape) {
    const n = Number(dim);
    if (!(n >= 0 && n <= Number.MAX_SAFE_INTEGER)) return -1;
    size += varintSize(n);
  }
  return size;
}

/** Writes `response` at `at` (its size was computed by responseSize); returns the end. */
function writeResponse(out: Buffer, at: number, response: ModelInferResponse): number {
  at = writeStringField(out, at, TAG_1, response.modelName);
  at = writeStringField(out, at, TAG_2, response.modelVersion);
  at = writeStringField(out, at, TAG_3, response.id);
  for (const output of response.outputs) {
    out[at++] = TAG_5;
    at = writeVarint(out, at, outputSize(output));
    at = writeStringField(out, at, TAG_1, output.name);
    at = writeStringField(out, at, TAG_2, output.datatype);
    if (output.shape.length > 0) {
      out[at++] = TAG_3;
      at = writeVarint(out, at, shapeSize(output.shape));
      for (const dim of output.shape) at = writeVarint(out, at, Number(dim));
    }
  }
  for (const raw of response.rawOutputContents) {
    out[at++] = TAG_6;
    at = writeVarint(out, at, raw.byteLength);
    out.set(raw, at);
    at += raw.byteLength;
  }
  return at;
}

/** A proto3 string field's size: nothing when empty (the default is not written). */
function stringFieldSize(value: string): number {
  const bytes = utf8Length(value);
  return bytes === 0 ? 0 : 1 + varintSize(bytes) + bytes;
}

function writeStringField(out: Buffer, at: number, tag: number, value: string): number {
  const bytes = utf8Length(value);
  return bytes === 0 ? at : writeString(out, at, tag, value, bytes);
}

function writeString(out: Buffer, at: number, tag: number, value: string, bytes: number): number {
  out[at++] = tag;
  at = writeVarint(out, at, bytes);
  if (bytes === value.length) {
    // ASCII (a UTF-8 length equal to the UTF-16 length means every unit is one byte): names and
    // ids nearly always are, and a loop beats a call into the native writer for a few bytes.
    for (let i = 0; i < bytes; i += 1) out[at + i] = value.charCodeAt(i);
  } else {
    out.write(value, at, bytes, 'utf8');
  }
  return at + bytes;
}

/** UTF-8 length; the common ASCII string is counted without leaving JS. */
function utf8Length(value: string): number {
  for (let i = 0; i < value.length; i += 1) {
    if (value.charCodeAt(i) >= 0x80) return Buffer.byteLength(value, 'utf8');
  }
  return value.length;
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 0x80);
    size += 1;
  }
  return size;
}

function writeVarint(out: Buffer, at: number, n: number): number {
  while (n >= 0x80) {
    out[at++] = (n % 0x80) | 0x80;
    n = Math.floor(n / 0x80);
  }
  out[at++] = n;
  return at;
}

/** True for an object with no own enumerable key (a map field with no entries), without building a key list. */
function isEmpty(map: object): boolean {
  for (const _key in map) return false;
  return true;
}

function noUnknownFields(message: { readonly $unknown?: readonly unknown[] }): boolean {
  return message.$unknown === undefined || message.$unknown.length === 0;
}
