// A lean KServe V2 client for load generation: @grpc/grpc-js moves bytes and
// the server's own generated protobuf-es code (runtime dependencies only, so
// the benchmark runs wherever the server does) encodes them. ModelInfer
// requests are encoded once up front and sent as raw bytes, and responses are
// not decoded on the hot path, so the client spends as little CPU as possible
// on a machine it shares with the server.
import { create, fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';

import {
  GRPCInferenceService,
  ModelInferRequestSchema,
  ModelInferResponseSchema,
  ModelStatisticsRequestSchema,
  ModelStatisticsResponseSchema,
  type ModelStatistics,
} from '../../src/generated/grpc_service_pb.js';
import { seededUniform } from './poisson.js';

const SERVICE = GRPCInferenceService.typeName;
export const MODEL_INFER_PATH = `/${SERVICE}/ModelInfer`;
const identity = (bytes: Buffer): Buffer => bytes;

export function connect(address: string): grpc.Client {
  return new grpc.Client(address, grpc.credentials.createInsecure(), {
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
  });
}

/** Waits until the channel is connected (or throws after `timeoutMs`). */
export function waitForReady(client: grpc.Client, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    client.waitForReady(Date.now() + timeoutMs, (err) => (err ? reject(err) : resolve()));
  });
}

/** A unary call through protobuf-es schemas (control RPCs, not the hot path). */
export function unaryCall<I extends DescMessage, O extends DescMessage>(
  client: grpc.Client,
  method: string,
  input: I,
  output: O,
  request: MessageShape<I>,
  timeoutMs = 10_000,
): Promise<MessageShape<O>> {
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      `/${SERVICE}/${method}`,
      () => Buffer.from(toBinary(input, request)),
      (bytes: Buffer) => fromBinary(output, bytes),
      request,
      { deadline: Date.now() + timeoutMs },
      (err, response) => (err ? reject(err) : resolve(response as MessageShape<O>)),
    );
  });
}

export interface InferShape {
  readonly model: string;
  readonly input: string;
  readonly output: string;
  /** Rows per request (the batch dimension). */
  readonly rows: number;
  /** Elements per row. */
  readonly width: number;
}

/** The sample models' one-row requests (models/): what the suites and write-request-body.ts send. */
export const CTR_SHAPE: InferShape = { model: 'ctr_mlp', input: 'features', output: 'score', rows: 1, width: 32 };
export const RANKER_SHAPE: InferShape = { model: 'ranker_mlp', input: 'features', output: 'score', rows: 1, width: 256 };

/** `count` distinct encoded FP32 ModelInfer requests with seeded random rows. */
export function encodeInferRequests(shape: InferShape, count: number, seed: number): Buffer[] {
  const uniform = seededUniform(seed);
  return Array.from({ length: count }, () => {
    const values = new Float32Array(shape.rows * shape.width);
    for (let i = 0; i < values.length; i += 1) values[i] = uniform() * 2 - 1;
    const request = create(ModelInferRequestSchema, {
      modelName: shape.model,
      inputs: [{ name: shape.input, datatype: 'FP32', shape: [BigInt(shape.rows), BigInt(shape.width)] }],
      outputs: [{ name: shape.output }],
      rawInputContents: [new Uint8Array(values.buffer)],
    });
    return Buffer.from(toBinary(ModelInferRequestSchema, request));
  });
}

/** Sends pre-encoded ModelInfer bytes; the callback gets the raw response bytes. */
export function inferRaw(
  client: grpc.Client,
  request: Buffer,
  deadline: number,
  callback: (err: grpc.ServiceError | null, response?: Buffer) => void,
): void {
  client.makeUnaryRequest(MODEL_INFER_PATH, identity, identity, request, { deadline }, callback);
}

/** One ModelInfer on a connection of its own, `frame` a length-prefixed gRPC frame (what the load generators send): the raw answer. */
export function oneAnswer(address: string, frame: Buffer): Promise<Buffer> {
  const client = connect(address);
  return new Promise<Buffer>((resolve, reject) => {
    inferRaw(client, frame.subarray(5), Date.now() + 10_000, (err, response) => {
      client.close();
      if (err || response === undefined) reject(err ?? new Error('no response'));
      else resolve(response);
    });
  });
}

/** Throws unless `response` is a ModelInfer answer with `rows` x 1 FP32 values of `output`. */
export function checkInferResponse(response: Buffer, shape: InferShape): void {
  const decoded = fromBinary(ModelInferResponseSchema, response);
  const output = decoded.outputs.find((o) => o.name === shape.output);
  const dims = output?.shape.map(Number) ?? [];
  const bytes = decoded.rawOutputContents[0]?.byteLength ?? 0;
  if (dims[0] !== shape.rows || bytes !== shape.rows * (dims[1] ?? 1) * 4) {
    throw new Error(`unexpected ModelInfer response: output ${shape.output} shape [${dims}] with ${bytes} raw bytes`);
  }
}

/** Cumulative counters of one model version, as numbers. */
export interface StatisticsSnapshot {
  readonly inferenceCount: number;
  readonly executionCount: number;
  readonly successCount: number;
  readonly successNs: number;
  readonly queueNs: number;
  readonly computeInferNs: number;
  /** Requests counted in computeInferNs: each carries its whole batch's execution time (Triton's rule). */
  readonly computeInferCount: number;
}

export async function modelStatistics(client: grpc.Client, model: string): Promise<StatisticsSnapshot> {
  const response = await unaryCall(client, 'ModelStatistics', ModelStatisticsRequestSchema, ModelStatisticsResponseSchema,
    create(ModelStatisticsRequestSchema, { name: model, version: '' }));
  const stats: ModelStatistics | undefined = response.modelStats[0];
  if (stats === undefined) throw new Error(`ModelStatistics returned nothing for ${model}`);
  const s = stats.inferenceStats;
  return {
    inferenceCount: Number(stats.inferenceCount),
    executionCount: Number(stats.executionCount),
    successCount: Number(s?.success?.count ?? 0n),
    successNs: Number(s?.success?.ns ?? 0n),
    queueNs: Number(s?.queue?.ns ?? 0n),
    computeInferNs: Number(s?.computeInfer?.ns ?? 0n),
    computeInferCount: Number(s?.computeInfer?.count ?? 0n),
  };
}

/** What the server did between two snapshots: mean rows per execution and the queued share of request time. */
export function statisticsDelta(before: StatisticsSnapshot, after: StatisticsSnapshot): {
  requests: number;
  mean_batch: number;
  queue_share: number;
  /** Mean receipt-to-response time per successful request, as the server measured it. */
  server_request_ms: number;
  compute_infer_ms_per_execution: number;
} {
  const rows = after.inferenceCount - before.inferenceCount;
  const executions = after.executionCount - before.executionCount;
  const successNs = after.successNs - before.successNs;
  const successes = after.successCount - before.successCount;
  const round = (x: number, digits: number) => (Number.isFinite(x) ? Number(x.toFixed(digits)) : Number.NaN);
  return {
    requests: successes,
    mean_batch: round(rows / executions, 2),
    queue_share: round((after.queueNs - before.queueNs) / successNs, 4),
    server_request_ms: round(successNs / successes / 1e6, 4),
    // Every request of a batch is charged the batch's whole execution time, so
    // ns / count is the mean execution time (weighted by requests), not ns / executions.
    compute_infer_ms_per_execution: round(
      (after.computeInferNs - before.computeInferNs) / (after.computeInferCount - before.computeInferCount) / 1e6,
      4,
    ),
  };
}
