/**
 * TLS and mutual TLS for the two front doors, with certificates that can be
 * replaced while the server runs.
 *
 * Each door (`--grpc-use-ssl...`, `--http-use-ssl...`) has one `ServerTls`:
 * the files it was started with, and the material last read from them. A
 * reload (SIGHUP) reads and checks every file again and only then swaps the
 * material in; on any error the door keeps what it had, so a half-copied
 * certificate never takes a serving port down. Swapping touches only the
 * secure context new handshakes use, so open connections, streams included,
 * carry on with the certificate they were opened with:
 * - gRPC: grpc-js's certificate-provider server credentials
 *   (`experimental.createCertificateProviderServerCredentials`). Our provider
 *   publishes the material, and grpc-js calls `setSecureContext` on its
 *   HTTP/2 server for us.
 * - HTTPS: `tls.Server#setSecureContext` on every server this door serves.
 *
 * Mutual TLS asks for a client certificate, verifies it against
 * `--*-root-cert`, and refuses the handshake without one (`requestCert` and
 * `rejectUnauthorized`). No request reaches hotpath's code from such a client.
 *
 * Only file names, subjects, serials, dates and fingerprints are ever put in
 * messages and logs; never a key's content.
 */
import { readFileSync } from 'node:fs';
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import type https from 'node:https';
import type net from 'node:net';
import tls from 'node:tls';
import { experimental, type ServerCredentials } from '@grpc/grpc-js';

export type TlsDoor = 'grpc' | 'http';

/** A door's TLS files, as the flags name them. */
export interface TlsFiles {
  /** `--<door>-server-cert`: the PEM certificate chain, the server's own first. */
  readonly certFile: string;
  /** `--<door>-server-key`: the PEM private key of that certificate (unencrypted). */
  readonly keyFile: string;
  /** `--<door>-root-cert`: PEM CA certificates that sign client certificates (needed for mutual TLS). */
  readonly rootCertFile?: string | undefined;
  /** `--<door>-use-ssl-mutual`: require a client certificate signed by the root certificates. */
  readonly mutual: boolean;
}

/** What a log line says about a certificate: nothing secret. */
export interface CertificateSummary {
  readonly subject: string;
  readonly issuer: string;
  readonly serial: string;
  readonly notBefore: string;
  readonly notAfter: string;
  readonly fingerprint256: string;
  /** The dates do not cover now (expired or not yet valid): clients will refuse it. */
  readonly outsideValidity: boolean;
}

/** The contents of a door's files, checked. */
export interface TlsMaterial {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | undefined;
  readonly certificate: CertificateSummary;
}

/** A file that cannot be used; the message names the flag and the file. */
export class TlsFileError extends Error {
  constructor(
    readonly flag: string,
    readonly file: string,
    message: string,
  ) {
    super(`${flag}: ${message}`);
    this.name = 'TlsFileError';
  }
}

/** The flag that names a door's file, for messages: `--grpc-server-cert`... */
export function tlsFlag(door: TlsDoor, file: 'server-cert' | 'server-key' | 'root-cert' | 'use-ssl' | 'use-ssl-mutual'): string {
  return `--${door}-${file}`;
}

const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

/**
 * Reads and checks a door's files: each readable, each certificate file
 * holding PEM certificates, the key a PEM private key that matches the first
 * certificate, and the root certificates present when mutual TLS needs them.
 * Throws TlsFileError naming the flag and the file.
 */
export function readTlsMaterial(door: TlsDoor, files: TlsFiles): TlsMaterial {
  const certFlag = tlsFlag(door, 'server-cert');
  const keyFlag = tlsFlag(door, 'server-key');
  const rootFlag = tlsFlag(door, 'root-cert');
  const cert = readFlagFile(certFlag, files.certFile);
  const chain = parseCertificates(certFlag, files.certFile, cert);
  const key = readFlagFile(keyFlag, files.keyFile);
  const privateKey = parsePrivateKey(keyFlag, files.keyFile, key);
  const leaf = chain[0]!;
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new TlsFileError(
      keyFlag,
      files.keyFile,
      `expected the private key of the certificate in '${files.certFile}' (${certFlag}, subject '${oneLine(leaf.subject)}'), ` +
        `got another key in '${files.keyFile}'`,
    );
  }
  if (files.mutual && files.rootCertFile === undefined) {
    throw new TlsFileError(rootFlag, '', `expected a file with ${tlsFlag(door, 'use-ssl-mutual')}: the CA certificates that sign client certificates, got none`);
  }
  let ca: Buffer | undefined;
  if (files.rootCertFile !== undefined) {
    ca = readFlagFile(rootFlag, files.rootCertFile);
    parseCertificates(rootFlag, files.rootCertFile, ca);
  }
  // The last word is OpenSSL's: whatever it would refuse at the first handshake is refused now.
  try {
    tls.createSecureContext({ cert, key, ca });
  } catch (err) {
    throw new TlsFileError(certFlag, files.certFile, `OpenSSL refuses the certificate and key (${errorText(err)})`);
  }
  return { cert, key, ca, certificate: summarize(leaf) };
}

function readFlagFile(flag: string, file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT'
      ? 'no such file'
      : code === 'EACCES' || code === 'EPERM'
        ? 'permission denied'
        : code === 'EISDIR'
          ? 'a directory, not a file'
          : errorText(err);
    throw new TlsFileError(flag, file, `cannot read '${file}': ${why}${code !== undefined ? ` (${code})` : ''}`);
  }
}

function parseCertificates(flag: string, file: string, pem: Buffer): X509Certificate[] {
  const blocks = pem.toString('latin1').match(PEM_CERTIFICATE) ?? [];
  if (blocks.length === 0) {
    throw new TlsFileError(flag, file, `expected PEM certificates (-----BEGIN CERTIFICATE-----) in '${file}', got ${describeContent(pem)}`);
  }
  return blocks.map((block, i) => {
    try {
      return new X509Certificate(block);
    } catch (err) {
      throw new TlsFileError(flag, file, `certificate ${i + 1} of ${blocks.length} in '${file}' is not a valid X.509 certificate (${errorText(err)})`);
    }
  });
}

function parsePrivateKey(flag: string, file: string, pem: Buffer): KeyObject {
  const text = pem.toString('latin1');
  if (/-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: 4,ENCRYPTED/.test(text)) {
    throw new TlsFileError(flag, file, `expected an unencrypted PEM private key in '${file}', got an encrypted one (hotpath takes no passphrase)`);
  }
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(text)) {
    throw new TlsFileError(flag, file, `expected a PEM private key (-----BEGIN PRIVATE KEY-----) in '${file}', got ${describeContent(pem)}`);
  }
  try {
    return createPrivateKey(pem);
  } catch (err) {
    throw new TlsFileError(flag, file, `the private key in '${file}' cannot be read (${errorText(err)})`);
  }
}

/** What a file holds, for a message, without echoing it: it may be a key. */
function describeContent(bytes: Buffer): string {
  if (bytes.length === 0) return 'an empty file';
  const first = /-----BEGIN ([A-Z0-9 ]{1,40})-----/.exec(bytes.toString('latin1'));
  if (first !== null) return `a PEM '${first[1]}' block`;
  return `${bytes.length} bytes with no PEM block`;
}

function summarize(certificate: X509Certificate): CertificateSummary {
  const now = Date.now();
  const notBefore = new Date(certificate.validFrom);
  const notAfter = new Date(certificate.validTo);
  return {
    subject: oneLine(certificate.subject),
    issuer: oneLine(certificate.issuer),
    serial: certificate.serialNumber,
    notBefore: notBefore.toISOString(),
    notAfter: notAfter.toISOString(),
    fingerprint256: certificate.fingerprint256,
    outsideValidity: now < notBefore.getTime() || now > notAfter.getTime(),
  };
}

/** X509Certificate writes a name one attribute a line. */
function oneLine(name: string): string {
  return name.split('\n').filter((part) => part !== '').join(', ');
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

type IdentityListener = experimental.IdentityCertificateUpdateListener;
type CaListener = experimental.CaCertificateUpdateListener;

/**
 * A grpc-js CertificateProvider that publishes what it is given. grpc-js
 * subscribes when the server binds; the first answer is sent on a microtask,
 * because grpc-js registers its own watcher only after subscribing, and an
 * answer given synchronously would reach no server.
 */
class PublishedCertificates implements experimental.CertificateProvider {
  private readonly identityListeners = new Set<IdentityListener>();
  private readonly caListeners = new Set<CaListener>();

  constructor(private material: TlsMaterial) {}

  publish(material: TlsMaterial): void {
    this.material = material;
    for (const listener of this.caListeners) listener(this.caUpdate());
    for (const listener of this.identityListeners) listener(this.identityUpdate());
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    queueMicrotask(() => {
      if (this.caListeners.has(listener)) listener(this.caUpdate());
    });
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    queueMicrotask(() => {
      if (this.identityListeners.has(listener)) listener(this.identityUpdate());
    });
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
  }

  private caUpdate(): experimental.CaCertificateUpdate | null {
    return this.material.ca === undefined ? null : { caCertificate: this.material.ca };
  }

  private identityUpdate(): experimental.IdentityCertificateUpdate {
    return { certificate: this.material.cert, privateKey: this.material.key };
  }
}

/** One door's TLS: its files, the material in use, and the servers that use it. */
export class ServerTls {
  private material: TlsMaterial;
  private readonly provider: PublishedCertificates;
  private readonly httpsServers = new Set<tls.Server>();

  /** Reads and checks the files now; throws TlsFileError. */
  constructor(
    readonly door: TlsDoor,
    readonly files: TlsFiles,
  ) {
    this.material = readTlsMaterial(door, files);
    this.provider = new PublishedCertificates(this.material);
  }

  get mutual(): boolean {
    return this.files.mutual;
  }

  /** The certificate new handshakes present. */
  get certificate(): CertificateSummary {
    return this.material.certificate;
  }

  /**
   * Reads the files again and, when every check passes, makes new handshakes
   * use them; open connections keep theirs. Throws TlsFileError and keeps the
   * current material when a check fails.
   */
  reload(): CertificateSummary {
    const material = readTlsMaterial(this.door, this.files);
    this.material = material;
    this.provider.publish(material);
    for (const server of this.httpsServers) server.setSecureContext(secureContextOptions(material));
    return material.certificate;
  }

  /** grpc-js server credentials that follow reloads. */
  grpcCredentials(): ServerCredentials {
    // grpc-js names the first parameter caCertificateProvider but uses it as the identity provider.
    return experimental.createCertificateProviderServerCredentials(
      this.provider,
      this.files.mutual ? this.provider : null,
      this.files.mutual,
    );
  }

  /** Options for `https.createServer`; pass the server to `follow` so reloads reach it. */
  httpsOptions(): https.ServerOptions {
    return {
      ...secureContextOptions(this.material),
      requestCert: this.files.mutual,
      rejectUnauthorized: this.files.mutual,
    };
  }

  /** Makes `server` (an https.Server built from `httpsOptions()`) take each reloaded certificate, until it closes. */
  follow(server: net.Server): void {
    if (!(server instanceof tls.Server)) throw new TypeError(`ServerTls.follow: expected a TLS server for ${this.door}, got a plaintext one`);
    this.httpsServers.add(server);
    server.once('close', () => this.httpsServers.delete(server));
  }
}

function secureContextOptions(material: TlsMaterial): tls.SecureContextOptions {
  // The CA only matters for verifying client certificates (mutual TLS); without it Node's defaults apply.
  return material.ca === undefined ? { cert: material.cert, key: material.key } : { cert: material.cert, key: material.key, ca: material.ca };
}
