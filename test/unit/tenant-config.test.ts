import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { mergeTenants, parseByteSize, parseTenantFlag, readTenantsFile } from '../../src/tenancy/tenant-config.js';

describe('tenant configuration', () => {
  it('parses binary and decimal size suffixes', () => {
    expect(parseByteSize('4096', 'q')).toBe(4096);
    expect(parseByteSize('512MiB', 'q')).toBe(512 * 2 ** 20);
    expect(parseByteSize('1.5GiB', 'q')).toBe(1.5 * 2 ** 30);
    expect(parseByteSize('100MB', 'q')).toBe(100e6);
    expect(parseByteSize('2g', 'q')).toBe(2 * 2 ** 30);
  });

  it('names the flag and the bad value', () => {
    expect(() => parseByteSize('12 parsecs', '--tenant ads')).toThrow(/--tenant ads: expected a byte size such as 4096, 512MiB, 2GiB or 100MB, got '12 parsecs'/);
    expect(() => parseByteSize('0', '--tenant ads')).toThrow(/expected a positive size, got '0'/);
    expect(() => parseTenantFlag('512MiB')).toThrow(/--tenant: expected NAME:QUOTA .* got '512MiB'/);
    expect(() => parseTenantFlag('a b:1GiB')).toThrow(/got 'a b:1GiB'/);
  });

  it('parses --tenant NAME:QUOTA', () => {
    expect(parseTenantFlag('ads:512MiB')).toEqual({ name: 'ads', quotaBytes: 512 * 2 ** 20 });
  });

  it('reads a tenants file and refuses duplicates across sources', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tenants-'));
    const file = path.join(dir, 'tenants.json');
    await writeFile(file, JSON.stringify({ tenants: { fraud: '1GiB', ads: 1024 } }));
    const fromFile = readTenantsFile(file);
    expect(fromFile.host).toEqual([{ name: 'fraud', quotaBytes: 2 ** 30 }, { name: 'ads', quotaBytes: 1024 }]);
    expect(fromFile.device).toEqual([]);
    expect(() => mergeTenants(fromFile.host, [parseTenantFlag('ads:2KiB')])).toThrow(/tenant 'ads' is configured more than once/);
    await writeFile(file, JSON.stringify({ tenant: {} }));
    expect(() => readTenantsFile(file)).toThrow(/expected \{"tenants": \{"NAME": "QUOTA", \.\.\.\}\}/);
  });

  it('reads host and device quotas as separate ledgers', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'tenants-'));
    const file = path.join(dir, 'tenants.json');
    await writeFile(file, JSON.stringify({ tenants: { ads: { quota: '1GiB', device_quota: '2GiB' }, fraud: { device_quota: 4096 } } }));
    expect(readTenantsFile(file)).toEqual({
      host: [{ name: 'ads', quotaBytes: 2 ** 30 }],
      device: [{ name: 'ads', quotaBytes: 2 ** 31 }, { name: 'fraud', quotaBytes: 4096 }],
      keys: [],
      limits: [],
    });
    expect(parseTenantFlag('ads:1GiB', '--tenant-device')).toEqual({ name: 'ads', quotaBytes: 2 ** 30 });
    expect(() => parseTenantFlag('1GiB', '--tenant-device')).toThrow(/--tenant-device: expected NAME:QUOTA/);
    await writeFile(file, JSON.stringify({ tenants: { ads: { gpu: '1GiB' } } }));
    expect(() => readTenantsFile(file)).toThrow(/tenant 'ads': unknown field 'gpu'; expected any of 'quota', 'device_quota', 'keys', 'rate', 'burst', 'max_inflight'/);
    await writeFile(file, JSON.stringify({ tenants: { ads: { device_quota: true } } }));
    expect(() => readTenantsFile(file)).toThrow(/tenant 'ads': 'device_quota': expected a size string or number, got true/);
  });
});
