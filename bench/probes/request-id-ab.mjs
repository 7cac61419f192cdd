// In-process A/B of the request id a gRPC call without x-request-id gets
// (issue 19): A is crypto.randomUUID (what request-context.ts used before),
// B is generatedRequestId. Each id is then set as the trailers' value the way
// trailersFor does (no checks), and its string flattened as HTTP/2 header
// writing flattens it, so a cheaper id that costs more later would show.
// Best round of each, ns per call, alternating.
//
//   node bench/probes/request-id-ab.mjs [ROUNDS] [CALLS]   (reads dist/)
import { randomUUID } from 'node:crypto';
import { generatedRequestId, trailersFor } from '../../dist/src/server/request-context.js';

const rounds = Number(process.argv[2] ?? 12);
const calls = Number(process.argv[3] ?? 300_000);
const contenders = { A_randomUUID: randomUUID, B_generatedRequestId: generatedRequestId };
const best = Object.fromEntries(Object.keys(contenders).map((k) => [k, Infinity]));
let sink = 0;
for (let r = 0; r < rounds; r++) {
  for (const [name, fn] of r % 2 ? Object.entries(contenders).reverse() : Object.entries(contenders)) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) {
      const trailers = trailersFor({ requestId: fn() });
      // Header writing joins the values into one string (mapToHeaders); charCodeAt flattens the value as that does.
      sink += trailers.get('x-request-id')[0].charCodeAt(30);
    }
    best[name] = Math.min(best[name], Number(process.hrtime.bigint() - t0) / calls);
  }
}
for (const [name, ns] of Object.entries(best)) console.log(`${name.padEnd(22)} ${ns.toFixed(1)} ns/call incl. trailersFor (best of ${rounds} rounds of ${calls})`);
if (sink === 0) console.log('');
