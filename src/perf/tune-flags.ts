/**
 * `hotpath tune`'s command line: the target (perf's -i, -u, API key and TLS
 * flags), the model, the budget, the grid and its bounds, the measurement
 * settings and the outputs. Pure.
 */
import { parseArgs } from 'node:util';
import { integerFlag, numberFlag, UsageError } from '../common/flag-values.js';
import { readTarget, shapeFlags, TARGET_OPTIONS, type InputDataChoice, type Target } from './perf-flags.js';
import { integerList, preferredList, type TuneGrid } from './tune-grid.js';

export const TUNE_USAGE = `usage: hotpath tune -m MODEL --p99-ms MS [-u HOST:PORT] [-i grpc|http] [-b BATCH]
                    [--max-batch-sizes LIST] [--preferred-batch-sizes LIST]
                    [--max-queue-delays-us LIST] [--instance-counts LIST] [--max-candidates N]
                    [--max-concurrency N] [--measurement-interval MS] [--stability-percentage P]
                    [--max-trials N] [--connections N] [--input-data random|zero|FILE.json]
                    [--shape NAME:DIMS]... [-o FILE] [--json FILE] [--plot FILE.svg|html]
                    [--load-timeout-ms MS] [--api-key KEY] [--tls] [--root-cert FILE]
                    [--client-cert FILE --client-key FILE] [--server-name NAME]

Finds the batching settings that give a model the most throughput within a p99 latency
budget, as Triton's Model Analyzer does for one model. It measures the model's current config
first, then each candidate of a grid of max_batch_size × preferred_batch_size ×
max_queue_delay_microseconds × instance_group count: it loads the candidate through the
repository API with Triton's config override (the load's "config" parameter: the whole
ModelConfig as JSON, the current config with those fields changed), measures it with
hotpath perf's engine at 1, 2, 4, ... requests in flight until p99 passes the budget (a level
over it whose windows did not agree is measured once more first, as one stall can make a p99), a level
fails, throughput stops rising (under 5% more than the best level so far) or
--max-concurrency is reached, and scores it by its highest throughput at a level within the
budget. The best candidate is written as config.pbtxt (-o), with a table of every candidate
(and --json, --plot). When it ends (done, failed, or on SIGINT/SIGTERM) it loads the model
again without an override, so the server goes back to the model's own config.pbtxt.

The server must allow loads: hotpath does by default (with --require-api-key, only the admin
tenant's key may override a config); Triton needs --model-control-mode=explicit (and the
model loaded), since tune reloads it with each candidate.

  -m MODEL                    the model (it must batch: max_batch_size > 0, dynamic batching)
  --p99-ms MS                 the latency budget: p99 of the client's round trip, in ms
  -u HOST:PORT, -i grpc|http  the server and protocol, as hotpath perf (default localhost:8001, grpc)
  -b BATCH                    rows per request (default 1; at most the smallest max_batch_size)
  --max-batch-sizes LIST      max_batch_size values (default 16,64)
  --preferred-batch-sizes L   preferred_batch_size choices: none, max (the candidate's
                              max_batch_size) or a number (default none,max)
  --max-queue-delays-us LIST  max_queue_delay_microseconds values (default 100,1000)
  --instance-counts LIST      instance_group count values (default 1,2)
  --max-candidates N          refuse a grid larger than N candidates (default 32)
  --max-concurrency N         the highest level of the concurrency search (default 64)
  --measurement-interval MS   one measurement window (default 1000)
  --stability-percentage P    windows agree when within ±P% of their mean (default 10)
  --max-trials N              windows per level before moving on, marked unstable (default 3)
  --connections N             the load's connections, as hotpath perf (default 4)
  --input-data, --shape       the request's data, as hotpath perf
  -o FILE                     where to write the best config (default ./config.pbtxt)
  --json FILE                 also write every candidate and level as JSON
  --plot FILE                 also plot p99 against throughput for every candidate (.svg or .html)
  --load-timeout-ms MS        how long one load may take (default 120000)
  --api-key, --tls, --root-cert, --client-cert, --client-key, --server-name  as hotpath perf

With the defaults, 16 candidates and the current config, each measured for 3 to 25 s: about
5 minutes for a small model on 2 cores. Figures on a shared machine are noisy: a candidate
that wins by less than --stability-percentage is within the noise.
Exit status: 0 when the sweep ran (also when no candidate met the budget: nothing is written);
1 when the server failed (no answer, the original config could not be restored); 2 for a
usage error; 130/143 after SIGINT/SIGTERM, once the original config is back.
`;

export interface TuneSettings extends Target {
  readonly model: string;
  readonly budgetUs: number;
  readonly batchSize: number;
  readonly grid: TuneGrid;
  readonly maxCandidates: number;
  readonly maxConcurrency: number;
  readonly measurementIntervalMs: number;
  readonly stabilityPercentage: number;
  readonly maxTrials: number;
  readonly connections: number;
  readonly inputData: InputDataChoice;
  readonly shapes: ReadonlyMap<string, readonly number[]>;
  readonly outputFile: string;
  readonly jsonFile: string | undefined;
  readonly plotFile: string | undefined;
  readonly loadTimeoutMs: number;
}

/** Parses `hotpath tune`'s arguments; throws UsageError (or parseArgs's error) naming the flag. */
export function parseTuneArgs(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): TuneSettings {
  const { values } = parseArgs({
    args: [...argv],
    strict: true,
    allowPositionals: false,
    options: {
      ...TARGET_OPTIONS,
      'model-name': { type: 'string', short: 'm' },
      'p99-ms': { type: 'string' },
      'batch-size': { type: 'string', short: 'b' },
      'max-batch-sizes': { type: 'string' },
      'preferred-batch-sizes': { type: 'string' },
      'max-queue-delays-us': { type: 'string' },
      'instance-counts': { type: 'string' },
      'max-candidates': { type: 'string' },
      'max-concurrency': { type: 'string' },
      'measurement-interval': { type: 'string', short: 'p' },
      'stability-percentage': { type: 'string', short: 's' },
      'max-trials': { type: 'string', short: 'r' },
      connections: { type: 'string' },
      'input-data': { type: 'string' },
      shape: { type: 'string', multiple: true },
      output: { type: 'string', short: 'o' },
      json: { type: 'string' },
      plot: { type: 'string' },
      'load-timeout-ms': { type: 'string' },
    },
  });
  const model = values['model-name'];
  if (model === undefined || model === '') throw new UsageError('-m: expected the model name');
  if (values['p99-ms'] === undefined) throw new UsageError('--p99-ms: expected the latency budget in ms (e.g. --p99-ms 5)');
  const budgetMs = numberFlag('--p99-ms', values['p99-ms'], 0.001, 3_600_000);
  const grid: TuneGrid = {
    maxBatchSizes: integerList('--max-batch-sizes', values['max-batch-sizes'] ?? '16,64', 1, 1 << 20),
    preferred: preferredList(values['preferred-batch-sizes'] ?? 'none,max'),
    queueDelaysUs: integerList('--max-queue-delays-us', values['max-queue-delays-us'] ?? '100,1000', 0, 10_000_000),
    instanceCounts: integerList('--instance-counts', values['instance-counts'] ?? '1,2', 1, 1024),
  };
  const batchSize = integerFlag('-b', values['batch-size'] ?? '1', 1, 1 << 20);
  const smallest = Math.min(...grid.maxBatchSizes);
  if (batchSize > smallest) throw new UsageError(`-b ${batchSize}: expected at most the smallest of --max-batch-sizes (${smallest})`);
  const rawData = values['input-data'] ?? 'random';
  return {
    ...readTarget(values, env),
    model,
    budgetUs: budgetMs * 1000,
    batchSize,
    grid,
    maxCandidates: integerFlag('--max-candidates', values['max-candidates'] ?? '32', 1, 10_000),
    maxConcurrency: integerFlag('--max-concurrency', values['max-concurrency'] ?? '64', 1, 100_000),
    measurementIntervalMs: integerFlag('--measurement-interval', values['measurement-interval'] ?? '1000', 50, 3_600_000),
    stabilityPercentage: numberFlag('--stability-percentage', values['stability-percentage'] ?? '10', 0, 1000),
    maxTrials: integerFlag('--max-trials', values['max-trials'] ?? '3', 3, 10_000),
    connections: integerFlag('--connections', values.connections ?? '4', 1, 1024),
    inputData: rawData === 'random' || rawData === 'zero' ? rawData : { file: rawData },
    shapes: shapeFlags(values.shape ?? []),
    outputFile: values.output ?? 'config.pbtxt',
    jsonFile: values.json,
    plotFile: values.plot,
    loadTimeoutMs: integerFlag('--load-timeout-ms', values['load-timeout-ms'] ?? '120000', 1000, 3_600_000),
  };
}
