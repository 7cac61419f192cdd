import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/common/flag-values.js';
import { concurrencyRange, parsePerfArgs } from '../../src/perf/perf-flags.js';

describe('parsePerfArgs', () => {
  it("takes perf_analyzer's short and long flags, with its defaults", () => {
    const settings = parsePerfArgs(['-m', 'ctr', '-x', '2', '-u', 'host:9001', '-i', 'grpc', '-b', '4', '--concurrency-range', '2:8:3',
      '-p', '300', '-s', '5', '-r', '6', '-f', 'out.csv', '--shape', 'ids:16', '--shape', 'image:3,224,224'], {});
    expect(settings).toMatchObject({
      model: 'ctr', version: '2', url: 'host:9001', batchSize: 4, connections: 4, inputData: 'random',
      measurementIntervalMs: 300, stabilityPercentage: 5, maxTrials: 6, csvFile: 'out.csv', apiKey: undefined,
    });
    expect(settings.loads).toEqual([2, 5, 8].map((value) => ({ kind: 'concurrency', value })));
    expect([...settings.shapes]).toEqual([['ids', [16]], ['image', [3, 224, 224]]]);
    expect(parsePerfArgs(['-m', 'ctr'], {})).toMatchObject({ url: 'localhost:8001', loads: [{ kind: 'concurrency', value: 1 }], measurementIntervalMs: 5000, stabilityPercentage: 10, maxTrials: 10 });
    expect(parsePerfArgs(['-m', 'ctr'], { HOTPATH_API_KEY: 'k' }).apiKey).toBe('k');
    expect(parsePerfArgs(['-m', 'ctr'], {}).tls).toBeUndefined();
    expect(parsePerfArgs(['-m', 'ctr', '--root-cert', 'ca.pem'], {}).tls).toEqual({ rootCert: 'ca.pem', clientCert: undefined, clientKey: undefined, serverName: undefined });
    expect(parsePerfArgs(['-m', 'ctr', '--tls'], {}).tls).toBeDefined();
  });

  it('-i http defaults to Triton\'s HTTP port; --input-data takes a file path', () => {
    expect(parsePerfArgs(['-m', 'ctr', '-i', 'http'], {})).toMatchObject({ protocol: 'http', url: 'localhost:8000' });
    expect(parsePerfArgs(['-m', 'ctr', '-i', 'HTTP', '-u', 'h:9'], {})).toMatchObject({ protocol: 'http', url: 'h:9' });
    expect(parsePerfArgs(['-m', 'ctr'], {})).toMatchObject({ protocol: 'grpc', url: 'localhost:8001' });
    expect(parsePerfArgs(['-m', 'ctr', '--input-data', 'data.json'], {}).inputData).toEqual({ file: 'data.json' });
    expect(parsePerfArgs(['-m', 'ctr', '--input-data', 'zero'], {}).inputData).toBe('zero');
  });

  it('refuses what this version does not do, naming the flag', () => {
    const refusal = (argv: string[]) => {
      try {
        parsePerfArgs(argv, {});
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
      throw new Error('expected a usage error');
    };
    expect(refusal(['-m', 'ctr', '-i', 'quic'])).toBe("-i: expected grpc or http, got 'quic'");
    expect(refusal(['-b', '2'])).toBe('-m: expected the model name');
    expect(refusal(['-m', 'ctr', '-u', 'grpcs://host:1'])).toMatch(/^-u: expected HOST:PORT/);
    expect(refusal(['-m', 'ctr', '--shape', 'ids'])).toMatch(/^--shape: expected NAME:DIMS/);
    expect(refusal(['-m', 'ctr', '--client-cert', 'c.pem'])).toBe('--client-cert and --client-key: expected both (mutual TLS) or neither');
  });
});

describe('--request-rate-range', () => {
  it('is the open loop: rates, constant or poisson, never together with --concurrency-range', () => {
    const settings = parsePerfArgs(['-m', 'ctr', '--request-rate-range', '100:300:100', '--request-distribution', 'poisson'], {});
    expect(settings.loads).toEqual([100, 200, 300].map((value) => ({ kind: 'rate', value })));
    expect(settings.distribution).toBe('poisson');
    expect(parsePerfArgs(['-m', 'ctr', '--request-rate-range', '0.5:1:0.1'], {}).loads.map((l) => l.value)).toEqual([0.5, 0.6, 0.7, 0.8, 0.9, 1]);
    expect(() => parsePerfArgs(['-m', 'ctr', '--request-rate-range', '10', '--concurrency-range', '2'], {})).toThrow(/expected one of them \(closed or open loop\), got both/);
    expect(() => parsePerfArgs(['-m', 'ctr', '--request-distribution', 'poisson'], {})).toThrow('--request-distribution: expected together with --request-rate-range');
  });
});

describe('concurrencyRange', () => {
  it('expands START[:END[:STEP]], STEP 1 by default', () => {
    expect(concurrencyRange('4')).toEqual([4]);
    expect(concurrencyRange('1:4')).toEqual([1, 2, 3, 4]);
    expect(concurrencyRange('1:16:5')).toEqual([1, 6, 11, 16]);
    expect(() => concurrencyRange('8:4')).toThrow(/--concurrency-range END: expected an integer in 8\.\.100000, got '4'/);
    expect(() => concurrencyRange('0')).toThrow(UsageError);
  });
});
