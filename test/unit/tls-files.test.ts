/**
 * The TLS flags (`--grpc-use-ssl...`, `--http-use-ssl...`) as the command line
 * reads them, and the checks on the files (security/tls.ts): every form of
 * the boolean flags, mutual TLS implying TLS, and a message naming the flag
 * and the file for each file that cannot be used. A reload that fails keeps
 * the certificate in use. The servers themselves are in test/e2e/tls.test.ts.
 */
import { generateKeyPairSync } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import { readTlsMaterial, ServerTls, TlsFileError, type TlsFiles } from '../../src/security/tls.js';
import { createCertificateAuthority, type CertificateAuthority } from '../helpers/certificates.js';

let dir: string;
let ca: CertificateAuthority;
let cert: string;
let key: string;
let root: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-tls-unit-'));
  ca = createCertificateAuthority('unit CA');
  const server = ca.server('unit-server');
  [cert, key, root] = [path.join(dir, 'tls.crt'), path.join(dir, 'tls.key'), path.join(dir, 'ca.crt')];
  await writeFile(cert, server.cert);
  await writeFile(key, server.key);
  await writeFile(root, ca.cert);
});

afterAll(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

const base = ['--model-repository', 'models'];

describe('the TLS flags', () => {
  it('are off by default', () => {
    expect(parseServeOptions(base)).toMatchObject({ grpcTls: undefined, httpTls: undefined });
  });

  it('take the bare form, =true, and a following true; files are resolved to absolute paths', () => {
    for (const flag of [['--grpc-use-ssl'], ['--grpc-use-ssl=true'], ['--grpc-use-ssl', 'true'], ['--grpc-use-ssl=1']]) {
      const options = parseServeOptions([...base, ...flag, '--grpc-server-cert', cert, '--grpc-server-key', path.relative(process.cwd(), key)]);
      expect(options.grpcTls).toEqual({ certFile: cert, keyFile: key, rootCertFile: undefined, mutual: false });
      expect(options.httpTls).toBeUndefined();
    }
  });

  it('--*-use-ssl-mutual implies --*-use-ssl, as in Triton', () => {
    const options = parseServeOptions([
      ...base, '--http-use-ssl-mutual', '--http-server-cert', cert, '--http-server-key', key, '--http-root-cert', root,
    ]);
    expect(options.httpTls).toEqual({ certFile: cert, keyFile: key, rootCertFile: root, mutual: true });
    const both = parseServeOptions([
      ...base, '--grpc-use-ssl=false', '--grpc-use-ssl-mutual=true', '--grpc-server-cert', cert, '--grpc-server-key', key, '--grpc-root-cert', root,
    ]);
    expect(both.grpcTls?.mutual).toBe(true);
  });

  it('an explicit --*-use-ssl=false ignores the files, as Triton does; files without the flag are refused', () => {
    expect(parseServeOptions([...base, '--grpc-use-ssl', 'false', '--grpc-server-cert', cert]).grpcTls).toBeUndefined();
    expect(() => parseServeOptions([...base, '--http-root-cert', root])).toThrow(
      /^--http-root-cert: given without --http-use-ssl; expected --http-use-ssl \(or --http-use-ssl-mutual\) with it, or --http-use-ssl=false to serve plaintext on purpose$/,
    );
  });

  it('name the missing flag', () => {
    expect(() => parseServeOptions([...base, '--grpc-use-ssl', '--grpc-server-key', key])).toThrow(
      /^--grpc-use-ssl: expected --grpc-server-cert FILE with it, got none$/,
    );
    expect(() => parseServeOptions([...base, '--grpc-use-ssl-mutual', '--grpc-server-cert', cert, '--grpc-server-key', key])).toThrow(
      /^--grpc-use-ssl-mutual: expected --grpc-root-cert FILE with it/,
    );
    expect(() => parseServeOptions([...base, '--http-use-ssl=maybe'])).toThrow(/^--http-use-ssl: expected true or false .*got 'maybe'$/);
  });
});

describe('the file checks', () => {
  const files = (overrides: Partial<TlsFiles>): TlsFiles => ({ certFile: cert, keyFile: key, rootCertFile: undefined, mutual: false, ...overrides });
  const failure = (door: 'grpc' | 'http', f: TlsFiles): TlsFileError => {
    try {
      readTlsMaterial(door, f);
    } catch (err) {
      expect(err).toBeInstanceOf(TlsFileError);
      return err as TlsFileError;
    }
    throw new Error('expected a TlsFileError');
  };

  it('read a good set and describe the certificate', () => {
    const material = readTlsMaterial('grpc', files({ rootCertFile: root, mutual: true }));
    expect(material.certificate).toMatchObject({ subject: 'CN=unit-server', issuer: 'CN=unit CA, O=hotpath tests', outsideValidity: false });
    expect(material.certificate.fingerprint256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it('name the flag and the file for an unreadable, empty or foreign file', async () => {
    const sub = path.join(dir, 'a-directory');
    await mkdir(sub, { recursive: true });
    expect(failure('grpc', files({ certFile: sub })).message).toBe(`--grpc-server-cert: cannot read '${sub}': a directory, not a file (EISDIR)`);
    const empty = path.join(dir, 'empty.pem');
    await writeFile(empty, '');
    expect(failure('http', files({ keyFile: empty })).message).toBe(
      `--http-server-key: expected a PEM private key (-----BEGIN PRIVATE KEY-----) in '${empty}', got an empty file`,
    );
    // A key where the certificate belongs: the message names the block, never its content.
    const swapped = failure('grpc', files({ certFile: key }));
    expect(swapped.message).toBe(`--grpc-server-cert: expected PEM certificates (-----BEGIN CERTIFICATE-----) in '${key}', got a PEM 'PRIVATE KEY' block`);
    expect(failure('grpc', files({ rootCertFile: key, mutual: true })).flag).toBe('--grpc-root-cert');
  });

  it('refuse an encrypted key, and a certificate outside its dates is flagged', async () => {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase: 'secret' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const encrypted = path.join(dir, 'encrypted.key');
    await writeFile(encrypted, privateKey);
    expect(failure('grpc', files({ keyFile: encrypted })).message).toBe(
      `--grpc-server-key: expected an unencrypted PEM private key in '${encrypted}', got an encrypted one (hotpath takes no passphrase)`,
    );
    const old = ca.server('expired', { notBefore: new Date('2020-01-01'), notAfter: new Date('2021-01-01') });
    const [oldCert, oldKey] = [path.join(dir, 'old.crt'), path.join(dir, 'old.key')];
    await writeFile(oldCert, old.cert);
    await writeFile(oldKey, old.key);
    expect(readTlsMaterial('http', files({ certFile: oldCert, keyFile: oldKey })).certificate).toMatchObject({
      notAfter: '2021-01-01T00:00:00.000Z',
      outsideValidity: true,
    });
  });

  it('a reload that fails keeps the certificate in use; one that passes takes the new one', async () => {
    const dirTls = await mkdtemp(path.join(dir, 'reload-'));
    const [c, k] = [path.join(dirTls, 'tls.crt'), path.join(dirTls, 'tls.key')];
    const first = ca.server('first');
    await writeFile(c, first.cert);
    await writeFile(k, first.key);
    const tls = new ServerTls('http', { certFile: c, keyFile: k, mutual: false });
    expect(tls.certificate.serial).toBe(first.serial);
    await writeFile(k, ca.server('other').key);
    expect(() => tls.reload()).toThrow(TlsFileError);
    expect(tls.certificate.serial).toBe(first.serial);
    const second = ca.server('second');
    await writeFile(c, second.cert);
    await writeFile(k, second.key);
    expect(tls.reload().serial).toBe(second.serial);
    expect(tls.certificate.serial).toBe(second.serial);
  });
});
