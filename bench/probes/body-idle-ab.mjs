// In-process A/B of the gRPC body-idle watch's cost per unary call (issue
// 19): the interceptor of build A against that of build B, each driving a
// stand-in HTTP/2 stream through a typical unary call (headers: the watch is
// made; one whole message; END_STREAM; the status; close). Best round of each,
// ns per call, alternating. A and B are checkouts with dist/ built, e.g. a
// worktree of main and this one.
//
//   node bench/probes/body-idle-ab.mjs ROOT_A ROOT_B [ROUNDS] [CALLS]
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [rootA, rootB] = process.argv.slice(2, 4);
const rounds = Number(process.argv[4] ?? 12);
const calls = Number(process.argv[5] ?? 100_000);
const load = async (root) => (await import(pathToFileURL(path.resolve(root, 'dist/src/server/grpc-body-idle.js')).href)).grpcBodyIdleInterceptor;

class StandInStream extends EventEmitter {
  rstCode = undefined;
  readableFlowing = true;
  readableEnded = false;
  headersSent = false;
  destroyed = false;
  closed = false;
  close() {}
  destroy() {}
}
const descriptor = { path: '/inference.GRPCInferenceService/ModelInfer', requestStream: false };
const body = Buffer.alloc(5 + 150, 1);
body.writeUInt32BE(150, 1);
const ok = { code: 0, details: '', metadata: undefined };

function oneCall(interceptor) {
  const stream = new StandInStream();
  // grpc-js's own listeners are there first (data, end, close), as on a real stream.
  stream.on('data', () => {});
  stream.on('end', () => {});
  stream.on('close', () => {});
  const base = { stream, sendStatus() {}, getPeer: () => 'peer' };
  const call = interceptor(descriptor, base);
  stream.emit('data', body);
  stream.readableEnded = true;
  stream.emit('end');
  call.sendStatus(ok);
  stream.closed = true;
  stream.emit('close');
}

const options = { timeoutMs: 30_000, onIdle() {}, onUnsupported() { throw new Error('unwatched'); } };
const contenders = { A: (await load(rootA))(options), B: (await load(rootB))(options) };
const best = { A: Infinity, B: Infinity };
for (let r = 0; r < rounds; r++) {
  for (const name of r % 2 ? ['B', 'A'] : ['A', 'B']) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) oneCall(contenders[name]);
    best[name] = Math.min(best[name], Number(process.hrtime.bigint() - t0) / calls);
  }
}
console.log(`A ${best.A.toFixed(1)} ns/call  ${rootA}`);
console.log(`B ${best.B.toFixed(1)} ns/call  ${rootB}`);
console.log(`(the stand-in stream's own cost is in both; best of ${rounds} rounds of ${calls})`);
