// HTTP/2 at the byte level (RFC 9113 frames, RFC 7541 HPACK), just enough for
// the raw load generator (h2-raw-session.ts) of `hotpath perf` and of the
// benchmarks (bench/ imports it from here): the request is
// encoded once into a template (HEADERS + DATA frames) whose stream ids are
// patched per request, and response header blocks are walked to find
// `:status` and `grpc-status`. Pure functions, unit-tested against node:http2.
//
// The generator asks the server for a zero-size HPACK dynamic table, so every
// header arrives as a static-table index or a literal. Huffman-coded strings
// are compared as bytes against the canonical encodings of the few strings it
// looks for (HUFFMAN below), never decoded.

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
export const FRAME_HEADER_BYTES = 9;

export const FrameType = { DATA: 0, HEADERS: 1, PRIORITY: 2, RST_STREAM: 3, SETTINGS: 4, PUSH_PROMISE: 5, PING: 6, GOAWAY: 7, WINDOW_UPDATE: 8, CONTINUATION: 9 } as const;
export const Flag = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;
export const Setting = { HEADER_TABLE_SIZE: 1, ENABLE_PUSH: 2, MAX_CONCURRENT_STREAMS: 3, INITIAL_WINDOW_SIZE: 4, MAX_FRAME_SIZE: 5 } as const;

export function frameHeader(length: number, type: number, flags: number, streamId: number): Buffer {
  const header = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  writeFrameHeader(header, 0, length, type, flags, streamId);
  return header;
}

export function writeFrameHeader(target: Buffer, offset: number, length: number, type: number, flags: number, streamId: number): void {
  target.writeUIntBE(length, offset, 3);
  target[offset + 3] = type;
  target[offset + 4] = flags;
  target.writeUInt32BE(streamId & 0x7fffffff, offset + 5);
}

export function frame(type: number, flags: number, streamId: number, payload: Uint8Array = Buffer.alloc(0)): Buffer {
  return Buffer.concat([frameHeader(payload.byteLength, type, flags, streamId), payload]);
}

export function settingsFrame(settings: Readonly<Record<number, number>>): Buffer {
  const entries = Object.entries(settings);
  const payload = Buffer.allocUnsafe(entries.length * 6);
  entries.forEach(([id, value], i) => {
    payload.writeUInt16BE(Number(id), i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return frame(FrameType.SETTINGS, 0, 0, payload);
}

export function windowUpdateFrame(streamId: number, increment: number): Buffer {
  const payload = Buffer.allocUnsafe(4);
  payload.writeUInt32BE(increment & 0x7fffffff, 0);
  return frame(FrameType.WINDOW_UPDATE, 0, streamId, payload);
}

/** An HPACK integer with an N-bit prefix whose high bits are `high`. */
export function hpackInteger(value: number, prefixBits: number, high = 0): Buffer {
  const max = (1 << prefixBits) - 1;
  if (value < max) return Buffer.from([high | value]);
  const bytes = [high | max];
  let rest = value - max;
  while (rest >= 128) {
    bytes.push((rest % 128) | 128);
    rest = Math.floor(rest / 128);
  }
  bytes.push(rest);
  return Buffer.from(bytes);
}

function hpackString(text: string): Buffer {
  const bytes = Buffer.from(text, 'latin1');
  return Buffer.concat([hpackInteger(bytes.length, 7), bytes]);
}

/** RFC 7541 static table indexes the encoder and the walker use. */
const STATIC = { authority: 1, methodPost: 3, path: 4, schemeHttp: 6, status200: 8, status500: 14, contentType: 31 } as const;
const STATUS_BY_INDEX: Readonly<Record<number, number>> = { 8: 200, 9: 204, 10: 206, 11: 304, 12: 400, 13: 404, 14: 500 };

/**
 * The header block of a gRPC POST: indexed :method and :scheme, literals
 * without indexing (never Huffman) for the rest, so the block is the same for
 * every request and leaves the server's decoder table alone.
 */
export function requestHeaderBlock(authority: string, path: string, extra: Readonly<Record<string, string>>): Buffer {
  const parts = [
    hpackInteger(STATIC.methodPost, 7, 0x80),
    hpackInteger(STATIC.schemeHttp, 7, 0x80),
    hpackInteger(STATIC.path, 4), hpackString(path),
    hpackInteger(STATIC.authority, 4), hpackString(authority),
  ];
  for (const [name, value] of Object.entries(extra)) {
    if (name === 'content-type') parts.push(hpackInteger(STATIC.contentType, 4), hpackString(value));
    else parts.push(Buffer.from([0]), hpackString(name.toLowerCase()), hpackString(value));
  }
  return Buffer.concat(parts);
}

/**
 * One request as bytes: HEADERS (END_HEADERS) then DATA (END_STREAM) with the
 * whole body; `patch(target, streamId)` writes the stream id into a copy.
 */
export interface RequestTemplate {
  readonly bytes: Buffer;
  readonly bodyBytes: number;
  patch(target: Buffer, streamId: number): void;
}

export function requestTemplate(headerBlock: Buffer, body: Uint8Array, maxFrameSize: number): RequestTemplate {
  if (headerBlock.length > maxFrameSize || body.byteLength > maxFrameSize) {
    throw new Error(`request of ${headerBlock.length} header / ${body.byteLength} body bytes exceeds one ${maxFrameSize}-byte frame`);
  }
  const bytes = Buffer.concat([
    frameHeader(headerBlock.length, FrameType.HEADERS, Flag.END_HEADERS, 1), headerBlock,
    frameHeader(body.byteLength, FrameType.DATA, Flag.END_STREAM, 1), body,
  ]);
  const dataAt = FRAME_HEADER_BYTES + headerBlock.length;
  return {
    bytes,
    bodyBytes: body.byteLength,
    patch(target, streamId) {
      target.writeUInt32BE(streamId, 5);
      target.writeUInt32BE(streamId, dataAt + 5);
    },
  };
}

/**
 * Canonical HPACK Huffman codes (RFC 7541 appendix B) of the strings the
 * walker compares against; the unit test checks them against what nghttp2
 * (node:http2) puts on the wire.
 */
export const HUFFMAN = {
  'grpc-status': Buffer.from('9acac8b21234da8f', 'hex'),
  'grpc-message': Buffer.from('9acac8b5254207317f', 'hex'),
  '0': Buffer.from('07', 'hex'),
} as const;

/** What the walker found in one header block. */
export interface HeaderFacts {
  /** :status, 0 when absent, -1 when present but not readable (a Huffman-coded value). */
  status: number;
  /** grpc-status as text; '?' when Huffman-coded and not "0"; undefined when absent. */
  grpcStatus: string | undefined;
  /** grpc-message when sent as a plain literal (a placeholder when Huffman-coded). */
  grpcMessage: string | undefined;
}

function readInteger(block: Uint8Array, offset: number, prefixBits: number): [value: number, next: number] {
  const max = (1 << prefixBits) - 1;
  let value = block[offset]! & max;
  offset += 1;
  if (value < max) return [value, offset];
  let factor = 1;
  for (;;) {
    if (offset >= block.length) throw new Error('truncated HPACK integer');
    const byte = block[offset]!;
    offset += 1;
    value += (byte & 127) * factor;
    factor *= 128;
    if ((byte & 128) === 0) return [value, offset];
  }
}

function sameBytes(block: Uint8Array, start: number, end: number, expected: Uint8Array): boolean {
  if (end - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i += 1) if (block[start + i] !== expected[i]) return false;
  return true;
}

/** A string literal's extent and coding. */
function readString(block: Uint8Array, offset: number): [huffman: boolean, start: number, end: number] {
  const huffman = (block[offset]! & 0x80) !== 0;
  const [length, start] = readInteger(block, offset, 7);
  if (start + length > block.length) throw new Error('truncated HPACK string');
  return [huffman, start, start + length];
}

function matches(block: Uint8Array, huffman: boolean, start: number, end: number, text: keyof typeof HUFFMAN): boolean {
  return huffman ? sameBytes(block, start, end, HUFFMAN[text]) : sameBytes(block, start, end, Buffer.from(text, 'latin1'));
}

/**
 * Walks a complete header block (no dynamic-table references: the generator
 * set the table size to 0) and reports :status, grpc-status and grpc-message.
 * Throws on a reference to the dynamic table or a malformed block.
 */
export function walkHeaderBlock(block: Uint8Array): HeaderFacts {
  const facts: HeaderFacts = { status: 0, grpcStatus: undefined, grpcMessage: undefined };
  let offset = 0;
  while (offset < block.length) {
    const first = block[offset]!;
    if (first & 0x80) {
      const [index, next] = readInteger(block, offset, 7);
      offset = next;
      if (index > 61) throw new Error(`HPACK dynamic-table reference ${index} although the table size is 0`);
      const status = STATUS_BY_INDEX[index];
      if (status !== undefined) facts.status = status;
      continue;
    }
    if ((first & 0xe0) === 0x20) {
      offset = readInteger(block, offset, 5)[1]; // dynamic table size update
      continue;
    }
    const prefix = (first & 0xc0) === 0x40 ? 6 : 4;
    const [nameIndex, afterIndex] = readInteger(block, offset, prefix);
    offset = afterIndex;
    let name: 'status' | 'grpc-status' | 'grpc-message' | undefined;
    if (nameIndex === 0) {
      const [huffman, start, end] = readString(block, offset);
      offset = end;
      if (matches(block, huffman, start, end, 'grpc-status')) name = 'grpc-status';
      else if (matches(block, huffman, start, end, 'grpc-message')) name = 'grpc-message';
    } else if (nameIndex > 61) {
      throw new Error(`HPACK dynamic-table name reference ${nameIndex} although the table size is 0`);
    } else if (nameIndex >= STATIC.status200 && nameIndex <= STATIC.status500) {
      name = 'status';
    }
    const [huffman, start, end] = readString(block, offset);
    offset = end;
    if (name === 'status') facts.status = huffman ? -1 : Number(Buffer.from(block.subarray(start, end)).toString('latin1'));
    else if (name === 'grpc-status') {
      facts.grpcStatus = huffman ? (matches(block, true, start, end, '0') ? '0' : '?') : Buffer.from(block.subarray(start, end)).toString('latin1');
    } else if (name === 'grpc-message') {
      facts.grpcMessage = huffman ? '(Huffman-coded, not decoded)' : Buffer.from(block.subarray(start, end)).toString('latin1');
    }
  }
  return facts;
}
