// gRPC over HTTP/2 at the byte level, for the lean load generators
// (`hotpath perf`, and the benchmarks' h2-loader-process.ts, echo contender
// and h2load, which import it from here): a message
// travels as a 5-byte prefix (compressed flag, big-endian length) and the
// message bytes. Pure functions, unit-tested.

/** The HTTP/2 path of KServe V2's ModelInfer. */
export const MODEL_INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';

/** Request headers every gRPC call carries (besides :method POST, :scheme, :authority). */
export const GRPC_REQUEST_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'application/grpc',
  te: 'trailers',
};

/** `message` as one uncompressed length-prefixed gRPC frame. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.byteLength);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, 5);
  return frame;
}

/**
 * The messages of a complete gRPC body (one or more frames, no trailing bytes).
 * Throws on a compressed frame (the benchmark never asks for compression) or a
 * truncated body.
 */
export function grpcMessages(body: Uint8Array): Buffer[] {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const messages: Buffer[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (bytes.length - offset < 5) throw new Error(`truncated gRPC frame header at byte ${offset}`);
    if (bytes[offset] !== 0) throw new Error(`compressed gRPC frame (flag ${bytes[offset]}) at byte ${offset}`);
    const length = bytes.readUInt32BE(offset + 1);
    if (bytes.length - offset - 5 < length) throw new Error(`truncated gRPC message: ${length} bytes announced, ${bytes.length - offset - 5} present`);
    messages.push(bytes.subarray(offset + 5, offset + 5 + length));
    offset += 5 + length;
  }
  return messages;
}
