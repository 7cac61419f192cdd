/**
 * Test certificates, made in the test with node-forge (no openssl needed):
 * certificate authorities, server certificates for 127.0.0.1 and localhost,
 * and client certificates. RSA keys come from node:crypto, which makes them
 * far faster than forge's JavaScript; forge builds and signs the certificates.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import forge from 'node-forge';

export interface Pem {
  readonly cert: string;
  readonly key: string;
}

export interface CertificateAuthority extends Pem {
  readonly name: string;
  /** A server certificate signed by this CA, valid for 127.0.0.1, ::1 and localhost. */
  server(commonName: string, options?: CertificateOptions): Pem & { readonly serial: string };
  /** A client certificate signed by this CA. */
  client(commonName: string, options?: CertificateOptions): Pem & { readonly serial: string };
}

export interface CertificateOptions {
  /** Validity start; default: an hour ago. */
  readonly notBefore?: Date;
  /** Validity end; default: a day from now. */
  readonly notAfter?: Date;
}

function keyPair(): { privateKey: forge.pki.rsa.PrivateKey; publicKey: forge.pki.rsa.PublicKey; keyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
  });
  return {
    privateKey: forge.pki.privateKeyFromPem(privateKey) as forge.pki.rsa.PrivateKey,
    publicKey: forge.pki.publicKeyFromPem(publicKey) as forge.pki.rsa.PublicKey,
    keyPem: privateKey,
  };
}

/** A positive serial number, as hex (the form Node's X509Certificate and getPeerCertificate report, upper-cased). */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0]! & 0x7f) | 0x10;
  return bytes.toString('hex').toUpperCase();
}

function validity(certificate: forge.pki.Certificate, options: CertificateOptions): void {
  certificate.validity.notBefore = options.notBefore ?? new Date(Date.now() - 3600_000);
  certificate.validity.notAfter = options.notAfter ?? new Date(Date.now() + 24 * 3600_000);
}

/** A self-signed certificate authority. */
export function createCertificateAuthority(name: string): CertificateAuthority {
  const keys = keyPair();
  const ca = forge.pki.createCertificate();
  ca.publicKey = keys.publicKey;
  ca.serialNumber = serialNumber();
  validity(ca, {});
  const subject = [{ name: 'commonName', value: name }, { name: 'organizationName', value: 'hotpath tests' }];
  ca.setSubject(subject);
  ca.setIssuer(subject);
  ca.setExtensions([
    { name: 'basicConstraints', cA: true, critical: true },
    { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    { name: 'subjectKeyIdentifier' },
  ]);
  ca.sign(keys.privateKey, forge.md.sha256.create());

  const issue = (commonName: string, usage: 'server' | 'client', options: CertificateOptions = {}) => {
    const leafKeys = keyPair();
    const leaf = forge.pki.createCertificate();
    leaf.publicKey = leafKeys.publicKey;
    const serial = serialNumber();
    leaf.serialNumber = serial;
    validity(leaf, options);
    leaf.setSubject([{ name: 'commonName', value: commonName }]);
    leaf.setIssuer(ca.subject.attributes);
    leaf.setExtensions([
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      usage === 'server' ? { name: 'extKeyUsage', serverAuth: true } : { name: 'extKeyUsage', clientAuth: true },
      ...(usage === 'server'
        ? [{
            name: 'subjectAltName',
            altNames: [
              { type: 2, value: 'localhost' },
              { type: 7, ip: '127.0.0.1' },
              { type: 7, ip: '::1' },
            ],
          }]
        : []),
      { name: 'authorityKeyIdentifier', keyIdentifier: ca.generateSubjectKeyIdentifier().getBytes() },
    ]);
    leaf.sign(keys.privateKey, forge.md.sha256.create());
    return { cert: forge.pki.certificateToPem(leaf), key: leafKeys.keyPem, serial };
  };

  return {
    name,
    cert: forge.pki.certificateToPem(ca),
    key: keys.keyPem,
    server: (commonName, options) => issue(commonName, 'server', options),
    client: (commonName, options) => issue(commonName, 'client', options),
  };
}
