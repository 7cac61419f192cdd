/**
 * Adapts an async function to a grpc-js unary handler, routing every failure
 * through `toServiceError` so all RPCs report errors the same way.
 */
import type { sendUnaryData, ServerUnaryCall } from '@grpc/grpc-js';
import { toServiceError } from '../common/serving-error.js';

export function unary<Req, Res>(
  handler: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res> | Res,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  return (call, callback) => {
    Promise.resolve()
      .then(() => handler(call.request, call))
      .then(
        (response) => callback(null, response),
        (err: unknown) => callback(toServiceError(err)),
      );
  };
}
