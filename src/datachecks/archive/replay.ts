/**
 * Replay: the archived requests sent again to a server, each new answer
 * compared with the archived one. It is how a new model version is checked
 * against real traffic.
 *
 * The archive is read as it was when the replay started (ArchiveReader), so
 * replaying into a server that archives to the same directory ends.
 *
 * Per output name, the report counts the answers compared, those whose
 * largest element-wise absolute difference exceeds the tolerance, and the
 * largest difference seen. A NaN on one side only is an infinite difference;
 * a shape change differs too. BYTES outputs differ when any element's bytes
 * do (they have no numeric difference). Latency is the replay's own
 * (p50/p99, call to answer, as the client sees it) beside the archived one.
 */
import { InferenceError } from '../../client/errors.js';
import type { HotpathClient } from '../../client/client.js';
import type { InferResult } from '../../client/infer-messages.js';
import type { OutputTensor, Tensor } from '../../client/tensors.js';
import { fromWireParameters } from '../../client/parameters.js';
import { ArchiveReader, archivedRequest, archivedResponse, type ArchiveRecord, type SegmentRead } from './archive-reader.js';
import { asClientInput, decodeAnswer, decodeInputs, numericValues, sameBytes } from './tensor-values.js';
import { absDiff } from '../../tensor/value-difference.js';

export interface ReplayOptions {
  readonly archiveDir: string;
  /** Only records of this model (the archived model name). */
  readonly model?: string | undefined;
  /** Send to this version instead of the one each request asked for. */
  readonly version?: string | undefined;
  /** Requests started per second; undefined: one after another, as fast as answers come. */
  readonly rate?: number | undefined;
  /** Largest absolute difference that still counts as the same answer. */
  readonly tolerance: number;
  /** Each call's deadline (ms). */
  readonly timeoutMs: number;
  /** Requests in flight at most, with `rate` (default 64). */
  readonly maxInflight?: number | undefined;
}

export interface OutputReport {
  /** Answers in which the output was compared. */
  compared: number;
  /** Of those, answers that differ beyond the tolerance. */
  differing: number;
  /** The largest absolute difference seen (null for BYTES outputs). */
  max_abs_diff: number | null;
  /** Answers in which the output was in one answer only, or changed shape (counted as differing too). */
  mismatched: number;
}

export interface LatencyReport {
  count: number;
  p50_ms: number | null;
  p99_ms: number | null;
  mean_ms: number | null;
  max_ms: number | null;
}

export interface ReplayReport {
  archive: string;
  url: string;
  tolerance: number;
  /** Records read from the archive's snapshot. */
  records: number;
  /** Records sent (those of --model, or all). */
  replayed: number;
  /** Replayed requests answered / failed now. */
  answered: number;
  failed: number;
  /** Failures now, by gRPC status name (NOT_SENT: inputs the client refused to send). */
  failures: Record<string, number>;
  /** Records whose archived outcome was a failure. */
  archived_failures: number;
  /** Requests whose outcome changed: answered then and failed now, or the reverse. */
  outcome_changed: number;
  /** Requests answered both times with an answer that differs in some output. */
  differing_answers: number;
  outputs: Record<string, OutputReport>;
  latency: { replay: LatencyReport; archived: LatencyReport };
  /** Segments read, and what was skipped in them. */
  segments: { read: number; torn_tails: { segment: string; offset: number; bytes: number; reason: string }[]; missing: string[]; undecodable: number };
}

export class ReplayError extends Error {}

/** Replays the archive into `client` (served at `url`, for the report). */
export async function replayArchive(client: HotpathClient, url: string, options: ReplayOptions): Promise<ReplayReport> {
  const reader = new ArchiveReader(options.archiveDir);
  const report = emptyReport(options, url);
  const replayLatency: number[] = [];
  const archivedLatency: number[] = [];
  const onSegment = (read: SegmentRead) => {
    report.segments.read += 1;
    report.segments.undecodable += read.undecodable;
    if (read.missing) report.segments.missing.push(read.segment.name);
    if (read.tail !== undefined) report.segments.torn_tails.push({ segment: read.segment.name, ...read.tail });
  };
  const inflight = new Set<Promise<void>>();
  const maxInflight = options.rate === undefined ? 1 : Math.max(1, options.maxInflight ?? 64);
  const started = performance.now();
  for await (const record of reader.records(onSegment)) {
    report.records += 1;
    if (options.model !== undefined && record.model !== options.model) continue;
    if (options.rate !== undefined) {
      const due = started + (report.replayed * 1000) / options.rate;
      const wait = due - performance.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    }
    report.replayed += 1;
    const one = replayOne(client, record, options, report, replayLatency, archivedLatency).finally(() => inflight.delete(one));
    inflight.add(one);
    while (inflight.size >= maxInflight) await Promise.race(inflight);
  }
  await Promise.all(inflight);
  report.latency = { replay: latencyReport(replayLatency), archived: latencyReport(archivedLatency) };
  return report;
}

async function replayOne(
  client: HotpathClient,
  record: ArchiveRecord,
  options: ReplayOptions,
  report: ReplayReport,
  replayLatency: number[],
  archivedLatency: number[],
): Promise<void> {
  const request = archivedRequest(record);
  const archivedAnswer = archivedResponse(record);
  archivedLatency.push(record.latencyNs / 1e6);
  if (record.statusCode !== 0) report.archived_failures += 1;
  const notSent = () => {
    report.failed += 1;
    report.failures.NOT_SENT = (report.failures.NOT_SENT ?? 0) + 1;
    if (record.statusCode === 0) report.outcome_changed += 1;
  };
  let inputs: Record<string, Tensor>;
  try {
    inputs = Object.fromEntries(Object.entries(decodeInputs(request)).map(([name, tensor]) => [name, asClientInput(tensor)]));
  } catch {
    // Tensors that do not decode (a request the server refused then): nothing to send.
    return notSent();
  }
  const started = performance.now();
  let answer: InferResult;
  try {
    answer = await client.infer(request.modelName, inputs, {
      version: options.version ?? (request.modelVersion === '' ? undefined : request.modelVersion),
      id: request.id,
      parameters: fromWireParameters(request.parameters),
      outputs: request.outputs.map((output) => ({ name: output.name, parameters: fromWireParameters(output.parameters) })),
      timeoutMs: options.timeoutMs,
    });
  } catch (err) {
    // A request the client refuses to send (inputs that do not match their shape) was refused then too.
    if (err instanceof TypeError) return notSent();
    if (!(err instanceof InferenceError)) throw err;
    report.failed += 1;
    report.failures[err.codeName] = (report.failures[err.codeName] ?? 0) + 1;
    if (record.statusCode === 0) report.outcome_changed += 1;
    return;
  }
  replayLatency.push(performance.now() - started);
  report.answered += 1;
  if (archivedAnswer === undefined) {
    report.outcome_changed += 1;
    return;
  }
  if (compareAnswers(decodeAnswer(archivedAnswer), answer.outputs, options.tolerance, report.outputs)) report.differing_answers += 1;
}

/** Adds one answer pair to the per-output report; true when any output differs. */
export function compareAnswers(
  archived: Readonly<Record<string, OutputTensor>>,
  now: Readonly<Record<string, OutputTensor>>,
  tolerance: number,
  outputs: Record<string, OutputReport>,
): boolean {
  let differs = false;
  for (const name of new Set([...Object.keys(archived), ...Object.keys(now)])) {
    const entry = (outputs[name] ??= { compared: 0, differing: 0, max_abs_diff: 0, mismatched: 0 });
    entry.compared += 1;
    const a = archived[name];
    const b = now[name];
    if (a === undefined || b === undefined || a.datatype !== b.datatype || a.shape.join(',') !== b.shape.join(',')) {
      entry.mismatched += 1;
      entry.differing += 1;
      if (entry.max_abs_diff !== null) entry.max_abs_diff = Infinity;
      differs = true;
      continue;
    }
    const x = numericValues(a);
    const y = numericValues(b);
    if (x === undefined || y === undefined) {
      entry.max_abs_diff = null;
      if (!sameBytes(a.data as Uint8Array[], b.data as Uint8Array[])) {
        entry.differing += 1;
        differs = true;
      }
      continue;
    }
    let max = 0;
    for (let i = 0; i < x.length; i++) max = Math.max(max, absDiff(x[i]!, y[i]!));
    if (entry.max_abs_diff !== null) entry.max_abs_diff = Math.max(entry.max_abs_diff, max);
    if (max > tolerance) {
      entry.differing += 1;
      differs = true;
    }
  }
  return differs;
}


/** Nearest-rank percentiles. */
export function latencyReport(samples: number[]): LatencyReport {
  if (samples.length === 0) return { count: 0, p50_ms: null, p99_ms: null, mean_ms: null, max_ms: null };
  const sorted = Float64Array.from(samples).sort();
  const rank = (p: number) => sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)]!;
  const mean = sorted.reduce((sum, v) => sum + v, 0) / sorted.length;
  return { count: sorted.length, p50_ms: rank(0.5), p99_ms: rank(0.99), mean_ms: mean, max_ms: sorted[sorted.length - 1]! };
}

function emptyReport(options: ReplayOptions, url: string): ReplayReport {
  return {
    archive: options.archiveDir,
    url,
    tolerance: options.tolerance,
    records: 0,
    replayed: 0,
    answered: 0,
    failed: 0,
    failures: {},
    archived_failures: 0,
    outcome_changed: 0,
    differing_answers: 0,
    outputs: {},
    latency: { replay: latencyReport([]), archived: latencyReport([]) },
    segments: { read: 0, torn_tails: [], missing: [], undecodable: 0 },
  };
}
