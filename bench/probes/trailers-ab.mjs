// In-process A/B of the trailers every gRPC inference call ends with (issue
// 19): A builds them as request-context.ts did before (new Metadata() and
// set(), which re-checks key and value), B is trailersFor (the id set without
// re-checks). Each call gets a generated request id, as a call without
// x-request-id does. Best round of each, ns per call, alternating.
//
//   node bench/probes/trailers-ab.mjs [ROUNDS] [CALLS]   (reads dist/)
import { randomUUID } from 'node:crypto';
import { Metadata } from '@grpc/grpc-js';
import { trailersFor } from '../../dist/src/server/request-context.js';

const rounds = Number(process.argv[2] ?? 12);
const calls = Number(process.argv[3] ?? 300_000);
const contenders = {
  A_metadata_set: (requestId) => {
    const trailers = new Metadata();
    trailers.set('x-request-id', requestId);
    return trailers;
  },
  B_trailersFor: (requestId) => trailersFor({ requestId }),
};
const best = Object.fromEntries(Object.keys(contenders).map((k) => [k, Infinity]));
let sink = 0;
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of r % 2 ? Object.entries(contenders).reverse() : Object.entries(contenders)) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) sink += fn(randomUUID()).toHttp2Headers === undefined ? 0 : 1;
    best[name] = Math.min(best[name], Number(process.hrtime.bigint() - t0) / calls);
  }
}
for (const [name, ns] of Object.entries(best)) console.log(`${name.padEnd(16)} ${ns.toFixed(1)} ns/call incl. randomUUID (best of ${rounds} rounds of ${calls})`);
if (sink === 0) console.log('');
