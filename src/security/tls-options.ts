/**
 * The doors' TLS flags (options table, common/option-table.ts), as Triton
 * reads them: `--grpc-use-ssl-mutual` implies `--grpc-use-ssl`; the HTTP door
 * has the same five flags. The files are read and checked before anything
 * starts, for the command line and createServer alike, so a missing or
 * unusable file stops start-up with a message naming it.
 */
import path from 'node:path';
import { booleanFlag, UsageError } from '../common/flag-values.js';
import type { FlagValues, OptionEntry } from '../common/option-table.js';
import { readTlsMaterial, TlsFileError, tlsFlag, type TlsDoor, type TlsFiles } from './tls.js';

export interface TlsOptions {
  /** `--grpc-use-ssl...`: the gRPC port's TLS files; undefined: plaintext. */
  grpcTls: TlsFiles | undefined;
  /** `--http-use-ssl...`: the HTTP port's TLS files; undefined: plaintext. */
  httpTls: TlsFiles | undefined;
}

const HELP: Record<TlsDoor, Record<string, string>> = {
  grpc: {
    'use-ssl': 'TLS on the gRPC port (needs --grpc-server-cert and --grpc-server-key)',
    'use-ssl-mutual': 'mutual TLS on the gRPC port: clients need a certificate signed by --grpc-root-cert (implies --grpc-use-ssl)',
    'server-cert': 'PEM certificate chain of the gRPC port',
    'server-key': 'PEM private key of that certificate (unencrypted)',
    'root-cert': 'PEM CA certificates that sign client certificates (mutual TLS)',
  },
  http: {
    'use-ssl': 'HTTPS on the HTTP port (needs --http-server-cert and --http-server-key)',
    'use-ssl-mutual': 'mutual TLS on the HTTP port (needs --http-root-cert; implies --http-use-ssl)',
    'server-cert': 'PEM certificate chain of the HTTP port',
    'server-key': 'PEM private key of that certificate (unencrypted)',
    'root-cert': 'PEM CA certificates that sign client certificates (mutual TLS); SIGHUP reloads every certificate file without dropping connections',
  },
};

function tlsEntry(door: TlsDoor): OptionEntry<Partial<TlsOptions>> {
  const field = door === 'grpc' ? 'grpcTls' : 'httpTls';
  const names = ['use-ssl', 'use-ssl-mutual', 'server-cert', 'server-key', 'root-cert'] as const;
  return {
    flags: names.map((name) => ({
      name: `${door}-${name}`,
      arg: name.startsWith('use-') ? undefined : 'FILE',
      help: HELP[door][name]!,
      triton: door === 'grpc',
    })),
    defaults: () => ({ [field]: undefined }),
    parse: (values) => ({ [field]: tlsFiles(door, values) }),
    check: (options) => {
      const files = options[field];
      if (files === undefined) return;
      try {
        readTlsMaterial(door, files);
      } catch (err) {
        if (err instanceof TlsFileError) throw new UsageError(err.message);
        throw err;
      }
    },
    fields: Object.fromEntries(names.map((name) => [`${door}-${name}`, field])),
  };
}

/** A door's files from its flags; undefined: plaintext. The files themselves are read by the check. */
function tlsFiles(door: TlsDoor, values: FlagValues): TlsFiles | undefined {
  const raw = (name: string) => values[`${door}-${name}`] as string | undefined;
  const useSsl = booleanFlag(tlsFlag(door, 'use-ssl'), raw('use-ssl'), undefined);
  const mutual = booleanFlag(tlsFlag(door, 'use-ssl-mutual'), raw('use-ssl-mutual'), undefined);
  const [certFile, keyFile, rootCertFile] = [raw('server-cert'), raw('server-key'), raw('root-cert')];
  if (!useSsl && !mutual) {
    const file = (['server-cert', 'server-key', 'root-cert'] as const).find((name) => raw(name) !== undefined);
    // Triton ignores the files without --grpc-use-ssl; serving plaintext by mistake is worse than a refusal.
    if (file !== undefined && useSsl === undefined && mutual === undefined) {
      throw new UsageError(
        `${tlsFlag(door, file)}: given without ${tlsFlag(door, 'use-ssl')}; expected ${tlsFlag(door, 'use-ssl')} ` +
          `(or ${tlsFlag(door, 'use-ssl-mutual')}) with it, or ${tlsFlag(door, 'use-ssl')}=false to serve plaintext on purpose`,
      );
    }
    return undefined;
  }
  const enabledBy = mutual ? tlsFlag(door, 'use-ssl-mutual') : tlsFlag(door, 'use-ssl');
  for (const [name, given] of [['server-cert', certFile], ['server-key', keyFile]] as const) {
    if (given === undefined) throw new UsageError(`${enabledBy}: expected ${tlsFlag(door, name)} FILE with it, got none`);
  }
  if (mutual && rootCertFile === undefined) {
    throw new UsageError(`${enabledBy}: expected ${tlsFlag(door, 'root-cert')} FILE with it (the CA certificates that sign client certificates), got none`);
  }
  return {
    certFile: path.resolve(certFile!),
    keyFile: path.resolve(keyFile!),
    rootCertFile: rootCertFile === undefined ? undefined : path.resolve(rootCertFile),
    mutual: mutual ?? false,
  };
}

export const TLS_OPTIONS: readonly OptionEntry<object>[] = [tlsEntry('grpc'), tlsEntry('http')];
