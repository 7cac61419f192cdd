/**
 * Triton's command line on `hotpath serve`: the aliases (--model-store,
 * --exit-timeout-secs, --strict-model-config), model control, the front-door
 * switches, boolean flags in every form Triton and hotpath users write them,
 * sizes with Kubernetes suffixes, the log format, and a message naming the
 * flag, the expected and the actual value for every bad value.
 */
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseServeOptions } from '../../src/cli/serve-options.js';
import { prettyLine } from '../../src/observability/logger.js';
import { parseByteSize } from '../../src/tenancy/tenant-config.js';

const base = ['--model-repository', 'models'];
const MiB = 2 ** 20;
const GiB = 2 ** 30;

describe('defaults', () => {
  it('keep today\'s behaviour when no Triton flag is given', () => {
    const options = parseServeOptions(base);
    expect(options).toMatchObject({
      modelRepositories: [path.resolve('models')],
      maxMessageBytes: 64 * MiB,
      allowGrpc: true,
      allowHttp: true,
      allowMetrics: true,
      modelControlMode: 'default',
      startupModels: [],
      repositoryPollSecs: 15,
      autoCompleteConfig: true,
      drainTimeoutMs: 30_000,
      logFormat: 'json',
      defaultWarmup: true,
      faultInjection: false,
    });
  });
});

describe('aliases', () => {
  it('take --model-store for --model-repository, in both --flag=value and --flag value forms', () => {
    expect(parseServeOptions(['--model-store=/mnt/models']).modelRepositories).toEqual(['/mnt/models']);
    expect(parseServeOptions(['--model-store', '/mnt/models']).modelRepositories).toEqual(['/mnt/models']);
    // The same root twice is one root; two different ones are both served, as Triton serves them.
    expect(parseServeOptions(['--model-store=/mnt/models', '--model-repository=/mnt/models']).modelRepositories).toEqual(['/mnt/models']);
    expect(parseServeOptions(['--model-repository=/b', '--model-store=/a']).modelRepositories).toEqual(['/b', '/a']);
    expect(parseServeOptions(['--model-repository=/a', '--model-repository', '/b']).modelRepositories).toEqual(['/a', '/b']);
    expect(() => parseServeOptions([])).toThrow(/--model-repository \(or --model-store\) is required/);
  });

  it('take --exit-timeout-secs for --drain-timeout, named in its own errors', () => {
    expect(parseServeOptions([...base, '--exit-timeout-secs=12']).drainTimeoutMs).toBe(12_000);
    expect(parseServeOptions([...base, '--drain-timeout', '7']).drainTimeoutMs).toBe(7_000);
    expect(() => parseServeOptions([...base, '--exit-timeout-secs=soon'])).toThrow(
      /--exit-timeout-secs: expected a number in 0\.\.3600, got 'soon'/,
    );
    expect(() => parseServeOptions([...base, '--exit-timeout-secs=5', '--drain-timeout=6'])).toThrow(
      /--drain-timeout and --exit-timeout-secs are the same flag/,
    );
  });

  it('take --strict-model-config=true for --disable-auto-complete-config, and =false for auto-complete on', () => {
    expect(parseServeOptions([...base, '--disable-auto-complete-config']).autoCompleteConfig).toBe(false);
    expect(parseServeOptions([...base, '--disable-auto-complete-config=false']).autoCompleteConfig).toBe(true);
    expect(parseServeOptions([...base, '--strict-model-config=true']).autoCompleteConfig).toBe(false);
    expect(parseServeOptions([...base, '--strict-model-config', 'true']).autoCompleteConfig).toBe(false);
    expect(parseServeOptions([...base, '--strict-model-config=false']).autoCompleteConfig).toBe(true);
    expect(parseServeOptions([...base, '--strict-model-config=true', '--disable-auto-complete-config']).autoCompleteConfig).toBe(false);
    expect(() => parseServeOptions([...base, '--strict-model-config=false', '--disable-auto-complete-config'])).toThrow(
      /--disable-auto-complete-config=true and --strict-model-config=false disagree/,
    );
  });
});

describe('boolean flags', () => {
  it('take the bare --flag, --flag=true|false and --flag true|false, with Triton\'s 1|0|on|off', () => {
    expect(parseServeOptions([...base, '--allow-http=false']).allowHttp).toBe(false);
    expect(parseServeOptions([...base, '--allow-http', 'false']).allowHttp).toBe(false);
    expect(parseServeOptions([...base, '--allow-http=FALSE']).allowHttp).toBe(false);
    expect(parseServeOptions([...base, '--allow-http=0']).allowHttp).toBe(false);
    expect(parseServeOptions([...base, '--allow-http=off']).allowHttp).toBe(false);
    expect(parseServeOptions([...base, '--allow-http']).allowHttp).toBe(true);
    expect(parseServeOptions([...base, '--allow-http=true', '--allow-grpc=1']).allowGrpc).toBe(true);
    expect(parseServeOptions([...base, '--allow-grpc=false']).allowGrpc).toBe(false);
    expect(parseServeOptions([...base, '--allow-metrics=false']).allowMetrics).toBe(false);
    expect(parseServeOptions([...base, '--allow-metrics', 'on']).allowMetrics).toBe(true);
  });

  it('give the existing booleans the same forms', () => {
    expect(parseServeOptions([...base, '--enable-fault-injection']).faultInjection).toBe(true);
    expect(parseServeOptions([...base, '--enable-fault-injection=true']).faultInjection).toBe(true);
    expect(parseServeOptions([...base, '--enable-fault-injection=false']).faultInjection).toBe(false);
    expect(parseServeOptions([...base, '--no-default-warmup']).defaultWarmup).toBe(false);
    expect(parseServeOptions([...base, '--no-default-warmup=false']).defaultWarmup).toBe(true);
    // --device-ledger host still needs fault injection, in any of its forms.
    expect(parseServeOptions([...base, '--enable-fault-injection=true', '--device-ledger', 'host']).device.backend).toBe('host');
    expect(() => parseServeOptions([...base, '--enable-fault-injection=false', '--device-ledger', 'host'])).toThrow(
      /--device-ledger host is a test hook: it needs --enable-fault-injection/,
    );
  });

  it('refuse any other value, naming the flag and the values it takes', () => {
    expect(() => parseServeOptions([...base, '--allow-http=maybe'])).toThrow(
      /--allow-http: expected true or false \(also 1\|0\|on\|off, or the bare --allow-http for true\), got 'maybe'/,
    );
    expect(() => parseServeOptions([...base, '--enable-fault-injection=yes please'])).toThrow(
      /--enable-fault-injection: expected true or false .*got 'yes please'/,
    );
    expect(() => parseServeOptions([...base, '--strict-model-config='])).toThrow(/--strict-model-config: expected true or false .*got ''/);
  });

  it('leave a word that is not a boolean for the next flag, and refuse a stray word', () => {
    expect(parseServeOptions([...base, '--allow-http', '--grpc-port', '1'])).toMatchObject({ allowHttp: true, grpcPort: 1 });
    expect(parseServeOptions([...base, '--allow-http', 'false', '--grpc-port=2'])).toMatchObject({ allowHttp: false, grpcPort: 2 });
    // A stray word after a bare boolean is an error naming it.
    expect(() => parseServeOptions([...base, '--allow-http', 'maybe'])).toThrow(/unexpected argument 'maybe'/);
    expect(() => parseServeOptions([...base, '--', '--allow-http'])).toThrow(/unexpected argument '--'/);
  });

  it('refuse turning both inference doors off', () => {
    expect(() => parseServeOptions([...base, '--allow-grpc=false', '--allow-http=false'])).toThrow(
      /--allow-grpc=false and --allow-http=false: expected at least one of them true/,
    );
  });
});

describe('model control', () => {
  it('takes none, explicit and poll, in Triton\'s capitals too', () => {
    expect(parseServeOptions([...base, '--model-control-mode=none']).modelControlMode).toBe('none');
    expect(parseServeOptions([...base, '--model-control-mode', 'EXPLICIT']).modelControlMode).toBe('explicit');
    expect(parseServeOptions([...base, '--model-control-mode=poll']).modelControlMode).toBe('poll');
    expect(() => parseServeOptions([...base, '--model-control-mode=sometimes'])).toThrow(
      /--model-control-mode: expected one of none\|explicit\|poll, got 'sometimes'/,
    );
  });

  it('takes --load-model repeatedly, or * alone, in explicit mode only', () => {
    const explicit = [...base, '--model-control-mode=explicit'];
    expect(parseServeOptions([...explicit, '--load-model', 'a', '--load-model=b']).startupModels).toEqual(['a', 'b']);
    expect(parseServeOptions([...explicit, '--load-model=*']).startupModels).toEqual(['*']);
    expect(parseServeOptions(explicit).startupModels).toEqual([]);
    expect(() => parseServeOptions([...explicit, '--load-model=*', '--load-model=a'])).toThrow(
      /--load-model: expected '\*' alone \(it already means every model\), got '\*', 'a'/,
    );
    expect(() => parseServeOptions([...explicit, '--load-model='])).toThrow(/--load-model: expected a model directory name .*got ''/);
    expect(() => parseServeOptions([...explicit, '--load-model=../elsewhere'])).toThrow(
      /--load-model: expected a model directory name \(not empty, '\.' or '\.\.', and without '\/', '\\' or NUL\), got '\.\.\/elsewhere'/,
    );
    expect(() => parseServeOptions([...base, '--load-model=a'])).toThrow(
      /--load-model: expected only with --model-control-mode=explicit, got it with no --model-control-mode/,
    );
    expect(() => parseServeOptions([...base, '--model-control-mode=poll', '--load-model=a'])).toThrow(
      /--load-model: expected only with --model-control-mode=explicit, got it with --model-control-mode=poll/,
    );
  });

  it('takes --repository-poll-secs, above 0 in poll mode', () => {
    expect(parseServeOptions([...base, '--model-control-mode=poll', '--repository-poll-secs=2']).repositoryPollSecs).toBe(2);
    expect(parseServeOptions([...base, '--model-control-mode=poll', '--repository-poll-secs', '0.5']).repositoryPollSecs).toBe(0.5);
    // Triton users pass --repository-poll-secs=0 beside explicit mode: accepted.
    expect(parseServeOptions([...base, '--model-control-mode=explicit', '--repository-poll-secs=0']).repositoryPollSecs).toBe(0);
    expect(() => parseServeOptions([...base, '--model-control-mode=poll', '--repository-poll-secs=0'])).toThrow(
      /--repository-poll-secs: expected a number above 0 with --model-control-mode=poll, got '0'/,
    );
    expect(() => parseServeOptions([...base, '--repository-poll-secs=-1'])).toThrow(
      /--repository-poll-secs: expected a number in 0\.\.86400, got '-1'/,
    );
  });
});

describe('sizes', () => {
  it('take --max-message-size with binary, Kubernetes and decimal suffixes', () => {
    expect(parseServeOptions([...base, '--max-message-size=512Mi']).maxMessageBytes).toBe(512 * MiB);
    expect(parseServeOptions([...base, '--max-message-size', '1Gi']).maxMessageBytes).toBe(GiB);
    expect(parseServeOptions([...base, '--max-message-size=16MiB']).maxMessageBytes).toBe(16 * MiB);
    expect(parseServeOptions([...base, '--max-message-size=100MB']).maxMessageBytes).toBe(100e6);
    expect(parseServeOptions([...base, '--max-message-size=4096']).maxMessageBytes).toBe(4096);
  });

  it('refuse a bad or too large --max-message-size', () => {
    expect(() => parseServeOptions([...base, '--max-message-size=big'])).toThrow(
      /--max-message-size: expected a byte size such as 4096, 512MiB, 2GiB or 100MB, got 'big'/,
    );
    expect(() => parseServeOptions([...base, '--max-message-size=0'])).toThrow(/--max-message-size: expected a positive size, got '0'/);
    expect(() => parseServeOptions([...base, '--max-message-size=4Gi'])).toThrow(
      /--max-message-size: expected a size of at most 2147483647 bytes, got '4Gi' \(4294967296 bytes\)/,
    );
  });

  it('take Kubernetes suffixes everywhere a size is taken, and keep the old forms', () => {
    expect(parseByteSize('512Mi', 'q')).toBe(512 * MiB);
    expect(parseByteSize('2Gi', 'q')).toBe(2 * GiB);
    expect(parseByteSize('8Ki', 'q')).toBe(8 * 1024);
    expect(parseByteSize('1Ti', 'q')).toBe(2 ** 40);
    expect(parseByteSize('2g', 'q')).toBe(2 * GiB);
    expect(parseByteSize('100MB', 'q')).toBe(100e6);
    const options = parseServeOptions([...base, '--memory-capacity=4Gi', '--tenant', 'ads:512Mi', '--patrol-leak-threshold=256Mi']);
    expect(options.memoryCapacityBytes).toBe(4 * GiB);
    expect(options.tenants).toEqual([{ name: 'ads', quotaBytes: 512 * MiB }]);
    expect(options.patrol?.leakThresholdBytes).toBe(256 * MiB);
    expect(() => parseServeOptions([...base, '--patrol-growth-rate=fast'])).toThrow(/--patrol-growth-rate: expected a byte size/);
  });
});

describe('--log-format', () => {
  it('takes json and pretty, with Triton\'s default and ISO8601 as kinds of pretty', () => {
    expect(parseServeOptions([...base, '--log-format=json']).logFormat).toBe('json');
    expect(parseServeOptions([...base, '--log-format=pretty']).logFormat).toBe('pretty');
    expect(parseServeOptions([...base, '--log-format=default']).logFormat).toBe('pretty');
    expect(parseServeOptions([...base, '--log-format', 'ISO8601']).logFormat).toBe('pretty');
    expect(parseServeOptions([...base, '--log-format=iso8601']).logFormat).toBe('pretty');
    expect(() => parseServeOptions([...base, '--log-format=xml'])).toThrow(
      /--log-format: expected one of json\|pretty\|default\|ISO8601, got 'xml'/,
    );
  });

  it('writes one readable line a record, quoting values that would split it', () => {
    const record = {
      level: 'warn', time: '2025-01-02T03:04:05.678Z', service: 'hotpath', component: 'repository',
      model: 'ctr_mlp', versions: [1, 2], reason: 'bad dims\nsecond line', msg: 'model failed\tto load',
    };
    expect(prettyLine(JSON.stringify(record))).toBe(
      '2025-01-02T03:04:05.678Z WARN  [repository] model failed\\tto load model=ctr_mlp versions=[1,2] reason="bad dims\\nsecond line"\n',
    );
  });
});

describe('unknown flags', () => {
  it('are refused by name, with the nearest known flag', () => {
    expect(() => parseServeOptions([...base, '--model-repositories=x'])).toThrow(
      /^unknown option --model-repositories; did you mean --model-repository\?$/,
    );
  });
});
