/**
 * The connection flags shared by hotpath perf, tune and replay
 * (src/client/connection-flags.ts): the mutual-TLS pairing rule, and replay's
 * command line refusing half a pair (perf's is in perf-flags.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkClientCertPair, CONNECTION_SECURITY_OPTIONS } from '../../src/client/connection-flags.js';
import { UsageError } from '../../src/common/flag-values.js';

const root = fileURLToPath(new URL('../..', import.meta.url));

describe('connection flags', () => {
  it('takes both halves of mutual TLS or neither', () => {
    expect(() => checkClientCertPair({})).not.toThrow();
    expect(() => checkClientCertPair({ 'client-cert': 'c.pem', 'client-key': 'k.pem' })).not.toThrow();
    for (const half of [{ 'client-cert': 'c.pem' }, { 'client-key': 'k.pem' }]) {
      expect(() => checkClientCertPair(half)).toThrow(UsageError);
      expect(() => checkClientCertPair(half)).toThrow('--client-cert and --client-key: expected both (mutual TLS) or neither');
    }
    expect(Object.keys(CONNECTION_SECURITY_OPTIONS)).toEqual(['api-key', 'tls', 'root-cert', 'client-cert', 'client-key', 'server-name']);
  });

  it('hotpath replay refuses --client-cert without --client-key (exit 2, the rule named)', () => {
    const run = spawnSync(
      process.execPath,
      ['dist/src/cli.js', 'replay', '--archive', 'nowhere', '--url', '127.0.0.1:1', '--client-cert', 'package.json'],
      { cwd: root, encoding: 'utf8', timeout: 20_000 },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/--client-cert and --client-key: expected both \(mutual TLS\) or neither/);
  });
});
