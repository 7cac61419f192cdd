// Writes the serve bench's pre-encoded ModelInfer request (one length-prefixed
// gRPC frame) for a sample model to a file, for h2load's `-d`:
//
//   node dist/bench/load/write-request-body.js ctr_mlp|ranker_mlp FILE [MODEL_NAME]
//
// MODEL_NAME renames the request (a copy of the model served under another
// name, e.g. an unbatched ctr_mlp). Used by bench/profile-request-path.sh.
import { writeFileSync } from 'node:fs';

import { grpcFrame } from '../../src/perf/grpc-frames.js';
import { CTR_SHAPE, encodeInferRequests, RANKER_SHAPE, type InferShape } from './infer-client.js';

const SHAPES: Readonly<Record<string, InferShape>> = { ctr_mlp: CTR_SHAPE, ranker_mlp: RANKER_SHAPE };

const [model, file, name] = process.argv.slice(2);
const shape = model === undefined ? undefined : SHAPES[model];
if (shape === undefined || file === undefined) {
  console.error(`usage: write-request-body ${Object.keys(SHAPES).join('|')} FILE [MODEL_NAME]`);
  process.exit(2);
}
writeFileSync(file, grpcFrame(encodeInferRequests({ ...shape, model: name ?? shape.model }, 1, 17)[0]!));
