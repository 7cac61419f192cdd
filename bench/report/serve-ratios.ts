// The serve suite's four figures (issue 10), each against baselines measured
// in the same run: the echo contender (the transport's ceiling, same request
// body) and raw onnxruntime (compute alone). Pure: computed from the
// contenders' points, so the definitions are unit-tested.
import {
  H2LOAD_TARGET,
  meetsTarget,
  TARGETS,
  type FigureName,
  type ServeContender,
  type ServeFigureReport,
  type ServeFigures,
  type ServeTerms,
} from './serve-result.js';

const round = (x: number, digits: number) => Number(x.toFixed(digits));

function at(contender: ServeContender | undefined, concurrency: number) {
  return contender?.points.find((p) => p.concurrency === concurrency && p.requests > 0);
}

const rps = (contender: ServeContender | undefined, concurrency: number) => at(contender, concurrency)?.throughput_rps ?? null;
const meanUs = (ms: number | undefined) => (ms === undefined || !Number.isFinite(ms) ? null : ms * 1000);

export interface FigureInputs {
  /** echo answering ctr_mlp's request body. */
  readonly echoCtr?: ServeContender;
  /** echo answering ranker_mlp's request body. */
  readonly echoRanker?: ServeContender;
  /** hotpath, ctr_mlp as checked in (dynamic batching). */
  readonly ctr?: ServeContender;
  /** hotpath, ctr_mlp without dynamic_batching. */
  readonly ctrUnbatched?: ServeContender;
  /** hotpath, ranker_mlp as checked in. */
  readonly ranker?: ServeContender;
  /** onnxruntime-node on ctr_mlp (batch 1 needed). */
  readonly rawCtr?: ServeContender;
  /** onnxruntime-node on ranker_mlp (batch sweep). */
  readonly rawRanker?: ServeContender;
  /** ctr_mlp's configured max_queue_delay_microseconds (0 when absent). */
  readonly ctrMaxQueueDelayUs: number | null;
}

/**
 * - batched_vs_echo_c64: ctr req/s at 64 streams / echoCtr req/s at 64;
 * - batched_vs_limit_c64: ranker req/s at 64 / limit, limit = 1 / (1/echoRanker_c64 + 1/raw_best),
 *   raw_best the best rows/s of rawRanker at any batch size (1 row per request);
 * - overhead_us_c1: ctrUnbatched mean round trip at 1 stream - echoCtr's - rawCtr's mean batch-1 run;
 * - batched_overhead_us_c1: the same for ctr, also minus ctrMaxQueueDelayUs.
 * A figure whose inputs are missing is null.
 */
export function computeFigures(inputs: FigureInputs): { figures: ServeFigures; terms: ServeTerms } {
  const echoCtr64 = rps(inputs.echoCtr, 64);
  const ctr64 = rps(inputs.ctr, 64);
  const echoRanker64 = rps(inputs.echoRanker, 64);
  const ranker64 = rps(inputs.ranker, 64);
  const best = inputs.rawRanker?.points
    .filter((p) => Number.isFinite(p.rows_per_s) && p.rows_per_s > 0)
    .reduce<{ rows: number; batch: number | null } | null>((b, p) => (b === null || p.rows_per_s > b.rows ? { rows: p.rows_per_s, batch: p.batch ?? null } : b), null) ?? null;
  const limit = echoRanker64 !== null && echoRanker64 > 0 && best !== null ? 1 / (1 / echoRanker64 + 1 / best.rows) : null;
  const echo1 = meanUs(at(inputs.echoCtr, 1)?.mean_ms);
  const nb1 = meanUs(at(inputs.ctrUnbatched, 1)?.mean_ms);
  const ctr1 = meanUs(at(inputs.ctr, 1)?.mean_ms);
  const raw1 = meanUs(inputs.rawCtr?.points.find((p) => p.batch === 1 && p.requests > 0)?.mean_ms);
  const delay = inputs.ctrMaxQueueDelayUs;
  const figures: ServeFigures = {
    batched_vs_echo_c64: ctr64 !== null && echoCtr64 !== null && echoCtr64 > 0 ? round(ctr64 / echoCtr64, 3) : null,
    batched_vs_limit_c64: ranker64 !== null && limit !== null ? round(ranker64 / limit, 3) : null,
    overhead_us_c1: nb1 !== null && echo1 !== null && raw1 !== null ? round(nb1 - echo1 - raw1, 1) : null,
    batched_overhead_us_c1: ctr1 !== null && echo1 !== null && raw1 !== null && delay !== null ? round(ctr1 - echo1 - raw1 - delay, 1) : null,
  };
  const maybe = (x: number | null, digits: number) => (x === null ? null : round(x, digits));
  const terms: ServeTerms = {
    echo_ctr_c64_rps: echoCtr64,
    ctr_c64_rps: ctr64,
    echo_ranker_c64_rps: echoRanker64,
    ranker_c64_rps: ranker64,
    raw_best_rows_per_s: best?.rows ?? null,
    raw_best_batch: best?.batch ?? null,
    limit_rps: maybe(limit, 1),
    echo_ctr_c1_mean_us: maybe(echo1, 1),
    ctr_nb_c1_mean_us: maybe(nb1, 1),
    ctr_c1_mean_us: maybe(ctr1, 1),
    raw_ctr_b1_mean_us: maybe(raw1, 1),
    ctr_max_queue_delay_us: delay,
  };
  return { figures, terms };
}

/** Each figure next to its target ("op value") and verdict (null: not measured). */
export function figureReport(figures: ServeFigures): ServeFigureReport {
  const entries = (Object.keys(TARGETS) as FigureName[]).map((name) => {
    const target = TARGETS[name];
    return [name, { value: figures[name], target: `${target.op} ${target.value}`, met: meetsTarget(name, figures[name]) }] as const;
  });
  return Object.fromEntries(entries) as ServeFigureReport;
}

/** How far the suite's generator is from h2load at the same load: |own - h2load| / h2load. */
export function h2loadDifference(own: number | null, h2load: number): { difference: number | null; met: boolean | null } {
  if (own === null || !(h2load > 0)) return { difference: null, met: null };
  const difference = round(Math.abs(own - h2load) / h2load, 3);
  return { difference, met: difference <= H2LOAD_TARGET };
}
