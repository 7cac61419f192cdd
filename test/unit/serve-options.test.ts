/**
 * `hotpath serve`'s options table (cli/serve-options.ts) against
 * tritonserver's command line: every flag of `tritonserver --help` is
 * implemented, mapped, or accepted with a one-line warning; none is fatal.
 * And createServer's options go through the same defaults and checks.
 */
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { fillServeOptions, parseServeOptions, readServeCommandLine, SERVE_FLAG_NAMES, SERVE_USAGE } from '../../src/cli/serve-options.js';
import { NO_EFFECT_FLAGS } from '../../src/cli/triton-flags.js';

const base = ['--model-repository', 'models'];

/** tritonserver's flags (r24/r25 `tritonserver --help`), with a value each takes. */
const TRITON_FLAGS: Record<string, string | undefined> = {
  'log-verbose': '1', 'log-info': 'true', 'log-warning': 'true', 'log-error': 'true', 'log-format': 'default', 'log-file': undefined,
  id: 'triton', 'exit-timeout-secs': '30', 'model-store': 'models', 'model-repository': 'models', 'exit-on-error': 'false',
  'disable-auto-complete-config': undefined, 'strict-model-config': 'false', 'strict-readiness': 'true', 'model-control-mode': 'none',
  'repository-poll-secs': '15', 'model-load-thread-count': '4', 'model-load-retry-count': '0', 'model-namespacing': 'false',
  'enable-peer-access': 'true', 'allow-http': 'true', 'http-address': '0.0.0.0', 'http-port': '8000', 'reuse-http-port': 'false',
  'http-header-forward-pattern': 'x-.*', 'http-thread-count': '8', 'http-restricted-api': undefined, 'allow-grpc': 'true',
  'grpc-address': '0.0.0.0', 'grpc-port': '8001', 'reuse-grpc-port': 'false', 'grpc-header-forward-pattern': 'x-.*',
  'grpc-infer-allocation-pool-size': '8', 'grpc-max-response-pool-size': '8', 'grpc-use-ssl': 'false', 'grpc-use-ssl-mutual': 'false',
  'grpc-infer-response-compression-level': 'none', 'grpc-keepalive-time': '7200000', 'grpc-keepalive-timeout': '20000',
  'grpc-keepalive-permit-without-calls': 'false', 'grpc-http2-max-pings-without-data': '2',
  'grpc-http2-min-recv-ping-interval-without-data': '300000', 'grpc-http2-max-ping-strikes': '2', 'grpc-max-connection-age': '0',
  'grpc-max-connection-age-grace': '0', 'grpc-restricted-protocol': undefined, 'allow-sagemaker': 'false', 'sagemaker-port': '8080',
  'sagemaker-safe-port-range': '8081-9000', 'sagemaker-thread-count': '8', 'allow-vertex-ai': 'false', 'vertex-ai-port': '8080',
  'vertex-ai-thread-count': '8', 'vertex-ai-default-model': 'm', 'allow-metrics': 'true', 'allow-gpu-metrics': 'false',
  'allow-cpu-metrics': 'true', 'metrics-address': '0.0.0.0', 'metrics-port': '8002', 'metrics-interval-ms': '2000',
  'metrics-config': 'summary_latencies=true', 'trace-config': 'level=OFF', 'trace-file': '/tmp/trace.json', 'trace-level': 'OFF',
  'trace-rate': '1000', 'trace-count': '-1', 'trace-log-frequency': '0', 'backend-directory': '/opt/tritonserver/backends',
  'backend-config': 'onnxruntime,default-max-batch-size=4', 'repoagent-directory': '/opt/tritonserver/repoagents',
  'cache-config': 'local,size=1048576', 'cache-directory': '/opt/tritonserver/caches', 'rate-limit': 'off',
  'rate-limit-resource': 'R1:10', 'pinned-memory-pool-byte-size': '268435456', 'cuda-memory-pool-byte-size': '0:67108864',
  'cuda-virtual-address-size': '0:1073741824', 'min-supported-compute-capability': '6.0', 'buffer-manager-thread-count': '0',
  'host-policy': 'gpu_0,numa-node=0', 'model-load-gpu-limit': '0:0.8', 'response-cache-byte-size': '1048576',
};

describe("every tritonserver flag", () => {
  it('is known to the table', () => {
    for (const flag of Object.keys(TRITON_FLAGS)) expect(SERVE_FLAG_NAMES, `--${flag}`).toContain(flag);
  });

  it('is accepted with a value, none fatal; one with no effect says so in one warning line naming it', async () => {
    const logFile = path.join(await mkdtemp(path.join(os.tmpdir(), 'hotpath-flags-')), 'server.log');
    for (const [flag, value] of Object.entries(TRITON_FLAGS)) {
      if (value === undefined) continue;
      const { warnings } = readServeCommandLine([...base, `--${flag}=${value}`, `--log-file=${logFile}`]);
      if (NO_EFFECT_FLAGS.includes(flag)) {
        expect(warnings.length, `--${flag}`).toBe(1);
        expect(warnings[0]).toMatch(new RegExp(`^--${flag}: accepted, no effect here: \\S.*[^\\n]$`));
      }
    }
  });

  it('are all accepted on one command line together', () => {
    const argv = Object.entries(TRITON_FLAGS).filter(([, v]) => v !== undefined).map(([flag, value]) => `--${flag}=${value}`);
    const { options, warnings } = readServeCommandLine(argv);
    expect(options.modelRepositories).toEqual([path.resolve('models')]);
    expect(warnings.length).toBeGreaterThanOrEqual(NO_EFFECT_FLAGS.length - 3);
    for (const warning of warnings) expect(warning).not.toContain('\n');
  });
});

describe("Triton's flags that hotpath implements", () => {
  it('--id names the server; --grpc-address and --http-address bind each door', () => {
    const options = parseServeOptions([...base, '--id=triton-a', '--grpc-address=127.0.0.1', '--http-address', '::1']);
    expect(options).toMatchObject({ serverName: 'triton-a', grpcAddress: '127.0.0.1', httpAddress: '::1', host: '0.0.0.0' });
    expect(parseServeOptions(base)).toMatchObject({ serverName: 'hotpath', grpcAddress: undefined, httpAddress: undefined });
    expect(() => parseServeOptions([...base, '--grpc-address=not an address'])).toThrow(/^--grpc-address: expected an IP address or a host name/);
    expect(() => parseServeOptions([...base, '--id='])).toThrow(/^--id: expected a name, got ''$/);
  });

  it('--exit-on-error and --strict-readiness take Triton booleans', () => {
    expect(parseServeOptions(base)).toMatchObject({ exitOnError: false, strictReadiness: true });
    expect(parseServeOptions([...base, '--exit-on-error=true', '--strict-readiness=true'])).toMatchObject({ exitOnError: true, strictReadiness: true });
    expect(() => parseServeOptions([...base, '--exit-on-error=perhaps'])).toThrow(/^--exit-on-error: expected true or false/);
  });

  it('--model-load-thread-count is --model-load-concurrency', () => {
    expect(parseServeOptions([...base, '--model-load-thread-count=6']).modelLoadConcurrency).toBe(6);
    expect(() => parseServeOptions([...base, '--model-load-thread-count=6', '--model-load-concurrency=2'])).toThrow(/are the same flag/);
    expect(() => parseServeOptions([...base, '--model-load-thread-count=0'])).toThrow(/^--model-load-thread-count: expected an integer in 1\.\.64, got '0'$/);
  });

  it('--response-cache-byte-size sizes the cache, 0 = none, and must agree with --cache-config', () => {
    expect(parseServeOptions([...base, '--response-cache-byte-size=1048576']).responseCacheBytes).toBe(1048576);
    expect(parseServeOptions([...base, '--response-cache-byte-size=0']).responseCacheBytes).toBeUndefined();
    expect(parseServeOptions([...base, '--response-cache-byte-size=4096', '--cache-config=local,size=4096']).responseCacheBytes).toBe(4096);
    expect(() => parseServeOptions([...base, '--response-cache-byte-size=4096', '--cache-config=local,size=8192'])).toThrow(/disagree/);
  });

  it('--backend-config sets default-max-batch-size for onnxruntime (or globally), and warns about the rest', () => {
    expect(parseServeOptions(base).defaultMaxBatchSize).toBe(4);
    expect(parseServeOptions([...base, '--backend-config=onnxruntime,default-max-batch-size=16']).defaultMaxBatchSize).toBe(16);
    expect(parseServeOptions([...base, '--backend-config', 'default-max-batch-size=0']).defaultMaxBatchSize).toBe(0);
    const { options, warnings } = readServeCommandLine([...base, '--backend-config=tensorflow,version=2', '--backend-config=onnxruntime,enable-mem-arena=1']);
    expect(options.defaultMaxBatchSize).toBe(4);
    expect(warnings).toEqual([
      "--backend-config=tensorflow,version=2: no effect here: hotpath's one backend is onnxruntime, and default-max-batch-size is its one setting",
      "--backend-config=onnxruntime,enable-mem-arena=1: no effect here: hotpath's one backend is onnxruntime, and default-max-batch-size is its one setting",
    ]);
    expect(() => parseServeOptions([...base, '--backend-config=onnxruntime'])).toThrow(/^--backend-config: expected <backend>,<setting>=<value>/);
  });

  it('--metrics-interval-ms takes milliseconds, fractions allowed', () => {
    expect(parseServeOptions(base).metricsIntervalMs).toBe(1000);
    expect(parseServeOptions([...base, '--metrics-interval-ms=2500.5']).metricsIntervalMs).toBe(2500.5);
    expect(() => parseServeOptions([...base, '--metrics-interval-ms=-1'])).toThrow(/^--metrics-interval-ms: expected a number/);
  });

  it("--log-verbose, --log-info, --log-warning and --log-error map onto the threshold; --log-level wins, with a warning", () => {
    const level = (...args: string[]) => parseServeOptions([...base, ...args]).logLevel;
    expect(level()).toBe('info');
    expect(level('--log-verbose=1')).toBe('debug');
    expect(level('--log-verbose', '3')).toBe('trace');
    expect(level('--log-verbose=0', '--log-info=true')).toBe('info');
    expect(level('--log-info=false')).toBe('warn');
    expect(level('--log-info=false', '--log-warning=false')).toBe('error');
    expect(level('--log-info=false', '--log-warning=false', '--log-error=false')).toBe('silent');
    const { options, warnings } = readServeCommandLine([...base, '--log-level=error', '--log-verbose=1']);
    expect(options.logLevel).toBe('error');
    expect(warnings).toEqual(['--log-level error is given: it sets the threshold, and --log-verbose have no effect']);
    expect(() => level('--log-verbose=lots')).toThrow(/^--log-verbose: expected an integer/);
  });

  it('--log-file is resolved and checked now', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-log-'));
    expect(parseServeOptions([...base, `--log-file=${dir}/hotpath.log`]).logFile).toBe(path.join(dir, 'hotpath.log'));
    expect(() => parseServeOptions([...base, `--log-file=${dir}/missing/dir/hotpath.log`])).toThrow(/^--log-file: expected a file hotpath can append to \(ENOENT\)/);
  });

  it('--http-thread-count runs one thread, with a warning', () => {
    expect(readServeCommandLine([...base, '--http-thread-count=1']).warnings).toEqual([]);
    expect(readServeCommandLine([...base, '--http-thread-count=8']).warnings).toEqual([
      '--http-thread-count 8: no effect here: one thread (the main thread) serves HTTP and gRPC',
    ]);
  });

  it('several --model-repository flags are several roots', () => {
    expect(parseServeOptions(['--model-repository=/a', '--model-store=/b', '--model-repository=/c']).modelRepositories).toEqual(['/a', '/b', '/c']);
  });

  it('an unambiguous prefix is the flag', () => {
    expect(parseServeOptions(['--model-repo=/m', '--grpc-po', '9000', '--strict-read=false'])).toMatchObject({
      modelRepositories: ['/m'], grpcPort: 9000, strictReadiness: false,
    });
  });
});

describe('createServer options (fillServeOptions)', () => {
  it('fill the same defaults as the command line', () => {
    const fromCli = parseServeOptions(base);
    const filled = fillServeOptions({ modelRepositories: [path.resolve('models')] });
    expect(Object.keys(filled).sort()).toEqual(Object.keys(fromCli).sort());
    // Everything but the machine-dependent memory default is equal.
    expect({ ...filled, memoryCapacityBytes: 0 }).toEqual({ ...fromCli, memoryCapacityBytes: 0 });
  });

  it('get every check the command line makes, named as the caller wrote them', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hotpath-embedded-'));
    const roots = { modelRepositories: [dir] };
    expect(() => fillServeOptions({})).toThrow(/^modelRepositories \(or --model-store\) is required$/);
    expect(() => fillServeOptions({ ...roots, grpcPort: 70000 })).toThrow(/^grpcPort: expected an integer in 0\.\.65535, got 70000$/);
    expect(() => fillServeOptions({ ...roots, memoryCapacityBytes: 1024, tenants: [{ name: 'ads', quotaBytes: 4096 }] })).toThrow(
      /^tenants ads: quota 4096 bytes exceeds the memory capacity of 1024 bytes$/,
    );
    expect(() => fillServeOptions({ ...roots, grpcTls: { certFile: path.join(dir, 'no.crt'), keyFile: path.join(dir, 'no.key'), rootCertFile: undefined, mutual: false } }))
      .toThrow(/--grpc-server-cert: cannot read '.*no\.crt': no such file \(ENOENT\)/);
    const routes = path.join(dir, 'routes.yaml');
    await writeFile(routes, 'routes: [ {{{');
    expect(() => fillServeOptions({ ...roots, routesFile: routes })).toThrow(/^routesFile: /);
    expect(() => fillServeOptions({ ...roots, requireApiKey: true })).toThrow(/--require-api-key|key/);
    expect(() => fillServeOptions({ ...roots, modelLoadTimeoutMs: -5 })).toThrow(/^modelLoadTimeoutMs: expected an integer in 0\.\.86400000, got -5$/);
    expect(() => fillServeOptions({ ...roots, allowGrpc: false, allowHttp: false })).toThrow(/^allowGrpc=false and allowHttp=false/);
  });
});

describe('the usage', () => {
  it('lists every flag of the table', () => {
    for (const flag of SERVE_FLAG_NAMES) expect(SERVE_USAGE, `--${flag}`).toContain(`--${flag} `);
  });
});
