// The one run loop both worker entry points use (src/workers/session-run.ts)
// on a real onnxruntime session, and the one failure type the main thread
// rethrows (src/workers/run-failure.ts): stages timed on one clock, every
// failure a typed code (never a rejection), the release hook run either way.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as ort from 'onnxruntime-node';
import { status } from '@grpc/grpc-js';
import { beforeAll, describe, expect, it } from 'vitest';
import { toServiceError } from '../../src/common/serving-error.js';
import { runOnSession } from '../../src/workers/session-run.js';
import { WorkerRunError, isRunFailure } from '../../src/workers/run-failure.js';

const modelPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'models', 'ctr_mlp', '1', 'model.onnx');

let session: ort.InferenceSession;
let inputName: string;
let outputName: string;

beforeAll(async () => {
  session = await ort.InferenceSession.create(modelPath);
  inputName = session.inputNames[0]!;
  outputName = session.outputNames[0]!;
});

const features = (rows: number) => new ort.Tensor('float32', Float32Array.from({ length: rows * 32 }, (_, i) => Math.sin(i)), [rows, 32]);

describe('runOnSession', () => {
  it('runs the stages in order and times each on one clock', async () => {
    const order: string[] = [];
    const run = await runOnSession(session, {
      prepare: () => {
        order.push('prepare');
        return { feeds: { [inputName]: features(2) }, fetches: [outputName] };
      },
      release: () => order.push('release'),
      collect: (results) => {
        order.push('collect');
        return (results[outputName] as ort.Tensor).dims;
      },
    });
    expect(order).toEqual(['prepare', 'release', 'collect']);
    expect(run.ok).toBe(true);
    if (!run.ok) return;
    expect(run.value[0]).toBe(2);
    for (const ns of [run.timing.inputNs, run.timing.computeNs, run.timing.outputNs]) {
      expect(Number.isInteger(ns)).toBe(true);
      expect(ns).toBeGreaterThanOrEqual(0);
    }
    expect(run.timing.computeNs).toBeGreaterThan(0);
  });

  it("turns onnxruntime's refusal into an INTERNAL failure with its message, and still releases", async () => {
    let released = 0;
    const run = await runOnSession(session, {
      prepare: () => ({ feeds: { [inputName]: new ort.Tensor('float32', new Float32Array(5), [1, 5]) }, fetches: [outputName] }),
      release: () => (released += 1),
      collect: () => 'unreachable',
    });
    expect(released).toBe(1);
    expect(isRunFailure(run)).toBe(true);
    expect(run).toMatchObject({ ok: false, failure: 'INTERNAL' });
    if (!run.ok) expect(run.message.length).toBeGreaterThan(0);
  });

  it('turns a throw in prepare or collect into an INTERNAL failure', async () => {
    let released = 0;
    const prepared = await runOnSession(session, {
      prepare: () => {
        throw new Error('the batch has no input x');
      },
      release: () => (released += 1),
      collect: () => 0,
    });
    expect(prepared).toEqual({ ok: false, failure: 'INTERNAL', message: 'the batch has no input x' });
    expect(released).toBe(1);
    const collected = await runOnSession(session, {
      prepare: () => ({ feeds: { [inputName]: features(1) }, fetches: [outputName] }),
      collect: () => {
        throw new Error("model produced no output named 'y'");
      },
    });
    expect(collected).toEqual({ ok: false, failure: 'INTERNAL', message: "model produced no output named 'y'" });
  });
});

describe('WorkerRunError', () => {
  it("classifies by the failure's code, and an INTERNAL run reads 'inference failed: ...'", () => {
    expect(toServiceError(new WorkerRunError('INTERNAL', 'Got invalid dimensions'))).toMatchObject({
      code: status.INTERNAL,
      details: 'inference failed: Got invalid dimensions',
    });
    expect(toServiceError(new WorkerRunError('DEADLINE', 'deadline exceeded before execution (waited 3 ms for a worker)'))).toMatchObject({
      code: status.DEADLINE_EXCEEDED,
      details: 'deadline exceeded before execution (waited 3 ms for a worker)',
    });
    expect(new WorkerRunError('INVALID', 'index out of range').kind).toBe('invalid');
    expect(new WorkerRunError('RESOURCE_EXHAUSTED', 'no room').kind).toBe('over_quota');
  });
});
