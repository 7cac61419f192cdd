/**
 * Builds a grpc-js ServiceDefinition from a protobuf-es service descriptor, so
 * the wire format comes from the generated code of our .proto files and grpc-js
 * only moves bytes. Method paths are `/<package>.<Service>/<Method>`, exactly
 * what Triton and KServe clients call.
 *
 * A request type may have a guard (`guards`, by the message's type name): a
 * check of the raw bytes before they are decoded (infer-request-prescan.ts).
 * A guard's refusal is not thrown: grpc-js would turn a throwing deserializer
 * into INTERNAL "Error deserializing request" and lose the message. The
 * deserializer returns an UndecodedMessage carrying the refusal instead, and
 * the door's admission interceptor (admission.ts) answers it with its own
 * status before any handler sees it; on a request stream the handler answers
 * it as that request's error.
 *
 * Inference requests and answers have a decoder and encoders of their own
 * (infer-request-decoding.ts, infer-response-encoding.ts), chosen here once
 * per method, not per message.
 */
import { fromBinary, toBinary, type DescMessage, type DescService } from '@bufbuild/protobuf';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { GRPCInferenceService, ModelInferRequestSchema, ModelInferResponseSchema, ModelStreamInferResponseSchema } from '../generated/grpc_service_pb.js';
import { prescanInferRequest } from './infer-request-prescan.js';
import { encodeModelInferResponse, encodeModelStreamInferResponse } from './infer-response-encoding.js';
import { decodeModelInferRequest } from './infer-request-decoding.js';

/** A check of a request's bytes before decoding; throws (a ServingError) to refuse them. */
export type MessageGuard = (bytes: Uint8Array) => void;

/** A request a guard refused: what the deserializer returns in place of a message. */
export class UndecodedMessage {
  constructor(readonly refusal: unknown) {}
}

export interface ServiceDefinitionOptions {
  /** Guards by request type name (e.g. 'inference.ModelInferRequest'). */
  readonly guards?: ReadonlyMap<string, MessageGuard>;
}

/**
 * GRPCInferenceService as both gRPC doors serve it (the main thread's, and a
 * front-door thread's for the requests it decodes): ModelInferRequest bytes
 * are pre-scanned before decoding (bounded decoding, infer-request-prescan.ts).
 */
export function inferenceServiceDefinition(): ServiceDefinition {
  return serviceDefinitionFor(GRPCInferenceService, { guards: new Map([[ModelInferRequestSchema.typeName, prescanInferRequest]]) });
}

export function serviceDefinitionFor(service: DescService, options: ServiceDefinitionOptions = {}): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    definition[method.name] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
      responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
      requestSerialize: serializer(method.input),
      requestDeserialize: deserializer(method.input, options.guards?.get(method.input.typeName)),
      responseSerialize: serializer(method.output),
      responseDeserialize: deserializer(method.output, undefined),
      originalName: method.localName,
    };
  }
  return definition;
}

/** Message types with an encoder of their own, by type name. */
const ENCODERS: ReadonlyMap<string, (message: never) => Buffer> = new Map<string, (message: never) => Buffer>([
  [ModelInferResponseSchema.typeName, encodeModelInferResponse],
  [ModelStreamInferResponseSchema.typeName, encodeModelStreamInferResponse],
]);

function serializer(schema: DescMessage): (message: unknown) => Buffer {
  const encoder = ENCODERS.get(schema.typeName);
  if (encoder !== undefined) return encoder as (message: unknown) => Buffer;
  return (message) => {
    const bytes = toBinary(schema, message as never);
    // Wrap, don't copy: toBinary's result is ours alone.
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

/** Message types with a decoder of their own, by type name. */
const DECODERS: ReadonlyMap<string, (bytes: Buffer) => unknown> = new Map<string, (bytes: Buffer) => unknown>([
  [ModelInferRequestSchema.typeName, decodeModelInferRequest],
]);

function deserializer(schema: DescMessage, guard: MessageGuard | undefined): (bytes: Buffer) => unknown {
  const decode = DECODERS.get(schema.typeName) ?? ((bytes: Buffer) => fromBinary(schema, bytes));
  if (guard === undefined) return decode;
  return (bytes) => {
    try {
      guard(bytes);
    } catch (refusal) {
      return new UndecodedMessage(refusal);
    }
    return decode(bytes);
  };
}
