/**
 * The BYTES tensor wire format (KServe V2 / Triton): each element is a 4-byte
 * little-endian length followed by that many bytes, elements back to back.
 *
 * onnxruntime-node holds string tensors as JS strings, so elements are decoded
 * as UTF-8 text. Bytes that are not valid UTF-8, and NUL bytes, are refused
 * rather than silently replaced with U+FFFD or truncated (both would corrupt
 * the value on its way through onnxruntime).
 */

const LENGTH_PREFIX_BYTES = 4;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const utf8 = new TextEncoder();

/** Thrown for malformed BYTES payloads; the message says what and where. */
export class BytesFormatError extends Error {}

/** Decodes exactly `expectedCount` elements from `payload`, refusing leftovers. */
export function decodeBytesTensor(payload: Uint8Array, expectedCount: number): string[] {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const elements: string[] = [];
  let offset = 0;
  while (offset < payload.byteLength) {
    if (elements.length === expectedCount) {
      throw new BytesFormatError(
        `expected ${expectedCount} elements, but ${payload.byteLength - offset} bytes follow element ${expectedCount - 1}`,
      );
    }
    if (offset + LENGTH_PREFIX_BYTES > payload.byteLength) {
      throw new BytesFormatError(
        `element ${elements.length}: truncated length prefix at byte ${offset} (need 4 bytes, ${payload.byteLength - offset} left)`,
      );
    }
    const length = view.getUint32(offset, true);
    offset += LENGTH_PREFIX_BYTES;
    if (offset + length > payload.byteLength) {
      throw new BytesFormatError(
        `element ${elements.length}: length prefix says ${length} bytes, only ${payload.byteLength - offset} left`,
      );
    }
    elements.push(decodeUtf8(payload.subarray(offset, offset + length), elements.length));
    offset += length;
  }
  if (elements.length !== expectedCount) {
    throw new BytesFormatError(`expected ${expectedCount} elements, got ${elements.length}`);
  }
  return elements;
}

/** Decodes typed `bytes_contents` entries, one per element. */
export function decodeBytesElements(elements: readonly Uint8Array[]): string[] {
  return elements.map((element, index) => decodeUtf8(element, index));
}

/** Encodes strings into the length-prefixed wire format. */
export function encodeBytesTensor(elements: readonly string[]): Uint8Array {
  const encoded = elements.map((element) => utf8.encode(element));
  const total = encoded.reduce((sum, e) => sum + LENGTH_PREFIX_BYTES + e.byteLength, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let offset = 0;
  for (const element of encoded) {
    view.setUint32(offset, element.byteLength, true);
    out.set(element, offset + LENGTH_PREFIX_BYTES);
    offset += LENGTH_PREFIX_BYTES + element.byteLength;
  }
  return out;
}

function decodeUtf8(bytes: Uint8Array, index: number): string {
  // onnxruntime copies string tensor elements as C strings: a NUL would silently cut the value.
  if (bytes.includes(0)) {
    throw new BytesFormatError(`element ${index} contains a NUL byte, which onnxruntime string tensors cannot hold`);
  }
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new BytesFormatError(
      `element ${index} is not valid UTF-8 (onnxruntime string tensors hold UTF-8 text)`,
    );
  }
}
