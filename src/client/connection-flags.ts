/**
 * The command-line flags that say how a tool reaches a server that asks for
 * a key or TLS, shared by the tools that call one (`hotpath perf`, `hotpath
 * tune`, `hotpath replay`), so their spelling and their pairing rule have
 * one home. Each tool reads the files itself, where its messages name them.
 *
 * Pure; any thread.
 */
import { UsageError } from '../common/flag-values.js';

/** node:util parseArgs specs: --api-key, --tls, --root-cert, --client-cert, --client-key, --server-name. */
export const CONNECTION_SECURITY_OPTIONS = {
  'api-key': { type: 'string' },
  tls: { type: 'boolean' },
  'root-cert': { type: 'string' },
  'client-cert': { type: 'string' },
  'client-key': { type: 'string' },
  'server-name': { type: 'string' },
} as const;

/** Mutual TLS needs both halves: a UsageError for --client-cert without --client-key, or the reverse. */
export function checkClientCertPair(values: { readonly 'client-cert'?: unknown; readonly 'client-key'?: unknown }): void {
  if ((values['client-cert'] === undefined) !== (values['client-key'] === undefined)) {
    throw new UsageError('--client-cert and --client-key: expected both (mutual TLS) or neither');
  }
}
