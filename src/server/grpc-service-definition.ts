/**
 * Builds a grpc-js ServiceDefinition from a protobuf-es service descriptor, so
 * the wire format comes from the generated code of our .proto files and grpc-js
 * only moves bytes. Method paths are `/<package>.<Service>/<Method>`, exactly
 * what Triton and KServe clients call.
 */
import { fromBinary, toBinary, type DescMessage, type DescService } from '@bufbuild/protobuf';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';

export function serviceDefinitionFor(service: DescService): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    definition[method.name] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: method.methodKind === 'client_streaming' || method.methodKind === 'bidi_streaming',
      responseStream: method.methodKind === 'server_streaming' || method.methodKind === 'bidi_streaming',
      requestSerialize: serializer(method.input),
      requestDeserialize: deserializer(method.input),
      responseSerialize: serializer(method.output),
      responseDeserialize: deserializer(method.output),
      originalName: method.localName,
    };
  }
  return definition;
}

function serializer(schema: DescMessage): (message: unknown) => Buffer {
  return (message) => {
    const bytes = toBinary(schema, message as never);
    // Wrap, don't copy: toBinary's result is ours alone.
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer(schema: DescMessage): (bytes: Buffer) => unknown {
  return (bytes) => fromBinary(schema, bytes);
}
