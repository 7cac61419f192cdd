/**
 * gRPC calls with hand-made request bytes, for probes a protobuf library
 * would not build (millions of empty entries) or would build too slowly: a
 * grpc-js client whose serializer passes the bytes through.
 */
import * as grpc from '@grpc/grpc-js';

export const MODEL_INFER = '/inference.GRPCInferenceService/ModelInfer';

export interface RawOutcome {
  readonly code: grpc.status;
  readonly details: string;
  readonly ms: number;
}

/** One unary call of `path` with `bytes` as its message; resolves with its status and how long it took. */
export function rawUnary(client: grpc.Client, path: string, bytes: Buffer, metadata = new grpc.Metadata()): Promise<RawOutcome> {
  const started = performance.now();
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (message: Buffer) => message,
      (reply: Buffer) => reply,
      bytes,
      metadata,
      (err: grpc.ServiceError | null) =>
        resolve({ code: err?.code ?? grpc.status.OK, details: err?.details ?? '', ms: performance.now() - started }),
    );
  });
}

/** Protobuf wire encoding, just enough for ModelInferRequest probes. */
export const wire = {
  varint(value: number): Buffer {
    const bytes: number[] = [];
    let v = value;
    while (v >= 0x80) {
      bytes.push((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    bytes.push(v);
    return Buffer.from(bytes);
  },
  /** A length-delimited field. */
  field(number: number, payload: Buffer | string): Buffer {
    const body = typeof payload === 'string' ? Buffer.from(payload) : payload;
    return Buffer.concat([wire.varint(number * 8 + 2), wire.varint(body.length), body]);
  },
  /** Packed int64s (non-negative). */
  packed(number: number, values: readonly number[]): Buffer {
    return wire.field(number, Buffer.concat(values.map((v) => wire.varint(v))));
  },
};

/** A ModelInferRequest for `model` with one input whose typed `contents` are `contents` (InferTensorContents bytes). */
export function inferRequestBytes(model: string, input: { name: string; datatype: string; shape: number[]; contents?: Buffer; raw?: Buffer }): Buffer {
  const tensor = Buffer.concat([
    wire.field(1, input.name),
    wire.field(2, input.datatype),
    wire.packed(3, input.shape),
    ...(input.contents === undefined ? [] : [wire.field(5, input.contents)]),
  ]);
  return Buffer.concat([wire.field(1, model), wire.field(5, tensor), ...(input.raw === undefined ? [] : [wire.field(7, input.raw)])]);
}
