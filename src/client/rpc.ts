/**
 * The GRPCInferenceService methods as grpc-js needs them: path and
 * (de)serialisers, taken from the protobuf-es descriptors generated from the
 * protocol's .proto files, so the client and the server share one wire format
 * and grpc-js only moves bytes.
 */
import { fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { GRPCInferenceService } from '../generated/grpc_service_pb.js';

type Methods = typeof GRPCInferenceService.method;
export type MethodName = keyof Methods;
export type RequestOf<M extends MethodName> = MessageShape<Methods[M]['input']>;
export type ResponseOf<M extends MethodName> = MessageShape<Methods[M]['output']>;

export interface Rpc<M extends MethodName> {
  /** `/inference.GRPCInferenceService/<Method>`, what Triton serves. */
  readonly path: string;
  readonly input: Methods[M]['input'];
  readonly serialize: (message: RequestOf<M>) => Buffer;
  readonly deserialize: (bytes: Buffer) => ResponseOf<M>;
}

const cache = new Map<MethodName, Rpc<MethodName>>();

export function rpc<M extends MethodName>(name: M): Rpc<M> {
  let found = cache.get(name);
  if (found === undefined) {
    const method = GRPCInferenceService.method[name];
    const input = method.input as DescMessage;
    const output = method.output as DescMessage;
    found = {
      path: `/${GRPCInferenceService.typeName}/${method.name}`,
      input: method.input,
      serialize: (message) => {
        const bytes = toBinary(input, message as never);
        // Wrap, don't copy: toBinary's result is ours alone.
        return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      },
      deserialize: (bytes) => fromBinary(output, bytes) as never,
    };
    cache.set(name, found);
  }
  return found as unknown as Rpc<M>;
}
