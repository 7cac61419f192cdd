/**
 * The payload archive's format on disk: segment files of length-delimited,
 * checksummed records.
 *
 * A segment is `seg-<12-digit sequence>.hparc`:
 *
 *     "HPARC001"                                   8 bytes, the file's magic
 *     then records, each:
 *       u32 LE  payload length (> 0)
 *       u32 LE  CRC-32 (zlib's, IEEE) of the payload
 *       payload: one ArchiveRecord message (protobuf wire format)
 *
 * ArchiveRecord has no .proto file: it is written and read here with
 * @bufbuild/protobuf's wire writer and reader, so any protobuf decoder reads
 * it with this schema:
 *
 *     message ArchiveRecord {
 *       int64  time_unix_ms   = 1;   // when the request arrived
 *       string request_id     = 2;   // the server's request id (x-request-id)
 *       string model          = 3;   // the model that scored it (a route's arm model)
 *       string version        = 4;   // the version that scored it ('' when none resolved)
 *       string route          = 5;   // the route, when the request came through one (reserved)
 *       string arm            = 6;   // and its arm (reserved)
 *       uint64 latency_ns     = 7;   // receipt to answer
 *       uint32 status_code    = 8;   // gRPC status; 0 = OK
 *       string status_message = 9;   // the error's message (not OK only)
 *       bytes  request        = 10;  // inference.ModelInferRequest
 *       bytes  response       = 11;  // inference.ModelInferResponse (OK only)
 *     }
 *
 * A record never spans segments. A length of 0, one that runs past the end of
 * the file, or a checksum that does not match ends the segment's readable
 * part: what follows is a torn or corrupt tail (a killed writer, a full disk)
 * and is skipped. Writers never append to an existing segment, so a torn tail
 * stays the last thing in its file.
 *
 * Pure; safe in any thread.
 */
import { crc32 } from 'node:zlib';
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';

export const SEGMENT_MAGIC = Buffer.from('HPARC001', 'latin1');
export const FILE_HEADER_BYTES = SEGMENT_MAGIC.byteLength;
/** Length and checksum before each payload. */
export const FRAME_HEADER_BYTES = 8;
/** The largest payload a frame may announce; a larger length is corruption. */
export const MAX_PAYLOAD_BYTES = 2 ** 31 - 1;

const SEGMENT_PATTERN = /^seg-(\d{12})\.hparc$/;

export function segmentFileName(sequence: number): string {
  return `seg-${String(sequence).padStart(12, '0')}.hparc`;
}

/** The sequence number of a segment's file name; undefined for any other file. */
export function segmentSequence(fileName: string): number | undefined {
  const match = SEGMENT_PATTERN.exec(fileName);
  return match === null ? undefined : Number(match[1]);
}

/** What a record says about its request, besides the messages themselves. */
export interface ArchiveHeader {
  readonly timeUnixMs: number;
  readonly requestId: string;
  readonly model: string;
  readonly version: string;
  readonly route?: string | undefined;
  readonly arm?: string | undefined;
  readonly latencyNs: number;
  /** gRPC status code; 0 is OK. */
  readonly statusCode: number;
  readonly statusMessage?: string | undefined;
}

/** A decoded record: the header and the encoded messages (views into the payload). */
export interface DecodedRecord extends ArchiveHeader {
  /** inference.ModelInferRequest, encoded. */
  readonly request: Uint8Array;
  /** inference.ModelInferResponse, encoded; undefined for a failed request. */
  readonly response: Uint8Array | undefined;
}

const FIELD = {
  timeUnixMs: 1,
  requestId: 2,
  model: 3,
  version: 4,
  route: 5,
  arm: 6,
  latencyNs: 7,
  statusCode: 8,
  statusMessage: 9,
  request: 10,
  response: 11,
} as const;

/**
 * One record's payload. `request` and `response` are the messages already
 * encoded (toBinary); they are copied once, into the payload.
 */
export function encodeRecordPayload(header: ArchiveHeader, request: Uint8Array, response: Uint8Array | undefined): Uint8Array {
  const head = new BinaryWriter();
  head.tag(FIELD.timeUnixMs, WireType.Varint).int64(Math.round(header.timeUnixMs));
  if (header.requestId !== '') head.tag(FIELD.requestId, WireType.LengthDelimited).string(header.requestId);
  if (header.model !== '') head.tag(FIELD.model, WireType.LengthDelimited).string(header.model);
  if (header.version !== '') head.tag(FIELD.version, WireType.LengthDelimited).string(header.version);
  if (header.route) head.tag(FIELD.route, WireType.LengthDelimited).string(header.route);
  if (header.arm) head.tag(FIELD.arm, WireType.LengthDelimited).string(header.arm);
  head.tag(FIELD.latencyNs, WireType.Varint).uint64(Math.max(0, Math.round(header.latencyNs)));
  if (header.statusCode !== 0) head.tag(FIELD.statusCode, WireType.Varint).uint32(header.statusCode);
  if (header.statusMessage) head.tag(FIELD.statusMessage, WireType.LengthDelimited).string(header.statusMessage);
  // The tags and lengths of the two message fields, so the messages are copied straight into the payload.
  head.tag(FIELD.request, WireType.LengthDelimited).uint32(request.byteLength);
  const beforeRequest = head.finish();
  const beforeResponse = response === undefined
    ? undefined
    : new BinaryWriter().tag(FIELD.response, WireType.LengthDelimited).uint32(response.byteLength).finish();
  const size = beforeRequest.byteLength + request.byteLength + (beforeResponse === undefined ? 0 : beforeResponse.byteLength + response!.byteLength);
  const payload = new Uint8Array(size);
  let offset = 0;
  for (const part of [beforeRequest, request, beforeResponse, response]) {
    if (part === undefined) continue;
    payload.set(part, offset);
    offset += part.byteLength;
  }
  return payload;
}

/** Decodes a payload whose checksum matched; throws on a malformed message. */
export function decodeRecordPayload(payload: Uint8Array): DecodedRecord {
  const reader = new BinaryReader(payload);
  let timeUnixMs = 0;
  let requestId = '';
  let model = '';
  let version = '';
  let route: string | undefined;
  let arm: string | undefined;
  let latencyNs = 0;
  let statusCode = 0;
  let statusMessage: string | undefined;
  let request: Uint8Array = new Uint8Array(0);
  let response: Uint8Array | undefined;
  while (reader.pos < reader.len) {
    const [field, wireType] = reader.tag();
    switch (field) {
      case FIELD.timeUnixMs: timeUnixMs = Number(reader.int64()); break;
      case FIELD.requestId: requestId = reader.string(); break;
      case FIELD.model: model = reader.string(); break;
      case FIELD.version: version = reader.string(); break;
      case FIELD.route: route = reader.string(); break;
      case FIELD.arm: arm = reader.string(); break;
      case FIELD.latencyNs: latencyNs = Number(reader.uint64()); break;
      case FIELD.statusCode: statusCode = reader.uint32(); break;
      case FIELD.statusMessage: statusMessage = reader.string(); break;
      case FIELD.request: request = reader.bytes(); break;
      case FIELD.response: response = reader.bytes(); break;
      // Fields a later writer adds are skipped, as protobuf readers do.
      default: reader.skip(wireType, field);
    }
  }
  return { timeUnixMs, requestId, model, version, route, arm, latencyNs, statusCode, statusMessage, request, response };
}

/** A frame's 8-byte head for `payload`: its length and CRC-32. */
export function frameHeader(payload: Uint8Array): Buffer {
  const head = Buffer.allocUnsafe(FRAME_HEADER_BYTES);
  head.writeUInt32LE(payload.byteLength, 0);
  head.writeUInt32LE(crc32(payload), 4);
  return head;
}

/** Where a segment's readable part ends, and why, when it does not end at the end of the file. */
export interface SegmentTail {
  /** Offset of the first byte not read as a record. */
  readonly offset: number;
  /** Bytes skipped from there to the end of what was read. */
  readonly bytes: number;
  readonly reason: 'bad_magic' | 'torn_header' | 'bad_length' | 'torn_record' | 'bad_checksum';
}

export interface FrameScan {
  /** Each valid record's payload (views into `bytes`) and its offset. */
  readonly records: { readonly offset: number; readonly payload: Uint8Array }[];
  /** Undefined when every byte was read as a record. */
  readonly tail: SegmentTail | undefined;
}

/** Splits a segment's bytes into records; stops at the first torn or corrupt frame. */
export function scanFrames(bytes: Uint8Array): FrameScan {
  const records: { offset: number; payload: Uint8Array }[] = [];
  const stop = (offset: number, reason: SegmentTail['reason']): FrameScan => ({
    records,
    tail: { offset, bytes: bytes.byteLength - offset, reason },
  });
  if (bytes.byteLength < FILE_HEADER_BYTES || !SEGMENT_MAGIC.equals(bytes.subarray(0, FILE_HEADER_BYTES))) {
    return bytes.byteLength === 0 ? { records, tail: undefined } : stop(0, 'bad_magic');
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let offset = FILE_HEADER_BYTES;
  while (offset < bytes.byteLength) {
    if (offset + FRAME_HEADER_BYTES > bytes.byteLength) return stop(offset, 'torn_header');
    const length = view.getUint32(offset, true);
    const checksum = view.getUint32(offset + 4, true);
    if (length === 0 || length > MAX_PAYLOAD_BYTES) return stop(offset, 'bad_length');
    const start = offset + FRAME_HEADER_BYTES;
    if (start + length > bytes.byteLength) return stop(offset, 'torn_record');
    const payload = bytes.subarray(start, start + length);
    if (crc32(payload) !== checksum) return stop(offset, 'bad_checksum');
    records.push({ offset, payload });
    offset = start + length;
  }
  return { records, tail: undefined };
}
