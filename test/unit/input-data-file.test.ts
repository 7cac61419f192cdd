/**
 * perf_analyzer's --input-data JSON: the three forms of an input (a flat
 * list, content with shape, b64) are read and turned into the request's
 * bytes, repeated for -b; the forms hotpath does not take are refused with a
 * message naming the field.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/common/flag-values.js';
import { ModelInferRequestSchema } from '../../src/generated/grpc_service_pb.js';
import { parseInputDataFile } from '../../src/perf/input-data-file.js';
import { buildRequestBody } from '../../src/perf/request-body.js';
import type { ModelMetadata } from '../../src/client/client.js';

const METADATA: ModelMetadata = {
  name: 'm', versions: ['1'], platform: 'onnxruntime_onnx',
  inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 2] }, { name: 'ids', datatype: 'INT64', shape: [-1, -1] }],
  outputs: [],
};

function refusal(text: string): string {
  try {
    const tensors = parseInputDataFile(text, 'd.json');
    buildRequestBody(METADATA, { model: 'm', version: '', batchSize: 1, maxBatchSize: 8, shapes: new Map(), data: { file: 'd.json', tensors } });
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error('expected a usage error');
}

describe('--input-data FILE', () => {
  it('reads lists, content+shape and b64, and repeats the element for -b', () => {
    const b64 = Buffer.alloc(8);
    b64.writeFloatLE(1.5, 0);
    b64.writeFloatLE(-2, 4);
    const tensors = parseInputDataFile(JSON.stringify({ data: [{ x: { b64: b64.toString('base64') }, ids: { content: [[7, 8, 9]], shape: [3] } }] }), 'd.json');
    const body = buildRequestBody(METADATA, { model: 'm', version: '', batchSize: 2, maxBatchSize: 8, shapes: new Map(), data: { file: 'd.json', tensors } });
    expect(body.shapes).toEqual({ x: [2, 2], ids: [2, 3] });
    const request = fromBinary(ModelInferRequestSchema, body.frame.subarray(5));
    expect(Buffer.from(request.rawInputContents[0]!)).toEqual(Buffer.concat([b64, b64]));
    const ids = Buffer.from(request.rawInputContents[1]!);
    expect([0, 1, 2, 3, 4, 5].map((i) => ids.readBigInt64LE(i * 8))).toEqual([7n, 8n, 9n, 7n, 8n, 9n]);
    // The HTTP body carries the same bytes after its JSON header.
    const header = JSON.parse(body.http.body.subarray(0, body.http.jsonLength).toString()) as { inputs: { parameters: { binary_data_size: number } }[] };
    expect(header.inputs.map((i) => i.parameters.binary_data_size)).toEqual([16, 48]);
    expect(body.http.body.subarray(body.http.jsonLength)).toEqual(Buffer.concat([b64, b64, ids]));
    expect(body.http.path).toBe('/v2/models/m/infer');

    const flat = parseInputDataFile('{"data":[{"x":[0.25, 4],"ids":[1]}]}', 'd.json');
    const shaped = buildRequestBody(METADATA, { model: 'm', version: '', batchSize: 1, maxBatchSize: 8, shapes: new Map([['ids', [1]]]), data: { file: 'd.json', tensors: flat } });
    const x = Buffer.from(fromBinary(ModelInferRequestSchema, shaped.frame.subarray(5)).rawInputContents[0]!);
    expect([x.readFloatLE(0), x.readFloatLE(4)]).toEqual([0.25, 4]);
  });

  it('refuses what it does not take, naming the field', () => {
    expect(refusal('nope')).toMatch(/^--input-data d\.json: expected JSON/);
    expect(refusal('{"data":[{"x":[1,2]}],"validation_data":[]}')).toBe('--input-data d.json: field \'validation_data\' is not supported (only "data"; outputs are not validated)');
    expect(refusal('{"data":[{"x":[1,2]},{"x":[1,2]}]}')).toMatch(/^--input-data d\.json: field 'data': expected one entry, got 2/);
    expect(refusal('{"data":[[{"x":[1,2]}]]}')).toMatch(/^--input-data d\.json: field 'data\[0\]': a list of steps \(a sequence stream\) is not supported/);
    expect(refusal('{"data":[{"x":{"content":[1,2],"shape":[2],"extra":1}}]}')).toMatch(/field 'data\[0\]\.x'\.extra: not supported/);
    expect(refusal('{"data":[{"x":[1,2,3],"ids":{"content":[1],"shape":[1]}}]}')).toBe("--input-data d.json: field 'data[0].x': expected 2 values (the shape's), got 3");
    expect(refusal('{"data":[{"x":{"b64":"AAAA"},"ids":{"content":[1],"shape":[1]}}]}')).toMatch(/field 'data\[0\]\.x'\.b64: expected 8 bytes \(2 FP32\), got 3/);
    expect(refusal('{"data":[{"x":[1,2]}]}')).toMatch(/field 'data\[0\]' has no 'ids'/);
    expect(refusal('{"data":[{"x":[1,2],"ids":{"content":[1],"shape":[1]},"y":[1]}]}')).toMatch(/field 'data\[0\]\.y': model 'm' has no input 'y'/);
    expect(refusal('{"data":[{"x":["a","b"],"ids":{"content":[1],"shape":[1]}}]}')).toMatch(/field 'data\[0\]\.x'\[0\]: expected a number for FP32, got "a"/);
  });
});
