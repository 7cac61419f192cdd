// In-process A/B of the gRPC door's ModelInferRequest decoding (issue 19):
// protobuf-es fromBinary (A, what the door used before) against
// infer-request-decoding.ts (B), on the bytes of a ctr_mlp request (one FP32
// input [1, 32] as raw_input_contents, one requested output, an id) or of a
// ranker_mlp-sized one (ROWS rows). Best round of each, ns per call,
// alternating.
//
//   node bench/probes/request-decoding-ab.mjs [ROWS] [ROUNDS] [CALLS]   (reads dist/)
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { ModelInferRequestSchema } from '../../dist/src/generated/grpc_service_pb.js';
import { decodeModelInferRequest } from '../../dist/src/server/infer-request-decoding.js';

const rows = Number(process.argv[2] ?? 1);
const rounds = Number(process.argv[3] ?? 15);
const calls = Number(process.argv[4] ?? 200_000);
const bytes = Buffer.from(toBinary(ModelInferRequestSchema, create(ModelInferRequestSchema, {
  modelName: 'ctr_mlp',
  id: 'req-123',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [BigInt(rows), 32n] }],
  outputs: [{ name: 'score' }],
  rawInputContents: [new Uint8Array(rows * 32 * 4)],
})));
const contenders = { A_fromBinary: (b) => fromBinary(ModelInferRequestSchema, b), B_decoder: decodeModelInferRequest };
const best = Object.fromEntries(Object.keys(contenders).map((k) => [k, Infinity]));
let sink = 0;
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of r % 2 ? Object.entries(contenders).reverse() : Object.entries(contenders)) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink += fn(bytes).inputs.length;
    best[name] = Math.min(best[name], Number(process.hrtime.bigint() - t0) / calls);
  }
}
for (const [name, ns] of Object.entries(best)) console.log(`${name.padEnd(12)} ${ns.toFixed(1)} ns/call (${bytes.length}-byte request; best of ${rounds} rounds of ${calls})`);
if (sink === 0) console.log('');
