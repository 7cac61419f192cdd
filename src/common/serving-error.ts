/**
 * Errors that carry their kind (error-kinds.ts). Every gRPC handler converts
 * failures through `toServiceError`, the single place where an exception
 * becomes a status, so clients always get the right code and a message naming
 * what was wrong; the HTTP front door maps the same kinds through
 * `httpStatusOf`, so one failure reads the same on every path.
 */
import { type status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { NativeError } from '../native/native-error.js';
import {
  grpcStatusOf,
  isErrorKind,
  kindOfGrpcStatus,
  kindOfNativeCode,
  kindOfRejection,
  type ErrorKind,
} from './error-kinds.js';
import { boundMessage } from './echo.js';

export class ServingError extends Error {
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
 */
export function classifyError(err: unknown): Classified {
  const { kind, message } = classifyUnbounded(err);
  return { kind, message: boundMessage(message) };
}

function classifyUnbounded(err: unknown): Classified {
  if (err instanceof ServingError) return { kind: err.kind, message: err.message };
  if (err instanceof NativeError) {
    // A batcher rejection says why in `reason`; other native failures by their code.
    // The native message is for clients; the operation prefix of err.message is for logs.
    const reason = (err as { reason?: unknown }).reason;
    const kind = (typeof reason === 'string' ? kindOfRejection(reason) : undefined) ?? kindOfNativeCode(err.code);
    return { kind, message: err.nativeMessage };
  }
  if (err instanceof Error) {
    const tagged = (err as { kind?: unknown }).kind;
    if (isErrorKind(tagged)) return { kind: tagged, message: err.message };
  }
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
