import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseKeyHash, readTenantsFile } from '../../src/tenancy/tenant-config.js';

const hashOf = (key: string): string => `sha256:${createHash('sha256').update(key).digest('hex')}`;

async function tenantsFile(tenants: unknown): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tenant-keys-'));
  const file = path.join(dir, 'tenants.json');
  await writeFile(file, JSON.stringify({ tenants }));
  return file;
}

describe('tenants file: keys and limits', () => {
  it('reads every agreed field, and the old forms alongside', async () => {
    const file = await tenantsFile({
      ads: {
        quota: '512MiB', device_quota: '2GiB',
        keys: [hashOf('ads-key-1'), hashOf('ads-key-2').toUpperCase().replace('SHA256:', 'sha256:')],
        rate: 200, burst: 400, max_inflight: 32,
      },
      fraud: '1GiB',
      search: { keys: [hashOf('search-key')], rate: 2.5 },
      batch: { max_inflight: 4 },
    });
    const parsed = readTenantsFile(file);
    expect(parsed.host).toEqual([{ name: 'ads', quotaBytes: 512 * 2 ** 20 }, { name: 'fraud', quotaBytes: 2 ** 30 }]);
    expect(parsed.device).toEqual([{ name: 'ads', quotaBytes: 2 * 2 ** 30 }]);
    expect(parsed.keys.map((k) => [k.tenant, k.sha256.toString('hex')])).toEqual([
      ['ads', createHash('sha256').update('ads-key-1').digest('hex')],
      ['ads', createHash('sha256').update('ads-key-2').digest('hex')],
      ['search', createHash('sha256').update('search-key').digest('hex')],
    ]);
    for (const key of parsed.keys) expect(key.sha256.length).toBe(32);
    expect(parsed.limits).toEqual([
      { tenant: 'ads', rate: 200, burst: 400, maxInflight: 32 },
      // burst defaults to max(1, ceil(rate)).
      { tenant: 'search', rate: 2.5, burst: 3 },
      { tenant: 'batch', maxInflight: 4 },
    ]);
  });

  it('defaults burst to 1 for a rate below one per second', async () => {
    const parsed = readTenantsFile(await tenantsFile({ slow: { rate: 0.2 } }));
    expect(parsed.limits).toEqual([{ tenant: 'slow', rate: 0.2, burst: 1 }]);
    expect(parsed.keys).toEqual([]);
    expect(parsed.host).toEqual([]);
  });

  it('refuses malformed key hashes without echoing a raw key', async () => {
    const raw = 'my-secret-raw-api-key-0123456789';
    const file = await tenantsFile({ ads: { keys: [raw] } });
    let message = '';
    try {
      readTenantsFile(file);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/tenant 'ads': 'keys'\[0\]: expected 'sha256:' followed by 64 hex digits .* got a string of 32 characters$/);
    expect(message).not.toContain(raw);
    expect(() => readTenantsFile(file)).toThrow(/printf %s "\$KEY" \| sha256sum/);

    await writeFile(file, JSON.stringify({ tenants: { ads: { keys: [`sha256:${'ab'.repeat(31)}`] } } }));
    expect(() => readTenantsFile(file)).toThrow(/'keys'\[0\]: expected 'sha256:' followed by 64 hex digits .* got a string of 69 characters starting 'sha256:'/);
    await writeFile(file, JSON.stringify({ tenants: { ads: { keys: hashOf('k') } } }));
    expect(() => readTenantsFile(file)).toThrow(/tenant 'ads': 'keys': expected an array of "sha256:HEX" strings, got string/);
    await writeFile(file, JSON.stringify({ tenants: { ads: { keys: [42] } } }));
    expect(() => readTenantsFile(file)).toThrow(/'keys'\[0\]: expected 'sha256:' .* got 42/);
    expect(() => parseKeyHash(`sha256:${'g'.repeat(64)}`, 'k')).toThrow(/k: expected 'sha256:'/);
  });

  it('refuses a key hash listed for two tenants', async () => {
    const file = await tenantsFile({ ads: { keys: [hashOf('shared')] }, fraud: { keys: [hashOf('other'), hashOf('shared')] } });
    expect(() => readTenantsFile(file)).toThrow(/tenant 'fraud': 'keys'\[1\]: the same key hash is already listed for tenant 'ads'/);
  });

  it('refuses bad limits, naming the field and the value', async () => {
    const cases: [unknown, RegExp][] = [
      [{ rate: 0 }, /tenant 'ads': 'rate': expected requests per second, a number > 0, got 0/],
      [{ rate: -1 }, /'rate': expected .* got -1/],
      [{ rate: '200' }, /'rate': expected .* got "200"/],
      [{ rate: 10, burst: 0 }, /'burst': expected an integer >= 1, got 0/],
      [{ rate: 10, burst: 1.5 }, /'burst': expected an integer >= 1, got 1.5/],
      [{ burst: 10 }, /'burst': expected together with 'rate'/],
      [{ max_inflight: 0 }, /'max_inflight': expected an integer >= 1, got 0/],
      [{ max_inflight: true }, /'max_inflight': expected an integer >= 1, got true/],
      [{ maxInflight: 3 }, /unknown field 'maxInflight'; expected any of 'quota', 'device_quota', 'keys', 'rate', 'burst', 'max_inflight'/],
    ];
    for (const [entry, error] of cases) {
      expect(() => readTenantsFile(tenantsFileSync(entry))).toThrow(error);
    }
  });
});

let syncDir: string | undefined;
function tenantsFileSync(entry: unknown): string {
  syncDir ??= mkdtempSync(path.join(os.tmpdir(), 'tenant-keys-'));
  const file = path.join(syncDir, `t${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(file, JSON.stringify({ tenants: { ads: entry } }));
  return file;
}
