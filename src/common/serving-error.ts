/**
 * Errors that carry their kind (error-kinds.ts). Every gRPC handler converts
 * failures through `toServiceError`, the single place where an exception
 * becomes a status, so clients always get the right code and a message naming
 * what was wrong; the HTTP front door maps the same kinds through
 * `httpStatusOf`, so one failure reads the same on every path.
 */
import { type status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { grpcStatusOf, kindOfGrpcStatus, type ErrorKind } from './error-kinds.js';
import { boundMessage } from './echo.js';
import { ClassifiedError } from './classified-error.js';

export { ClassifiedError } from './classified-error.js';

export class ServingError extends ClassifiedError {
  override readonly name: string = 'ServingError';
  readonly kind: ErrorKind;
  /** The gRPC status of `kind`. */
  readonly code: status;

  /** `kind` is an ErrorKind; a gRPC status is accepted and classified with kindOfGrpcStatus. */
  constructor(kind: ErrorKind | status, message: string) {
    super(message);
    this.kind = typeof kind === 'number' ? kindOfGrpcStatus(kind) : kind;
    this.code = grpcStatusOf(this.kind);
  }

  get clientMessage(): string {
    return this.message;
  }
}

export const invalidArgument = (message: string): ServingError => new ServingError('invalid', message);
export const notFound = (message: string): ServingError => new ServingError('not_found', message);
export const unavailable = (message: string): ServingError => new ServingError('unavailable', message);
export const unimplemented = (message: string): ServingError => new ServingError('unimplemented', message);
export const internal = (message: string): ServingError => new ServingError('internal', message);

/** The worker running a request died, and so did the one retry. */
export class WorkerCrashedError extends ServingError {
  override readonly name = 'WorkerCrashedError';
  constructor(message: string) {
    super('worker_crashed', message);
  }
}

/** A request's deadline passed before a worker could start it; it never ran. */
export class DeadlineExceededError extends ServingError {
  override readonly name = 'DeadlineExceededError';
  constructor(message: string) {
    super('deadline', message);
  }
}

/** A failure's kind and the message a client sees for it. */
export interface Classified {
  readonly kind: ErrorKind;
  readonly message: string;
}

/**
 * Classifies any thrown value: its kind and the message clients see, cut to
 * MESSAGE_MAX_CHARS (echo.ts) so that no message outgrows gRPC's metadata.
 *
 * Only our own error classes carry a kind: a ClassifiedError (ServingError,
 * NativeError, WorkerRunError and their subclasses) is taken by `instanceof`.
 * A foreign error is never read for a `kind`, a `reason`, a name or its
 * message text: whatever it says, it is internal.
 */
export function classifyError(err: unknown): Classified {
  const { kind, message } = classifyUnbounded(err);
  return { kind, message: boundMessage(message) };
}

function classifyUnbounded(err: unknown): Classified {
  if (err instanceof ClassifiedError) return { kind: err.kind, message: err.clientMessage };
  // Anything else escaped from onnxruntime or from a bug: internal, with its message.
  const message = err instanceof Error ? err.message : String(err);
  return { kind: 'internal', message: `inference failed: ${message}` };
}

export type GrpcFailure = Partial<ServiceError> & { code: status; details: string };

/** Maps any thrown value to the gRPC status and message a client sees (its kind: classifyError). */
export function toServiceError(err: unknown): GrpcFailure {
  const { kind, message } = classifyError(err);
  return { code: grpcStatusOf(kind), details: message, message, metadata: new Metadata() };
}
