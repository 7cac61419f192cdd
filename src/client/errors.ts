/**
 * The one error type the client rejects with for anything the server (or the
 * channel) refused: the gRPC status code, its name, and the server's own
 * message, unchanged, so callers can branch on `code` and show `message`.
 *
 * Mistakes the client catches before anything is sent (a shape that does not
 * match the data, an unknown datatype) are plain `TypeError`s instead: they are
 * bugs in the calling code, not answers from a server.
 */
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';

export class InferenceError extends Error {
  override readonly name: string = 'InferenceError';
  /** The gRPC status code (`status.NOT_FOUND`, `status.INVALID_ARGUMENT`, ...). */
  readonly code: status;
  /** The server's message as it sent it (also `message`). */
  readonly details: string;
  /** Trailing metadata of the failed call; hotpath puts the call's `x-request-id` there. */
  readonly metadata: Metadata;

  constructor(code: status, details: string, metadata: Metadata = new Metadata(), options?: ErrorOptions) {
    super(details, options);
    this.code = code;
    this.details = details;
    this.metadata = metadata;
  }

  /** The status name, e.g. 'INVALID_ARGUMENT'. */
  get codeName(): string {
    return status[this.code] ?? `STATUS_${this.code}`;
  }

  /** The `x-request-id` the server logged the call under, when it sent one. */
  get requestId(): string | undefined {
    const value = this.metadata.get('x-request-id')[0];
    return typeof value === 'string' ? value : undefined;
  }

  /** Wraps a grpc-js ServiceError, keeping the call-site stack (grpc-js's points into its internals). */
  static fromServiceError(err: ServiceError, callSite?: Error): InferenceError {
    const wrapped = new InferenceError(err.code, err.details || err.message, err.metadata ?? new Metadata(), { cause: err });
    if (callSite?.stack !== undefined) wrapped.stack = `${wrapped.name}: ${wrapped.message}${callSite.stack.slice(callSite.stack.indexOf('\n'))}`;
    return wrapped;
  }
}

/**
 * A request on a ModelStreamInfer stream that the server answered with
 * `error_message`. The stream protocol carries no status code per response,
 * so `code` is UNKNOWN, as tritonclient reports it; the message is the server's.
 */
export class StreamInferError extends InferenceError {
  override readonly name: string = 'StreamInferError';
  /** The id of the request that failed (the one it was sent with). */
  readonly id: string;

  constructor(id: string, details: string) {
    super(status.UNKNOWN, details);
    this.id = id;
  }
}

/** Whether `err` is a grpc-js call error (it carries a numeric `code`). */
export function isServiceError(err: unknown): err is ServiceError {
  return err instanceof Error && typeof (err as Partial<ServiceError>).code === 'number';
}
