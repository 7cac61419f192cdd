import { describe, expect, it } from 'vitest';
import { status } from '@grpc/grpc-js';
import {
  ERROR_KINDS,
  failureReasonOf,
  grpcStatusOf,
  httpStatusOf,
  httpStatusOfGrpc,
  isErrorKind,
  kindOfExecutionFailure,
  kindOfGrpcStatus,
  kindOfNativeCode,
  kindOfRejection,
  type ErrorKind,
} from '../../src/common/error-kinds.js';
import {
  classifyError,
  DeadlineExceededError,
  invalidArgument,
  ServingError,
  toServiceError,
  WorkerCrashedError,
} from '../../src/common/serving-error.js';
import { NativeError } from '../../src/native/native-error.js';
import { BatcherRejection, rejectionCodes } from '../../src/native/batcher-errors.js';

describe('error kinds', () => {
  it('map every kind to one gRPC status, HTTP status and failure reason', () => {
    const table = Object.fromEntries(ERROR_KINDS.map((kind) => [kind, [grpcStatusOf(kind), httpStatusOf(kind), failureReasonOf(kind)]]));
    expect(table).toEqual({
      invalid: [status.INVALID_ARGUMENT, 400, 'OTHER'],
      not_found: [status.NOT_FOUND, 404, 'OTHER'],
      unavailable: [status.UNAVAILABLE, 503, 'OTHER'],
      // Scheduler rejections: refused or dropped before execution.
      queue_full: [status.UNAVAILABLE, 503, 'REJECTED'],
      shutdown: [status.UNAVAILABLE, 503, 'REJECTED'],
      timeout: [status.DEADLINE_EXCEEDED, 504, 'REJECTED'],
      deadline: [status.DEADLINE_EXCEEDED, 504, 'REJECTED'],
      over_quota: [status.RESOURCE_EXHAUSTED, 429, 'REJECTED'],
      rate_limited: [status.RESOURCE_EXHAUSTED, 429, 'REJECTED'],
      unauthenticated: [status.UNAUTHENTICATED, 401, 'OTHER'],
      permission_denied: [status.PERMISSION_DENIED, 403, 'OTHER'],
      // Triton's restricted APIs: UNAVAILABLE on gRPC, 403 on HTTP.
      restricted: [status.UNAVAILABLE, 403, 'OTHER'],
      cancelled: [status.CANCELLED, 499, 'CANCELED'],
      precondition: [status.FAILED_PRECONDITION, 400, 'OTHER'],
      unimplemented: [status.UNIMPLEMENTED, 501, 'OTHER'],
      worker_crashed: [status.UNAVAILABLE, 503, 'BACKEND'],
      internal: [status.INTERNAL, 500, 'BACKEND'],
    });
  });

  it('derive every HTTP status from the gRPC status, by the canonical mapping', () => {
    const table: [status, number][] = [
      [status.INVALID_ARGUMENT, 400],
      [status.FAILED_PRECONDITION, 400],
      [status.UNAUTHENTICATED, 401],
      [status.PERMISSION_DENIED, 403],
      [status.NOT_FOUND, 404],
      [status.RESOURCE_EXHAUSTED, 429],
      [status.CANCELLED, 499],
      [status.INTERNAL, 500],
      [status.UNIMPLEMENTED, 501],
      [status.UNAVAILABLE, 503],
      [status.DEADLINE_EXCEEDED, 504],
      [status.DATA_LOSS, 500],
    ];
    for (const [code, http] of table) expect([status[code], httpStatusOfGrpc(code)]).toEqual([status[code], http]);
    // A kind's HTTP status is its gRPC status's: the two doors never disagree,
    // except where Triton's own doors do (a restricted API).
    for (const kind of ERROR_KINDS.filter((k) => k !== 'restricted')) expect(httpStatusOf(kind)).toBe(httpStatusOfGrpc(grpcStatusOf(kind)));
  });

  it('round-trip the statuses hotpath answers with', () => {
    for (const kind of ['invalid', 'not_found', 'unavailable', 'deadline', 'cancelled', 'over_quota', 'unauthenticated', 'permission_denied', 'precondition', 'unimplemented', 'internal'] as const) {
      expect(kindOfGrpcStatus(grpcStatusOf(kind))).toBe(kind);
    }
    expect(kindOfGrpcStatus(status.ALREADY_EXISTS)).toBe('internal');
  });

  it('classify native codes, batcher rejections and execution failures', () => {
    expect(kindOfNativeCode('RESOURCE_EXHAUSTED')).toBe('over_quota');
    expect(kindOfNativeCode('FAILED_PRECONDITION')).toBe('precondition');
    expect(kindOfNativeCode('SOMETHING_NEW')).toBe('internal');
    const reasons: Record<string, ErrorKind> = {
      QUEUE_FULL: 'queue_full',
      TIMEOUT: 'timeout',
      DEADLINE_EXCEEDED: 'deadline',
      SHUTDOWN: 'shutdown',
      OVER_QUOTA: 'over_quota',
      INVALID: 'invalid',
    };
    for (const [reason, kind] of Object.entries(reasons)) expect(kindOfRejection(reason)).toBe(kind);
    expect(kindOfRejection('OK')).toBeUndefined();
    // The old name of OVER_QUOTA is no reason any more: the native side never sends it.
    expect(kindOfRejection('RESOURCE_EXHAUSTED')).toBeUndefined();
    expect(kindOfRejection('toString')).toBeUndefined();
    expect(kindOfExecutionFailure('INVALID')).toBe('invalid');
    expect(kindOfExecutionFailure('SHUTDOWN')).toBe('shutdown');
    expect(kindOfExecutionFailure('INTERNAL')).toBe('internal');
    expect(kindOfExecutionFailure('WORKER_CRASHED')).toBe('worker_crashed');
    expect(kindOfExecutionFailure('DEADLINE')).toBe('deadline');
    expect(kindOfExecutionFailure('RESOURCE_EXHAUSTED')).toBe('over_quota');
    expect(kindOfExecutionFailure('DEVICE_LOST')).toBe('unavailable');
    expect(kindOfExecutionFailure('SOMETHING_NEW')).toBe('internal');
    expect(isErrorKind('queue_full')).toBe(true);
    expect(isErrorKind('toString')).toBe(false);
  });
});

describe('toServiceError', () => {
  it('keeps a ServingError built from a kind or from a status', () => {
    expect(toServiceError(invalidArgument('bad input'))).toMatchObject({ code: status.INVALID_ARGUMENT, details: 'bad input' });
    const legacy = new ServingError(status.RESOURCE_EXHAUSTED, 'over');
    expect(legacy.kind).toBe('over_quota');
    expect(legacy.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(toServiceError(legacy)).toMatchObject({ code: status.RESOURCE_EXHAUSTED, details: 'over' });
  });

  it('answers worker failures with their kinds', () => {
    expect(classifyError(new WorkerCrashedError('worker died'))).toEqual({ kind: 'worker_crashed', message: 'worker died' });
    expect(toServiceError(new DeadlineExceededError('late')).code).toBe(status.DEADLINE_EXCEEDED);
    // Recognised by class or kind, never by name: an Error merely named so is internal.
    const foreign = Object.assign(new Error('died'), { name: 'WorkerCrashedError' });
    expect(toServiceError(foreign)).toMatchObject({ code: status.INTERNAL, details: 'inference failed: died' });
    // Nor by fields: a foreign error that carries a `kind` or a `reason` of ours is internal too.
    const tagged = Object.assign(new Error('bad'), { kind: 'invalid', reason: 'QUEUE_FULL' });
    expect(classifyError(tagged)).toEqual({ kind: 'internal', message: 'inference failed: bad' });
  });

  it('answers native errors with the native message and batcher rejections by reason', () => {
    const native = new NativeError('FAILED_PRECONDITION', 'no device', 'createExecutor');
    expect(toServiceError(native)).toMatchObject({ code: status.FAILED_PRECONDITION, details: 'no device' });
    const full = new BatcherRejection('QUEUE_FULL', 'UNAVAILABLE', "model 'm': queue full", 'm', 0, 'default');
    expect(classifyError(full)).toEqual({ kind: 'queue_full', message: "model 'm': queue full" });
    const timedOut = new BatcherRejection('TIMEOUT', 'DEADLINE_EXCEEDED', 'timed out', 'm', 5, 'default', 3);
    expect(toServiceError(timedOut).code).toBe(status.DEADLINE_EXCEEDED);
    // The addon's typed refusals: each reason has its kind, and its code follows from it.
    for (const [reason, kind] of [['QUEUE_FULL', 'queue_full'], ['SHUTDOWN', 'shutdown'], ['OVER_QUOTA', 'over_quota'], ['INVALID', 'invalid']] as const) {
      const refused = new BatcherRejection(reason, rejectionCodes[reason], 'refused', 'm', 0, 'default');
      expect(refused.kind).toBe(kind);
      expect(classifyError(refused).kind).toBe(kind);
      expect(toServiceError(refused).code).toBe(grpcStatusOf(kind));
    }
  });

  it('answers anything else INTERNAL, naming the failure', () => {
    expect(toServiceError(new Error('boom'))).toMatchObject({ code: status.INTERNAL, details: 'inference failed: boom' });
    expect(toServiceError('text')).toMatchObject({ code: status.INTERNAL, details: 'inference failed: text' });
  });
});
