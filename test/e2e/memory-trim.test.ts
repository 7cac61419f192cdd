/**
 * Memory back after bursts (issue 21, item 8): after a burst, the addon's
 * trimmer thread (native/process/memory_trimmer.h) gives the freed heap back,
 * so RSS returns near its idle baseline instead of staying at the burst's
 * peak. Two bursts:
 * - the Targets row, "RSS 30 s after the bomb runs <= 1.5x the idle
 *   baseline": the HTTP bomb probes of http-budgets.test.ts (16 parallel gzip
 *   bombs, then the 24 MB JSON bomb from 23 KB of gzip, five times) against a
 *   server with the default trimmer settings;
 * - 16 concurrent valid 8 MiB gRPC requests, 4 rounds, with and without
 *   the trimmer (the control: its figure is reported, not asserted).
 *
 * The three tests run concurrently, in stages, so that the bomb probe's fixed
 * 30 s reading is not idle time in the serial timing group (the file took
 * about a minute with the three one after the other): the gRPC bursts start
 * only once every bomb is answered, one burst after the other (trimmer on,
 * then the control), while the bomb server sits idle and its RSS is polled.
 * Each test has its own server process and reads only that process's RSS.
 * The file runs whole: a later test picked alone (`-t`) waits for a stage
 * that no test reaches and fails at its time limit.
 */
import http from 'node:http';
import { readFileSync } from 'node:fs';
import zlib from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { writeIdentityModel } from '../../models/lib/fixture-models.js';
import { tempRepository } from './helpers/repositories.js';
import { serveRepository, type ServedRepository } from './helpers/served-repository.js';

const MiB = 1024 * 1024;
/** Each request's input: 8 MiB of FP32. */
const ROW_FLOATS = (8 * MiB) / 4;
const CONCURRENCY = 16;
const ROUNDS = 4;

const servers: ServedRepository[] = [];
afterAll(async () => {
  await Promise.all(servers.map((served) => served.close()));
});

/** The server's RSS, as the kernel reports it (VmRSS). */
function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = Number(/^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1]);
  return kib * 1024;
}

async function serve(trimIntervalS: number): Promise<ServedRepository> {
  const served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'wide', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [ROW_FLOATS] })),
    ['--memory-trim-interval', String(trimIntervalS), '--max-message-size', '64MiB'],
  );
  servers.push(served);
  return served;
}

/**
 * 16 concurrent valid 8 MiB ModelInfer calls, 4 rounds, each answered with
 * its 8 MiB output: the server reads, decodes, runs and answers 512 MiB each
 * way, and keeps none of it. (The Buffers of such a burst are freed only
 * through finalizers, after a second collection: idle-gc.ts.)
 */
async function burst(served: ServedRepository): Promise<void> {
  const input = Buffer.alloc(ROW_FLOATS * 4, 1);
  for (let round = 0; round < ROUNDS; round++) {
    const answers = await Promise.all(
      Array.from({ length: CONCURRENCY }, () =>
        served.client.call('ModelInfer', {
          model_name: 'wide',
          inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: [ROW_FLOATS] }],
          raw_input_contents: [input],
        }),
      ),
    );
    for (const answer of answers) expect((answer['raw_output_contents'] as Buffer[])[0]!.length).toBe(ROW_FLOATS * 4);
  }
}

/** Idle RSS once the server settled (models loaded, a first request served). */
async function baseline(served: ServedRepository): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 2000));
  return rssBytes(served.server.process.pid!);
}

/** Seconds the trimmer took to bring RSS back, from the trimmer test, for the control's wait. */
let trimmedWithinS: number | undefined;

/** A point one test waits for and another reaches (also when it fails, so no test waits forever). */
function stage(): { reached: Promise<void>; reach: () => void } {
  let reach!: () => void;
  const reached = new Promise<void>((resolve) => (reach = resolve));
  return { reached, reach };
}
/**
 * The limits of the tests that first wait for a stage, counted from the
 * moment all three start: the trimmer test's own 120 s plus the 120 s the
 * bomb stage may take; the control's own 120 s plus both of those. (Not
 * figures under test: hang guards.)
 */
const TRIMMER_TEST_TIMEOUT_MS = 240_000;
const CONTROL_TEST_TIMEOUT_MS = 360_000;
/** Every bomb is answered: the bursts may start. */
const bombsAnswered = stage();
/** The trimmer test is over (trimmedWithinS is set): the control may start. */
const trimmerMeasured = stage();

/** POSTs `body` to the server's HTTP port; resolves with the status (the body is read and dropped). */
function post(served: ServedRepository, path: string, body: Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: '127.0.0.1', port: served.server.httpPort, path, method: 'POST', agent: false, headers: { 'content-length': String(body.length), ...headers } },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
      },
    );
    // A refused body may close the connection while it is still being sent.
    request.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(0) : reject(err)));
    request.end(body);
  });
}

/**
 * RSS 30 s after a burst (the Targets row's reading), polled every 500 ms
 * meanwhile: resolves with it and with when RSS first came within 1.5x `idle`.
 */
async function rssThirtySecondsAfter(pid: number, idle: number): Promise<{ rss: number; backAfterS: number | undefined }> {
  const started = performance.now();
  let backAfterS: number | undefined;
  while (performance.now() - started < 30_000) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    if (backAfterS === undefined && rssBytes(pid) <= 1.5 * idle) backAfterS = (performance.now() - started) / 1000;
  }
  return { rss: rssBytes(pid), backAfterS };
}

/** The bomb probe up to its last answer: the server, its idle and peak RSS, the bombs and their answers. */
async function throwBombs() {
  const served = await serveRepository(
    tempRepository((dir) => writeIdentityModel(dir, { name: 'identity', dtype: 'FP32', maxBatchSize: 0, withConfig: true, dims: [-1] })),
  );
  servers.push(served);
  const pid = served.server.process.pid!;
  const idle = await baseline(served);
  const infer = '/v2/models/identity/infer';
  const gzipBomb = zlib.gzipSync(Buffer.alloc(128 * MiB), { level: 9 });
  const json = Buffer.concat([Buffer.from('{"inputs":['), Buffer.alloc(24 * 1024 * 1024 - 14, '{},'), Buffer.from('{}]}')]);
  const jsonBomb = zlib.gzipSync(json, { level: 9 });
  let peak = idle;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
  const gzipAnswers = await Promise.all(Array.from({ length: 16 }, () => post(served, infer, gzipBomb, { 'content-encoding': 'gzip' })));
  const jsonAnswers: number[] = [];
  for (let i = 0; i < 5; i += 1) jsonAnswers.push(await post(served, infer, jsonBomb, { 'content-encoding': 'gzip' }));
  clearInterval(sampler);
  return { served, pid, idle, peak, gzipBomb, jsonBomb, gzipAnswers, jsonAnswers };
}

// Concurrent tests take `expect` from their context, so each failure is reported against its own test.
describe.concurrent('memory back after bursts', () => {
  it('the HTTP bomb probes: RSS 30 s later is within 1.5x the idle baseline (default trimmer settings)', async ({ expect }) => {
    const { served, pid, idle, peak, gzipBomb, jsonBomb, gzipAnswers, jsonAnswers } = await throwBombs().finally(bombsAnswered.reach);
    // Refused as http-budgets.test.ts asserts in detail (0: the connection closed while the body was sent).
    for (const status of gzipAnswers) expect([0, 413, 503]).toContain(status);
    for (const status of jsonAnswers) expect(status).toBe(400);
    const { rss, backAfterS } = await rssThirtySecondsAfter(pid, idle);
    console.info(
      `[memory-trim] HTTP bombs (16 gzip bombs of ${gzipBomb.length} bytes, then 5 JSON bombs of ${jsonBomb.length} bytes): idle ${(idle / MiB).toFixed(0)} MiB, ` +
        `peak ${(peak / MiB).toFixed(0)} MiB, ${(rss / MiB).toFixed(0)} MiB 30 s later (${(rss / idle).toFixed(2)}x idle; target <= 1.5x); ` +
        `first within 1.5x after ${backAfterS?.toFixed(1) ?? '-'} s; ${served.server.logs.filter((l) => l['msg'] === 'freed memory returned to the system (malloc_trim)').length} trims logged`,
    );
    expect(rss).toBeLessThanOrEqual(1.5 * idle);
  }, 120_000);

  it('with the trimmer, RSS is back within 1.5x the idle baseline within 30 s of a burst, and a trim is logged', async ({ expect }) => {
    await bombsAnswered.reached;
    try {
      const served = await serve(1);
      const idle = await baseline(served);
      await burst(served);
      const peak = rssBytes(served.server.process.pid!);
      const started = performance.now();
      let rss = peak;
      let backAfterS: number | undefined;
      const lastTrim = () => served.server.logs.filter((l) => l['msg'] === 'freed memory returned to the system (malloc_trim)').at(-1);
      // Polls until RSS is back within 1.5x and the trimmer has logged a trim, for at most 30 s.
      while (performance.now() - started < 30_000) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        rss = rssBytes(served.server.process.pid!);
        if (rss <= 1.5 * idle && lastTrim() !== undefined) {
          backAfterS = (performance.now() - started) / 1000;
          break;
        }
      }
      trimmedWithinS = backAfterS;
      const trims = lastTrim();
      console.info(
        `[memory-trim] trimmer on: idle ${(idle / MiB).toFixed(0)} MiB, after the burst ${(peak / MiB).toFixed(0)} MiB, ` +
          `${(rss / MiB).toFixed(0)} MiB at the end (${(rss / idle).toFixed(2)}x idle; target <= 1.5x within 30 s); within 1.5x after ` +
          `${backAfterS?.toFixed(1) ?? '-'} s; ${String(trims?.['trims'] ?? 0)} trims gave back ${((Number(trims?.['released_bytes'] ?? 0)) / MiB).toFixed(0)} MiB`,
      );
      expect(rss).toBeLessThanOrEqual(1.5 * idle);
      expect(trims).toBeDefined();
    } finally {
      trimmerMeasured.reach();
    }
  }, TRIMMER_TEST_TIMEOUT_MS);

  it('without it (the control), RSS stays near the peak: reported', async ({ expect }) => {
    await trimmerMeasured.reached;
    const served = await serve(0);
    const idle = await baseline(served);
    await burst(served);
    const peak = rssBytes(served.server.process.pid!);
    // As long as the trimmer needed above (plus 2 s), so the two figures compare like for like.
    const waitS = (trimmedWithinS ?? 30) + 2;
    await new Promise((resolve) => setTimeout(resolve, waitS * 1000));
    const rss = rssBytes(served.server.process.pid!);
    console.info(
      `[memory-trim] trimmer off: idle ${(idle / MiB).toFixed(0)} MiB, after the burst ${(peak / MiB).toFixed(0)} MiB, ` +
        `${(rss / MiB).toFixed(0)} MiB ${waitS.toFixed(1)} s later (${(rss / idle).toFixed(2)}x idle)`,
    );
    expect(peak).toBeGreaterThan(idle);
  }, CONTROL_TEST_TIMEOUT_MS);
});
