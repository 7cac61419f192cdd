/**
 * TLS and mutual TLS on both doors, against real server processes, with
 * certificates made in the test (helpers/certificates.ts):
 * - a TLS client scores over gRPC (hotpath/client with `tls`) and over HTTPS,
 *   and a plaintext client, or one that does not trust the server's CA, fails;
 * - under mutual TLS, a client with a certificate from the server's CA scores,
 *   and one without a certificate, or with one from another CA, is refused at
 *   the handshake: nothing reaches the model;
 * - SIGHUP reloads the certificate files: a new connection sees the new
 *   certificate while an open connection (a stream too) keeps working, and a
 *   broken file is logged and leaves the current certificate in place;
 * - a missing or unusable file stops start-up with exit 2, naming the file.
 *
 * Server A: gRPC with TLS, HTTP with mutual TLS. Server B: gRPC with mutual
 * TLS, HTTP with TLS. Together they cover each mode on each door.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, InferenceError, status, type ClientOptions, type HotpathClient, type TlsOptions } from '../../src/client/index.js';
import { createCertificateAuthority, type CertificateAuthority, type Pem } from '../helpers/certificates.js';
import { directRun, sampleRepository } from './helpers/repositories.js';
import { PACKAGE_ROOT, startServer, type RunningServer } from './helpers/server-process.js';

interface Files {
  readonly cert: string;
  readonly key: string;
  readonly root: string;
}

let workDir: string;
let repository: { dir: string; remove: () => Promise<void> };
let ca: CertificateAuthority;
let otherCa: CertificateAuthority;
let clientPem: Pem;
let strangerPem: Pem;
let serverA: RunningServer;
let serverB: RunningServer;
let filesA: Files;
const clients: HotpathClient[] = [];

async function writeFiles(dir: string, server: Pem, root: string): Promise<Files> {
  const files = { cert: path.join(dir, 'server.crt'), key: path.join(dir, 'server.key'), root: path.join(dir, 'ca.crt') };
  await writeFile(files.cert, server.cert);
  await writeFile(files.key, server.key);
  await writeFile(files.root, root);
  return files;
}

function tlsArgs(door: 'grpc' | 'http', files: Files, mutual: boolean): string[] {
  return [
    mutual ? `--${door}-use-ssl-mutual` : `--${door}-use-ssl`,
    `--${door}-server-cert`, files.cert,
    `--${door}-server-key`, files.key,
    ...(mutual ? [`--${door}-root-cert`, files.root] : []),
  ];
}

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-tls-'));
  ca = createCertificateAuthority('hotpath test CA');
  otherCa = createCertificateAuthority('another CA');
  clientPem = ca.client('scoring-service');
  strangerPem = otherCa.client('stranger');
  repository = await sampleRepository(['ctr_mlp']);
  const dirA = await mkdtemp(path.join(workDir, 'a-'));
  const dirB = await mkdtemp(path.join(workDir, 'b-'));
  filesA = await writeFiles(dirA, ca.server('server-a-1'), ca.cert);
  const filesB = await writeFiles(dirB, ca.server('server-b'), ca.cert);
  [serverA, serverB] = await Promise.all([
    startServer(repository.dir, [...tlsArgs('grpc', filesA, false), ...tlsArgs('http', filesA, true)]),
    startServer(repository.dir, [...tlsArgs('grpc', filesB, true), ...tlsArgs('http', filesB, false)]),
  ]);
});

afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all([serverA?.stop(), serverB?.stop()]);
  await repository?.remove();
  if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
});

function client(server: RunningServer, options: ClientOptions): HotpathClient {
  const made = createClient(`127.0.0.1:${server.grpcPort}`, { timeoutMs: 20_000, ...options });
  clients.push(made);
  return made;
}

function features(seed: number): Float32Array {
  return Float32Array.from({ length: 32 }, (_, i) => Math.sin(seed * 1.7 + i * 0.41));
}

async function reference(data: Float32Array): Promise<number> {
  const out = await directRun(path.join(repository.dir, 'ctr_mlp', '1', 'model.onnx'), {
    features: new ort.Tensor('float32', data, [1, 32]),
  });
  return (out['score']!.data as Float32Array)[0]!;
}

async function scoreGrpc(target: HotpathClient, seed: number): Promise<number> {
  const result = await target.infer('ctr_mlp', { features: { shape: [1, 32], data: features(seed) } });
  const score = result.output<Float32Array>('score');
  expect(score.shape).toEqual([1, 1]);
  return score.data[0]!;
}

async function rejection(promise: Promise<unknown>): Promise<InferenceError> {
  const err = await promise.then(
    () => {
      throw new Error('the call succeeded but an error was expected');
    },
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InferenceError);
  return err as InferenceError;
}

interface HttpsAnswer {
  readonly status: number;
  readonly body: string;
  /** The serial number of the certificate the server presented on this connection. */
  readonly serverSerial: string;
  /** Whether the request went over a connection opened by an earlier one. */
  readonly reusedSocket: boolean;
}

type HttpsOptions = Pick<https.RequestOptions, 'ca' | 'cert' | 'key' | 'agent'>;

function inferBody(seed: number): string {
  return JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 32], data: Array.from(features(seed)) }] });
}

function httpsInfer(port: number, seed: number, options: HttpsOptions): Promise<HttpsAnswer> {
  const body = inferBody(seed);
  return new Promise((resolve, reject) => {
    const request = https.request(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v2/models/ctr_mlp/infer',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        ...options,
      },
      (response) => {
        const chunks: Buffer[] = [];
        const serverSerial = (response.socket as TLSSocket).getPeerCertificate().serialNumber;
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode!, body: Buffer.concat(chunks).toString(), serverSerial, reusedSocket: request.reusedSocket }),
        );
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

function httpScore(answer: HttpsAnswer): number {
  expect(answer.status, answer.body).toBe(200);
  const parsed = JSON.parse(answer.body) as { outputs: { name: string; shape: number[]; data: number[] }[] };
  expect(parsed.outputs[0]).toMatchObject({ name: 'score', shape: [1, 1] });
  return parsed.outputs[0]!.data[0]!;
}

/** The error a request gets; fails the test when the request is answered. */
async function requestError(work: Promise<unknown>): Promise<NodeJS.ErrnoException> {
  const outcome = await work.then(
    (answer) => ({ answered: answer }),
    (err: unknown) => ({ err: err as NodeJS.ErrnoException }),
  );
  if ('answered' in outcome) throw new Error(`expected the connection to be refused, got an answer: ${JSON.stringify(outcome.answered)}`);
  return outcome.err;
}

function plainHttpGet(port: number, urlPath: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: urlPath }, (response) => {
      response.resume();
      resolve(response.statusCode!);
    });
    request.setTimeout(10_000, () => request.destroy(new Error('timed out')));
    request.on('error', reject);
  });
}

async function inferenceCount(server: RunningServer): Promise<bigint> {
  const admin = client(server, { tls: { rootCertificates: ca.cert, privateKey: clientPem.key, certificateChain: clientPem.cert } });
  const [stats] = await admin.statistics('ctr_mlp');
  return stats!.inferenceStats!.success!.count;
}

describe('TLS on gRPC (server A)', () => {
  it('a TLS client of hotpath/client scores, the same as onnxruntime', async () => {
    const tlsClient = client(serverA, { tls: { rootCertificates: ca.cert } });
    expect(await scoreGrpc(tlsClient, 1)).toBeCloseTo(await reference(features(1)), 5);
    // grpcs:// turns TLS on by itself; the roots can be a PEM string.
    const viaUrl = createClient(`grpcs://localhost:${serverA.grpcPort}`, { timeoutMs: 20_000, tls: { rootCertificates: ca.cert } });
    clients.push(viaUrl);
    expect(await viaUrl.ready('ctr_mlp')).toBe(true);
  });

  it('a plaintext client fails with UNAVAILABLE', async () => {
    const plain = client(serverA, {});
    const err = await rejection(plain.infer('ctr_mlp', { features: features(2) }));
    expect(err.code).toBe(status.UNAVAILABLE);
  });

  it('a client that does not trust the server certificate\'s CA fails', async () => {
    const wrongRoots = client(serverA, { tls: { rootCertificates: otherCa.cert } });
    const err = await rejection(wrongRoots.infer('ctr_mlp', { features: features(3) }));
    expect(err.code).toBe(status.UNAVAILABLE);
  });

  it('checks the server name: serverName must match the certificate', async () => {
    const wrongName = client(serverA, { tls: { rootCertificates: ca.cert, serverName: 'scoring.example.com' } });
    const err = await rejection(wrongName.ready());
    expect(err.code).toBe(status.UNAVAILABLE);
    const rightName = client(serverA, { tls: { rootCertificates: ca.cert, serverName: 'localhost' } });
    expect(await rightName.ready()).toBe(true);
  });
});

describe('mutual TLS on HTTP (server A)', () => {
  it('a client with a certificate from the CA scores over HTTPS', async () => {
    const answer = await httpsInfer(serverA.httpPort, 4, { ca: ca.cert, cert: clientPem.cert, key: clientPem.key, agent: false });
    expect(httpScore(answer)).toBeCloseTo(await reference(features(4)), 5);
  });

  it('a client without a certificate, or with one from another CA, is refused at the handshake: nothing reaches the model', async () => {
    const before = await inferenceCount(serverA);
    const noCertificate = await requestError(httpsInfer(serverA.httpPort, 5, { ca: ca.cert, agent: false }));
    // TLS 1.3: the server's alert, or the reset that follows it when the reset is read first.
    expect(`${noCertificate.code} ${noCertificate.message}`).toMatch(/CERTIFICATE_REQUIRED|ECONNRESET/);
    const stranger = await requestError(httpsInfer(serverA.httpPort, 6, { ca: ca.cert, cert: strangerPem.cert, key: strangerPem.key, agent: false }));
    expect(`${stranger.code} ${stranger.message}`).toMatch(/UNKNOWN_CA|ECONNRESET/);
    expect(await inferenceCount(serverA)).toBe(before);
  });

  it('a plaintext HTTP client gets no answer, health probes included', async () => {
    await requestError(plainHttpGet(serverA.httpPort, '/v2/health/ready'));
  });
});

describe('mutual TLS on gRPC (server B)', () => {
  const withCertificate = (): TlsOptions => ({ rootCertificates: ca.cert, privateKey: clientPem.key, certificateChain: clientPem.cert });

  it('a client with a certificate from the CA scores', async () => {
    const good = client(serverB, { tls: withCertificate() });
    expect(await scoreGrpc(good, 7)).toBeCloseTo(await reference(features(7)), 5);
  });

  it('a client without a certificate, or with one from another CA, is refused and nothing reaches the model', async () => {
    const before = await inferenceCount(serverB);
    const noCertificate = client(serverB, { tls: { rootCertificates: ca.cert } });
    expect((await rejection(noCertificate.infer('ctr_mlp', { features: features(8) }))).code).toBe(status.UNAVAILABLE);
    const stranger = client(serverB, { tls: { rootCertificates: ca.cert, privateKey: strangerPem.key, certificateChain: strangerPem.cert } });
    expect((await rejection(stranger.infer('ctr_mlp', { features: features(9) }))).code).toBe(status.UNAVAILABLE);
    const plain = client(serverB, {});
    expect((await rejection(plain.infer('ctr_mlp', { features: features(10) }))).code).toBe(status.UNAVAILABLE);
    expect(await inferenceCount(serverB)).toBe(before);
  });
});

describe('TLS on HTTP (server B)', () => {
  it('an HTTPS client without a certificate scores; plaintext HTTP gets no answer', async () => {
    const answer = await httpsInfer(serverB.httpPort, 11, { ca: ca.cert, agent: false });
    expect(httpScore(answer)).toBeCloseTo(await reference(features(11)), 5);
    await requestError(plainHttpGet(serverB.httpPort, '/v2/health/live'));
  });

  it('logs the TLS mode of each door and the certificate served', () => {
    expect(serverB.logs.find((l) => l['msg'] === 'listening')).toMatchObject({ grpc_tls: 'mutual', http_tls: 'tls' });
    expect(serverA.logs.find((l) => l['msg'] === 'listening')).toMatchObject({ grpc_tls: 'tls', http_tls: 'mutual' });
    expect(serverB.logs.filter((l) => l['msg'] === 'serving certificate').map((l) => [l['door'], l['subject']])).toEqual([
      ['grpc', 'CN=server-b'],
      ['http', 'CN=server-b'],
    ]);
  });
});

describe('certificate reload on SIGHUP (server A)', () => {
  it('new connections get the new certificate; open connections and streams keep working', async () => {
    const first = ca.server('server-a-2');
    const seen = (into: string[]): TlsOptions => ({
      rootCertificates: ca.cert,
      checkServerIdentity: (_host, certificate) => {
        into.push(certificate.serialNumber);
        return undefined;
      },
    });
    const initialSerial = serverA.logs.find((l) => l['msg'] === 'serving certificate' && l['door'] === 'grpc')!['serial'] as string;

    // Connections opened before the reload: a gRPC channel with an open stream, and a kept-alive HTTPS socket.
    const oldSerials: string[] = [];
    const oldClient = client(serverA, { tls: seen(oldSerials) });
    expect(await scoreGrpc(oldClient, 12)).toBeCloseTo(await reference(features(12)), 5);
    const stream = oldClient.stream();
    await stream.infer('ctr_mlp', { features: { shape: [1, 32], data: features(13) } });
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: ca.cert, cert: clientPem.cert, key: clientPem.key });
    const before = await httpsInfer(serverA.httpPort, 14, { agent });
    httpScore(before);
    expect(oldSerials).toEqual([initialSerial]);
    expect(before.serverSerial).toBe(initialSerial);

    await writeFile(filesA.key, first.key);
    await writeFile(filesA.cert, first.cert);
    serverA.process.kill('SIGHUP');
    await Promise.all(
      ['grpc', 'http'].map((door) =>
        serverA.waitForLog((l) => l['msg'] === 'certificates reloaded' && l['door'] === door && l['serial'] === first.serial),
      ),
    );

    // The open connections: still answered, over the same TLS sessions (no new handshake).
    expect(await scoreGrpc(oldClient, 15)).toBeCloseTo(await reference(features(15)), 5);
    const streamed = await stream.infer('ctr_mlp', { features: { shape: [1, 32], data: features(16) } });
    expect(streamed.output<Float32Array>('score').data[0]).toBeCloseTo(await reference(features(16)), 5);
    await stream.end();
    expect(oldSerials).toEqual([initialSerial]);
    const after = await httpsInfer(serverA.httpPort, 17, { agent });
    expect(after.reusedSocket).toBe(true);
    expect(after.serverSerial).toBe(initialSerial);
    httpScore(after);
    agent.destroy();

    // New connections: the new certificate.
    const newSerials: string[] = [];
    expect(await scoreGrpc(client(serverA, { tls: seen(newSerials) }), 18)).toBeCloseTo(await reference(features(18)), 5);
    expect(newSerials).toEqual([first.serial]);
    const fresh = await httpsInfer(serverA.httpPort, 19, { ca: ca.cert, cert: clientPem.cert, key: clientPem.key, agent: false });
    expect(fresh.serverSerial).toBe(first.serial);
    httpScore(fresh);
  });

  it('a broken file is logged, naming it, and the current certificate stays', async () => {
    const current = serverA.logs.filter((l) => l['msg'] === 'certificates reloaded' && l['door'] === 'grpc').at(-1)!['serial'] as string;
    await writeFile(filesA.key, ca.server('mismatched').key);
    serverA.process.kill('SIGHUP');
    const failures = await Promise.all(
      ['grpc', 'http'].map((door) => serverA.waitForLog((l) => l['msg'] === 'certificate reload failed: keeping the current certificates' && l['door'] === door)),
    );
    for (const failure of failures) {
      expect(failure['level']).toBe('error');
      expect(failure['error']).toMatch(/--(grpc|http)-server-key: expected the private key of the certificate in '.*server\.crt'/);
      expect(failure['error']).toContain(filesA.key);
    }
    const serials: string[] = [];
    const fresh = client(serverA, {
      tls: { rootCertificates: ca.cert, checkServerIdentity: (_h, c) => void serials.push(c.serialNumber) },
    });
    expect(await fresh.ready('ctr_mlp')).toBe(true);
    expect(serials).toEqual([current]);
    const answer = await httpsInfer(serverA.httpPort, 20, { ca: ca.cert, cert: clientPem.cert, key: clientPem.key, agent: false });
    expect(answer.serverSerial).toBe(current);
  });
});

describe('start-up refuses unusable TLS settings (exit 2, naming the file or flag)', () => {
  let files: Files;
  beforeAll(async () => {
    files = await writeFiles(await mkdtemp(path.join(workDir, 'startup-')), ca.server('startup'), ca.cert);
  });

  async function startUp(args: string[]): Promise<{ code: number | null; stderr: string }> {
    const child = spawn(
      process.execPath,
      [path.join(PACKAGE_ROOT, 'dist', 'src', 'cli.js'), 'serve', '--model-repository', repository.dir, '--host', '127.0.0.1',
        '--grpc-port', '0', '--http-port', '0', '--metrics-port', '0', ...args],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, stderr: stderr.split('\n')[0]! };
  }

  it('a missing file', async () => {
    const missing = path.join(workDir, 'nope', 'server.crt');
    const { code, stderr } = await startUp(['--grpc-use-ssl', '--grpc-server-cert', missing, '--grpc-server-key', files.key]);
    expect(code).toBe(2);
    expect(stderr).toBe(`hotpath: --grpc-server-cert: cannot read '${missing}': no such file (ENOENT)`);
  });

  it('a file that is not a certificate, and a key that does not belong to the certificate', async () => {
    const notPem = path.join(workDir, 'not-a-cert.pem');
    await writeFile(notPem, 'hello');
    const bad = await startUp(['--http-use-ssl', '--http-server-cert', notPem, '--http-server-key', files.key]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe(`hotpath: --http-server-cert: expected PEM certificates (-----BEGIN CERTIFICATE-----) in '${notPem}', got 5 bytes with no PEM block`);
    const otherKey = path.join(workDir, 'other.key');
    await writeFile(otherKey, ca.server('x').key);
    const mismatch = await startUp(['--grpc-use-ssl=true', '--grpc-server-cert', files.cert, '--grpc-server-key', otherKey]);
    expect(mismatch.code).toBe(2);
    expect(mismatch.stderr).toMatch(/^hotpath: --grpc-server-key: expected the private key of the certificate in '.*server\.crt' \(--grpc-server-cert, subject 'CN=startup'\), got another key in '.*other\.key'$/);
  });

  it('mutual TLS without --*-root-cert, TLS without a key, and certificate flags without --*-use-ssl', async () => {
    const noRoot = await startUp(['--http-use-ssl-mutual', '--http-server-cert', files.cert, '--http-server-key', files.key]);
    expect(noRoot.code).toBe(2);
    expect(noRoot.stderr).toBe('hotpath: --http-use-ssl-mutual: expected --http-root-cert FILE with it (the CA certificates that sign client certificates), got none');
    const noKey = await startUp(['--grpc-use-ssl', '--grpc-server-cert', files.cert]);
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toBe('hotpath: --grpc-use-ssl: expected --grpc-server-key FILE with it, got none');
    const noSsl = await startUp(['--grpc-server-cert', files.cert, '--grpc-server-key', files.key]);
    expect(noSsl.code).toBe(2);
    expect(noSsl.stderr).toMatch(/^hotpath: --grpc-server-cert: given without --grpc-use-ssl; expected --grpc-use-ssl \(or --grpc-use-ssl-mutual\)/);
  });
});
