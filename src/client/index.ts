/**
 * `hotpath/client`: a typed Node client for the KServe V2 / Triton gRPC
 * protocol. See the README's "Node client" section.
 *
 *   const client = createClient('localhost:8001');
 *   const result = await client.infer('ctr_mlp', {
 *     features: { shape: [1, 32], data: new Float32Array(32) },
 *   });
 *   result.output<Float32Array>('score').data;   // Float32Array [1]
 */
export {
  createClient,
  HotpathClient,
  type CallOptions,
  type ClientOptions,
  type InferOptions,
  type ModelMetadata,
  type RepositoryModel,
  type RepositoryParameterValue,
  type ServerMetadata,
  type StreamOptions,
  type TensorMetadata,
  type TlsOptions,
  type VersionOptions,
} from './client.js';
export { InferenceError, StreamInferError } from './errors.js';
export type { InferRequestOptions, InferResult, RequestedOutput } from './infer-messages.js';
export type { ParameterValue, Parameters } from './parameters.js';
export { InferStream } from './stream.js';
export {
  bytesToStrings,
  type BytesData,
  type Datatype,
  type InferInput,
  type NumericArray,
  type OutputData,
  type OutputTensor,
  type Tensor,
  type TensorData,
} from './tensors.js';
export { status } from '@grpc/grpc-js';
export type { ModelConfig } from '../generated/model_config_pb.js';
export type { ModelStatistics } from '../generated/grpc_service_pb.js';
