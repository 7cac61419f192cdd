// The CPU-profile breakdown behind bench/profile-request-path.sh: self time by
// where the code lives, per request, with the idle time and the samples
// outside the measured window left out.
import { describe, expect, it } from 'vitest';
import { breakdown, categoryOf } from '../../bench/report/cpu-profile.js';

describe('cpu profile breakdown', () => {
  it('names where a frame lives', () => {
    expect(categoryOf('(garbage collector)', '')).toBe('GC');
    expect(categoryOf('emit', 'node:events')).toBe('node core');
    expect(categoryOf('sendMessage', 'file:///x/node_modules/@grpc/grpc-js/build/src/server-call.js')).toBe('grpc-js');
    expect(categoryOf('readMessage', 'file:///x/node_modules/@bufbuild/protobuf/dist/esm/from-binary.js')).toBe('protobuf');
    expect(categoryOf('observe', 'file:///x/node_modules/prom-client/lib/histogram.js')).toBe('prom-client');
    expect(categoryOf('infer', 'file:///x/dist/src/inference/inference-runner.js')).toBe('hotpath inference/');
    expect(categoryOf('main', 'file:///x/dist/src/cli.js')).toBe('hotpath cli');
    expect(categoryOf('batcherEnqueue', '')).toBe('V8/native');
  });

  it('sums self time per category and request, inside the window only', () => {
    const profile = {
      nodes: [
        { id: 1, callFrame: { functionName: '(idle)', url: '' } },
        { id: 2, callFrame: { functionName: 'infer', url: 'file:///x/dist/src/inference/inference-runner.js' } },
        { id: 3, callFrame: { functionName: '(garbage collector)', url: '' } },
      ],
      // Sample times: 100, 110, 120, 130, 1000 (the last outside the window).
      samples: [2, 3, 1, 2, 2],
      timeDeltas: [100, 10, 10, 10, 870],
      startTime: 0,
      endTime: 1000,
    };
    const result = breakdown(profile, 2, { fromUs: 50, toUs: 200 });
    expect(result.perRequestUs).toEqual([
      { category: 'hotpath inference/', us: 55 },
      { category: 'GC', us: 5 },
    ]);
    expect(result.busyUsPerRequest).toBe(60);
    expect(result.idleShare).toBeCloseTo(10 / 130);
  });
});
