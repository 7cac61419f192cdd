import { fromBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import type { ModelMetadata } from '../../src/client/client.js';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { grpcMessages } from '../../src/perf/grpc-frames.js';
import { buildRequestBody, type RequestSpec } from '../../src/perf/request-body.js';

const metadata: ModelMetadata = {
  name: 'm', versions: ['1'], platform: 'onnxruntime_onnx',
  inputs: [
    { name: 'dense', datatype: 'FP32', shape: [-1, 13] },
    { name: 'ids', datatype: 'INT64', shape: [-1, -1] },
  ],
  outputs: [{ name: 'p', datatype: 'FP32', shape: [-1, 1] }],
};

const spec = (over: Partial<RequestSpec> = {}): RequestSpec => ({
  model: 'm', version: '', batchSize: 4, maxBatchSize: 8, shapes: new Map([['ids', [6]]]), data: 'random', ...over,
});

describe('buildRequestBody', () => {
  it('builds one ModelInfer from the metadata: the batch first, --shape for variable dims, the element bytes of each datatype', () => {
    const body = buildRequestBody(metadata, spec());
    const [message] = grpcMessages(body.frame);
    const request = fromBinary(ModelInferRequestSchema, message!);
    expect(request.modelName).toBe('m');
    expect(request.inputs.map((i) => [i.name, i.datatype, i.shape.map(Number)])).toEqual([['dense', 'FP32', [4, 13]], ['ids', 'INT64', [4, 6]]]);
    expect(request.rawInputContents.map((b) => b.byteLength)).toEqual([4 * 13 * 4, 4 * 6 * 8]);
    const floats = new Float32Array(Uint8Array.from(request.rawInputContents[0]!).buffer);
    expect(floats.every((v) => v >= 0 && v < 1)).toBe(true);
    const ids = new BigInt64Array(Uint8Array.from(request.rawInputContents[1]!).buffer);
    expect(ids.every((v) => v === 0n || v === 1n)).toBe(true);
    expect(body.shapes).toEqual({ dense: [4, 13], ids: [4, 6] });
  });

  it('sends zeros with --input-data zero, and the whole shape for a model that does not batch', () => {
    const fixed: ModelMetadata = { ...metadata, inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3] }] };
    const body = buildRequestBody(fixed, spec({ batchSize: 1, maxBatchSize: 0, shapes: new Map(), data: 'zero' }));
    const request = fromBinary(ModelInferRequestSchema, grpcMessages(body.frame)[0]!);
    expect(request.inputs[0]!.shape.map(Number)).toEqual([2, 3]);
    expect([...request.rawInputContents[0]!]).toEqual(new Array(24).fill(0));
  });

  it('refuses, naming the input or flag, what does not fit the model', () => {
    expect(() => buildRequestBody(metadata, spec({ shapes: new Map() }))).toThrow("input 'ids' has a variable dim (shape [-1]): give it with --shape ids:DIMS");
    expect(() => buildRequestBody(metadata, spec({ batchSize: 16 }))).toThrow("-b 16: model 'm' takes at most max_batch_size 8 rows a request");
    expect(() => buildRequestBody(metadata, spec({ shapes: new Map([['ids', [6]], ['nope', [1]]]) }))).toThrow(/--shape nope: model 'm' has no input 'nope'/);
    expect(() => buildRequestBody(metadata, spec({ shapes: new Map([['ids', [6]], ['dense', [12]]]) }))).toThrow('--shape dense: dim 0 is fixed at 13 by the model, got 12');
  });
});
