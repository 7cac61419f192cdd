/**
 * The archive's record format (src/datachecks/archive/record-format.ts):
 * payloads round-trip, and a torn or corrupt tail (cut anywhere, zero-filled,
 * a flipped byte) ends the readable part of a segment without losing the
 * records before it.
 */
import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import {
  ModelInferRequestSchema,
  ModelInferResponseSchema,
} from '../../src/generated/grpc_service_pb.js';
import {
  FILE_HEADER_BYTES,
  FRAME_HEADER_BYTES,
  SEGMENT_MAGIC,
  decodeRecordPayload,
  encodeRecordPayload,
  frameHeader,
  scanFrames,
  segmentFileName,
  segmentSequence,
} from '../../src/datachecks/archive/record-format.js';

const request = (i: number) =>
  create(ModelInferRequestSchema, {
    modelName: 'ctr',
    modelVersion: '2',
    id: `r${i}`,
    inputs: [{ name: 'features', datatype: 'FP32', shape: [1n, 4n] }],
    rawInputContents: [new Uint8Array(Float32Array.of(i, 1, 2, 3).buffer)],
  });
const response = (i: number) =>
  create(ModelInferResponseSchema, {
    modelName: 'ctr',
    modelVersion: '2',
    id: `r${i}`,
    outputs: [{ name: 'score', datatype: 'FP32', shape: [1n, 1n] }],
    rawOutputContents: [new Uint8Array(Float32Array.of(i / 10).buffer)],
  });

function payload(i: number): Uint8Array {
  return encodeRecordPayload(
    { timeUnixMs: 1_700_000_000_000 + i, requestId: `q${i}`, model: 'ctr', version: '2', latencyNs: 1234 + i, statusCode: 0 },
    toBinary(ModelInferRequestSchema, request(i)),
    toBinary(ModelInferResponseSchema, response(i)),
  );
}

/** A segment's bytes holding `count` records; also each record's end offset. */
function segment(count: number): { bytes: Buffer; ends: number[] } {
  const parts: Uint8Array[] = [SEGMENT_MAGIC];
  const ends: number[] = [];
  let offset = FILE_HEADER_BYTES;
  for (let i = 0; i < count; i++) {
    const p = payload(i);
    parts.push(frameHeader(p), p);
    offset += FRAME_HEADER_BYTES + p.byteLength;
    ends.push(offset);
  }
  return { bytes: Buffer.concat(parts), ends };
}

describe('archive record payloads', () => {
  it('round-trip the header and both messages', () => {
    const decoded = decodeRecordPayload(payload(7));
    expect(decoded).toMatchObject({ timeUnixMs: 1_700_000_000_007, requestId: 'q7', model: 'ctr', version: '2', latencyNs: 1241, statusCode: 0 });
    expect(decoded.route).toBeUndefined();
    expect(fromBinary(ModelInferRequestSchema, decoded.request)).toEqual(request(7));
    expect(fromBinary(ModelInferResponseSchema, decoded.response!)).toEqual(response(7));
  });

  it('carry a failure: status, message and route fields, no response', () => {
    const encoded = encodeRecordPayload(
      { timeUnixMs: 5, requestId: 'x', model: 'm', version: '', route: 'checkout', arm: 'canary', latencyNs: 9, statusCode: 3, statusMessage: "input 'features': expected shape [-1,32], got [1,16]" },
      toBinary(ModelInferRequestSchema, request(1)),
      undefined,
    );
    const decoded = decodeRecordPayload(encoded);
    expect(decoded).toMatchObject({ statusCode: 3, route: 'checkout', arm: 'canary', version: '', response: undefined });
    expect(decoded.statusMessage).toMatch(/expected shape \[-1,32\]/);
  });

  it('frame with the payload length and zlib CRC-32', () => {
    const p = payload(1);
    const head = frameHeader(p);
    expect(head.readUInt32LE(0)).toBe(p.byteLength);
    expect(head.readUInt32LE(4)).toBe(crc32(p));
  });

  it('name segments by a sortable sequence', () => {
    expect(segmentFileName(42)).toBe('seg-000000000042.hparc');
    expect(segmentSequence('seg-000000000042.hparc')).toBe(42);
    expect(segmentSequence('seg-42.hparc')).toBeUndefined();
    expect(segmentSequence('notes.txt')).toBeUndefined();
  });
});

describe('scanning a segment', () => {
  it('reads every record of an intact segment', () => {
    const { bytes } = segment(5);
    const scan = scanFrames(bytes);
    expect(scan.tail).toBeUndefined();
    expect(scan.records.map((r) => decodeRecordPayload(r.payload).requestId)).toEqual(['q0', 'q1', 'q2', 'q3', 'q4']);
  });

  it('skips a torn tail cut at any byte of the last record', () => {
    const { bytes, ends } = segment(3);
    for (let cut = ends[1]! + 1; cut < ends[2]!; cut++) {
      const scan = scanFrames(bytes.subarray(0, cut));
      expect(scan.records).toHaveLength(2);
      expect(scan.tail).toMatchObject({ offset: ends[1], bytes: cut - ends[1]! });
      expect(['torn_header', 'torn_record']).toContain(scan.tail!.reason);
    }
  });

  it('stops at a corrupt record and keeps the ones before it', () => {
    const { bytes, ends } = segment(4);
    const corrupt = Buffer.from(bytes);
    corrupt[ends[1]! + FRAME_HEADER_BYTES + 5]! ^= 0xff;
    const scan = scanFrames(corrupt);
    expect(scan.records).toHaveLength(2);
    expect(scan.tail).toEqual({ offset: ends[1], bytes: corrupt.byteLength - ends[1]!, reason: 'bad_checksum' });
  });

  it('treats a zero-filled tail (a crash after the file grew) as corrupt, not as empty records', () => {
    const { bytes, ends } = segment(2);
    const scan = scanFrames(Buffer.concat([bytes, Buffer.alloc(4096)]));
    expect(scan.records).toHaveLength(2);
    expect(scan.tail).toEqual({ offset: ends[1], bytes: 4096, reason: 'bad_length' });
  });

  it('reads nothing from a file that is not a segment, and nothing is lost from an empty one', () => {
    expect(scanFrames(Buffer.from('not an archive at all')).tail?.reason).toBe('bad_magic');
    expect(scanFrames(Buffer.from('HPARC')).tail?.reason).toBe('bad_magic');
    expect(scanFrames(Buffer.alloc(0))).toEqual({ records: [], tail: undefined });
    expect(scanFrames(SEGMENT_MAGIC)).toEqual({ records: [], tail: undefined });
  });
});
