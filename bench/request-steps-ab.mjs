// The request path's pure steps, two builds side by side (issue 19): each
// step is timed in CPU time (process.cpuUsage) over 100,000 calls, 7 times,
// the builds alternating, and the medians printed in ns per call. Steps: a
// 1-row ctr_mlp ModelInfer request validated against its signature
// (prepareInference, the batched path's options), its answer built
// (buildInferResponse), and the gRPC door's request context
// (requestContextFrom). Run from a built checkout (npm run build:ts):
//
//   node bench/request-steps-ab.mjs ROOT_A ROOT_B
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const [rootA, rootB] = process.argv.slice(2).map((root) => path.resolve(root));
if (rootB === undefined) {
  console.error('usage: node bench/request-steps-ab.mjs ROOT_A ROOT_B');
  process.exit(2);
}
const load = async (root) => ({
  req: await import(`${root}/dist/src/tensor/infer-request.js`),
  resp: await import(`${root}/dist/src/inference/infer-response.js`),
  sig: await import(`${root}/dist/src/tensor/model-signature.js`),
  cfg: await import(`${root}/dist/src/repository/model-config.js`),
  ctx: await import(`${root}/dist/src/server/request-context.js`),
});
const A = await load(rootA);
const B = await load(rootB);
const { fromBinary } = await import('@bufbuild/protobuf');
const { Metadata } = await import('@grpc/grpc-js');
const { ModelInferRequestSchema } = await import(`${here}/dist/src/generated/grpc_service_pb.js`);
const { CTR_SHAPE, encodeInferRequests } = await import(`${here}/dist/bench/load/infer-client.js`);

const request = fromBinary(ModelInferRequestSchema, encodeInferRequests(CTR_SHAPE, 1, 17)[0]);
const configText = readFileSync(path.join(here, 'models', 'ctr_mlp', 'config.pbtxt'), 'utf8');
const signatureOf = (m) => m.sig.signatureFromConfig(m.cfg.parseModelConfigText(configText, 'config.pbtxt').config);
const produced = [{ name: 'score', type: 'float32', dims: [1, 1], data: new Float32Array(1) }];
const metadata = new Metadata();
const steps = {
  prepareInference: (m, signature) => () => m.req.prepareInference(request, signature, undefined, { copy: false }),
  buildInferResponse: (m, signature) => () => m.resp.buildInferResponse(request, '1', signature.outputs, produced, true),
  requestContextFrom: (m) => () => m.ctx.requestContextFrom(metadata, Infinity),
};

function nsPerCall(fn, calls) {
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i += 1) fn();
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / calls;
}
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1];

for (const [name, make] of Object.entries(steps)) {
  const a = make(A, signatureOf(A));
  const b = make(B, signatureOf(B));
  nsPerCall(a, 50_000);
  nsPerCall(b, 50_000);
  const ta = [];
  const tb = [];
  for (let round = 0; round < 7; round += 1) {
    ta.push(nsPerCall(a, 100_000));
    tb.push(nsPerCall(b, 100_000));
  }
  console.log(`${name.padEnd(20)} A ${median(ta).toFixed(0).padStart(5)} ns   B ${median(tb).toFixed(0).padStart(5)} ns`);
}
console.log(`A = ${rootA}\nB = ${rootB}\nload: ${readFileSync('/proc/loadavg', 'utf8').trim()}`);
