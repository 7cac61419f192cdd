// In-process A/B of the gRPC door's answer encoding (issue 19): protobuf-es
// toBinary (A, what the door used before) against infer-response-encoding.ts
// (B), on a ctr_mlp-shaped answer (one FP32 output, [rows, 1]), alternating
// the two in rounds and printing the best round of each in ns per call. Both
// results are wrapped as the door wraps them (a Buffer over the bytes).
//
//   node bench/probes/answer-encoding-ab.mjs [ROWS] [ROUNDS] [CALLS]
// (after `npx tsc -p tsconfig.json`; reads dist/)
import { toBinary } from '@bufbuild/protobuf';
import { ModelInferResponseSchema } from '../../dist/src/generated/grpc_service_pb.js';
import { encodeModelInferResponse } from '../../dist/src/server/infer-response-encoding.js';

const rows = Number(process.argv[2] ?? 1);
const rounds = Number(process.argv[3] ?? 15);
const calls = Number(process.argv[4] ?? 200_000);
const answer = () => ({
  $typeName: 'inference.ModelInferResponse',
  modelName: 'ctr_mlp',
  modelVersion: '1',
  id: 'req-123',
  parameters: {},
  outputs: [{ $typeName: 'inference.ModelInferResponse.InferOutputTensor', name: 'probability', datatype: 'FP32', shape: [BigInt(rows), 1n], parameters: {} }],
  rawOutputContents: [new Uint8Array(4 * rows)],
});
// One answer per call, as on the door (a fresh message each time), made outside the timed loop.
const answers = Array.from({ length: 1024 }, answer);
const contenders = {
  A_toBinary: (m) => { const b = toBinary(ModelInferResponseSchema, m); return Buffer.from(b.buffer, b.byteOffset, b.byteLength); },
  B_encoder: encodeModelInferResponse,
};
const best = Object.fromEntries(Object.keys(contenders).map((k) => [k, Infinity]));
let sink = 0;
for (let r = 0; r < rounds; r++) {
  const order = r % 2 ? Object.entries(contenders).reverse() : Object.entries(contenders);
  for (const [name, fn] of order) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink += fn(answers[i & 1023]).length;
    best[name] = Math.min(best[name], Number(process.hrtime.bigint() - t0) / calls);
  }
}
for (const [name, ns] of Object.entries(best)) console.log(`${name.padEnd(12)} ${ns.toFixed(1)} ns/call (best of ${rounds} rounds of ${calls})`);
if (sink === 0) console.log('');
