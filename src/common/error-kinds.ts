/**
 * The closed set of ways a request or an RPC can fail, and the one table that
 * says how each is answered: its gRPC status, its HTTP status (for the KServe
 * V2 REST front door) and its Triton failure reason (nv_inference_request_failure).
 *
 * Every failure is classified once, where it is decided (a ServingError's kind,
 * a batcher rejection's reason, a native status code), and each front door
 * maps the kind to its own status here. No other module picks a status.
 *
 * HTTP statuses follow Triton's HTTP server where it has one (400 bad request,
 * 404 unknown model or version, 503 unavailable, queue full or timed out in the
 * queue, 501 unsupported, 500 internal), and Google's canonical gRPC-to-HTTP
 * mapping otherwise: an exceeded deadline is 504 and an exhausted quota 429
 * (the tenant may retry later while other tenants are served). tritonclient
 * treats any status but 200 as an error and shows the body's "error" field.
 *
 * Pure data and functions; no imports of the layers above. Safe in any thread.
 */
import { status } from '@grpc/grpc-js';

export type ErrorKind =
  /** The request is malformed or does not fit the model. */
  | 'invalid'
  /** No such model, or no such version of it. */
  | 'not_found'
  /** The model or the server cannot serve now (not ready, draining, device gone). */
  | 'unavailable'
  /** The batcher's queue for the request's priority level is full. */
  | 'queue_full'
  /** The batcher (or executor) stopped with the request still pending. */
  | 'shutdown'
  /** The request waited in the queue longer than its queue-policy timeout. */
  | 'timeout'
  /** The caller's deadline passed before the request ran. */
  | 'deadline'
  /** A tenant's memory quota, or the server's memory, has no room. */
  | 'over_quota'
  /** The operation is valid but the state forbids it (e.g. golden checks failed). */
  | 'precondition'
  /** An RPC or feature hotpath does not implement. */
  | 'unimplemented'
  /** The worker running the request died (after the one retry). */
  | 'worker_crashed'
  /** A bug or an unexpected failure of the runtime. */
  | 'internal';

/** Triton's bounded failure reasons (nv_inference_request_failure{reason}). */
export type KindFailureReason = 'REJECTED' | 'CANCELED' | 'BACKEND' | 'OTHER';

interface KindAnswer {
  readonly grpc: status;
  readonly http: number;
  readonly failure: KindFailureReason;
}

const ANSWERS: Readonly<Record<ErrorKind, KindAnswer>> = {
  invalid: { grpc: status.INVALID_ARGUMENT, http: 400, failure: 'REJECTED' },
  not_found: { grpc: status.NOT_FOUND, http: 404, failure: 'REJECTED' },
  unavailable: { grpc: status.UNAVAILABLE, http: 503, failure: 'REJECTED' },
  queue_full: { grpc: status.UNAVAILABLE, http: 503, failure: 'REJECTED' },
  shutdown: { grpc: status.UNAVAILABLE, http: 503, failure: 'REJECTED' },
  timeout: { grpc: status.DEADLINE_EXCEEDED, http: 503, failure: 'CANCELED' },
  deadline: { grpc: status.DEADLINE_EXCEEDED, http: 504, failure: 'CANCELED' },
  over_quota: { grpc: status.RESOURCE_EXHAUSTED, http: 429, failure: 'REJECTED' },
  precondition: { grpc: status.FAILED_PRECONDITION, http: 400, failure: 'REJECTED' },
  unimplemented: { grpc: status.UNIMPLEMENTED, http: 501, failure: 'OTHER' },
  worker_crashed: { grpc: status.UNAVAILABLE, http: 503, failure: 'BACKEND' },
  internal: { grpc: status.INTERNAL, http: 500, failure: 'BACKEND' },
};

export const ERROR_KINDS: readonly ErrorKind[] = Object.keys(ANSWERS) as ErrorKind[];

export function isErrorKind(value: unknown): value is ErrorKind {
  return typeof value === 'string' && Object.hasOwn(ANSWERS, value);
}

/** The gRPC status a failure of this kind is answered with. */
export function grpcStatusOf(kind: ErrorKind): status {
  return ANSWERS[kind].grpc;
}

/** The HTTP status a failure of this kind is answered with (KServe V2 REST). */
export function httpStatusOf(kind: ErrorKind): number {
  return ANSWERS[kind].http;
}

/** The Triton failure reason counted for a failed inference of this kind. */
export function failureReasonOf(kind: ErrorKind): KindFailureReason {
  return ANSWERS[kind].failure;
}

/**
 * The kind for a gRPC status, for callers that still construct errors from a
 * status code. Several kinds share a status; this picks the general one
 * (UNAVAILABLE → 'unavailable', DEADLINE_EXCEEDED → 'deadline'). Statuses
 * hotpath never answers with map to 'internal'.
 */
export function kindOfGrpcStatus(code: status): ErrorKind {
  switch (code) {
    case status.INVALID_ARGUMENT:
    case status.OUT_OF_RANGE:
      return 'invalid';
    case status.NOT_FOUND:
      return 'not_found';
    case status.UNAVAILABLE:
      return 'unavailable';
    case status.DEADLINE_EXCEEDED:
      return 'deadline';
    case status.RESOURCE_EXHAUSTED:
      return 'over_quota';
    case status.FAILED_PRECONDITION:
      return 'precondition';
    case status.UNIMPLEMENTED:
      return 'unimplemented';
    default:
      return 'internal';
  }
}

/** The native core's status code names (native/common/status.h), as kinds. */
export function kindOfNativeCode(code: string): ErrorKind {
  switch (code) {
    case 'INVALID_ARGUMENT':
      return 'invalid';
    case 'NOT_FOUND':
      return 'not_found';
    case 'FAILED_PRECONDITION':
      return 'precondition';
    case 'RESOURCE_EXHAUSTED':
      return 'over_quota';
    case 'UNAVAILABLE':
      return 'unavailable';
    case 'DEADLINE_EXCEEDED':
      return 'deadline';
    default:
      return 'internal';
  }
}

/**
 * The kind of a batcher rejection reason (native/batcher/types.h RejectKind
 * names; RESOURCE_EXHAUSTED is the older name of OVER_QUOTA); undefined for a
 * name that is not a rejection reason.
 */
export function kindOfRejection(reason: string): ErrorKind | undefined {
  switch (reason) {
    case 'QUEUE_FULL':
      return 'queue_full';
    case 'TIMEOUT':
      return 'timeout';
    case 'DEADLINE_EXCEEDED':
      return 'deadline';
    case 'SHUTDOWN':
      return 'shutdown';
    case 'OVER_QUOTA':
    case 'RESOURCE_EXHAUSTED':
      return 'over_quota';
    case 'INVALID':
      return 'invalid';
    default:
      return undefined;
  }
}

/**
 * The kind of an executed batch's failure as the execution target reports it
 * (native/batcher/execution_target.h ExecutionFailure names, other than the
 * device faults, which fall back to CPU instead of failing).
 */
export function kindOfExecutionFailure(failure: string): ErrorKind {
  switch (failure) {
    case 'INVALID':
      return 'invalid';
    case 'RESOURCE_EXHAUSTED':
      return 'over_quota';
    case 'SHUTDOWN':
      return 'shutdown';
    case 'WORKER_CRASHED':
      return 'worker_crashed';
    case 'DEADLINE':
      return 'deadline';
    default:
      return 'internal';
  }
}
