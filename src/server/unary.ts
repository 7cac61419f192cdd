/**
 * Adapts an async function to a grpc-js unary handler, routing every failure
 * through `toServiceError` so all RPCs report errors the same way.
 *
 * The function itself stays reachable as the RPC's operation (`operationOf`):
 * the REST door turns its JSON into the same protocol message and calls the
 * very same function, so both doors answer with one implementation and one
 * set of errors. The handler sees the protocol request and the admitted
 * Caller (security/caller.ts), never a door's call object: on gRPC the
 * caller is the one admission.ts admitted; the REST door admits its own.
 */
import type { sendUnaryData, ServerUnaryCall, UntypedServiceImplementation } from '@grpc/grpc-js';
import { toServiceError } from '../common/serving-error.js';
import type { Caller } from '../security/caller.js';
import { callerOf } from './admission.js';

/** An RPC's logic on its protocol messages, for an admitted caller; failures are thrown as they were raised (kinds intact). */
export type UnaryOperation<Req, Res> = (request: Req, caller: Caller) => Promise<Res>;

const OPERATION = Symbol('hotpath.unaryOperation');

export function unary<Req, Res>(
  handler: (request: Req, caller: Caller) => Promise<Res> | Res,
): (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => void {
  const wrapped = (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
    Promise.resolve()
      .then(() => handler(call.request, callerOf(call)))
      .then(
        (response) => callback(null, response),
        (err: unknown) => callback(toServiceError(err)),
      );
  };
  const operation: UnaryOperation<Req, Res> = async (request, caller) => handler(request, caller);
  return Object.assign(wrapped, { [OPERATION]: operation });
}

/** The operation behind `rpc` in a service implementation built with `unary`. */
export function operationOf<Req, Res>(implementation: UntypedServiceImplementation, rpc: string): UnaryOperation<Req, Res> {
  const handler = implementation[rpc] as { [OPERATION]?: UnaryOperation<Req, Res> } | undefined;
  const operation = handler?.[OPERATION];
  if (operation === undefined) throw new Error(`RPC ${rpc} has no unary operation (is it built with unary()?)`);
  return operation;
}
