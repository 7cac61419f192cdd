/**
 * `hotpath perf`: perf_analyzer's job against any KServe V2 / Triton gRPC
 * server. Reads the model's metadata and config with the typed client,
 * builds one request (request-body.ts), then for each level runs the closed
 * loop, or the open loop at a request rate (load-loop.ts), window after window, bracketing each
 * window with ModelStatistics snapshots (server-stats.ts), until the last
 * three windows are stable or --max-trials is reached, and reports
 * (perf-report.ts).
 *
 * Main thread of its own process; the command owns the client and the
 * connections it opens and closes them before it returns.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { createClient, type ClientOptions, type HotpathClient } from '../client/client.js';
import { UsageError } from '../common/flag-values.js';
import { LoadLoop, type LoadLoopOptions, type LoadGenerator } from './load-loop.js';
import { LoadProcesses } from './load-processes.js';
import { parsePerfArgs, PERF_USAGE, type PerfSettings, type PerfTls } from './perf-flags.js';
import { isStable, loadLabel, summarise, toCsv, toTable, type LevelResult, type Load, type Measurement } from './perf-report.js';
import { buildRequestBody } from './request-body.js';
import { plotFile } from './perf-plot.js';
import { serverSplit, snapshot } from './server-stats.js';

/** How long requests still in flight at the end of a level may take before they are abandoned. */
const DRAIN_TIMEOUT_MS = 10_000;

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
  try {
    files = settings.tls === undefined ? undefined : readTlsFiles(settings.tls);
  } catch (err) {
    process.stderr.write(`hotpath perf: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 2;
    return;
  }
  const clientOptions: ClientOptions = {
    ...(settings.apiKey === undefined ? {} : { apiKey: settings.apiKey }),
    ...(files === undefined ? {} : {
      tls: { rootCertificates: files.ca, certificateChain: files.cert, privateKey: files.key, serverName: settings.tls?.serverName },
    }),
  };
  const client = createClient(files === undefined ? settings.url : `grpcs://${settings.url}`, clientOptions);
  let loop: LoadGenerator | undefined;
  const levels: LevelResult[] = [];
  try {
    let prepared: Awaited<ReturnType<typeof prepare>>;
    try {
      prepared = await prepare(client, settings);
    } catch (err) {
      // A --shape or -b that does not fit the model: a usage error, found once the model is known.
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
    const loadOptions: LoadLoopOptions = {
      address: settings.url,
      connections: settings.connections,
      body: prepared.frame,
      headers: settings.apiKey === undefined ? {} : { authorization: `Bearer ${settings.apiKey}` },
      ...(files === undefined ? {} : {
        tls: { ca: files.ca, cert: files.cert, key: files.key, ...(settings.tls?.serverName ? { servername: settings.tls.serverName } : {}) },
      }),
    };
    loop = settings.loadProcesses === 1 ? await LoadLoop.open(loadOptions) : await LoadProcesses.open(loadOptions, settings.loadProcesses);
    out.write(
      `hotpath perf: model '${settings.model}'${settings.version ? ` version ${settings.version}` : ''} at ${settings.url}, ` +
        `batch ${settings.batchSize}, inputs ${Object.entries(prepared.shapes).map(([name, shape]) => `${name}[${shape.join(',')}]`).join(' ')}, ` +
        `${settings.connections} connection(s)${settings.loadProcesses > 1 ? ` from ${settings.loadProcesses} processes` : ''}, windows of ${settings.measurementIntervalMs} ms\n`,
    );
    for (const load of settings.loads) {
      const level = await measureLevel(client, loop, settings, load);
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
    client.close();
  }
}

/** The request to send, or why the model cannot be measured (unreachable server, unknown model). */
async function prepare(client: HotpathClient, settings: PerfSettings): Promise<ReturnType<typeof buildRequestBody> | string> {
  const versionOption = settings.version === '' ? {} : { version: settings.version };
  try {
    const [metadata, config] = await Promise.all([
      client.metadata(settings.model, { ...versionOption, timeoutMs: 10_000 }),
      client.config(settings.model, { ...versionOption, timeoutMs: 10_000 }),
    ]);
    return buildRequestBody(metadata, {
      model: settings.model,
      version: settings.version,
      batchSize: settings.batchSize,
      maxBatchSize: config.maxBatchSize,
      shapes: settings.shapes,
      data: settings.inputData,
    });
  } catch (err) {
    if (err instanceof UsageError) throw err;
    return `cannot measure model '${settings.model}' at ${settings.url}: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/**
 * One level (concurrency or request rate): windows until the last three are stable or
 * --max-trials windows have run; the row summarises the last three. The
 * first window after a change of load counts like any other: the
 * stability rule discards a warming window on its own.
 */
async function measureLevel(client: HotpathClient, loop: LoadGenerator, settings: PerfSettings, load: Load): Promise<LevelResult> {
  if (load.kind === 'concurrency') loop.setConcurrency(load.value);
  else loop.setRate(load.value, settings.distribution);
  const windows: Measurement[] = [];
  let stable = false;
  while (windows.length < settings.maxTrials) {
    const before = await snapshot(client, settings.model, settings.version);
    // The window's edges sit right after the first ModelStatistics answer and right before the second call.
    const startNs = process.hrtime.bigint();
    loop.startWindow(startNs);
    await sleep(settings.measurementIntervalMs);
    const endNs = process.hrtime.bigint();
    const after = await snapshot(client, settings.model, settings.version);
    const record = await loop.takeWindow(endNs);
    windows.push({ client: record, server: serverSplit(before, after) });
    stable = isStable(windows.map((w) => w.client), settings.stabilityPercentage, settings.percentile);
    if (stable) break;
  }
  await loop.drain(DRAIN_TIMEOUT_MS);
  return summarise(load, settings.batchSize, windows.slice(-3), stable, windows.length);
}

interface TlsFiles {
  readonly ca: Buffer | undefined;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
}

/** The PEM files, read once for both the client and the load connections; the error names the flag. */
function readTlsFiles(options: PerfTls): TlsFiles {
  const read = (flag: string, file: string | undefined): Buffer | undefined => {
    if (file === undefined) return undefined;
    try {
      return readFileSync(file);
    } catch (err) {
      throw new UsageError(`${flag} ${file}: cannot read it (${err instanceof Error ? err.message : String(err)})`);
    }
  };
  return { ca: read('--root-cert', options.rootCert), cert: read('--client-cert', options.clientCert), key: read('--client-key', options.clientKey) };
}

function jsonSettings(settings: PerfSettings): Record<string, unknown> {
  const { apiKey: _secret, shapes, ...rest } = settings;
  return { ...rest, shapes: Object.fromEntries(shapes) };
}

function isUsageError(err: unknown): err is Error {
  return err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS'));
}
