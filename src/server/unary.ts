/**
 * Adapts an async function to a grpc-js unary handler, routing every failure
 * through `toServiceError` so all RPCs report errors the same way.
 *
 * The function itself stays reachable as the RPC's operation (`operationOf`):
 * the REST door turns its JSON into the same protocol message and calls the
 * very same function, so both doors answer with one implementation and one
 * set of errors. An operation is called without a grpc-js call object, so a
 * handler that reads the call (metadata, deadline) must not be used that way.
 */
import type { sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { toServiceError } from '../common/serving-error.js';

/** An RPC's logic on its protocol messages; failures are thrown as they were raised (kinds intact). */
export type UnaryOperation<Req, Res> = (request: Req) => Promise<Res>;

const OPERATION = Symbol('hotpath.unaryOperation');

export function unary<Req, Res>(
  handler: (request: Req, call: ServerUnaryCall<Req, Res>) => Promise<Res> | Res,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  const wrapped = (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    Promise.resolve()
      .then(() => handler(call.request, call))
      .then(
        (response) => callback(null, response),
        (err: unknown) => callback(toServiceError(err)),
      );
  };
  const operation: UnaryOperation<Req, Res> = async (request) => handler(request, undefined as never);
  return Object.assign(wrapped, { [OPERATION]: operation });
}

/** The operation behind `rpc` in a service implementation built with `unary`. */
export function operationOf<Req, Res>(implementation: UntypedServiceImplementation, rpc: string): UnaryOperation<Req, Res> {
  const handler = implementation[rpc] as { [OPERATION]?: UnaryOperation<Req, Res> } | undefined;
  const operation = handler?.[OPERATION];
  if (operation === undefined) throw new Error(`RPC ${rpc} has no unary operation (is it built with unary()?)`);
  return operation;
}
