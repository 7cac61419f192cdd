/**
 * Errors that carry their gRPC status. Every handler converts failures through
 * `toServiceError`, the single place where an exception becomes a status, so
 * clients always get the right code and a message naming what was wrong.
 */
import { status, type ServiceError, Metadata } from '@grpc/grpc-js';
import { NativeError, type NativeStatusCode } from '../native/native-error.js';
import { DeadlineExceededError, WorkerCrashedError } from '../workers/model-pool.js';

export class ServingError extends Error {
  override readonly name = 'ServingError';
  constructor(readonly code: status, message: string) {
    super(message);
  }
}

export const invalidArgument = (message: string): ServingError =>
  new ServingError(status.INVALID_ARGUMENT, message);
export const notFound = (message: string): ServingError => new ServingError(status.NOT_FOUND, message);
export const unavailable = (message: string): ServingError =>
  new ServingError(status.UNAVAILABLE, message);
export const unimplemented = (message: string): ServingError =>
  new ServingError(status.UNIMPLEMENTED, message);
export const internal = (message: string): ServingError => new ServingError(status.INTERNAL, message);

/** Maps any thrown value to the status and message a client sees. */
export function toServiceError(err: unknown): Partial<ServiceError> & { code: status; details: string } {
  if (err instanceof ServingError) return serviceError(err.code, err.message);
  if (err instanceof WorkerCrashedError) return serviceError(status.UNAVAILABLE, err.message);
  if (err instanceof DeadlineExceededError) return serviceError(status.DEADLINE_EXCEEDED, err.message);
  // The native message is for clients; the operation prefix of err.message is for logs.
  if (err instanceof NativeError) return serviceError(NATIVE_STATUS[err.code], err.nativeMessage);
  // Anything else escaped from onnxruntime or from a bug: INTERNAL, with its message.
  const message = err instanceof Error ? err.message : String(err);
  return serviceError(status.INTERNAL, `inference failed: ${message}`);
}

// Native status codes are gRPC's, by name.
const NATIVE_STATUS: Readonly<Record<NativeStatusCode, status>> = {
  INVALID_ARGUMENT: status.INVALID_ARGUMENT,
  NOT_FOUND: status.NOT_FOUND,
  FAILED_PRECONDITION: status.FAILED_PRECONDITION,
  RESOURCE_EXHAUSTED: status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: status.UNAVAILABLE,
  DEADLINE_EXCEEDED: status.DEADLINE_EXCEEDED,
  INTERNAL: status.INTERNAL,
};

function serviceError(code: status, details: string): Partial<ServiceError> & { code: status; details: string } {
  return { code, details, message: details, metadata: new Metadata() };
}
