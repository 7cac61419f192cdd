/**
 * What `hotpath perf` and `hotpath tune` share: building the one request
 * from the model's metadata (over the control client, either protocol),
 * opening the load generator on it, and measuring one level (a concurrency
 * or a request rate) window after window, each window bracketed by
 * ModelStatistics snapshots, until the last three agree or the trials run
 * out. tune drives the same engine per candidate config; nothing here knows
 * which command is calling.
 *
 * Main thread of the perf or tune process.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../common/flag-values.js';
import type { ControlClient } from './control-client.js';
import { parseInputDataFile } from './input-data-file.js';
import { LoadLoop, type LoadGenerator, type LoadLoopOptions, type RequestDistribution } from './load-loop.js';
import { LoadProcesses } from './load-processes.js';
import type { InputDataChoice, PerfTls, Target } from './perf-flags.js';
import { isStable, summarise, type LevelResult, type Load, type Measurement } from './perf-report.js';
import { buildRequestBody, type InputData, type RequestBody } from './request-body.js';
import { serverSplit } from './server-stats.js';

/** How long requests still in flight at the end of a level may take before they are abandoned. */
const DRAIN_TIMEOUT_MS = 10_000;

export interface RequestSettings {
  readonly model: string;
  readonly version: string;
  readonly batchSize: number;
  readonly shapes: ReadonlyMap<string, readonly number[]>;
  readonly inputData: InputDataChoice;
}

export interface WindowSettings {
  readonly model: string;
  readonly version: string;
  readonly batchSize: number;
  readonly distribution: RequestDistribution;
  readonly measurementIntervalMs: number;
  readonly stabilityPercentage: number;
  readonly maxTrials: number;
  readonly percentile: number | undefined;
}

export interface TlsFiles {
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  readonly serverName: string | undefined;
}

/** The PEM files, read once for the control client and the load connections; the error names the flag. */
export function readTlsFiles(options: PerfTls): TlsFiles {
  const read = (flag: string, file: string | undefined): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new UsageError(`${flag} ${file}: cannot read it (${err instanceof Error ? err.message : String(err)})`);
    }
  };
  return { ca: read('--root-cert', options.rootCert), cert: read('--client-cert', options.clientCert), key: read('--client-key', options.clientKey), serverName: options.serverName };
}

/** --input-data FILE read and parsed (UsageError naming the file and field), or the generated kind as is. */
export function readInputData(choice: InputDataChoice): InputData {
  if (typeof choice === 'string') return choice;
  let text: string;
  try {
    text = readFileSync(choice.file, 'utf8');
  } catch (err) {
    throw new UsageError(`--input-data ${choice.file}: expected random, zero or a readable JSON file (${err instanceof Error ? err.message : String(err)})`);
  }
  return { file: choice.file, tensors: parseInputDataFile(text, choice.file) };
}

/**
 * The request, from the model's metadata and config. A shape, batch size or
 * data file that does not fit the model throws UsageError; an unreachable
 * server or unknown model throws Error.
 */
export async function prepareRequest(control: ControlClient, settings: RequestSettings, data: InputData): Promise<RequestBody> {
  const [metadata, config] = await Promise.all([control.metadata(settings.model, settings.version), control.config(settings.model, settings.version)]);
  return buildRequestBody(metadata, {
    model: settings.model,
    version: settings.version,
    batchSize: settings.batchSize,
    maxBatchSize: config.maxBatchSize,
    shapes: settings.shapes,
    data,
  });
}

/** Opens the load generator for `body`: in this process, or over `processes` child processes. */
export async function openLoad(target: Target, files: TlsFiles | undefined, body: RequestBody, connections: number, processes: number): Promise<LoadGenerator> {
  const options: LoadLoopOptions = {
    address: target.url,
    connections,
    body: target.protocol === 'grpc' ? body.frame : body.http.body,
    ...(target.protocol === 'http' ? { http: { path: body.http.path, jsonLength: body.http.jsonLength } } : {}),
    headers: target.apiKey === undefined ? {} : { authorization: `Bearer ${target.apiKey}` },
    ...(files === undefined ? {} : {
      tls: { ca: files.ca, cert: files.cert, key: files.key, ...(files.serverName ? { servername: files.serverName } : {}) },
    }),
  };
  return processes === 1 ? LoadLoop.open(options) : LoadProcesses.open(options, processes);
}

/**
 * One level: windows until the last three are stable or `maxTrials`
 * windows have run; the row summarises the last three. The first window
 * after a change of load counts like any other: the stability rule discards
 * a warming window on its own. With `signal`, an abort ends the level
 * between windows (the in-flight requests are drained first) and throws the
 * signal's reason.
 */
export async function measureLevel(control: ControlClient, loop: LoadGenerator, settings: WindowSettings, load: Load, signal?: AbortSignal): Promise<LevelResult> {
  if (load.kind === 'concurrency') loop.setConcurrency(load.value);
  else loop.setRate(load.value, settings.distribution);
  const windows: Measurement[] = [];
  let stable = false;
  try {
    while (windows.length < settings.maxTrials) {
      signal?.throwIfAborted();
      const before = await control.statistics(settings.model, settings.version);
      // The window's edges sit right after the first ModelStatistics answer and right before the second call.
      const startNs = process.hrtime.bigint();
      loop.startWindow(startNs);
      await sleep(settings.measurementIntervalMs, undefined, signal === undefined ? undefined : { signal });
      const endNs = process.hrtime.bigint();
      const after = await control.statistics(settings.model, settings.version);
      const record = await loop.takeWindow(endNs);
      windows.push({ client: record, server: serverSplit(before, after) });
      stable = isStable(windows.map((w) => w.client), settings.stabilityPercentage, settings.percentile);
      if (stable) break;
    }
  } finally {
    await loop.drain(DRAIN_TIMEOUT_MS);
  }
  return summarise(load, settings.batchSize, windows.slice(-3), stable, windows.length);
}
