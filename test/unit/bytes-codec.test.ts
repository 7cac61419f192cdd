import { describe, expect, it } from 'vitest';
import { BytesFormatError, decodeBytesTensor, encodeBytesTensor } from '../../src/tensor/bytes-codec.js';

/** Builds a BYTES payload by hand, independent of the encoder under test. */
function frame(...elements: Uint8Array[]): Uint8Array {
  const parts: number[] = [];
  for (const element of elements) {
    const n = element.byteLength;
    parts.push(n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, (n >>> 24) & 0xff, ...element);
  }
  return Uint8Array.from(parts);
}
const text = (s: string) => new TextEncoder().encode(s);

describe('BYTES wire format', () => {
  it('writes a 4-byte little-endian length before each element', () => {
    expect([...encodeBytesTensor(['ab', '', 'é'])]).toEqual([
      2, 0, 0, 0, 0x61, 0x62,
      0, 0, 0, 0,
      2, 0, 0, 0, 0xc3, 0xa9,
    ]);
  });

  it('decodes what it encodes, including empty and multi-byte strings', () => {
    const values = ['hello', '', 'naïve ✓', 'x'.repeat(300)];
    expect(decodeBytesTensor(encodeBytesTensor(values), values.length)).toEqual(values);
  });

  it('decodes a hand-built payload from a subarray at an odd offset', () => {
    const payload = frame(text('cat'), text('dog'));
    const padded = new Uint8Array(payload.byteLength + 3);
    padded.set(payload, 3);
    expect(decodeBytesTensor(padded.subarray(3), 2)).toEqual(['cat', 'dog']);
  });

  it('refuses a truncated length prefix', () => {
    expect(() => decodeBytesTensor(Uint8Array.from([3, 0]), 1)).toThrow(
      /element 0: truncated length prefix at byte 0 \(need 4 bytes, 2 left\)/,
    );
  });

  it('refuses a length that runs past the end', () => {
    expect(() => decodeBytesTensor(Uint8Array.from([9, 0, 0, 0, 1, 2]), 1)).toThrow(
      /element 0: length prefix says 9 bytes, only 2 left/,
    );
  });

  it('refuses too few and too many elements', () => {
    expect(() => decodeBytesTensor(frame(text('a')), 2)).toThrow(/expected 2 elements, got 1/);
    expect(() => decodeBytesTensor(frame(text('a'), text('b')), 1)).toThrow(/expected 1 elements, but 5 bytes follow/);
  });

  it('refuses bytes that are not UTF-8 instead of replacing them', () => {
    expect(() => decodeBytesTensor(frame(Uint8Array.from([0xff, 0xfe])), 1)).toThrow(BytesFormatError);
    expect(() => decodeBytesTensor(frame(Uint8Array.from([0xff])), 1)).toThrow(/element 0 is not valid UTF-8/);
  });

  it('refuses NUL bytes, which onnxruntime would silently truncate at', () => {
    expect(() => decodeBytesTensor(frame(text('ok'), text('a\0b')), 2)).toThrow(/element 1 contains a NUL byte/);
  });
});
