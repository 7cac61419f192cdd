/**
 * `hotpath replay`: sends an archive's requests to a server with the typed
 * client and reports, per output, the answers that differ from the archived
 * ones beyond a tolerance, the largest difference, and the latency
 * (replay.ts). Exit code 0 once the replay ran, whatever it found; 2 for a
 * usage error; 1 when the server cannot be reached, which is checked with one
 * ServerLive call before the first request: otherwise every request would
 * fail UNAVAILABLE and the replay would look like it ran.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { status } from '@grpc/grpc-js';
import { createClient, type ClientOptions, type HotpathClient, type TlsOptions } from '../../client/client.js';
import { InferenceError } from '../../client/errors.js';
import { integerFlag, numberFlag, UsageError } from '../../common/flag-values.js';
import { ArchiveDirectoryError } from './archive-reader.js';
import { replayArchive, type ReplayReport } from './replay.js';
import { CONNECTION_SECURITY_OPTIONS, checkClientCertPair } from '../../client/connection-flags.js';

export const REPLAY_USAGE = `usage: hotpath replay --archive DIR --url HOST:PORT [--model M] [--version V] [--rate R]
                      [--tolerance T] [--json FILE] [--timeout MS]
                      [--api-key KEY] [--tls] [--root-cert FILE] [--client-cert FILE --client-key FILE]
                      [--server-name NAME]

Sends the archived requests (those in DIR when it starts) to a KServe V2 / Triton gRPC server
and compares each answer with the archived one.

  --archive DIR        the archive (a server's --archive directory)
  --url HOST:PORT      the server's gRPC address (grpcs://HOST:PORT for TLS)
  --model M            only the records of model M
  --version V          send to version V (default: the version each request asked for)
  --rate R             requests started per second (default: one after another)
  --tolerance T        largest absolute difference that still counts as equal (default 1e-6)
  --json FILE          also write the report as JSON to FILE ('-': stdout, instead of the table)
  --timeout MS         each request's deadline (default 30000)
  --api-key KEY        a tenant's API key (or the HOTPATH_API_KEY environment variable)
  --tls                TLS with the system's roots (implied by the options below and grpcs://)
  --root-cert FILE     PEM roots that sign the server's certificate
  --client-cert FILE   PEM client certificate chain (mutual TLS), with --client-key FILE
  --server-name NAME   the name the server's certificate carries, when not the URL's host

Exits 0 once the replay ran, whatever it found; 1 when the server cannot be reached; 2 for a
usage error or a missing archive.
`;

/** Runs `hotpath replay ...`. */
export async function replayCommand(argv: string[], out: NodeJS.WritableStream = process.stdout): Promise<void> {
  let parsed: ReturnType<typeof parseReplayArgs>;
  try {
    if (argv.includes('--help') || argv.includes('-h')) {
      out.write(REPLAY_USAGE);
      return;
    }
    parsed = parseReplayArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError || (err instanceof Error && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS')))) throw err;
    process.stderr.write(`hotpath replay: ${err.message}\n\n${REPLAY_USAGE}`);
    process.exitCode = 2;
    return;
  }
  const client = createClient(parsed.url, parsed.client);
  let report: ReplayReport;
  try {
    const unreachable = await connectionFailure(client, parsed.url, parsed.replay.timeoutMs);
    if (unreachable !== undefined) {
      process.stderr.write(`hotpath replay: ${unreachable}\n`);
      process.exitCode = 1;
      return;
    }
    report = await replayArchive(client, parsed.url, parsed.replay);
  } catch (err) {
    if (!(err instanceof ArchiveDirectoryError)) throw err;
    process.stderr.write(`hotpath replay: --archive: ${err.message}\n`);
    process.exitCode = 2;
    return;
  } finally {
    client.close();
  }
  const json = `${JSON.stringify(report, (_key, value: unknown) => (value === Infinity ? 'Infinity' : value), 2)}\n`;
  if (parsed.jsonFile === '-') out.write(json);
  else {
    if (parsed.jsonFile !== undefined) writeFileSync(parsed.jsonFile, json);
    out.write(summary(report));
  }
}

/**
 * Why the server at `url` cannot take a replay: it cannot be reached
 * (UNAVAILABLE, DEADLINE_EXCEEDED: refused, unresolvable, TLS failed, no
 * answer in time), or what answers is not a V2 gRPC server (UNIMPLEMENTED:
 * an HTTP server, a proxy's 404). Undefined when ServerLive is answered, or
 * refused by a server that is there (a missing API key): the replay then
 * reports what each request gets.
 */
async function connectionFailure(client: HotpathClient, url: string, timeoutMs: number): Promise<string | undefined> {
  try {
    await client.live({ timeoutMs });
    return undefined;
  } catch (err) {
    if (!(err instanceof InferenceError)) throw err;
    // grpc-js ends some messages with an empty "Resolution note: ".
    const why = `${err.codeName}: ${err.details.replace(/\s*Resolution note:\s*$/, '')}`;
    if (err.code === status.UNAVAILABLE || err.code === status.DEADLINE_EXCEEDED) return `could not connect to ${url}: ${why}`;
    if (err.code === status.UNIMPLEMENTED) return `${url} is not a KServe V2 / Triton gRPC server (ServerLive: ${why})`;
    return undefined;
  }
}

function parseReplayArgs(argv: string[]) {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      archive: { type: 'string' },
      url: { type: 'string' },
      model: { type: 'string' },
      version: { type: 'string' },
      rate: { type: 'string' },
      tolerance: { type: 'string', default: '1e-6' },
      json: { type: 'string' },
      timeout: { type: 'string', default: '30000' },
      ...CONNECTION_SECURITY_OPTIONS,
    },
  });
  if (!values.archive) throw new UsageError('--archive: expected the archive directory, got none');
  if (!values.url) throw new UsageError('--url: expected the server\'s HOST:PORT, got none');
  if (values.version !== undefined && !/^\d+$/.test(values.version)) {
    throw new UsageError(`--version: expected a version number, got '${values.version}'`);
  }
  return {
    url: values.url,
    jsonFile: values.json === undefined || values.json === '-' ? values.json : path.resolve(values.json),
    client: clientOptions(values),
    replay: {
      archiveDir: path.resolve(values.archive),
      model: values.model,
      version: values.version,
      rate: values.rate === undefined ? undefined : numberFlag('--rate', values.rate, 0.001, 1_000_000),
      tolerance: numberFlag('--tolerance', values.tolerance, 0, Number.MAX_VALUE),
      timeoutMs: integerFlag('--timeout', values.timeout, 1, 2 ** 31 - 1),
    },
  };
}

function clientOptions(values: Record<string, string | boolean | undefined>): ClientOptions {
  const file = (flag: string) => {
    const name = values[flag] as string | undefined;
    if (name === undefined) return undefined;
    try {
      return readFileSync(name);
    } catch (err) {
      throw new UsageError(`--${flag}: expected a readable PEM file, got '${name}' (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
    }
  };
  const rootCertificates = file('root-cert');
  const certificateChain = file('client-cert');
  const privateKey = file('client-key');
  checkClientCertPair(values);
  const serverName = values['server-name'] as string | undefined;
  const certs: TlsOptions = {
    ...(rootCertificates === undefined ? {} : { rootCertificates }),
    ...(certificateChain === undefined ? {} : { certificateChain, privateKey: privateKey! }),
    ...(serverName === undefined ? {} : { serverName }),
  };
  const tls = Object.keys(certs).length > 0 ? certs : values.tls === true ? true : undefined;
  const apiKey = (values['api-key'] as string | undefined) ?? process.env.HOTPATH_API_KEY;
  return { ...(tls === undefined ? {} : { tls }), ...(apiKey === undefined || apiKey === '' ? {} : { apiKey }) };
}

/** The report as a few aligned lines. */
export function summary(report: ReplayReport): string {
  const lines = [
    `replayed ${report.replayed} of ${report.records} archived requests to ${report.url} (tolerance ${report.tolerance})`,
    `answered ${report.answered}, failed ${report.failed}${failureList(report.failures)}; outcome changed ${report.outcome_changed}; ` +
      `answers differing ${report.differing_answers}`,
  ];
  const rows = [['output', 'compared', 'differing', 'max_abs_diff', 'mismatched']];
  for (const [name, output] of Object.entries(report.outputs)) {
    rows.push([name, String(output.compared), String(output.differing), output.max_abs_diff === null ? '-' : String(output.max_abs_diff), String(output.mismatched)]);
  }
  const ms = (v: number | null) => (v === null ? '-' : v.toFixed(3));
  const latency = [
    ['latency_ms', 'count', 'p50', 'p99', 'max'],
    ['replay', String(report.latency.replay.count), ms(report.latency.replay.p50_ms), ms(report.latency.replay.p99_ms), ms(report.latency.replay.max_ms)],
    ['archived', String(report.latency.archived.count), ms(report.latency.archived.p50_ms), ms(report.latency.archived.p99_ms), ms(report.latency.archived.max_ms)],
  ];
  const skipped = report.segments.torn_tails.map((tail) => `skipped ${tail.bytes} bytes at ${tail.segment}:${tail.offset} (${tail.reason})`);
  return [...lines, '', align(rows), '', align(latency), ...skipped].join('\n') + '\n';
}

function failureList(failures: Record<string, number>): string {
  const entries = Object.entries(failures);
  return entries.length === 0 ? '' : ` (${entries.map(([name, count]) => `${name} ${count}`).join(', ')})`;
}

function align(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd()).join('\n');
}
