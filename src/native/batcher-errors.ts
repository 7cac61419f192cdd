// Typed batcher outcomes. A BatcherRejection is a NativeError whose `code` is
// the gRPC status the request should be answered with, so the server's one
// error-to-status mapping needs no special case; `reason` says why.
import { kindOfNativeCode, kindOfRejection } from '../common/error-kinds.js';
import { NativeError, type NativeStatusCode } from './native-error.js';
import type { RejectionReason } from './batcher-binding-types.js';

export type { RejectionReason } from './batcher-binding-types.js';

/** The gRPC-style code each reason is answered with. */
export const rejectionCodes: Readonly<Record<RejectionReason, NativeStatusCode>> = {
  QUEUE_FULL: 'UNAVAILABLE',
  TIMEOUT: 'DEADLINE_EXCEEDED',
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  SHUTDOWN: 'UNAVAILABLE',
  OVER_QUOTA: 'RESOURCE_EXHAUSTED',
  INVALID: 'INVALID_ARGUMENT',
};

/**
 * The batcher refused (at enqueue) or dropped (while queued) a request. A
 * request rejected this way was never executed.
 */
export class BatcherRejection extends NativeError {
  constructor(
    readonly reason: RejectionReason,
    code: NativeStatusCode,
    message: string,
    readonly model: string,
    /** Time spent queued before it was dropped; 0 when refused at enqueue. */
    readonly queueNs: number,
    /** The model's tenant (the one charged, for OVER_QUOTA). */
    readonly tenant: string,
    /**
     * The request's arrival number when it had been accepted and was dropped
     * later (timeout, deadline, shutdown); undefined when refused at enqueue.
     * With preserve_ordering, its answer takes this place in the order.
     */
    readonly sequence?: number,
  ) {
    // The reason's kind decides every front door's status (error-kinds.ts).
    super(code, message, 'enqueue', kindOfRejection(reason) ?? kindOfNativeCode(code));
    // NativeError declares `name` as a literal; this keeps its own in stacks.
    Object.defineProperty(this, 'name', { value: 'BatcherRejection', enumerable: false, configurable: true, writable: false });
  }
}
