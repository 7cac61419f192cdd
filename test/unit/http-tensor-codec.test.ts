import { create } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import { ModelInferResponseSchema, type ModelInferResponse } from '../../src/generated/grpc_service_pb.js';
import { decodeInferRequest, encodeInferResponse, type OutputEncoding } from '../../src/server/http/tensor-codec.js';

const json = (value: unknown) => Buffer.from(JSON.stringify(value));
const decode = (value: unknown) => decodeInferRequest('m', '', json(value), undefined);
const input = (name: string, datatype: string, shape: number[], data: unknown) => ({ name, datatype, shape, data });
/** The first input's packed bytes, as a fresh Buffer. */
const firstRaw = (value: unknown) => Buffer.from(decode(value).request.rawInputContents[0]!);
const le = (array: ArrayBufferView) => Buffer.from(array.buffer, array.byteOffset, array.byteLength);

/** A body with binary data: the JSON part, then `binary` back to back; returns it with its header length. */
function withBinary(header: unknown, ...binary: Uint8Array[]): { body: Buffer; headerLength: number } {
  const head = json(header);
  return { body: Buffer.concat([head, ...binary]), headerLength: head.byteLength };
}

describe('JSON input data', () => {
  it('packs nested and flat arrays alike, row-major', () => {
    const nested = firstRaw({ inputs: [input('x', 'FP32', [2, 3], [[1, 2, 3], [4, 5, 6.5]])] });
    const flat = firstRaw({ inputs: [input('x', 'FP32', [2, 3], [1, 2, 3, 4, 5, 6.5])] });
    expect(nested).toEqual(le(Float32Array.from([1, 2, 3, 4, 5, 6.5])));
    expect(flat).toEqual(nested);
  });

  it('accepts any nesting as long as the element count matches, as Triton does', () => {
    expect(firstRaw({ inputs: [input('x', 'INT32', [2, 2], [[[1]], [2, [3, 4]]])] })).toEqual(le(Int32Array.from([1, 2, 3, 4])));
  });

  it('refuses too few or too many elements, naming the input and the shape', () => {
    expect(() => decode({ inputs: [input('x', 'FP32', [2, 3], [1, 2, 3, 4, 5])] })).toThrow(
      /input 'x': shape \[2,3\] holds 6 elements, but 'data' has 5/,
    );
    expect(() => decode({ inputs: [input('x', 'FP32', [2], [[1, 2], [3]])] })).toThrow(
      /input 'x': shape \[2\] holds 2 elements, but 'data' has more than 2/,
    );
  });

  it('packs every fixed-size datatype little-endian, with its edge values', () => {
    const cases: [string, unknown[], Buffer][] = [
      ['BOOL', [true, false, true], Buffer.from([1, 0, 1])],
      ['UINT8', [0, 255, 7], le(Uint8Array.from([0, 255, 7]))],
      ['INT8', [-128, 127, 0], le(Int8Array.from([-128, 127, 0]))],
      ['UINT16', [0, 65535, 1], le(Uint16Array.from([0, 65535, 1]))],
      ['INT16', [-32768, 32767, -1], le(Int16Array.from([-32768, 32767, -1]))],
      ['UINT32', [0, 4294967295, 3], le(Uint32Array.from([0, 4294967295, 3]))],
      ['INT32', [-2147483648, 2147483647, 9], le(Int32Array.from([-2147483648, 2147483647, 9]))],
      ['INT64', [-(2 ** 63), 2 ** 53, -1], le(BigInt64Array.from([-(2n ** 63n), 2n ** 53n, -1n]))],
      ['UINT64', [0, 2 ** 60, 5], le(BigUint64Array.from([0n, 2n ** 60n, 5n]))],
      ['FP64', [Math.PI, -1e300, 0], le(Float64Array.from([Math.PI, -1e300, 0]))],
    ];
    for (const [datatype, data, expected] of cases) {
      expect(firstRaw({ inputs: [input('x', datatype, [3], data)] }), datatype).toEqual(expected);
    }
  });

  it('refuses elements of the wrong type or out of range, naming the element', () => {
    const refused: [string, unknown[], RegExp][] = [
      ['BOOL', [true, 1], /element 1 of 'data' is 1; expected true or false/],
      ['UINT8', [256, 0], /element 0 of 'data' is 256; expected an integer in UINT8's range 0\.\.255/],
      ['INT32', [1.5, 0], /element 0 of 'data' is 1\.5; expected an integer in INT32's range/],
      ['INT64', [2 ** 63, 0], /element 0 of 'data' is 9223372036854776000; expected an integer in INT64's range -9223372036854775808\.\.9223372036854775807/],
      ['UINT64', [-1, 0], /element 0 of 'data' is -1; expected an integer in UINT64's range/],
      ['FP32', [0, '1.5'], /element 1 of 'data' is "1\.5"; expected a FP32 number/],
      ['BYTES', ['a', 5], /element 1 of 'data' is 5; expected a string/],
    ];
    for (const [datatype, data, message] of refused) {
      expect(() => decode({ inputs: [input('x', datatype, [2], data)] }), datatype).toThrow(message);
    }
  });

  it('encodes BYTES elements as UTF-8 with a 4-byte little-endian length each', () => {
    expect([...firstRaw({ inputs: [input('s', 'BYTES', [3], ['ab', '', 'é'])] })]).toEqual([
      2, 0, 0, 0, 0x61, 0x62,
      0, 0, 0, 0,
      2, 0, 0, 0, 0xc3, 0xa9,
    ]);
  });

  it('refuses FP16 in JSON, as Triton does, and unknown datatypes', () => {
    expect(() => decode({ inputs: [input('h', 'FP16', [1], [1.5])] })).toThrow(
      /input 'h': FP16 data cannot be sent as JSON; send it in binary/,
    );
    expect(() => decode({ inputs: [input('b', 'BF16', [1], [1.5])] })).toThrow(/input 'b': unsupported datatype 'BF16'; expected one of BOOL/);
  });

  it('refuses a malformed shape, and data that is not an array', () => {
    expect(() => decode({ inputs: [input('x', 'FP32', [2, -1], [1, 2])] })).toThrow(
      /input 'x': 'shape' must be an array of non-negative integers; got \[2,-1\]/,
    );
    expect(() => decode({ inputs: [input('x', 'FP32', [1], 3)] })).toThrow(/input 'x': 'data' must be an array/);
  });
});

describe('request JSON', () => {
  it('names what is malformed', () => {
    expect(() => decodeInferRequest('m', '', Buffer.from('{"inputs": ['), undefined)).toThrow(/^malformed JSON in the request body: /);
    expect(() => decode([1])).toThrow(/the request body must be a JSON object with 'inputs'; got an array/);
    expect(() => decode({})).toThrow(/'inputs' must be an array of input tensors; got nothing/);
    expect(() => decode({ id: 7, inputs: [] })).toThrow(/'id' must be a string; got number 7/);
    expect(() => decode({ inputs: [{ name: 'x', datatype: 'FP32', shape: [1] }] })).toThrow(
      /input 'x': has neither 'data' nor parameters\.binary_data_size/,
    );
    expect(() => decode({ inputs: [{ ...input('x', 'FP32', [1], [1]), parameters: { binary_data_size: 4 } }] })).toThrow(
      /input 'x': send either 'data' or parameters\.binary_data_size, not both/,
    );
    expect(() => decode({ inputs: [{ ...input('x', 'FP32', [1], [1]), parameters: { shared_memory_region: 'r' } }] })).toThrow(
      /input 'x': parameters\.shared_memory_region: shared memory is not supported/,
    );
  });

  it('turns parameters into protocol parameters and keeps the extension\'s own out of them', () => {
    const { request, outputs } = decode({
      id: 'r1',
      parameters: { priority: 2, tag: 'a', flag: true, ratio: 0.5, binary_data_output: true },
      inputs: [input('x', 'FP32', [1], [1])],
      outputs: [{ name: 'y', parameters: { binary_data: false, custom: 3 } }, { name: 'z' }],
    });
    expect(request.modelName).toBe('m');
    expect(request.id).toBe('r1');
    expect(request.parameters['priority']?.parameterChoice).toEqual({ case: 'int64Param', value: 2n });
    expect(request.parameters['tag']?.parameterChoice).toEqual({ case: 'stringParam', value: 'a' });
    expect(request.parameters['flag']?.parameterChoice).toEqual({ case: 'boolParam', value: true });
    expect(request.parameters['ratio']?.parameterChoice).toEqual({ case: 'doubleParam', value: 0.5 });
    expect(request.parameters['binary_data_output']).toBeUndefined();
    expect(request.outputs.map((o) => o.name)).toEqual(['y', 'z']);
    expect(Object.keys(request.outputs[0]!.parameters)).toEqual(['custom']);
    expect(outputs.binaryByDefault).toBe(true);
    expect([...outputs.binary]).toEqual([['y', false]]);
  });

  it('refuses parameter values that are not strings, numbers or booleans, and a non-boolean binary_data', () => {
    expect(() => decode({ parameters: { p: [1] }, inputs: [] })).toThrow(/request parameter 'p' must be a string, a number or a boolean; got an array/);
    expect(() => decode({ inputs: [], outputs: [{ name: 'y', parameters: { binary_data: 'yes' } }] })).toThrow(
      /output 'y' parameter 'binary_data' must be true or false; got "yes"/,
    );
  });
});

describe('binary tensor data', () => {
  it('hands each input its share of the bytes after the JSON, in input order', () => {
    const a = le(Float32Array.from([1, 2]));
    const b = Buffer.from([9, 8, 7]);
    const { body, headerLength } = withBinary(
      {
        inputs: [
          { name: 'a', datatype: 'FP32', shape: [2], parameters: { binary_data_size: a.byteLength } },
          input('j', 'INT8', [1], [5]),
          { name: 'b', datatype: 'UINT8', shape: [3], parameters: { binary_data_size: 3 } },
        ],
      },
      a,
      b,
    );
    const { request } = decodeInferRequest('m', '1', body, headerLength);
    expect(request.modelVersion).toBe('1');
    expect(request.rawInputContents.map((raw) => Buffer.from(raw))).toEqual([a, Buffer.from([5]), b]);
    expect(request.inputs[0]!.parameters['binary_data_size']).toBeUndefined();
  });

  it('refuses sizes that run past the end of the body', () => {
    const { body, headerLength } = withBinary(
      { inputs: [{ name: 'a', datatype: 'UINT8', shape: [4], parameters: { binary_data_size: 4 } }] },
      Buffer.from([1, 2]),
    );
    expect(() => decodeInferRequest('m', '', body, headerLength)).toThrow(
      /input 'a': parameters\.binary_data_size is 4 bytes, but only 2 bytes of binary data are left/,
    );
  });

  it('refuses bytes no input claims', () => {
    const { body, headerLength } = withBinary(
      { inputs: [{ name: 'a', datatype: 'UINT8', shape: [1], parameters: { binary_data_size: 1 } }] },
      Buffer.from([1, 2, 3]),
    );
    expect(() => decodeInferRequest('m', '', body, headerLength)).toThrow(
      /2 bytes of binary data follow the JSON header that no input claims: the inputs' binary_data_size values add up to 1 bytes, the body has 3/,
    );
  });

  it('needs Inference-Header-Content-Length to find binary data, and one within the body', () => {
    const header = { inputs: [{ name: 'a', datatype: 'UINT8', shape: [1], parameters: { binary_data_size: 1 } }] };
    const { body } = withBinary(header, Buffer.from([1]));
    expect(() => decodeInferRequest('m', '', json(header), undefined)).toThrow(
      /input 'a' has parameters\.binary_data_size 1, but the request has no Inference-Header-Content-Length header/,
    );
    expect(() => decodeInferRequest('m', '', body, body.byteLength + 1)).toThrow(
      new RegExp(`Inference-Header-Content-Length is ${body.byteLength + 1}, but the body has only ${body.byteLength} bytes`),
    );
  });

  it('accepts an empty binary input without the header', () => {
    const header = { inputs: [{ name: 'a', datatype: 'UINT8', shape: [0], parameters: { binary_data_size: 0 } }] };
    expect(decodeInferRequest('m', '', json(header), undefined).request.rawInputContents[0]!.byteLength).toBe(0);
  });
});

describe('response encoding', () => {
  const response = (): ModelInferResponse =>
    create(ModelInferResponseSchema, {
      modelName: 'm',
      modelVersion: '1',
      outputs: [
        { name: 'f', datatype: 'FP32', shape: [2n] },
        { name: 'i', datatype: 'INT64', shape: [1n, 2n] },
        { name: 'b', datatype: 'BOOL', shape: [2n] },
        { name: 's', datatype: 'BYTES', shape: [2n] },
      ],
      rawOutputContents: [
        le(Float32Array.from([0.5, -2])),
        le(BigInt64Array.from([2n ** 63n - 1n, -5n])),
        Buffer.from([1, 0]),
        Buffer.from([1, 0, 0, 0, 0x61, 2, 0, 0, 0, 0xc3, 0xa9]),
      ],
    });
  const allJson: OutputEncoding = { binaryByDefault: false, binary: new Map() };

  it('writes flat JSON data, 64-bit integers exactly, and no id when the request had none', () => {
    const { json: text, binary } = encodeInferResponse(response(), allJson);
    expect(binary).toEqual([]);
    expect(text.toString()).toContain('"data":[9223372036854775807,-5]');
    expect(JSON.parse(text.toString())).toEqual({
      model_name: 'm',
      model_version: '1',
      outputs: [
        { name: 'f', datatype: 'FP32', shape: [2], data: [0.5, -2] },
        { name: 'i', datatype: 'INT64', shape: [1, 2], data: [9223372036854775807, -5] },
        { name: 'b', datatype: 'BOOL', shape: [2], data: [true, false] },
        { name: 's', datatype: 'BYTES', shape: [2], data: ['a', 'é'] },
      ],
    });
  });

  it('appends binary outputs in order with their binary_data_size, per output or by default', () => {
    const encoded = encodeInferResponse(response(), { binaryByDefault: true, binary: new Map([['i', false]]) });
    const parsed = JSON.parse(encoded.json.toString());
    expect(parsed.outputs.map((o: { parameters?: unknown }) => o.parameters)).toEqual([
      { binary_data_size: 8 },
      undefined,
      { binary_data_size: 2 },
      { binary_data_size: 11 },
    ]);
    expect(parsed.outputs[1].data).toEqual([9223372036854775807, -5]);
    expect(encoded.binary.map((b) => Buffer.from(b))).toEqual([
      le(Float32Array.from([0.5, -2])),
      Buffer.from([1, 0]),
      Buffer.from([1, 0, 0, 0, 0x61, 2, 0, 0, 0, 0xc3, 0xa9]),
    ]);
  });

  it('refuses FP16 as JSON, as Triton does, and sends it in binary', () => {
    const half = create(ModelInferResponseSchema, {
      modelName: 'm',
      modelVersion: '1',
      id: 'r',
      outputs: [{ name: 'h', datatype: 'FP16', shape: [1n] }],
      rawOutputContents: [Buffer.from([0x00, 0x3c])],
    });
    expect(() => encodeInferResponse(half, allJson)).toThrow(/output 'h': FP16 data cannot be returned as JSON; request it in binary/);
    const encoded = encodeInferResponse(half, { binaryByDefault: false, binary: new Map([['h', true]]) });
    expect(JSON.parse(encoded.json.toString())).toMatchObject({ id: 'r', outputs: [{ parameters: { binary_data_size: 2 } }] });
    expect(Buffer.from(encoded.binary[0]!)).toEqual(Buffer.from([0x00, 0x3c]));
  });
});
