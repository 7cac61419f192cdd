/**
 * A grpc-js client for GRPCInferenceService built the way a user of the
 * protocol would build one: @grpc/proto-loader (protobufjs) reading the .proto
 * files, with no hotpath code involved. The server encodes with protobuf-es, so
 * every e2e test also checks that two independent protobuf implementations
 * agree on the wire format.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { PACKAGE_ROOT } from './server-process.js';

const definition = protoLoader.loadSync(path.join(PACKAGE_ROOT, 'src', 'protocol', 'grpc_service.proto'), {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [path.join(PACKAGE_ROOT, 'src', 'protocol')],
});
const loaded = grpc.loadPackageDefinition(definition) as unknown as {
  inference: { GRPCInferenceService: grpc.ServiceClientConstructor };
};

/** Plain-object messages as proto-loader produces them (snake_case, longs as strings). */
export type Message = Record<string, any>;

export interface CallError extends Error {
  code: grpc.status;
  details: string;
}

export class TritonClient {
  readonly raw: grpc.Client & Record<string, Function>;

  /** `options`: more channel options (e.g. `grpc.use_local_subchannel_pool: 1` for a connection of its own). */
  constructor(address: string, options: grpc.ChannelOptions = {}) {
    this.raw = new loaded.inference.GRPCInferenceService(address, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      ...options,
    }) as never;
  }

  /** Calls a unary RPC and resolves with its response, or rejects with the gRPC error. */
  call(method: string, request: Message = {}, metadata = new grpc.Metadata()): Promise<Message> {
    return new Promise((resolve, reject) => {
      const fn = this.raw[method];
      if (typeof fn !== 'function') throw new Error(`no RPC ${method}`);
      fn.call(this.raw, request, metadata, (err: CallError | null, response: Message) =>
        err ? reject(err) : resolve(response),
      );
    });
  }

  /** Resolves with the error a call fails with; fails the test if the call succeeds. */
  async callError(method: string, request: Message = {}): Promise<CallError> {
    try {
      await this.call(method, request);
    } catch (err) {
      return err as CallError;
    }
    throw new Error(`${method} succeeded but an error was expected`);
  }

  stream(): grpc.ClientDuplexStream<Message, Message> {
    return this.raw['ModelStreamInfer']!.call(this.raw) as grpc.ClientDuplexStream<Message, Message>;
  }

  close(): void {
    this.raw.close();
  }
}

/** Little-endian bytes of a Float32Array, as raw_input_contents carries them. */
export function f32Bytes(values: Float32Array | number[]): Buffer {
  const array = values instanceof Float32Array ? values : Float32Array.from(values);
  return Buffer.from(array.buffer, array.byteOffset, array.byteLength);
}

/** Reads raw output bytes as float32 values (copying to get alignment). */
export function readF32(bytes: Buffer | Uint8Array): Float32Array {
  const copy = new Uint8Array(bytes);
  return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
}
