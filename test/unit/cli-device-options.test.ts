/**
 * The command line's device-ledger flags: --device, --tenant-device,
 * --device-memory-capacity, --device-probe-interval, device_quota in the
 * tenants file, and the --device-ledger host test hook. Each bad value is
 * refused with a message naming the flag and what was expected.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';

const base = ['--model-repository', 'models'];
const GiB = 2 ** 30;

describe('device ledger flags', () => {
  it('default to device 0, no device quotas, the device itself as the capacity, a 5 s probe', () => {
    const options = parseServeOptions(base);
    expect(options.device).toEqual({ ordinal: 0, capacityBytes: undefined, tenants: [], backend: 'cuda' });
    expect(options.deviceProbeIntervalMs).toBe(5000);
  });

  it('take a device, device quotas, a capacity and a probe interval', () => {
    const options = parseServeOptions([
      ...base,
      '--device', '1',
      '--tenant', 'ads:1GiB', '--tenant-device', 'ads:4GiB',
      '--device-memory-capacity', '16GiB',
      '--device-probe-interval', '0.5',
    ]);
    expect(options.device).toEqual({
      ordinal: 1,
      capacityBytes: 16 * GiB,
      tenants: [{ name: 'ads', quotaBytes: 4 * GiB }],
      backend: 'cuda',
    });
    expect(options.deviceProbeIntervalMs).toBe(500);
  });

  it('read device_quota from the tenants file next to the host quota', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cli-'));
    const file = path.join(dir, 'tenants.json');
    await writeFile(file, JSON.stringify({ tenants: { ads: { quota: '1GiB', device_quota: '2GiB' } } }));
    const options = parseServeOptions([...base, '--tenants-file', file]);
    expect(options.tenants).toEqual([{ name: 'ads', quotaBytes: GiB }]);
    expect(options.device.tenants).toEqual([{ name: 'ads', quotaBytes: 2 * GiB }]);
  });

  it('refuse a device quota for a tenant with no host quota, naming the fix', () => {
    expect(() => parseServeOptions([...base, '--tenant-device', 'ads:1GiB'])).toThrow(
      /--tenant-device ads: tenant 'ads' has no host quota; add --tenant ads:QUOTA/,
    );
  });

  it('refuse malformed values by flag', () => {
    expect(() => parseServeOptions([...base, '--device=-1'])).toThrow(/--device: expected an integer in 0\.\.1024, got '-1'/);
    expect(() => parseServeOptions([...base, '--device-memory-capacity', 'lots'])).toThrow(
      /--device-memory-capacity: expected a byte size/,
    );
    expect(() => parseServeOptions([...base, '--device-probe-interval', '0'])).toThrow(/--device-probe-interval: expected a number/);
    expect(() => parseServeOptions([...base, '--tenant-device', '4GiB'])).toThrow(/--tenant-device: expected NAME:QUOTA/);
  });

  it('allow the host-backed device ledger only as a fault-injection test hook', () => {
    expect(() => parseServeOptions([...base, '--device-ledger', 'host'])).toThrow(
      /--device-ledger host is a test hook: it needs --enable-fault-injection/,
    );
    expect(() => parseServeOptions([...base, '--device-ledger', 'gpu', '--enable-fault-injection'])).toThrow(
      /--device-ledger: expected 'host', got 'gpu'/,
    );
    expect(parseServeOptions([...base, '--device-ledger', 'host', '--enable-fault-injection']).device.backend).toBe('host');
  });
});
