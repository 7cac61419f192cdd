/**
 * `hotpath perf`: perf_analyzer's job against any KServe V2 / Triton server,
 * over gRPC or HTTP/REST. Reads the model's metadata and config
 * (control-client.ts), builds one request (request-body.ts), then for each
 * level runs the closed loop, or the open loop at a request rate
 * (load-loop.ts), window after window, bracketing each window with
 * ModelStatistics snapshots (measure.ts), until the last three windows are
 * stable or --max-trials is reached, and reports (perf-report.ts).
 *
 * Main thread of its own process; the command owns the control client and
 * the connections it opens and closes them before it returns.
 */
import { writeFileSync } from 'node:fs';
import { UsageError } from '../common/flag-values.js';
import { createControlClient, type ControlClient } from './control-client.js';
import type { LoadGenerator } from './load-loop.js';
import { measureLevel, openLoad, prepareRequest, readInputData, readTlsFiles, type TlsFiles } from './measure.js';
import { parsePerfArgs, PERF_USAGE, type PerfSettings } from './perf-flags.js';
import { loadLabel, toCsv, toTable, type LevelResult } from './perf-report.js';
import { plotFile } from './perf-plot.js';
import type { InputData, RequestBody } from './request-body.js';

/** Runs `hotpath perf ...`; sets process.exitCode (0, 1 or 2) rather than exiting. */
export async function perfCommand(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out.write(PERF_USAGE);
    return;
  }
  let settings: PerfSettings;
  try {
    settings = parsePerfArgs(argv);
  } catch (err) {
    if (!isUsageError(err)) throw err;
    process.stderr.write(`hotpath perf: ${err.message}\n\n${PERF_USAGE}`);
    process.exitCode = 2;
    return;
  }
  let files: TlsFiles | undefined;
  let data: InputData;
  try {
    files = settings.tls === undefined ? undefined : readTlsFiles(settings.tls);
    data = readInputData(settings.inputData);
  } catch (err) {
    process.stderr.write(`hotpath perf: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
    return;
  }
  const control = createControlClient({
    protocol: settings.protocol,
    url: settings.url,
    apiKey: settings.apiKey,
    tls: files,
  });
  let loop: LoadGenerator | undefined;
  const levels: LevelResult[] = [];
  try {
    let prepared: RequestBody | string;
    try {
      prepared = await prepare(control, settings, data);
    } catch (err) {
      // A --shape, -b or data file that does not fit the model: a usage error, found once the model is known.
      if (!(err instanceof UsageError)) throw err;
      process.stderr.write(`hotpath perf: ${err.message}\n`);
      process.exitCode = 2;
      return;
    }
    if (typeof prepared === 'string') {
      process.stderr.write(`hotpath perf: ${prepared}\n`);
      process.exitCode = 1;
      return;
    }
    loop = await openLoad(settings, files, prepared, settings.connections, settings.loadProcesses);
    out.write(
      `hotpath perf: model '${settings.model}'${settings.version ? ` version ${settings.version}` : ''} at ${settings.url} over ${settings.protocol}, ` +
        `batch ${settings.batchSize}, inputs ${Object.entries(prepared.shapes).map(([name, shape]) => `${name}[${shape.join(',')}]`).join(' ')}` +
        `${typeof data === 'object' ? ` from ${data.file}` : ''}, ` +
        `${connectionsLabel(settings)}${settings.loadProcesses > 1 ? ` from ${settings.loadProcesses} processes` : ''}, windows of ${settings.measurementIntervalMs} ms\n`,
    );
    for (const load of settings.loads) {
      const level = await measureLevel(control, loop, settings, load);
      levels.push(level);
      out.write(`${loadLabel(load)}: ${level.inferencesPerSecond.toFixed(1)} infer/s, p99 ${(level.p99Us / 1000).toFixed(3)} ms` +
        `${level.errors > 0 ? `, ${level.errors} error(s)` : ''}${level.stable ? '' : ' (unstable)'}\n`);
    }
    out.write(`\n${toTable(levels)}`);
    if (settings.csvFile !== undefined) writeFileSync(settings.csvFile, toCsv(levels));
    if (settings.plotFile !== undefined) {
      const title = `${settings.model}${settings.version ? ` v${settings.version}` : ''} at ${settings.url}, batch ${settings.batchSize}`;
      writeFileSync(settings.plotFile, plotFile(levels, title, settings.plotFile));
    }
    if (settings.jsonFile !== undefined) writeFileSync(settings.jsonFile, `${JSON.stringify({ settings: jsonSettings(settings), levels }, null, 2)}\n`);
    process.exitCode = levels.some((level) => level.errors > 0) ? 1 : 0;
  } catch (err) {
    // The server went away, or a connection or ModelStatistics call failed mid-run: say so, with what was measured.
    if (levels.length > 0) out.write(`\n${toTable(levels)}`);
    process.stderr.write(`hotpath perf: the run stopped: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  } finally {
    loop?.close();
    control.close();
  }
}

/** gRPC multiplexes over a fixed set; HTTP/1.1 opens one more connection per request in flight. */
function connectionsLabel(settings: PerfSettings): string {
  return settings.protocol === 'grpc'
    ? `${settings.connections} connection(s)`
    : `${settings.connections}+ HTTP/1.1 connection(s) (one per request in flight)`;
}

/** The request to send, or why the model cannot be measured (unreachable server, unknown model). */
async function prepare(control: ControlClient, settings: PerfSettings, data: InputData): Promise<RequestBody | string> {
  try {
    return await prepareRequest(control, settings, data);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    return `cannot measure model '${settings.model}' at ${settings.url}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

function jsonSettings(settings: PerfSettings): Record<string, unknown> {
  const { apiKey: _secret, shapes, ...rest } = settings;
  return { ...rest, shapes: Object.fromEntries(shapes) };
}

export function isUsageError(err: unknown): err is Error {
  return err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'));
}
